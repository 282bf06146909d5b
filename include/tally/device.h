/* The device interface: the one contract between policies and a GPU.
 *
 * Two implementations: sim/ (the discrete-event GPU model) and backend/ (CUDA
 * on a real GPU). A policy sees only this header (plus policy.h); it never
 * touches model internals or CUDA. Like sqlite3_vfs, a device is a const ops
 * table plus private state; call sites use the tl_dev_* wrappers below and
 * never poke the table.
 *
 * Threading: everything (callbacks, timers) happens on the thread that calls
 * tl_dev_run. Callbacks may call back into the device (launch, timer, ...).
 *
 * Priorities follow CUDA: 0 is the least, gpu.stream_prio_greatest (e.g. -5)
 * the greatest; lower numbers run first.
 */
#ifndef TALLY_DEVICE_H
#define TALLY_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/common.h"
#include "tally/gpu.h"
#include "tally/trace.h"

typedef struct tl_device tl_device;
typedef int32_t tl_ctx_id;
typedef int32_t tl_stream_id;
typedef uint64_t tl_launch_id;

typedef enum tl_ctx_kind {
    TL_CTX_TIMESLICED = 0, /* an ordinary context: time-sliced against other contexts */
    TL_CTX_MPS = 1,        /* an MPS client: runs concurrently with other MPS clients */
    TL_CTX_PARTITION = 2,  /* a fixed SM partition (green context): concurrent, own SMs */
} tl_ctx_kind;

typedef struct tl_ctx_config {
    tl_ctx_kind kind;
    int job;             /* job that owns it (accounting); -1 if shared */
    double sm_percent;   /* MPS: active thread percentage, (0,100]; 0 means 100 */
    int mps_priority;    /* MPS: client priority 0 (normal) or 1 (below normal), a hint */
    int sm_count;        /* PARTITION: SMs of the partition (>0) */
} tl_ctx_config;

/* A kernel launch: the traced op gives shape and solo duration. A slice runs
 * logical blocks [block_begin, block_end); PTB runs ptb_workers_per_sm worker
 * blocks per SM that pull logical blocks from [block_begin, block_end) until the
 * range is done or the launch is told to retreat. */
typedef struct tl_kernel_desc {
    const tl_op *op;        /* kind TL_OP_KERNEL */
    int job;                /* job the work belongs to (accounting, timeline) */
    uint64_t block_begin;   /* first logical block (0 for a full launch) */
    uint64_t block_end;     /* one past the last; 0 means the whole grid */
    uint32_t ptb_workers_per_sm; /* 0: ordinary launch; >0: persistent worker blocks */
    uint64_t tag;           /* caller's tag, echoed in results and kernel records */
} tl_kernel_desc;

typedef struct tl_launch_result {
    tl_launch_id id;
    tl_ns start_ns;          /* first block started (for copies: transfer start) */
    tl_ns end_ns;            /* last block ended */
    uint64_t next_block;     /* first logical block not done: block_end unless retreated */
    bool retreated;          /* PTB launch stopped early by tl_dev_retreat */
    tl_ns submitted_ns;      /* when the device handed the work to the GPU, on the
                                clock of now(): the simulator at the launch or copy
                                call; the CUDA backend just before its launch call
                                (a graph job's batched op: its graph's launch, at the
                                end of the loop turn), which can be later than the
                                event time callbacks see as now(). 0: not known */
} tl_launch_result;

typedef void (*tl_launch_cb)(void *arg, const tl_launch_result *r);
typedef void (*tl_timer_cb)(void *arg, tl_ns now);

/* Optional observer of kernel executions (timelines, per-kernel records). */
typedef struct tl_kernel_record {
    int job;
    tl_stream_id stream;
    const tl_op *op;
    uint64_t tag;
    uint64_t blocks;        /* logical blocks this launch ran */
    tl_ns start_ns, end_ns;
    double avg_sms;         /* mean number of SMs with one of its blocks resident */
    bool ptb, retreated;
    const char *name;       /* kernel name: filled by the runner (devices leave NULL) */
} tl_kernel_record;
typedef void (*tl_kernel_observer)(void *arg, const tl_kernel_record *rec);

/* Per-job accounting kept by the device. */
typedef struct tl_job_stats {
    tl_ns sm_busy_ns;       /* SM-time with at least one of the job's blocks resident,
                               summed over SMs (divide by sms * elapsed for utilization) */
    uint64_t kernels;       /* launches completed */
    uint64_t blocks;        /* logical blocks completed */
} tl_job_stats;

/* A figure the device keeps of a run (tl_device_ops.run_metrics). */
typedef void (*tl_dev_metric_fn)(void *arg, const char *name, double value);

