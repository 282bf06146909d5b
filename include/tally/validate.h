/* Validation: simulated runs checked against hardware runs of the same spec.
 *
 * A simulated run and a hardware run are the same run when their run configs
 * (runs.config: policy and its parameters, job set with arrivals, load, seed,
 * repetition, duration, warm-up) are equal once the fields that name the
 * device are dropped ("kind", "gpu", "kernels") and trace and arrival paths are
 * reduced to their file names (the two may have been run from different
 * folders). Matched pairs are grouped by policy, parameters, job set and load
 * (a "cell"); a cell's metrics are means over its pairs, and every error is
 * sim / hw - 1 of those means.
 *
 * Rankings: in each job set and load, the policies (not 'alone') ordered by
 * the high-priority inference job's p99 overhead (lowest first) and by system
 * throughput (highest first), once from simulated and once from measured
 * values; they agree when the two orders are the same. Kendall's tau-b says
 * how far apart they are (1: same order, -1: reversed). Policies the hardware
 * cannot tell apart make a strict order a coin toss, so a second verdict
 * counts only the pairs the hardware separates by more than its resolution
 * (TL_VAL_TIE_P99 of p99 overhead, TL_VAL_TIE_SYS of system throughput): a
 * pair is discordant when the simulator does not order it the same way; the
 * rankings agree up to ties when no pair is discordant.
 */
#ifndef TALLY_VALIDATE_H
#define TALLY_VALIDATE_H

#include <stdbool.h>
#include <stdio.h>

#include "tally/analysis.h"
#include "tally/common.h"
#include "tally/spec.h"

/* Per job of a cell: means over the cell's pairs (NaN where no run had it). */
typedef struct tl_val_job {
    char *name;
    char *role;                 /* "inference" or "training" */
    int priority;
    double sim[TL_M_COUNT], hw[TL_M_COUNT];
    bool grows_sim, grows_hw;   /* inference: its queue grows through a run of that side
                                   (tl_val_queue_grows), in any of the cell's pairs */
    double p99_hw_lo, p99_hw_hi;/* inference: the hardware p99's 90% range (tl_val_p99_range
                                   of each hardware run, means over the pairs; NaN: unknown) */
    double slow_sim, slow_hw;   /* inference: tl_slow_phases of each side's runs, means
                                   over the pairs (NaN: unknown) */
} tl_val_job;

typedef struct tl_val_cell {
    char *experiment;           /* the hardware runs' experiment */
    char *policy;               /* or "alone" */
    char *params;               /* policy parameters as JSON ("" for none) */
    bool has_load;
    double load;
    char *jobsig;               /* job names joined by '+' */
    int n_pairs;                /* matched sim/hw run pairs (repetitions) */
    long long *sim_ids, *hw_ids;/* their run ids in each database */
    int *src;                   /* the source (tl_validation.sources) of each pair */
    tl_val_job *jobs;
    int n_jobs;
    int hp;                     /* index of the high-priority inference job, -1 none */
    double sys_sim, sys_hw;     /* system throughput (NaN: unknown) */
} tl_val_cell;

typedef enum tl_val_rank_metric {
    TL_VAL_RANK_P99_OVERHEAD = 0, /* high-priority p99 overhead, lowest first */
    TL_VAL_RANK_SYS_THROUGHPUT,   /* system throughput, highest first */
    TL_VAL_RANK_COUNT
} tl_val_rank_metric;

/* The hardware's resolution for rankings: differences within these are ties
 * (p99 overhead as a fraction: 0.02 = 2 percentage points; system throughput
 * in jobs' worth of solo throughput). Repetitions of the same run on the H100
 * differ by about this much (experiments/results/hw/validation.md). */
#define TL_VAL_TIE_P99 0.02
#define TL_VAL_TIE_SYS 0.02

typedef struct tl_val_ranking {
    char *experiment;
    char *scope;                /* "JOBSIG load L", or "mean over job sets" */
    tl_val_rank_metric metric;
    int n;                      /* policies ranked */
    char **policies;            /* cell labels (policy, plus parameters if any) */
    double *sim, *hw;           /* their values */
    int *order_sim, *order_hw;  /* indices into policies, best first */
    bool same;                  /* identical orders */
    int separated;              /* pairs the hardware orders by more than the tie band */
    int discordant;             /* of those, pairs the simulator orders otherwise */
    bool *over_hw;              /* the policies whose high-priority queue grows on the
                                   hardware (in any job set, for the mean over them) */
    int separated_ov, discordant_ov; /* p99 overhead: the same with two policies whose
                                   high-priority queue grows on the hardware tied
                                   (tl_val_count_pairs); else as above */
    double tau;                 /* Kendall tau-b; NaN when undefined */
} tl_val_ranking;

