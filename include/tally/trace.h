/* Traces: what one job does, iteration by iteration, on the host and the GPU.
 *
 * A trace is a list of iterations (one inference request or one training step).
 * Each iteration is the host thread's ordered list of operations. Host time
 * between operations (Python, framework work) is kept as host_gap_ns: it does
 * not depend on the GPU, so a replay waits it out before issuing the next op.
 *
 * Readers: the project's own versioned JSON (tl_trace_write_json writes it),
 * PyTorch profiler / Kineto Chrome-trace JSON (plain or .gz), Nsight Systems
 * SQLite exports. tl_trace_load picks the reader from the content.
 */
#ifndef TALLY_TRACE_H
#define TALLY_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tally/common.h"
#include "tally/digest.h"
#include "tally/gpu.h"

#define TL_TRACE_FORMAT_VERSION 1
/* Most distinct CUDA streams one trace may use (the runner's per-job limit). */
#define TL_TRACE_MAX_STREAMS 64
/* Most blocks one kernel may have (grid x*y*z), checked by every reader and by
 * tl_trace_scale_grid. CUDA allows grid (2^31-1, 65535, 65535), about 2^63
 * blocks, but no real launch comes near: the largest grid of the bundled traces
 * has about 2^20 blocks, and a launch of 2^31-1 blocks in x alone is the most a
 * one-dimensional grid can be. The simulator's cost grows with a kernel's
 * blocks (the tally policy times each kernel alone on a simulated idle device,
 * wave after wave), so a grid of 2^61 blocks made `tally-sim run` spin for
 * ever; a kernel at this cap costs a sharing run about a second
 * (traces/FORMAT.md, section 6). */
#define TL_TRACE_MAX_BLOCKS (1ULL << 32)
/* Longest time (ns) any time field of a trace may hold, and the most one
 * iteration's host time (host gaps + calls + tail) or GPU time (sum of the GPU
 * ops' durations) may add up to: INT64_MAX / 4 (73 years), so that sums of a
 * few such times never overflow. */
#define TL_TRACE_MAX_NS (INT64_MAX / 4)
/* Longest one GPU op (kernel, copy, memset) may last: 1e15 ns (11.6 days), the
 * simulator's bound for one op's time (its rate arithmetic stays exact). */
#define TL_TRACE_MAX_OP_NS ((int64_t)1000000000000000LL)
/* Largest trace file tl_read_file accepts, after gunzip: 2 GiB, 60 times the
 * largest bundled trace (35 MB uncompressed), and below what a gzip bomb of a
 * few MB expands to (a trace is held in memory whole). */
#define TL_TRACE_MAX_FILE_BYTES ((size_t)2 << 30)

typedef enum tl_op_kind {
    TL_OP_KERNEL = 0,      /* kernel launch */
    TL_OP_MEMCPY = 1,      /* copy; 'blocking' says whether the host waits for it */
    TL_OP_MEMSET = 2,      /* memset on the device */
    TL_OP_SYNC = 3,        /* host waits (stream/device/event synchronize) */
    TL_OP_EVENT_RECORD = 4,/* cudaEventRecord on a stream: no GPU time */
    TL_OP_STREAM_WAIT = 5, /* cudaStreamWaitEvent: later work on 'stream' waits for 'event' */
    TL_OP_UNTRACED = 6,    /* 'stream' is held for dur_ns, once its earlier work is done,
                              by GPU work the trace has no record for (nodes of a CUDA
                              graph the profiler missed): no SMs, not GPU-busy time */
} tl_op_kind;

typedef enum tl_sync_kind {
    TL_SYNC_STREAM = 0, /* waits for all work issued so far on op.stream */
    TL_SYNC_DEVICE = 1, /* waits for all work issued so far by this job */
    TL_SYNC_EVENT = 2,  /* waits for the work before the matching EVENT_RECORD */
} tl_sync_kind;

typedef enum tl_copy_kind {
    TL_COPY_H2D = 0,
    TL_COPY_D2H = 1,
    TL_COPY_D2D = 2,
    TL_COPY_OTHER = 3,
} tl_copy_kind;

/* What bounds a kernel's blocks on an SM, by the rule of tl_work_for_name.
 * The simulator's contention model (sim/contention.c) and the backend's
 * synthetic kernels (an arithmetic loop or a streaming loop) both follow it. */
typedef enum tl_work_kind {
    TL_WORK_MEMORY = 0,    /* bandwidth-bound (elementwise, norms, reductions, copies) */
    TL_WORK_COMPUTE = 1,   /* arithmetic-bound (GEMM, convolution, attention) */
} tl_work_kind;