typedef struct tl_device_ops {
    const char *name; /* "sim", "cuda" */
    int (*ctx_create)(tl_device *d, const tl_ctx_config *cfg, tl_ctx_id *out, tl_err *err);
    int (*stream_create)(tl_device *d, tl_ctx_id ctx, int priority, tl_stream_id *out, tl_err *err);
    /* Enqueue a kernel on a stream (FIFO order per stream). cb fires once it ends. */
    int (*launch)(tl_device *d, tl_stream_id s, const tl_kernel_desc *k,
                  tl_launch_cb cb, void *arg, tl_launch_id *out);
    /* Enqueue a copy or memset (op kind MEMCPY/MEMSET) on a stream. Also used for
     * synthetic transfers (PipeSwitch model loading): fill op->bytes, copy_kind. */
    int (*copy)(tl_device *d, tl_stream_id s, const tl_op *op, int job,
                tl_launch_cb cb, void *arg, tl_launch_id *out);
    /* PTB: tell the workers of a launch to stop after their current logical block.
     * The launch then completes with retreated = true and next_block set. Harmless
     * if the launch already finished. Optional (NULL: PTB unsupported). */
    int (*retreat)(tl_device *d, tl_launch_id id);
    /* Call cb at absolute time 'at' (>= now). */
    int (*timer)(tl_device *d, tl_ns at, tl_timer_cb cb, void *arg);
    tl_ns (*now)(tl_device *d);
    /* Run until no work and no timers remain, or until time 'until'. */
    int (*run)(tl_device *d, tl_ns until, tl_err *err);
    /* Solo time of a launch configuration on an idle device (simulated or timed).
     * Optional; used by policies that choose kernel configurations (tally). */
    int (*measure)(tl_device *d, const tl_kernel_desc *k, tl_ns *out, tl_err *err);
    void (*job_stats)(tl_device *d, int job, tl_job_stats *out);
    void (*close)(tl_device *d);
    /* The run begins now: everything before this call (the policy's setup:
     * contexts, streams) was preparation, and now() reads 0 from here on.
     * A device whose setup takes real time (the hardware replay's contexts in
     * other processes: 0.1-0.4 s) moves its clock's origin here, pending
     * timers keeping their distance from now, so that the first arrivals are
     * not served late by the setup's length. Called once by the runner, after
     * the policy's setup and before any job starts. Optional (NULL: the
     * simulator, whose setup takes no simulated time). */
    void (*begin)(tl_device *d);
    /* Figures of the device's own about the run so far (the hardware replay's
     * CUDA graph launches and timer lateness, say), each as fn(arg, name,
     * value); the sweep records them with the run (metrics of job -1). Names
     * start with the device's name and '_' ("cuda_..."). Optional (NULL: none). */
    void (*run_metrics)(tl_device *d, tl_dev_metric_fn fn, void *arg);
} tl_device_ops;

struct tl_device {
    const tl_device_ops *ops;
    tl_gpu_props gpu;
    tl_kernel_observer observer; /* optional; NULL for none */
    void *observer_arg;
    void *impl;                  /* implementation state */
};

static inline int tl_dev_ctx_create(tl_device *d, const tl_ctx_config *c, tl_ctx_id *o, tl_err *e)
{ return d->ops->ctx_create(d, c, o, e); }
static inline int tl_dev_stream_create(tl_device *d, tl_ctx_id c, int prio, tl_stream_id *o, tl_err *e)
{ return d->ops->stream_create(d, c, prio, o, e); }
static inline int tl_dev_launch(tl_device *d, tl_stream_id s, const tl_kernel_desc *k,
                                tl_launch_cb cb, void *arg, tl_launch_id *o)
{ return d->ops->launch(d, s, k, cb, arg, o); }
static inline int tl_dev_copy(tl_device *d, tl_stream_id s, const tl_op *op, int job,
                              tl_launch_cb cb, void *arg, tl_launch_id *o)
{ return d->ops->copy(d, s, op, job, cb, arg, o); }
static inline int tl_dev_retreat(tl_device *d, tl_launch_id id)
{ return d->ops->retreat ? d->ops->retreat(d, id) : TL_ENODEV; }
static inline int tl_dev_timer(tl_device *d, tl_ns at, tl_timer_cb cb, void *arg)
{ return d->ops->timer(d, at, cb, arg); }
static inline tl_ns tl_dev_now(tl_device *d) { return d->ops->now(d); }
static inline int tl_dev_run(tl_device *d, tl_ns until, tl_err *e) { return d->ops->run(d, until, e); }
static inline int tl_dev_measure(tl_device *d, const tl_kernel_desc *k, tl_ns *o, tl_err *e)
{ return d->ops->measure ? d->ops->measure(d, k, o, e) : TL_ENODEV; }
static inline void tl_dev_job_stats(tl_device *d, int job, tl_job_stats *o)
{ d->ops->job_stats(d, job, o); }
static inline void tl_dev_close(tl_device *d) { if (d && d->ops) d->ops->close(d); }
static inline void tl_dev_begin(tl_device *d) { if (d->ops->begin) d->ops->begin(d); }
static inline void tl_dev_run_metrics(tl_device *d, tl_dev_metric_fn fn, void *arg)
{ if (d->ops->run_metrics) d->ops->run_metrics(d, fn, arg); }

#endif
