/* The runner: replays jobs' host timelines on a device under a policy.
 *
 * For every job the runner plays its trace iteration after iteration: it waits
 * out each op's host gap, issues the op (GPU work becomes a tl_task handed to
 * the policy), blocks the job's host on syncs and blocking copies until the
 * awaited tasks are complete, and resolves cross-stream event waits. Inference
 * jobs play one iteration per request, requests arriving by the job's arrival
 * process (queueing behind earlier requests counts in latency); training jobs
 * loop (closed loop). The same runner drives the simulator and real hardware:
 * it only talks to tl_device and tl_policy.
 */
#ifndef TALLY_RUNNER_H
#define TALLY_RUNNER_H

#include <stdbool.h>
#include <stdio.h>

#include "tally/device.h"
#include "tally/policy.h"
#include "tally/trace.h"

typedef enum tl_arrival_kind {
    TL_ARRIVAL_CLOSED = 0,       /* next request/iteration as soon as the last one ends */
    TL_ARRIVAL_POISSON_RATE = 1, /* Poisson, 'rate' requests per second */
    TL_ARRIVAL_POISSON_LOAD = 2, /* Poisson at 'load' x the job's solo capacity
                                    (rate = load / mean solo iteration time) */
    TL_ARRIVAL_FILE = 3,         /* times (seconds, one per line) from 'arrival_file' */
} tl_arrival_kind;

typedef struct tl_job_spec {
    const char *name;
    const tl_trace *trace;       /* loaded trace (borrowed) */
    tl_role role;
    int priority;                /* rank, 0 most important */
    tl_ns slo_ns;
    tl_arrival_kind arrival;
    double rate;                 /* POISSON_RATE: requests/s */
    double load;                 /* POISSON_LOAD: fraction of solo capacity, (0, 1] */
    const tl_ns *arrival_times;  /* FILE: sorted arrival times (borrowed) */
    size_t n_arrival_times;
    double sm_percent;           /* per-job MPS cap for policies that use it */
    uint64_t model_bytes;        /* PipeSwitch model size */
    uint32_t rng_stream;         /* random stream of this job's arrivals: keep it equal
                                    between a shared run and the job's alone run */
} tl_job_spec;

typedef struct tl_run_config {
    const tl_job_spec *jobs;
    int n_jobs;
    const tl_policy_ops *policy;
    const json_t *policy_params; /* may be NULL */
    tl_ns duration_ns;           /* measured window length, after warm-up */
    tl_ns warmup_ns;             /* discarded start */
    uint64_t seed;
    bool record_kernels;         /* keep per-kernel records */
    bool progress;               /* progress on stderr for long runs */
    uint32_t max_iterations;     /* training: start no iteration past this many (0: no limit) */
} tl_run_config;

typedef struct tl_request_rec {
    int job;
    uint32_t id;                 /* request/iteration number since start */
    tl_ns arrival_ns;            /* arrival (closed loop: when it could start) */
    tl_ns start_ns;              /* host began it */
    tl_ns end_ns;                /* max(host end, last GPU op end) */
    tl_ns busy_ns;               /* GPU busy time of its ops (union of their intervals) */
} tl_request_rec;

typedef struct tl_run_result {
    tl_request_rec *recs;        /* every request/iteration completed inside the window */
    size_t n_recs, cap_recs;
    tl_kernel_record *kernels;   /* when record_kernels (op pointers into traces) */
    size_t n_kernels, cap_kernels;
    tl_job_stats *job_stats; /* per job, measured over the window */
    int n_jobs;
    tl_ns window_start_ns, window_end_ns;
    uint64_t tasks;              /* tasks completed */
} tl_run_result;

/* Mean solo iteration time of a trace as used for POISSON_LOAD (traced_ns mean). */
tl_ns tl_trace_mean_iteration(const tl_trace *t);

/* Can the trace be replayed on g: every kernel's block fits one of its SMs
 * (else CUDA would not launch it), and its streams are within
 * TL_MAX_JOB_STREAMS. TL_ERANGE naming the trace and the kernel if not. */
int tl_trace_check_replayable(const tl_trace *t, const tl_gpu_props *g, tl_err *err);

/* After the window a run drains: it waits for the work in flight at most
 * this long after window_end (warm-up + window): 10x window_end, and at least
 * 60 s (a short window's long request). Work still unfinished then, or a
 * job's queue of waiting requests past its limit, fails the run: TL_ERANGE. */
tl_ns tl_run_drain_ns(tl_ns window_end);

int tl_run(const tl_run_config *cfg, tl_device *dev, tl_run_result *out, tl_err *err);
void tl_run_result_close(tl_run_result *r);

#endif
