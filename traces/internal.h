/* Internals shared by the trace readers (not a public header).
 *
 * Every reader (Kineto JSON, Nsight Systems SQLite, the flat "events" form of
 * our own format) turns its input into the same raw timeline: host API calls,
 * GPU records and iteration markers, with absolute nanosecond times. One
 * builder (timeline.c, split.c) then links calls to GPU work by correlation
 * id, merges host threads, resolves event records and waits, splits the
 * timeline into iterations and fills the tl_trace. So every format obeys the
 * same definitions (traces/FORMAT.md). */
#ifndef TALLY_TRACES_INTERNAL_H
#define TALLY_TRACES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tally/trace.h"

#define TL_RAW_NONE INT64_MIN /* "not known" for raw ids (stream, event, correlation) */

/* CUPTI never assigns correlation id 0 (nor negative ones): those mean "none". */
static inline int64_t tl_corr_id(int64_t v)
{
    return v > 0 ? v : TL_RAW_NONE;
}

/* ---- string interning ---------------------------------------------------- */

typedef struct tl_strtab {
    char **strs;      /* strs[0] = "" */
    uint32_t n, cap;
    uint32_t *slots;  /* open addressing: index + 1, 0 = empty */
    uint32_t n_slots; /* power of two */
} tl_strtab;

void tl_strtab_init(tl_strtab *st);
void tl_strtab_close(tl_strtab *st);
uint32_t tl_strtab_intern(tl_strtab *st, const char *s, size_t len);
/* Hand the string array over (e.g. to a tl_trace); st is left empty. */
char **tl_strtab_take(tl_strtab *st, uint32_t *n);

/* ---- raw timeline -------------------------------------------------------- */

/* What a host API call does, from its name (tl_api_classify). */
typedef enum tl_api_class {
    TL_API_OTHER = 0,     /* host time only, unless GPU work is linked to it */
    TL_API_MEMCPY_SYNC,   /* synchronous cudaMemcpy*: host waits for the copy (not D2D) */
    TL_API_SYNC_STREAM,
    TL_API_SYNC_DEVICE,
    TL_API_SYNC_EVENT,
    TL_API_EVENT_RECORD,
    TL_API_STREAM_WAIT,
    TL_API_GRAPH_LAUNCH,  /* cudaGraphLaunch: its GPU records are the graph's nodes */
} tl_api_class;

tl_api_class tl_api_classify(const char *name);

typedef struct tl_raw_call {
    tl_ns start, end;
    int64_t tid;
    int64_t corr;         /* correlation id; TL_RAW_NONE if none */
    int64_t stream;       /* stream the call acts on (sync, record, wait); NONE if unknown */
    int64_t event;        /* CUDA event id (record, wait, event sync); NONE if unknown */
    int64_t record_corr;  /* wait/event sync: correlation of the awaited record; NONE */
    int64_t wait_stream;  /* wait/event sync: the awaited record's stream, if known */
    uint32_t name;        /* string id */
    uint32_t index;       /* position in the input, for messages */
    uint8_t api;          /* tl_api_class */
    int64_t gpu_index;    /* synthetic call for unlinked GPU work: its record; else -1 */
} tl_raw_call;

typedef struct tl_raw_gpu {
    tl_ns start, end;
    int64_t corr;         /* TL_RAW_NONE if none */
    int64_t stream;
    uint32_t name;
    uint8_t kind;         /* TL_OP_KERNEL, TL_OP_MEMCPY, TL_OP_MEMSET */
    uint8_t copy_kind;
    uint8_t to_pageable;  /* D2H into pageable host memory: the host waits for it */
    uint32_t grid[3], block[3];
    uint32_t regs, static_smem, dynamic_smem;
    uint64_t bytes;
} tl_raw_gpu;

/* Extra facts about a call from a separate record (Kineto cuda_sync,
 * nsys SYNCHRONIZATION), joined to the call by correlation id. */
typedef struct tl_raw_syncinfo {
    int64_t corr;
    int64_t stream, wait_stream, record_corr, event;
} tl_raw_syncinfo;