/* One host-issued operation. Fields not used by a kind are 0. */
typedef struct tl_op {
    uint8_t kind;          /* tl_op_kind */
    uint8_t sync_kind;     /* tl_sync_kind, for TL_OP_SYNC */
    uint8_t copy_kind;     /* tl_copy_kind, for TL_OP_MEMCPY */
    uint8_t blocking;      /* MEMCPY/MEMSET: host waits for completion (sync copy) */
    int32_t stream;        /* index into tl_trace.streams (not the raw CUDA id) */
    int32_t event;         /* event id for EVENT_RECORD / STREAM_WAIT / SYNC(EVENT); -1 none */
    uint32_t name;         /* index into tl_trace.strings (kernel name); 0 = "" */
    tl_ns host_gap_ns;     /* host time from the previous op's API return (or the
                              iteration start) to this op's API call */
    tl_ns host_call_ns;    /* duration of the API call itself when it did not wait
                              (launch overhead); for syncs, the non-waiting part */
    tl_ns dur_ns;          /* measured GPU duration (kernel/copy/memset), > 0 */
    tl_ns gpu_start_ns;    /* traced GPU start, relative to the iteration start; -1 if none */
    uint32_t grid[3];      /* kernel grid, every component >= 1 */
    uint32_t block[3];     /* kernel block, every component >= 1 */
    uint32_t regs;         /* registers per thread */
    uint32_t static_smem;  /* static shared memory per block, bytes */
    uint32_t dynamic_smem; /* dynamic shared memory per block, bytes */
    uint64_t bytes;        /* MEMCPY/MEMSET size */
    uint8_t work;          /* KERNEL: tl_work_kind, from the name (tl_work_for_name);
                              set by the loaders, copied with the op */
    uint8_t graph;         /* launched inside a CUDA graph (tl_trace_as_graph): the GPU
                              starts it sooner after the op before it (graph_gap_ns) */
} tl_op;

typedef struct tl_iteration {
    tl_op *ops;
    uint32_t n_ops;
    tl_ns start_ns;        /* host start, relative to the trace start */
    tl_ns tail_host_ns;    /* host time after the last op until the iteration ends */
    tl_ns traced_ns;       /* traced iteration time: start to max(host end, GPU end) */
    tl_ns traced_busy_ns;  /* traced GPU busy time (union of kernel/copy intervals) */
} tl_iteration;


typedef enum tl_split_method {
    TL_SPLIT_MARKERS = 0,  /* ProfilerStep#N, NVTX ranges, our own format's iterations */
    TL_SPLIT_PERIOD = 1,   /* period of the kernel-name sequence */
    TL_SPLIT_USER = 2,     /* user gave the kernel name that starts an iteration */
    TL_SPLIT_WHOLE = 3,    /* no structure found: the whole trace is one iteration */
} tl_split_method;

typedef struct tl_trace {
    char *path;              /* file it came from */
    char *format;            /* "tally", "kineto", "nsys" */
    bool has_gpu_props;      /* gpu was read from the trace */
    tl_gpu_props gpu;
    char **strings;          /* string table; strings[0] = "" */
    uint32_t n_strings;
    int64_t *streams;        /* raw CUDA stream ids, indexed by tl_op.stream */
    int32_t n_streams;
    tl_iteration *iters;
    uint32_t n_iters;
    tl_split_method split;
    bool truncated;          /* the capture ended early (set by the tracer) */
    /* Warnings: what the reader had to guess (all 0 for a clean trace). */
    uint32_t n_unlinked;     /* GPU records with no host API call (missing correlation):
                                kept as ops issued at their own GPU start */
    uint32_t n_precapture;   /* GPU records launched before the capture began (correlation
                                id below every API call's): backlog of earlier work, dropped */
    uint32_t n_zero_dur;     /* GPU records with a duration of 0 in the input: 1 ns */
    uint32_t n_unresolved;   /* event records/waits/syncs whose partner was not found:
                                kept as host time (event sync: waits for the device) */
    uint32_t n_outside;      /* ops outside every iteration (before the first marker,
                                warm-up prefix of a period split, skipped iterations) */
    /* Not a warning: what the reader modelled from the GPU timeline. */
    uint32_t n_inferred;     /* cross-stream dependencies inferred for unresolved stream
                                waits (traces/FORMAT.md, "Inferred dependencies") */
    uint32_t n_untraced;     /* TL_OP_UNTRACED ops: stretches of CUDA graph launches the
                                trace has no record for (same section) */
    tl_digest digest;        /* of the bytes read (after gunzip), set by the tl_trace_load*
                                functions: a sweep records it with each run and will not
                                reuse runs of a trace that has changed since */
} tl_trace;

