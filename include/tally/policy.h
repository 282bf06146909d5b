/* Policies: how jobs share the GPU. One const ops table per policy (like the
 * kernel's struct sched_class), found by name in a registry, driving any
 * tl_device (simulated or real) through device.h only.
 *
 * The runner replays each job's host timeline. Whenever a job's host issues a
 * GPU operation (kernel, copy, memset) it becomes a tl_task handed to the
 * policy's submit hook. The policy decides when and how it runs on the device
 * and must eventually call tl_task_complete() exactly once for it. Tasks of one
 * job must complete in the order the job's streams imply (per-stream FIFO); the
 * simple way is to launch them on a device stream per (job, trace stream).
 * Host waits, event dependencies and request accounting are the runner's work.
 */
#ifndef TALLY_POLICY_H
#define TALLY_POLICY_H

#include <stdbool.h>
#include <stdio.h>
#include <jansson.h>

#include "tally/device.h"
#include "tally/trace.h"

typedef enum tl_role {
    TL_ROLE_INFERENCE = 0, /* latency-critical: requests arrive, latency counts */
    TL_ROLE_TRAINING = 1,  /* best-effort: throughput counts */
} tl_role;

#define TL_MAX_JOB_STREAMS 64

/* What a policy may know about a job. */
typedef struct tl_job {
    int id;                  /* 0..n_jobs-1 */
    const char *name;
    tl_role role;
    int priority;            /* rank: 0 is the most important; larger is less */
    tl_ns slo_ns;            /* 0: none */
    double sm_percent;       /* per-job MPS active-thread percentage; 0 = unset */
    uint64_t model_bytes;    /* model size (PipeSwitch transfers); 0 = unknown */
    const tl_trace *trace;
    void *policy_data;       /* the policy's own per-job state */
} tl_job;

/* A GPU operation the job's host has issued. */
typedef struct tl_task {
    tl_job *job;
    const tl_op *op;         /* kernel, memcpy or memset */
    uint32_t iter;           /* iteration of the trace */
    uint32_t index;          /* op index inside the iteration */
    uint64_t seq;            /* per-job issue order, from 0 */
    tl_ns issued_ns;         /* when the host issued it */
    void *runner_data;       /* the runner's; do not touch */
    void *policy_data;       /* the policy's, free for use */
} tl_task;

typedef struct tl_policy tl_policy;
typedef struct tl_runtime tl_runtime; /* the runner, opaque to policies */

/* Declared parameters: parsed and checked generically from the spec entry
 * (unknown name, wrong type, out of range: an error naming policy and param). */
typedef enum tl_param_type { TL_PARAM_INT, TL_PARAM_DOUBLE, TL_PARAM_BOOL, TL_PARAM_NS_FROM_MS,
                             TL_PARAM_DOUBLE_LIST /* JSON array of numbers -> tl_param_list */
} tl_param_type;
/* Storage of a TL_PARAM_DOUBLE_LIST parameter (e.g. one value per job); the
 * range applies to every element; default: empty (n = 0). */
#define TL_PARAM_LIST_MAX 64
typedef struct tl_param_list {
    int n;
    double v[TL_PARAM_LIST_MAX];
} tl_param_list;
typedef struct tl_param_desc {
    const char *name;
    tl_param_type type;     /* NS_FROM_MS: given in milliseconds (double), stored as tl_ns */
    size_t offset;          /* into the policy state (offsetof) */
    double def, min, max;   /* default and inclusive range */
    const char *doc;
} tl_param_desc;

typedef struct tl_policy_ops {
    const char *name;        /* registry key, e.g. "priority-streams" */
    const char *summary;     /* one line for --list-policies */
    size_t state_size;       /* private state, zeroed, then params filled in */
    const tl_param_desc *params; /* NULL-name terminated; may be NULL */
    /* Optional: check what single-parameter ranges cannot (e.g. min <= max),
     * after the parameters are filled into a zeroed state; runs whenever
     * parameters are parsed (tl_policy_init, tl_policy_check_params). */
    int (*check_params)(const void *state, tl_err *err);
    /* Required: create contexts and streams for every job. */
    int (*setup)(tl_policy *p, tl_err *err);
    /* Required: a job's host issued a GPU operation. */
    void (*submit)(tl_policy *p, tl_task *t);
    /* Optional: a job has no issued-but-incomplete tasks left. */
    void (*job_idle)(tl_policy *p, tl_job *job);
    /* Optional: an inference request of job arrived (before its first task). */
    void (*request_arrived)(tl_policy *p, tl_job *job);
    /* Optional: release what setup allocated. */
    void (*teardown)(tl_policy *p);
    /* Optional: whether the parsed parameters suit a run of n_jobs jobs (a
     * per-job list longer than the jobs), as setup would find; a spec checks
     * each of its job sets when it loads (tl_policy_check_jobs). */
    int (*check_jobs)(const void *state, int n_jobs, tl_err *err);
} tl_policy_ops;

struct tl_policy {
    const tl_policy_ops *ops;
    void *state;             /* state_size bytes, owned by the framework */
    tl_device *dev;
    tl_runtime *rt;
    tl_job *jobs;
    int n_jobs;
    /* First failure met inside a hook (the device refused a launch, copy or
     * timer): code 0 if none. Hooks cannot return errors, so a policy records
     * the failure here (tl_policy_fail), completes the task at the current time
     * so that nothing hangs, and the runner reports it after the run. */
    tl_err error;
    /* Framework-owned: records of finished tl_policy_run_plain_then launches,
     * kept for reuse (one malloc per launch showed in profiles), and every
     * record made (with those of launches still in flight when a run was cut
     * short); freed by tl_policy_close. */
    void *spare_launches;
    void *all_launches;
};