typedef struct tl_raw_marker {
    tl_ns start, end;
    uint32_t name;
    uint8_t nvtx;         /* NVTX range (other default prefixes apply) */
} tl_raw_marker;

typedef struct tl_raw {
    tl_strtab strings;
    tl_raw_call *calls;
    size_t n_calls, cap_calls;
    tl_raw_gpu *gpu;
    size_t n_gpu, cap_gpu;
    tl_raw_syncinfo *syncs;
    size_t n_syncs, cap_syncs;
    tl_raw_marker *markers;
    size_t n_markers, cap_markers;
    uint32_t n_zero_dur;  /* GPU records with dur 0 stretched to 1 ns */
    bool has_gpu_props;
    tl_gpu_props gpu_props;
    bool truncated;
} tl_raw;

void tl_raw_init(tl_raw *r);
void tl_raw_close(tl_raw *r);
tl_raw_call *tl_raw_add_call(tl_raw *r);     /* zeroed, ids set to TL_RAW_NONE */
tl_raw_gpu *tl_raw_add_gpu(tl_raw *r);       /* zeroed, corr = TL_RAW_NONE */
tl_raw_syncinfo *tl_raw_add_sync(tl_raw *r); /* all ids TL_RAW_NONE */
tl_raw_marker *tl_raw_add_marker(tl_raw *r);

/* Build t (already tl_trace_init'ed) from the raw timeline. format names the
 * reader ("kineto", "nsys", "tally"). Consumes r's strings (r stays valid to close). */
int tl_raw_build(tl_raw *r, tl_trace *t, const char *path, const char *format,
                 const tl_trace_options *opts, tl_err *err);

/* The refusal of a trace whose kernels ran on n > 1 devices (ids: the first
 * ones seen): a trace is one GPU's work. */
int tl_trace_one_device(const char *path, int n, const int64_t *ids, tl_err *err);

/* ---- iteration splitting (split.c) --------------------------------------- */

/* One op of the merged host timeline, with absolute times (timeline.c). */
typedef struct tl_flat_op {
    tl_op op;             /* stream = raw stream id index into the builder's list */
    int64_t raw_stream;
    tl_ns api_start, api_end;  /* API call (after overlap resolution: see FORMAT.md) */
    tl_ns gpu_start, gpu_end;  /* -1 if no GPU work */
    tl_ns awaited_end;    /* sync / blocking copy: when the awaited GPU work ended; -1 */
    tl_ns record_end;     /* EVENT_RECORD: end of the work before it on its stream */
    int64_t record;       /* STREAM_WAIT / SYNC(EVENT): flat index of the record; -1 */
    int64_t gpu_index;    /* its GPU record in tl_raw.gpu; -1 if none */
    bool removed;         /* turned into host time */
    bool inferred;        /* EVENT_RECORD / STREAM_WAIT / UNTRACED inferred from the GPU
                             timeline */
    bool graph;           /* GPU work of a CUDA graph launch */
} tl_flat_op;

/* ---- cross-stream dependencies the trace does not state (infer.c) ---------- */

/* An op on stream S that starts later than both its launch and the end of its
 * predecessor on S by more than this was held back by something. */
#define TL_INFER_HELD_NS (20 * TL_NS_PER_US)
/* ... and it waited for an op of another stream that ended at most this long
 * before it started (cross-stream signalling, NCCL kernel start-up). */
#define TL_INFER_TOLERANCE_NS (50 * TL_NS_PER_US)

/* Infer the dependencies behind stream waits the trace did not resolve
 * (FORMAT.md, "Inferred dependencies"): for each, insert an EVENT_RECORD on
 * the awaited op's stream and a STREAM_WAIT before the waiting op, both with
 * inferred = true and zero host time. Held records of a CUDA graph launch with
 * no such dependency get an UNTRACED op before them (the graph's unrecorded
 * work). waits: API start times of the unresolved cudaStreamWaitEvent calls,
 * ascending. GPU records without a flat op ran before the capture: they
 * can be awaited too. *ops is reallocated; index fields (record) are
 * remapped. Counts what it inserted. */
