/* The tl_device on a real CUDA GPU (backend-private; tally-run uses it).
 *
 * One process drives the GPU: streams with priorities, green-context SM
 * partitions (driver API), synthetic kernels for traced ones (synth.h),
 * copies from pinned buffers. An event-loop on the thread that calls
 * tl_dev_run polls the op at the head of every stream (kernels: the
 * host-mapped record their last block writes; copies: a CUDA event; ops of
 * worker processes: their messages) and fires due timers; every policy
 * callback therefore runs on that thread.
 *
 * Time: now() is CLOCK_MONOTONIC ns since tl_cuda_open. Kernel start/end come
 * from the kernels' own %globaltimer stamps (first block start, last block
 * end: what CUPTI reports), mapped to the host clock through an offset
 * measured at open. Copies end when the loop sees their event complete and
 * last as long as their timing events say.
 *
 * Job accounting (job_stats.sm_busy_ns): kernel duration x SMs it could
 * occupy, min(blocks launched, SMs of its context), an approximation: the
 * device cannot see per-SM residency.
 *
 * Graph jobs (ops marked graph): the whole-grid launches issued to a stream in
 * one turn of the loop run as one CUDA graph, launched when the turn ends
 * (graph_cache.h); slices and PTB launches of such jobs go one by one.
 *
 * Contexts: the first TL_CTX_TIMESLICED context is the process's own primary
 * context; TL_CTX_PARTITION contexts are green contexts carved from the SMs not
 * yet given to another partition. TL_CTX_MPS and further TL_CTX_TIMESLICED
 * contexts run in processes of their own (worker.h); MPS contexts make the
 * device start a private MPS daemon (backend.h), stopped at close.
 */
#ifndef TALLY_BACKEND_CUDA_DEVICE_H
#define TALLY_BACKEND_CUDA_DEVICE_H

#include <stdbool.h>

#include "graph_cache.h"
#include "tally/device.h"
#include "tally/trace.h"

typedef struct tl_cuda_options {
    int device;              /* CUDA ordinal */
    const char *calib_db;    /* NULL: tl_calib_default_path() */
    double calib_tol;        /* relative calibration tolerance; 0: 0.02 */
    int calib_reps;          /* timed runs per calibration point; 0: 5 */
    tl_ns watchdog_ns;       /* 0: 20 s; < 0: no watchdog */
    bool verbose;            /* calibration progress on stderr */
    bool keep_context;       /* leave the CUDA primary context as it is at close; default:
                              * reset it, so no run inherits the GPU state an earlier
                              * run of the process left (an eager run before made a
                              * graph job's in-graph gaps 0.25 us longer on the H100:
                              * experiments/results/hw/session11/README.md) */
    bool plain_node_calib;   /* calibrate a graph job's kernels as launches, as before
                              * session 12; default: as graph nodes, which run a
                              * launch's work units faster (their blocks end with one
                              * atomic, not a fence and an exit count):
                              * experiments/results/hw/session12/README.md */
} tl_cuda_options;

typedef struct tl_cuda_info {
    char name[256];
    char driver[64];         /* e.g. "580.159.04" (kernel module), else CUDA driver API version */
    char runtime[32];
    char clocks[160];        /* nvidia-smi's SM/memory clocks when available */
    int sms;
    char uuid[48];           /* the GPU's UUID ("GPU-..."), as nvidia-smi prints it */
    char pci_bus[32];        /* its PCI bus id */
    char host[64];           /* this machine's host name */
    long long timer_res_ns;  /* smallest %globaltimer step seen */
    long long clock_offset_ns;
} tl_cuda_info;

typedef struct tl_cuda_calib_stats {
    uint64_t kernels;        /* kernel ops planned */
    uint64_t cache_hits;     /* answered from the calib table */
    uint64_t curve_hits;     /* answered from points already measured */
    uint64_t measurements;   /* timed points */
    uint64_t below_floor;    /* traced shorter than the empty synthetic kernel */
    uint64_t outside_tol;    /* best point still outside the tolerance */
} tl_cuda_calib_stats;

