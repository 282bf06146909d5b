/* Experiment specs: JSON (or the same given as command-line options) that name
 * a GPU, jobs, policies and the sweep grid; expanded into run items.
 *
 * {
 *   "name": "tally-headline",            experiment name (default: file name)
 *   "gpu": "H100",                        built-in GPU (tally-sim --list-gpus)
 *   "duration_s": 10, "warmup_s": 1,      measured window and discarded start
 *   "seed": 1, "repetitions": 1,          repetition r uses seed derived from (seed, r)
 *   "kernels": false,                     also store per-kernel records
 *   "policies": ["tally", {"name": "mps", "params": {...}}],
 *   "jobs": [ JOB, ... ]            or    "job_sets": [[JOB, ...], ...]
 *   "loads": [0.3, 0.5]                   optional: overrides every inference job's
 *                                         arrival with Poisson at that load
 * }
 * JOB = {"name": "bert", "trace": "path.json.gz", "role": "inference"|"training",
 *        "priority": 0, "slo_ms": 20, "sm_percent": 50, "model_mb": 100,
 *        "arrival": {"kind": "poisson", "rate": 100} | {"kind": "poisson", "load": 0.5}
 *                 | {"kind": "closed"} | {"kind": "file", "path": "times.txt"},
 *        "skip_iterations": 0, "iteration_kernel": "name substring",
 *        "graph": false}      true: replay each iteration as one CUDA-graph launch
 *                             (host gaps inside iterations dropped; what-if)
 * Trace and arrival paths are relative to the current folder, else to the spec's.
 * Unknown keys are errors (a typo must not silently change an experiment).
 */
#ifndef TALLY_SPEC_H
#define TALLY_SPEC_H

#include <jansson.h>
#include <stdbool.h>

#include "tally/runner.h"
#include "tally/gpu.h"
#include "tally/policy.h"

/* The longest window (duration_s) and warm-up (warmup_s) of a run: a day. */
#define TL_SPEC_MAX_SECONDS 86400
/* The ranges the spec's duration_s and warmup_s and the --duration and --warmup
 * options share: a window in (0, TL_SPEC_MAX_SECONDS] seconds of at least 1 ns
 * (below 0.5 ns it rounds to a run of no time), a warm-up in [0, the same]. */
bool tl_spec_duration_ok(double seconds);
bool tl_spec_warmup_ok(double seconds);

typedef struct tl_job_conf {
    char *name;
    char *trace_path;
    tl_role role;
    int priority;
    tl_ns slo_ns;
    tl_arrival_kind arrival;
    double rate, load;
    char *arrival_path;
    double sm_percent;
    uint64_t model_bytes;
    int skip_iterations;
    char *iteration_kernel;
    bool graph;                  /* what-if: iterations launched as CUDA graphs */
} tl_job_conf;

typedef struct tl_policy_conf {
    const tl_policy_ops *ops;
    json_t *params;              /* object, may be NULL */
} tl_policy_conf;

typedef struct tl_job_set {
    tl_job_conf *jobs;
    int n_jobs;
} tl_job_set;

typedef struct tl_experiment {
    char *name;
    char *path;                  /* spec file, NULL when built from options */
    tl_gpu_props gpu;
    tl_ns duration_ns, warmup_ns;
    uint64_t seed;
    int repetitions;
    bool record_kernels;
    tl_policy_conf *policies;
    int n_policies;
    tl_job_set *sets;
    int n_sets;
    double *loads;               /* NULL: jobs keep their own arrivals */
    int n_loads;
    char *sim_params;            /* simulator parameters set by the spec or --sim-param,
                                    "KEY=VALUE;..." in key order; NULL: the defaults */
    bool hardware;               /* runs on a real GPU (tally-run): the simulator's model
                                    revision is not part of their configs and keys */
    tl_ns graph_capacity_gap_ns; /* > 0: graph jobs' solo capacity, and so their arrivals
                                    at a load, count this gap instead of the simulated
                                    graph_gap_ns (a simulated twin of hardware runs keeps
                                    their arrival times: tally-validate); not in run keys */
} tl_experiment;

/* One run of the grid. policy < 0 means the 'alone' baseline of job alone_job. */
typedef struct tl_run_item {
    int policy;
    int set;
    int load;                    /* index into loads, -1 none */
    int repetition;
    int alone_job;               /* for alone items: job index in the set; else -1 */
    uint64_t seed;
    char key[33];                /* resume key: hash of the canonical config */
    json_t *config;              /* canonical config (owned) */
} tl_run_item;

void tl_experiment_init(tl_experiment *e);
/* Set one simulator parameter "KEY=VALUE" (tl_sim_params_set names) on top of
 * the experiment's own; checked against the GPU's defaults. */
int tl_experiment_set_sim_param(tl_experiment *e, const char *assignment, tl_err *err);
/* Replace the experiment's loads with the command line's (--load): checked as
 * a spec's 'loads' are, against the jobs already parsed; mistakes are usage
 * errors (TL_EUNKNOWN). */
int tl_experiment_set_loads(tl_experiment *e, const double *loads, int n, tl_err *err);
void tl_experiment_close(tl_experiment *e);
int tl_experiment_load(tl_experiment *e, const char *path, tl_err *err);
/* base_dir resolves relative paths (may be NULL); origin names the source in errors.
 * The spec's "gpu", else a GPU already in e->gpu, else the H100. */
int tl_experiment_from_json(tl_experiment *e, const json_t *spec, const char *origin,
                            const char *base_dir, tl_err *err);
/* Check the parts of a spec that the command line replaces ('policies' when
 * policies, 'jobs' or 'job_sets' when jobs) as tl_experiment_from_json would,
 * without keeping them: a mistake in the spec surfaces whatever the command
 * line runs instead. Parts the spec does not have are not checked. */
int tl_spec_check_replaced(const json_t *spec, bool policies, bool jobs, const char *origin,
                           const char *base_dir, tl_err *err);

/* Expand the grid: alone items first (one per distinct job config), then one per
 * policy x set x load x repetition. Caller frees with tl_run_items_free. */
int tl_experiment_expand(const tl_experiment *e, tl_run_item **items, size_t *n, tl_err *err);
void tl_run_items_free(tl_run_item *items, size_t n);

/* The job confs of an item, with the item's load applied (alone items: one job). */
void tl_item_job_confs(const tl_experiment *e, const tl_run_item *it,
                       tl_job_conf *out, int *n_out);
/* Key of the alone run of job j (index in the item's set) matching item it. */
void tl_item_alone_key(const tl_experiment *e, const tl_run_item *it, int j, char key[33]);
const char *tl_role_name(tl_role r);

#endif
