/* State shared by the CUDA device's source files (cuda_device.c, cuda_launch.c,
 * cuda_complete.c, cuda_metrics.c, cuda_plan.c, cuda_calib.c, cuda_green.c,
 * cuda_probe.c). Not a public interface. */
#ifndef TALLY_BACKEND_CUDA_INTERNAL_H
#define TALLY_BACKEND_CUDA_INTERNAL_H

#include <sys/resource.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "backend.h"
#include "cuda_device.h"
#include "graph_cache.h"
#include "synth.h"
#include "worker.h"

/* One operation in flight on a stream. */
typedef struct tl_pending {
    tl_launch_id id;
    tl_stream_id stream;
    bool is_kernel, ptb;
    int slot;                 /* kernels: synth slot */
    cudaEvent_t ev_start;     /* copies: timing start (kernels: unused) */
    cudaEvent_t ev_end;
    tl_launch_cb cb;
    void *arg;
    const tl_op *op;
    int job;
    uint64_t tag;
    uint64_t begin, end;      /* logical blocks */
    double avg_sms;
    tl_ns issued_ns;          /* host_now() when the device call queued it */
    tl_ns submitted_ns;       /* ... when it went to the GPU: just before its launch call
                                 (a batched op: its graph's; a worker's: the message sent),
                                 so the GPU cannot have started it earlier */
    unsigned int gen;         /* local kernels: generation its record will carry */
    bool batched;             /* a node of a graph batch (graph_cache.h) */
    bool idle_stream;         /* issued with nothing ahead of it on its stream */
    bool unflushed;           /* ... whose batch is not launched yet (slot unknown) */
    int graph;                /* local batched kernels: tl_gcache handle */
    /* ops on a worker's stream: filled from its TL_W_DONES entry */
    bool remote, r_done, r_failed;
    uint64_t r_start_gt, r_end_gt;
    uint32_t r_claimed;
    uint32_t r_sms;           /* TALLY_SM_TRACE: the worker's count of the SMs it ran on */
    tl_ns r_dur;
} tl_pending;

typedef struct tl_dstream {
    cudaStream_t s;
    int ctx;
    int prio;
    int worker;               /* -1: this process; else index into tl_cuda.workers */
    int remote;               /* the worker's stream index */
    tl_pending *q;            /* ring */
    size_t head, n, cap;
    size_t rdone_at;          /* ring slot of the last op a worker reported done: the next
                                 report is looked for from there (they come in order) */
    tl_synth_launch *batch;   /* graph launches issued this loop turn, not launched yet:
                                 the last n_batch entries of q */
    size_t n_batch, cap_batch;
    tl_ns batch_event_ns;     /* now() when the batch's first op was issued */
} tl_dstream;

typedef struct tl_dctx {
    tl_ctx_config cfg;
    int sms;                  /* SMs its work may use */
    CUgreenCtx green;         /* PARTITION only */
    int worker;               /* -1: this process; else index into tl_cuda.workers */
} tl_dctx;

typedef struct tl_timer_ent {
    tl_ns at;
    uint64_t seq;
    tl_timer_cb cb;
    void *arg;
    tl_ns set_wall;           /* host time when it was set (TALLY_TIMER_LOG only) */
} tl_timer_ent;

typedef struct tl_plan_ent {
    const tl_op *op;          /* key; NULL = empty */
    tl_kernel_plan plan[2];   /* [0]: as a launch; [1]: as a CUDA-graph node */
    bool have[2];
} tl_plan_ent;

/* Driver entry points, fetched through cudaGetDriverEntryPointByVersion so
 * that the binary needs no libcuda.so at link or load time (it then starts,
 * and says "no GPU", on machines without a driver). */
typedef struct tl_drv {
    bool ok;
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetDevResource)(CUdevice, CUdevResource *, CUdevResourceType);
    CUresult (*DevSmResourceSplitByCount)(CUdevResource *, unsigned int *, const CUdevResource *,
                                          CUdevResource *, unsigned int, unsigned int);
    CUresult (*DevResourceGenerateDesc)(CUdevResourceDesc *, CUdevResource *, unsigned int);
    CUresult (*GreenCtxCreate)(CUgreenCtx *, CUdevResourceDesc, CUdevice, unsigned int);
    CUresult (*GreenCtxDestroy)(CUgreenCtx);
    CUresult (*GreenCtxStreamCreate)(CUstream *, CUgreenCtx, unsigned int, int);
    CUresult (*GetErrorString)(CUresult, const char **);
} tl_drv;

/* An answered calibration target held in memory (loaded from the cache at
 * open, so that per-run lookups cost no SQL). */
typedef struct tl_calib_mem {
    bool used;
    tl_calib_key key;         /* key.gpu is NULL: one GPU per device */
    tl_ns target, measured;
    uint32_t iters;
} tl_calib_mem;