/* Registry. */
const tl_policy_ops *tl_policy_find(const char *name);
const tl_policy_ops *const *tl_policy_all(void); /* NULL-terminated, stable order */

/* Check a policy's parameters (names, types, ranges) as tl_policy_init would,
 * without a device: for specs, so that a bad value fails before any run. */
int tl_policy_check_params(const tl_policy_ops *ops, const json_t *params, tl_err *err);
/* The same, and whether they suit a run of n_jobs jobs (ops->check_jobs). */
int tl_policy_check_jobs(const tl_policy_ops *ops, const json_t *params, int n_jobs, tl_err *err);

/* Lifecycle (framework side). params may be NULL (all defaults). */
int tl_policy_init(tl_policy *p, const tl_policy_ops *ops, const json_t *params,
                   tl_device *dev, tl_runtime *rt, tl_job *jobs, int n_jobs, tl_err *err);
int tl_policy_setup(tl_policy *p, tl_err *err);
void tl_policy_submit(tl_policy *p, tl_task *t);
void tl_policy_job_idle(tl_policy *p, tl_job *j);
void tl_policy_request_arrived(tl_policy *p, tl_job *j);
void tl_policy_close(tl_policy *p);

/* Called by the policy when a task's work is done on the device. */
void tl_task_complete(tl_runtime *rt, tl_task *t, tl_ns start_ns, tl_ns end_ns);

/* Helpers for policies. */
/* Launch t's op as it is (kernel: whole grid; copy/memset) on stream s; on
 * completion call tl_task_complete. */
int tl_policy_run_plain(tl_policy *p, tl_task *t, tl_stream_id s);
/* CUDA stream priority for a job rank on this GPU: greatest + rank, capped at 0. */
int tl_policy_stream_priority(const tl_policy *p, int rank);
/* Map (job, trace stream) to device streams: one device stream per trace stream,
 * created on ctx with the given priority. Stored in a table the helper owns. */
typedef struct tl_stream_map {
    tl_stream_id s[TL_MAX_JOB_STREAMS];
    int n;
} tl_stream_map;
int tl_stream_map_create(tl_stream_map *m, tl_device *dev, tl_ctx_id ctx,
                         const tl_job *job, int priority, tl_err *err);
tl_stream_id tl_stream_map_get(const tl_stream_map *m, const tl_op *op);

/* ---- More helpers for policies (core/policy.c) ---- */

/* Print the policy's parameters (name, type, default, range, doc), one a line. */
void tl_policy_print_params(FILE *f, const tl_policy_ops *ops);

/* Record the first failure met inside a hook (see tl_policy.error). */
void tl_policy_fail(tl_policy *p, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* High-priority jobs: those of the smallest rank present (rank 0 normally). */
bool tl_policy_job_is_high(const tl_policy *p, const tl_job *j);
/* Least CUDA stream priority (0): where best-effort work goes. */
#define TL_STREAM_PRIO_LEAST 0

/* Like tl_policy_run_plain, but done(p, t, r) runs when the launch ends, just
 * before tl_task_complete (t is still valid then). done may be NULL. If the
 * device refuses the launch, the failure is recorded (tl_policy_fail), done is
 * not called and the task is completed at once; the code is returned. */
typedef void (*tl_task_done_fn)(tl_policy *p, tl_task *t, const tl_launch_result *r);
int tl_policy_run_plain_then(tl_policy *p, tl_task *t, tl_stream_id s, tl_task_done_fn done);

/* Complete a task that could not run (after tl_policy_fail): at the current time. */
void tl_policy_complete_now(tl_policy *p, tl_task *t);

/* Per-job setup most policies share: each job gets a context of the given
 * kind (shared: one context for all jobs, job = -1) and a stream map at the
 * given priority per job. maps has n_jobs entries; ctxs (may be NULL) too. */
typedef struct tl_job_ctx_plan {
    bool shared;              /* one context for every job */
    tl_ctx_kind kind;
    /* per job: filled in by the caller before the call, or left zero */
    const double *sm_percent; /* MPS caps per job (NULL: 100) */
    const int *mps_priority;  /* MPS client priority per job (NULL: 0) */
    const int *stream_prio;   /* stream priority per job (NULL: by rank) */
} tl_job_ctx_plan;
int tl_policy_setup_jobs(tl_policy *p, const tl_job_ctx_plan *plan, tl_ctx_id *ctxs,
                         tl_stream_map *maps, tl_err *err);

/* A FIFO of tasks (a growable ring), for policies that hold tasks back. */
typedef struct tl_task_queue {
    tl_task **v;
    size_t head, len, cap;
} tl_task_queue;
void tl_task_queue_init(tl_task_queue *q);
void tl_task_queue_close(tl_task_queue *q);
void tl_task_queue_push(tl_task_queue *q, tl_task *t);
tl_task *tl_task_queue_peek(const tl_task_queue *q); /* NULL if empty */
tl_task *tl_task_queue_pop(tl_task_queue *q);        /* NULL if empty */

#endif