/* How late the event loop fired timers (host-timeline replay precision). */
typedef struct tl_cuda_loop_stats {
    uint64_t timers;
    tl_ns late_sum_ns, late_max_ns;
    uint64_t late_over_10us;
    uint64_t offset_raises;   /* times the GPU clock offset was raised (fix_offset) */
    tl_ns offset_raised_ns;   /* by how much in all */
    uint64_t offset_lowers;   /* times it was lowered (kernels seemed to start before
                                 they were launched: the clocks drift apart) */
    tl_ns offset_lowered_ns;  /* by how much in all */
    uint64_t batches;         /* graph batches flushed in this process */
    tl_ns batch_open_sum_ns;  /* ... host time from each one's first kernel to its flush, in all */
    uint64_t batch_cuts;      /* ... flushed before the loop turn ended: a lone launch or a
                                 copy on its stream, a measurement or a sync came first */
    uint64_t lag_batches;     /* graph batches sent to the GPU, here or to a context worker */
    uint64_t lag_ops;         /* ... their ops */
    tl_ns lag_sum_ns;         /* ... each one's submission after the event time (now())
                                 at which its first op was issued, in all */
    tl_ns lag_max_ns;         /* ... the longest such lag */
    uint64_t lag_over_500us;  /* ... how many were over 0.5 ms (the replay's host stalls) */
    uint64_t launch_lag_count;/* launches and slices sent one by one */
    tl_ns launch_lag_sum_ns;  /* ... their launch call after the event time, in all */
    uint64_t start_lat_count; /* kernels issued to an idle stream, here or to a worker */
    tl_ns start_lat_sum_ns;   /* ... their GPU start after their launch call, in all */
    tl_ns start_lat_max_ns;   /* ... the longest one */
    uint64_t start_lat_over_500us; /* ... how many took over 0.5 ms (GPU-side stalls) */
    tl_ns setup_ns;           /* the policy's setup before the run's time 0 (cu_begin) */
    uint64_t late_over_1ms;   /* timers fired over 1 ms late (the replay's host stalls) */
    long nivcsw_begin;        /* the loop thread's involuntary context switches at time 0 */
} tl_cuda_loop_stats;

/* The synthetic stand-in chosen for a kernel op. */
typedef struct tl_kernel_plan {
    int kind;                /* TL_KIND_COMPUTE / TL_KIND_MEMORY */
    int variant;
    uint32_t iters;
    tl_ns expected_ns;       /* calibrated solo time */
} tl_kernel_plan;

/* Is there a usable GPU? TL_ENODEV with a one-line reason if not; fills info
 * (may be NULL) otherwise. Safe to call on machines without a driver. */
int tl_cuda_probe(int device, tl_cuda_info *info, tl_err *err);
/* The device's limits as the simulator's GPU model (tl_occupancy and the
 * rest read them); all zero when the device cannot be queried. */
void tl_cuda_props(int device, tl_gpu_props *g);

int tl_cuda_open(tl_device *d, const tl_cuda_options *o, tl_err *err);
/* Calibrate every kernel of the trace and size the copy buffers, before a run
 * (calibrating during a run would stall it). */
int tl_cuda_prepare_trace(tl_device *d, const tl_trace *t, tl_err *err);
/* Drop what the device remembers of a trace (call before closing it: plans
 * are keyed by op address). */
void tl_cuda_forget_trace(tl_device *d, const tl_trace *t);
/* Plan for one op launched on its own (calibrating now if needed). */
int tl_cuda_plan(tl_device *d, const tl_trace *t, const tl_op *op, tl_kernel_plan *out, tl_err *err);
/* Plan for a graph job's op as its graph's node: calibrated as a node unless
 * tl_cuda_options.plain_node_calib, else tl_cuda_plan's. */
int tl_cuda_node_plan(tl_device *d, const tl_trace *t, const tl_op *op, tl_kernel_plan *out, tl_err *err);
void tl_cuda_get_info(tl_device *d, tl_cuda_info *out);
void tl_cuda_get_calib_stats(tl_device *d, tl_cuda_calib_stats *out);
void tl_cuda_get_loop_stats(tl_device *d, tl_cuda_loop_stats *out);
/* Graph jobs' CUDA graphs so far (graph_cache.h). */
void tl_cuda_get_graph_stats(tl_device *d, tl_gcache_stats *out);
/* Wait for all GPU work to finish (without running callbacks). */
int tl_cuda_sync(tl_device *d, tl_err *err);

/* The replay's back-to-back gap (hw_gap.c): n launches of op (a kernel the
 * device has prepared) queued at once on stream s; tl_gap_summarize of them. */
int tl_hw_stream_gap(tl_device *d, tl_stream_id s, const tl_op *op, int n, tl_hw_gap *out, tl_err *err);

#endif