/* How to split a trace without markers. */
typedef struct tl_trace_options {
    const char *iteration_start_kernel; /* TL_SPLIT_USER: substring of the first kernel's name */
    const char *marker_prefix;          /* default "ProfilerStep#" */
    int skip_iterations;                /* drop the first N (warm-up) */
    bool no_inferred_deps;              /* read nothing off the GPU timeline: no inferred
                                           dependencies for unresolved stream waits (they
                                           stay host time) and no UNTRACED graph time */
} tl_trace_options;

void tl_trace_init(tl_trace *t);
void tl_trace_close(tl_trace *t);

/* Load any supported format (detected from content; .gz handled). opts may be NULL. */
int tl_trace_load(tl_trace *t, const char *path, const tl_trace_options *opts, tl_err *err);
int tl_trace_load_kineto(tl_trace *t, const char *path, const tl_trace_options *opts, tl_err *err);
int tl_trace_load_nsys(tl_trace *t, const char *path, const tl_trace_options *opts, tl_err *err);
int tl_trace_load_tally(tl_trace *t, const char *path, tl_err *err);
/* Write t in Tally's JSON format to path ("-": standard output), in place. */
int tl_trace_write_json(const tl_trace *t, const char *path, tl_err *err);
/* The same to an open stream; the caller checks it (ferror, fclose). */
void tl_trace_write_json_stream(const tl_trace *t, FILE *f);
/* The same, gzip-compressed into f (for an OUT named *.gz, which every
 * reader inflates). TL_EIO if compressing or writing fails. */
int tl_trace_write_json_gz_stream(const tl_trace *t, FILE *f, tl_err *err);

/* Read a whole file, gunzipping if it starts with the gzip magic. Caller frees *out. */
int tl_read_file(const char *path, char **out, size_t *len, tl_err *err);

const char *tl_trace_op_name(const tl_trace *t, const tl_op *op);
/* The kernel-kind rule: COMPUTE when the name says GEMM, convolution or
 * attention (gemm, conv, mma, fmha, attention, xmma, cutlass, cublas, dgrad,
 * wgrad, fprop, implicit, winograd, matmul; case-insensitive), except the
 * bandwidth-bound helpers those libraries carry (split-K reduce, gemv,
 * epilogue kernels, workspace init); MEMORY otherwise, NULL included. */
tl_work_kind tl_work_for_name(const char *name);
const char *tl_work_name(int work); /* "compute" / "memory" */
/* Set op->work of every kernel from its name (the loaders call it). */
void tl_trace_classify(tl_trace *t);
const char *tl_split_method_name(tl_split_method m);
uint64_t tl_op_blocks(const tl_op *op);  /* grid x*y*z */
uint32_t tl_op_threads(const tl_op *op); /* block x*y*z */

/* Human-readable summary: format, GPU, streams, split, warnings, and per
 * iteration: kernels, copies, syncs, GPU busy time, host time, traced time
 * (means, then a table). `tally-sim info FILE` prints this. */
void tl_trace_print_info(FILE *out, const tl_trace *t);

/* Per-iteration summary numbers (for `tally-sim info` and fidelity checks). */
typedef struct tl_iter_stats {
    uint32_t kernels, copies, memsets, syncs;
    tl_ns gpu_busy_ns;   /* == traced_busy_ns */
    tl_ns host_ns;       /* sum of host gaps and calls (host-side work) */
    tl_ns traced_ns;
} tl_iter_stats;
void tl_iteration_stats(const tl_iteration *it, tl_iter_stats *st);

/* The GPU a trace was captured on, completed from the GPU table; the H100 when
 * the trace does not say. */
int tl_trace_gpu(const tl_trace *t, tl_gpu_props *out, tl_err *err);

/* The GPU's back-to-back gap as traced: over consecutive GPU ops of one stream
 * in an iteration that ran less than 10 us apart, the median of the time from
 * one's end to the next one's start (0 if there are none). *pairs (may be
 * NULL) gets how many. Compare with the simulator's stream_gap_ns: traces made
 * with CUPTI latency timestamps carry ~1 us more per op than the GPU leaves
 * untraced (experiments/results/tracer/README.md). */
tl_ns tl_trace_back_to_back_gap(const tl_trace *t, uint64_t *pairs);

#endif