/* One pair of databases a validation reads: hardware runs and their twins. */
typedef struct tl_val_source {
    char *hw_path, *sim_path;
    size_t hw_runs, sim_runs;   /* finished runs considered in each */
    size_t matched;             /* pairs */
    char *sim_params;           /* simulator parameters of its first matched simulated run
                                   ("KEY=VALUE;...", "" for the GPU's defaults) */
    char *hw_graph_calib;       /* how tally-run calibrated graph jobs' kernels (meta
                                   hw_graph_calibration of hw_path: "node" or "launch");
                                   NULL when not recorded (runs before session 12: launches) */
} tl_val_source;

typedef struct tl_validation {
    tl_val_cell *cells;         /* sorted: experiment, alone first, job set, load, policy */
    size_t n_cells;
    tl_val_ranking *ranks;
    size_t n_ranks;
    size_t hw_runs, sim_runs;   /* finished runs considered, summed over the sources */
    size_t matched;             /* pairs, summed over the sources */
    char *hw_gpu, *sim_gpu;     /* runs.gpu of the first matched pair */
    /* The database pairs read, in order (at least one): several are hardware
     * runs of one spec from several sessions, each simulated with what its
     * database recorded; a cell's pairs pool the repetitions of all. */
    tl_val_source *sources;
    size_t n_sources;
} tl_validation;

/* Match the runs of the two databases (only hardware runs of 'experiment' when
 * not NULL) and fill v. No pair at all: TL_EMISSING with a hint. */
int tl_validation_load(tl_validation *v, const char *sim_db, const char *hw_db,
                       const char *experiment, tl_err *err);
/* The same for n pairs of databases (sim_dbs[i] holds the twins of
 * hw_dbs[i]'s runs): runs are matched within each pair only, and the pairs of
 * every source pooled in one cell per policy, job set and load. Every source
 * must match at least one pair. sim_experiment (NULL: any) keeps only the
 * simulated runs of that experiment: those just simulated from a spec, not
 * older runs a kept simulated database also holds. */
int tl_validation_load_many(tl_validation *v, size_t n, const char *const *sim_dbs,
                            const char *const *hw_dbs, const char *experiment,
                            const char *sim_experiment, tl_err *err);
void tl_validation_close(tl_validation *v);

/* The report: per cell and job simulated vs measured p50, p99, throughput and
 * errors, then the rankings and a summary against the goals (p99 within 10%,
 * training throughput within 5%). */
void tl_validation_print(const tl_validation *v, FILE *out);
/* The same as Markdown; 'command' (may be NULL) is quoted at the top. */
int tl_validation_write_markdown(const tl_validation *v, const char *path, const char *command,
                                 tl_err *err);
/* One CSV row per cell and job plus a "system" row per shared cell. */
int tl_validation_write_csv(const tl_validation *v, const char *path, tl_err *err);

/* Write the matched runs of both databases into one new database (out_path),
 * so that tally-plot can compare them: run keys get a "sim:"/"hw:" prefix
 * (the two kinds share run keys), simulated runs take the hardware runs'
 * experiment name. Per-kernel records are not copied. out_path must not exist
 * unless it is an earlier combined database, which is replaced. */
int tl_validation_combine(const tl_validation *v, const char *out_path, tl_err *err);
/* tl_plot_simhw on a combined database, for the validated experiments. */
int tl_validation_plot(const tl_validation *v, const char *combined_db, const tl_plot_opts *o,
                       tl_err *err);

/* The experiment to simulate for the hardware runs of hw_db: the spec, with
 * the policies (and parameters), duration, warm-up and repetitions the
 * hardware runs used; seed >= 0 replaces the spec's. */
int tl_validation_experiment(tl_experiment *e, const char *spec_path, const char *hw_db,
                             const char *experiment, long long seed, tl_err *err);
/* The base seed the hardware runs of hw_db were made with, when it is not the
 * spec's: runs store only their derived seeds (tl_rng_derive_seed of the base
 * and the repetition), so each base up to TL_VALIDATION_SEED_SEARCH is tried.
 * 1 and *seed set when another base derives every run's seed; 0 when the
 * spec's does, or none up to the limit does (the runs then match nothing and
 * the report says so, as for a spec that does not load); < 0 on database
 * errors. */
