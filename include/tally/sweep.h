/* Running an experiment's grid: alone baselines, then every policy x job set x
 * load x repetition; in parallel worker processes, each run written to the
 * results database in one transaction; finished runs are skipped on resume.
 * Shared by tally-sim (simulated device) and tally-run (CUDA device). */
#ifndef TALLY_SWEEP_H
#define TALLY_SWEEP_H

#include <stdbool.h>
#include <stdio.h>

#include "tally/device.h"
#include "tally/spec.h"

/* Opens a fresh device for one run (the sweep closes it with tl_dev_close). */
typedef int (*tl_device_factory)(void *arg, tl_device *dev, const tl_gpu_props *gpu, tl_err *err);

/* The simulator as a tl_device_factory: arg is the tl_experiment, whose
 * sim_params (the spec's and --sim-param) apply on top of the GPU's defaults. */
int tl_sweep_open_sim(void *experiment, tl_device *dev, const tl_gpu_props *gpu, tl_err *err);

typedef struct tl_sweep_options {
    const char *db_path;
    const char *db_label;     /* how the start line names the database (a temporary
                                 one: what it is for); NULL: db_path */
    int workers;              /* worker processes; <= 1: run in this process */
    bool force;               /* re-run finished runs, each replacing the run of its key */
    bool quiet;               /* no progress bar */
    bool stats;               /* JSON lines of engine statistics on stderr */
    const char *kind;         /* "sim" or "hw" (runs.kind) */
    tl_device_factory open_device;
    void *device_arg;
    const char *driver, *clocks; /* recorded in runs (hardware) */
} tl_sweep_options;

/* Command-line overrides of a spec (or a whole spec without a file). */
typedef struct tl_spec_overrides {
    const char *spec_path;
    const char *gpu;
    const char *policies[64];
    int n_policies;
    const char *jobs[64];     /* "trace=PATH,role=...,..." */
    int n_jobs;
    double loads[64];
    int n_loads;
    double duration_s, warmup_s; /* < 0: unset */
    long long seed;              /* < 0: unset */
    int repetitions;             /* 0: unset */
    bool kernels;
    const char *sim_params[64];  /* "KEY=VALUE" (--sim-param) */
    int n_sim_params;
} tl_spec_overrides;

void tl_spec_overrides_init(tl_spec_overrides *o);
/* Build the experiment from a spec file and/or overrides. */
int tl_experiment_from_overrides(tl_experiment *e, const tl_spec_overrides *o, tl_err *err);

/* Load the experiment's traces and arrival files as tl_sweep_run does, check
 * them the same way and let them go: a missing file (TL_EIO) or a bad one is
 * said before anything costly, such as looking for a GPU. */
int tl_sweep_check_inputs(const tl_experiment *e, tl_err *err);

/* Run the grid; prints the summary table to 'summary' (deterministic text).
 * Runs already in the database are skipped (resume) where the files their jobs
 * read now are the ones they recorded (runs.inputs, tally/digest.h); one that
 * differs is TL_EFORMAT, naming the file, before anything runs (o->force runs
 * them again). Runs that recorded none are skipped unchecked, with a note. */
int tl_sweep_run(const tl_experiment *e, const tl_sweep_options *o, FILE *summary, tl_err *err);

#endif