typedef struct tl_cuda {
    tl_cuda_options opt;
    tl_cuda_info info;
    int device;
    tl_ns t0;                 /* host mono ns at open: now() = mono - t0 */
    long long gt_offset;      /* host_mono = globaltimer - gt_offset */
    tl_synth *synth;
    cudaStream_t ctl_stream;  /* retreat flags */
    cudaStream_t calib_stream;

    tl_dctx *ctxs;
    int n_ctxs, cap_ctxs;
    bool have_primary;        /* a TIMESLICED context maps to this process */
    tl_dstream *streams;
    int n_streams, cap_streams;
    size_t inflight;

    tl_timer_ent *timers;     /* min-heap on (at, seq) */
    FILE *timer_log;          /* TALLY_TIMER_LOG (diagnostic), or NULL */
    tl_gpu_sampler *sampler;  /* the GPU's clocks every TALLY_GPU_SAMPLE_MS (NULL: off or no NVML) */
    tl_gpu_sample *samples;   /* ... what it read, once stopped (tl_cuda_run_metrics) */
    size_t n_samples;
    tl_ns sleep_margin;       /* idle loop sleeps until this long before its next timer
                                 (TALLY_SLEEP_MARGIN_US; < 0: never sleeps, spins) */
    size_t n_timers, cap_timers;
    uint64_t timer_seq;
    tl_launch_id next_id;
    unsigned long long salt;

    cudaEvent_t *ev_pool;     /* recycled events (timing disabled / enabled) */
    size_t n_ev_pool, cap_ev_pool;
    cudaEvent_t *evt_pool;
    size_t n_evt_pool, cap_evt_pool;

    /* copy buffers */
    void *host_buf, *dev_buf;
    size_t buf_bytes;

    /* plans, open addressing on op pointer */
    tl_plan_ent *plans;
    size_t plan_cap, plan_n;
    const tl_trace **traces;  /* traces seen by prepare (to name ops) */
    int n_traces, cap_traces;

    tl_calib_db calib;
    tl_calib_mem *mem;
    size_t mem_cap, mem_n;
    struct { char key[120]; tl_ns ns; } *meas; /* measure() cache (linear: a few thousand) */
    size_t n_meas, cap_meas;
    tl_cuda_calib_stats cstats;
    tl_job_stats *jstats;
    int n_jstats;

    tl_drv drv;
    CUdevResource sm_left;    /* SMs not yet given to a partition */
    bool sm_left_valid;

    tl_watchdog *watchdog;
    bool warned_unnamed;
    uint64_t spins;
    int in_cb;                /* > 0 while a callback runs */
    volatile bool measuring;  /* inside measure() (for the watchdog's report) */
    tl_ns logical;            /* event time seen by callbacks (monotonic) */
    tl_cuda_loop_stats loop;

    tl_gcache *gcache;        /* CUDA graphs of graph jobs' batches */
    tl_wmsg graph_msg;        /* a worker's batch being sent (GRAPH messages) */
    int open_batches;         /* streams with n_batch > 0 */
    int flush_failed;         /* a batch launch failed after its launch calls returned 0: */
    tl_err flush_err;         /* ... tl_dev_run returns this */

    tl_worker *workers;       /* context workers (worker.h) */
    int n_workers;
    tl_mps *mps;              /* private MPS daemon, started with the first MPS context */
} tl_cuda;

/* ---- small helpers every file of the device uses --------------------------------- */

/* The device's CUDA state (tl_device.impl). */
static inline tl_cuda *C(tl_device *d) { return (tl_cuda *)d->impl; }

/* The host's clock on the run's origin (tl_cuda.t0). */
static inline tl_ns host_now(tl_cuda *c) { return tl_mono_ns() - c->t0; }
/* What now() tells a caller: inside a callback the event's time, else the
 * wall clock (wall: host_now(c), read by the caller). */
static inline tl_ns event_time(const tl_cuda *c, tl_ns wall) { return c->in_cb ? c->logical : wall; }

/* The calling thread's involuntary context switches so far: how often the
 * kernel took the CPU from the event loop (a late timer the loop did not
 * cause itself). -1 where getrusage cannot say. */
static inline long thread_nivcsw(void)
{
    struct rusage u;
    return getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_nivcsw : -1;
}

/* One more sample v of a duration the loop keeps figures of (timer lateness,
 * graph issue lag, idle-stream start latency): its sum, maximum and how many
 * were over over_ns. */
static inline void ns_stat_add(tl_ns v, tl_ns *sum, tl_ns *max, uint64_t *over, tl_ns over_ns)
{
    *sum += v;
    if (v > *max) *max = v;
    if (v > over_ns) (*over)++;
}

/* A callback for an event at event_time starts: now() tells it that time
 * (kept monotonic) until in_cb drops back. */
static inline void enter_cb(tl_cuda *c, tl_ns event_time)
{
    if (event_time > c->logical) c->logical = event_time;
    c->in_cb++;
}

/* ---- events ---------------------------------------------------------------- */