void tl_infer_deps(const tl_raw *r, tl_flat_op **ops, size_t *n_ops, const tl_ns *waits,
                   size_t n_waits, uint32_t *n_deps, uint32_t *n_untraced);

/* A split: iteration i covers flat ops [begin[i], end[i]); with markers it
 * also has the marker's start and end (mark_start = -1 otherwise). */
typedef struct tl_split {
    size_t *begin, *end;
    tl_ns *mark_start, *mark_end;
    uint32_t n;
    tl_split_method method;
} tl_split;

void tl_split_close(tl_split *s);
int tl_split_flat(const tl_raw *r, const tl_flat_op *ops, size_t n_ops,
                  const tl_trace_options *opts, const char *path, tl_split *out,
                  tl_err *err);

/* ---- JSON skimming (json_scan.c) ----------------------------------------- */

/* Validating JSON skimmer: walks the text without building values, fast
 * enough for 35 MB traces; jansson then parses only the spans that matter. */
typedef struct tl_jscan {
    const char *buf;
    size_t len, pos;
    const char *err;      /* set on failure */
    bool lenient;         /* accept bare inf/nan/Infinity/NaN (old Kineto writes them) */
    bool saw_nonfinite;   /* set when one was accepted */
} tl_jscan;

/* Length of a bare non-finite literal at p (inf, -inf, nan, -nan, NaN,
 * Infinity, -Infinity), 0 if none. */
size_t tl_json_nonfinite_len(const char *p, size_t n);

void tl_jscan_ws(tl_jscan *s);
int tl_jscan_value(tl_jscan *s, int depth);
/* A string at pos: the raw bytes between the quotes (escapes not decoded). */
int tl_jscan_string(tl_jscan *s, const char **p, size_t *n);
/* Line and column (1-based) of a byte offset. */
void tl_jscan_linecol(const char *buf, size_t off, int *line, int *col);
/* Error for malformed JSON: jansson's own message (line/column) when it
 * agrees the text is malformed, else the skimmer's. */
int tl_json_syntax_error(const char *path, const char *buf, size_t len, const tl_jscan *s,
                         tl_err *err);

/* ---- readers working on a buffer ------------------------------------------ */

int tl_kineto_from_buffer(tl_trace *t, const char *path, const char *buf, size_t len,
                          const tl_trace_options *opts, tl_err *err);
int tl_tally_from_buffer(tl_trace *t, const char *path, const char *buf, size_t len,
                         const tl_trace_options *opts, tl_err *err);
int tl_nsys_from_buffer(tl_trace *t, const char *path, char *buf, size_t len,
                        const tl_trace_options *opts, tl_err *err);

/* tl_read_file with another size limit than TL_TRACE_MAX_FILE_BYTES (tests). */
int tl_read_file_max(const char *path, size_t max, char **out, size_t *len, tl_err *err);

/* Blocks of a grid (x*y*z); a kernel may have at most TL_TRACE_MAX_BLOCKS. */
static inline uint64_t tl_grid_blocks(const uint32_t grid[3])
{
    return (uint64_t)grid[0] * grid[1] * grid[2];
}

/* The checks every reader's result goes through (tl_trace_load and the
 * tl_trace_load_* functions call it on success): what no single record shows.
 * Each iteration's host time (host gaps, calls and tail) and GPU time (sum of
 * the GPU ops' durations) at most TL_TRACE_MAX_NS, summed without overflow;
 * every op's stream an index into t->streams; every kernel, copy and memset
 * with GPU time (gpu_start_ns >= 0, dur_ns > 0); every kernel at most
 * TL_TRACE_MAX_BLOCKS blocks. skip (may be 0) is how many iterations the
 * reader dropped, for messages. */
int tl_trace_check(const tl_trace *t, int skip, tl_err *err);

/* Convert trace-file times to integer ns without going through a double
 * product (a µs epoch timestamp * 1000 loses ~256 ns in a double). */
bool tl_us_to_ns(double us, tl_ns *out);

/* Trim long names in messages. */
const char *tl_short_name(const char *s, char *buf, size_t n);

#endif