#define TL_VALIDATION_SEED_SEARCH 100000
int tl_validation_hw_seed(const char *spec_path, const char *hw_db, const char *experiment,
                          long long *seed, tl_err *err);
/* A value of hw_db's meta table (e.g. hw_stream_gap_ns, written by tally-run):
 * 1 and the value in buf if there, 0 if not, < 0 on errors. Read-only. */
int tl_validation_hw_meta(const char *hw_db, const char *key, char *buf, size_t cap, tl_err *err);
/* The simulator parameters tally-run recorded of its replay in hw_db (meta
 * hw_stream_gap_ns: the synthetic kernels' back-to-back gap -> stream_gap_ns;
 * hw_graph_gap_ns: the same inside a CUDA graph -> graph_gap_ns; the alone
 * runs of graph inference jobs' run metrics cuda_graph_lag_sum_ns and
 * cuda_graph_lag_ops: the replay's issue cost of a graph, launch call
 * included -> graph_node_ns = their mean per op and graph_launch_ns = 0,
 * unless e sets either) and e does not set already, set on e; "KEY=VALUE;..."
 * of what was set in applied ("" none; cut to cap). */
int tl_validation_hw_params(tl_experiment *e, const char *hw_db, char *applied, size_t cap,
                            tl_err *err);
/* Simulate e into sim_db (runs already there are kept: resume); label: how
 * the start line on stderr names sim_db (NULL: its path). */
int tl_validation_simulate(const tl_experiment *e, const char *sim_db, const char *label,
                           int workers, bool quiet, tl_err *err);

/* Does a job's request queue grow through a run, so that its p99 depends on
 * how long the run is (requests arrive faster than the job is served)?
 * arrival, latency: its finished requests in order of arrival (any unit, the
 * same for both); unfinished: requests that arrived and never finished. Yes
 * when more than TL_VAL_UNFINISHED of the requests never finished, or when the
 * median latency of the last quarter of the finished ones exceeds the first
 * quarter's by more than TL_VAL_GROWTH of the time between the two quarters'
 * median arrivals (the job falls behind by that share of the time; a steady
 * queue's quarters differ by noise, a few ms over seconds). Fewer than 8
 * finished requests: no. */
#define TL_VAL_GROWTH 0.02
#define TL_VAL_UNFINISHED 0.05
bool tl_val_queue_grows(const double *arrival, const double *latency, size_t n, size_t unfinished);

/* Pairs of n policies that the hardware's values hw order by more than band
 * (*separated) and, of those, pairs that the simulator's values sim order the
 * other way or not at all (*discordant). With over (NULL: none), two policies
 * both marked are not separated: their high-priority queue grows on the
 * hardware, so their p99 has no steady-state value to order them by (it
 * depends on how long the run is). */
void tl_val_count_pairs(const double *sim, const double *hw, const bool *over, int n, double band,
                        int *separated, int *discordant);

/* How far one run's p99 latency could have landed: a block bootstrap over
 * windows of TL_VAL_WINDOW_NS of arrival time (a stall delays a cluster of
 * requests together, so requests are not resampled one by one):
 * TL_VAL_RESAMPLES resamples of as many windows, drawn with replacement by a
 * generator of fixed seed (the same data give the same range); *lo and *hi
 * the 5th and 95th percentiles of their nearest-rank p99s. NaN for both with
 * fewer than TL_VAL_MIN_WINDOWS windows holding requests. arrival sorted. */
#define TL_VAL_WINDOW_NS 1e9
#define TL_VAL_RESAMPLES 200
#define TL_VAL_MIN_WINDOWS 4
void tl_val_p99_range(const double *arrival, const double *latency, size_t n, double *lo,
                      double *hi);

/* A hardware run with TL_VAL_SLOW_EXCESS or more slow phases (tl_slow_phases,
 * include/tally/metrics.h) than its simulated twin was slowed by something
 * outside the experiment: session 18's seeds 7 and 8 had 5-12 phases of 10-60 ms
 * in every MobileNetV3 run (service time 2.2x for tens of ms), and their p99
 * missed the simulator's by -32 to -65% where the other runs' came within 10%. */
#define TL_VAL_SLOW_EXCESS 3

/* Kendall's tau-b of two paired samples (NaN when n < 2 or a side is all ties). */
double tl_kendall_tau_b(const double *x, const double *y, int n);

#endif