/* An event from the recycled pool (timing: the timing-enabled one), or a new one. */
static inline int ev_get(tl_cuda *c, bool timing, cudaEvent_t *out)
{
    if (!timing && c->n_ev_pool) { *out = c->ev_pool[--c->n_ev_pool]; return 0; }
    if (timing && c->n_evt_pool) { *out = c->evt_pool[--c->n_evt_pool]; return 0; }
    return (int)cudaEventCreateWithFlags(out, timing ? cudaEventDefault : cudaEventDisableTiming);
}

/* An event back to its pool, for ev_get to hand out again. */
static inline void ev_put(tl_cuda *c, bool timing, cudaEvent_t e)
{
    if (!e) return;
    cudaEvent_t **pool = timing ? &c->evt_pool : &c->ev_pool;
    size_t *n = timing ? &c->n_evt_pool : &c->n_ev_pool, *cap = timing ? &c->cap_evt_pool : &c->cap_ev_pool;
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *pool = tl_xrealloc(*pool, *cap * sizeof **pool);
    }
    (*pool)[(*n)++] = e;
}

/* ---- stream queues ----------------------------------------------------------- */

/* A stream's ops in flight, a ring in issue order: a zeroed entry at its end,
 * the oldest (NULL: none), the oldest dropped. */
static inline tl_pending *q_push(tl_dstream *s)
{
    void *q = s->q;
    tl_ring_reserve(&q, sizeof *s->q, &s->head, s->n, &s->cap, 64);
    s->q = q;
    tl_pending *p = &s->q[(s->head + s->n) % s->cap];
    s->n++;
    memset(p, 0, sizeof *p);
    return p;
}

static inline tl_pending *q_head(tl_dstream *s) { return s->n ? &s->q[s->head] : NULL; }

static inline void q_pop(tl_dstream *s)
{
    s->head = (s->head + 1) % s->cap;
    s->n--;
}

int tl_cuda_errf(tl_err *err, int cuda_err, const char *what);
/* cuda_device.c: grow the pinned and device copy buffers to bytes (synchronizes the
 * device when it must reallocate). */
int tl_cuda_ensure_buffers(tl_cuda *c, size_t bytes, tl_err *err);
int tl_drv_load(tl_drv *d);
int tl_cuda_green_create(tl_cuda *c, int sm_count, CUgreenCtx *out, int *got_sms, tl_err *err);
int tl_cuda_green_stream(tl_cuda *c, CUgreenCtx g, int prio, cudaStream_t *out, tl_err *err);
/* Time a synthetic launch (reps back-to-back after one warm-up) on stream s;
 * median of the kernels' own durations. */
int tl_cuda_time_launch(tl_cuda *c, const tl_synth_launch *l, int reps, cudaStream_t s, tl_ns *out,
                        tl_err *err);
/* node: calibrate the kernel as a CUDA-graph node (timed inside a graph of
 * copies of itself), for a graph job's launches that go out in graphs. */
int tl_cuda_calibrate(tl_cuda *c, const char *name, const tl_op *op, bool node, tl_kernel_plan *out,
                      tl_err *err);
int tl_cuda_calib_load(tl_cuda *c, tl_err *err);

/* cuda_launch.c: the synthetic launch of blocks [begin, end) of kernel op as planned
 * (kind, register variant, block, shared memory, iterations); workers stay 0 (the
 * callers count PTB workers on different SMs). */
void tl_cuda_synth_from_plan(tl_synth_launch *l, const tl_kernel_plan *pl, const tl_op *op, uint64_t begin,
                             uint64_t end);
/* cuda_launch.c: the tl_device_ops launch, copy and retreat entries. */
int tl_cuda_launch(tl_device *d, tl_stream_id sid, const tl_kernel_desc *k, tl_launch_cb cb, void *arg,
                   tl_launch_id *out);
int tl_cuda_copy(tl_device *d, tl_stream_id sid, const tl_op *op, int job, tl_launch_cb cb, void *arg,
                 tl_launch_id *out);
int tl_cuda_retreat(tl_device *d, tl_launch_id id);
/* cuda_launch.c: launch every stream's open graph batch (cut: before its loop turn ended);
 * returns nonzero when a batch launch has failed (then tl_cuda_flush_error says why). */
int tl_cuda_flush_all(tl_cuda *c, bool cut);
/* cuda_launch.c: the failed batch launch's error into *err (when not NULL) and its code (0: none). */
int tl_cuda_flush_error(tl_cuda *c, tl_err *err);
/* cuda_complete.c: mark the ops of a worker's TL_W_DONES message done in their streams' queues. */
void tl_cuda_remote_dones(tl_cuda *c, int worker, const tl_wmsg *m);
/* cuda_complete.c: collect completed ops and run their callbacks; how many, or a negative error. */
int tl_cuda_poll_completions(tl_device *d, tl_err *err);
/* cuda_metrics.c: the tl_device_ops run_metrics and job_stats entries. */
void tl_cuda_run_metrics(tl_device *d, tl_dev_metric_fn fn, void *arg);
void tl_cuda_job_stats(tl_device *d, int job, tl_job_stats *out);

#endif
