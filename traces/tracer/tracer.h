/* tally-trace: the CUPTI injection library's internal interface.
 *
 * The library (libtally_trace.so) is loaded by the CUDA driver through
 * CUDA_INJECTION64_PATH and records, with CUPTI's activity API, every kernel,
 * copy, memset and synchronization of the process, and its API calls either
 * recorded (--host-timeline full) or rebuilt from those records (lite, the
 * default: tt_lite_reconstruct). It keeps compact records in memory
 * (tt_store) and writes one JSON trace per process (tt_write_trace) at exit,
 * on SIGINT/SIGTERM/crash signals, at cudaDeviceReset and when a stop
 * condition is met.
 *
 * Nothing here depends on jansson or on libtally.a: the library must build on
 * machines that have only the CUDA toolkit and a C compiler.
 */
#ifndef TALLY_TRACER_H
#define TALLY_TRACER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TT_VERSION "0.1.0"

/* ---- options (environment variables set by the tally-trace command) ---- */

/* How the host side of the trace (API calls: launches, waits) is obtained.
 * FULL records every runtime/driver API call (CUPTI RUNTIME and DRIVER
 * kinds): exact, but CUPTI then intercepts each of the ~12,000 calls PyTorch
 * makes per ResNet-50 step (+30% step time). LITE (the default) records no
 * API calls and reconstructs them from the GPU records (lite.c): a kernel's
 * host launch time is CUPTI's "queued" latency timestamp (or, with
 * --launch-times callback, the call's own entry and exit), waits come from
 * callbacks or synchronization records. NONE writes no host calls at all. */
enum { TT_HOST_LITE = 0, TT_HOST_FULL = 1, TT_HOST_NONE = 2 };
/* Where LITE gets synchronize / event-record calls: CUPTI's SYNCHRONIZATION
 * and CUDA_EVENT activity kinds (ACTIVITY: they made PyTorch ~17% slower on
 * the H100), callbacks on those runtime calls only (CALLBACK, the default),
 * or COMPLETION: no runtime or driver API callback at all, only CUPTI's
 * synchronize-domain callbacks (a stream or device synchronize completed):
 * a wait's end is exact, its start and its place among the calls are
 * inferred; event synchronizes, stream waits and event records are not seen. */
enum { TT_SYNCREC_ACTIVITY = 0, TT_SYNCREC_CALLBACK = 1, TT_SYNCREC_COMPLETION = 2 };
/* Where LITE gets a kernel launch's host time: QUEUED (the default), CUPTI's
 * latency timestamps (the kernel's queued/submitted times; with them on, the
 * H100 leaves ~2.3 us instead of ~1.1 us between back-to-back ops: +4% on
 * ResNet-50 training); CALLBACK, callbacks on the launch calls only (runtime
 * and driver, graph launches, and the runtime's copy and memset calls): the
 * call's exact host entry and exit, at a cost on the launching thread
 * instead of on the GPU (hostcalls.c); OFF, neither: launches are placed
 * between their neighbours like copies (the host's lead over the GPU is
 * lost). --queued-times on|off is the old spelling of QUEUED|OFF. */
enum { TT_LAUNCH_QUEUED = 0, TT_LAUNCH_CALLBACK = 1, TT_LAUNCH_OFF = 2 };

/* Activity groups the user can turn on or off with --activities. */
enum {
    TT_ACT_KERNEL = 1 << 0,
    TT_ACT_MEMCPY = 1 << 1,
    TT_ACT_MEMSET = 1 << 2,
    TT_ACT_RUNTIME = 1 << 3,
    TT_ACT_DRIVER = 1 << 4,
    TT_ACT_SYNC = 1 << 5,
    TT_ACT_NVTX = 1 << 6,
    TT_ACT_EVENT = 1 << 7,  /* cudaEventRecord: which stream an event marks */
    TT_ACT_STREAM = 1 << 8, /* stream creation: priority, flags */
    TT_ACT_QUERIES = 1 << 9, /* API calls that neither launch nor wait (cudaGetDevice...) */
    TT_ACT_ALL = (1 << 10) - 1,
    TT_ACT_DEFAULT = TT_ACT_ALL & ~TT_ACT_QUERIES,
    TT_ACT_API = TT_ACT_RUNTIME | TT_ACT_DRIVER | TT_ACT_QUERIES, /* FULL mode only */
};

typedef struct tt_options {
    char output[4096];           /* pattern; %p = pid, %% = '%' */
    int64_t start_iters;         /* skip this many iterations; -1 unset */
    double start_seconds;        /* skip the first S seconds; < 0 unset */
    int64_t stop_iters;          /* record this many iterations; -1 unset */
    double stop_seconds;         /* stop S seconds after the start; < 0 unset */
    size_t buffer_size;          /* bytes per CUPTI activity buffer */
    unsigned activities;         /* TT_ACT_* bits */
    char iter_marker[256];       /* NVTX range name prefix that starts an iteration */
    char iter_kernel[256];       /* kernel (symbol substring) that starts an iteration */
    int64_t iter_sync;           /* every N-th synchronize ends one; 0 off */
    int iter_sync_kind;          /* TT_SYNC_ANY, TT_SYNC_DEVICE or TT_SYNC_STREAM */
    int host_timeline;           /* TT_HOST_* */
    int sync_records;            /* TT_SYNCREC_* (LITE) */
    int launch_times;            /* TT_LAUNCH_* (LITE): where launch host times
                                    come from; default QUEUED */
    int64_t latency_sample;      /* QUEUED: latency timestamps in one iteration of
                                    every N (--iteration-sync); 1: all (default) */
    int64_t record_every;        /* record one iteration of every N (GPU activity
                                    kinds and callbacks off in the others; needs
                                    --iteration-sync);
                                    1: every iteration (default) */
    bool gzip;
    bool quiet;
    int64_t t0_unix_ns;          /* when tally-trace started (seconds count from here) */
    size_t max_records;          /* memory guard: stop recording past this many */
    char command[4096];          /* the traced command line, for the file header */
} tt_options;

/* Parse a comma-separated activity list ("kernel,memcpy,runtime" or "all",
 * "-driver" removes one). Returns the bits, or -1 and names the bad word. */
int tt_parse_activities(const char *list, unsigned *bits, char *bad, size_t bad_len);
enum { TT_SYNC_ANY = 0, TT_SYNC_DEVICE = 1, TT_SYNC_STREAM = 2 };
/* "[device:|stream:]N", N >= 1: which synchronize calls end an iteration.
 * Returns 0, or -1 if malformed. */
int tt_parse_iter_sync(const char *s, int64_t *n, int *kind);

/* "lite", "full", "none" -> TT_HOST_*; "activity", "callback", "completion"
 * -> TT_SYNCREC_*; "on", "off" (or 1, 0) -> bool. Return 0, or -1 for
 * another word. */
int tt_parse_host_timeline(const char *s, int *mode);
int tt_parse_sync_records(const char *s, int *how);
int tt_parse_on_off(const char *s, bool *on);
/* "queued", "callback", "off" -> TT_LAUNCH_*. Returns 0, or -1 for another word. */
int tt_parse_launch_times(const char *s, int *how);
const char *tt_host_timeline_name(int mode);
const char *tt_sync_records_name(int how);
const char *tt_launch_times_name(int how);

/* Fill o from TALLY_TRACE_* environment variables (defaults where unset).
 * Returns 0, or -1 with a message in msg for a malformed value. */
int tt_options_from_env(tt_options *o, char *msg, size_t msg_len);
/* Expand %p in pattern into out; appends ".gz" when gzip and missing. */
int tt_expand_output(const char *pattern, int pid, bool gzip, char *out, size_t out_len);

/* ---- records ---- */

typedef enum tt_rec_type {
    TT_R_API = 0,     /* runtime or driver API call (host start/end, thread) */
    TT_R_KERNEL = 1,
    TT_R_MEMCPY = 2,
    TT_R_MEMSET = 3,
    TT_R_SYNC = 4,    /* CUPTI synchronization record */
    TT_R_MARKER = 5,  /* NVTX range (start/end joined) or instant mark */
    TT_R_EVENT = 6,   /* cudaEventRecord: event id on a stream */
    TT_R_STREAM = 7,  /* stream creation: priority and flags */
    TT_R_ITER = 8,    /* iteration boundary found by the tracer; sub
                         TT_ITER_SKIPPED: an iteration --record-every left out
                         (it only ends the one before) */
    TT_R_DEAD = 9,    /* a record withdrawn before writing */
    TT_R_HOSTCALL = 10, /* LITE, --launch-times callback: the host entry (start)
                           and exit (end) of a launch, copy or memset call, from
                           callbacks; sub: 0 runtime, 1 driver; id: cbid; name:
                           the API function. Never written: lite.c gives the
                           call of the GPU records with its correlation id
                           these times (hostcalls.c) */
} tt_rec_type;

/* One record; which fields are used depends on type (unused ones are 0).
 * Kept small and flat: ResNet-50 training makes ~3000 per step. */
typedef struct tt_rec {
    uint8_t type;        /* tt_rec_type */
    uint8_t sub;         /* API: 0 runtime, 1 driver; MEMCPY: CUpti copy kind;
                            SYNC: CUpti sync type; MARKER: 0 range, 1 instant */
    uint16_t regs;       /* KERNEL: registers per thread */
    uint32_t corr;       /* correlation id (0 for markers and iterations) */
    uint64_t start, end; /* ns, CUPTI clock; MARKER end = 0 while open */
    uint32_t name;       /* string id: kernel, API function or marker */
    uint32_t tid;        /* API/MARKER/ITER: host thread (system id) */
    uint32_t stream;     /* CUPTI stream id */
    uint32_t context;    /* CUPTI context id */
    uint32_t device;
    uint32_t id;         /* API: cbid; SYNC/EVENT: CUDA event id; MARKER: range id;
                            ITER: index; STREAM: flags */
    int32_t grid[3], block[3];
    int32_t static_smem, dynamic_smem; /* STREAM: priority in static_smem */
    uint64_t bytes;      /* MEMCPY/MEMSET size; MEMCPY src/dst kinds in id */
    uint32_t domain;     /* MARKER: string id of the NVTX domain (0 = default) */
    uint32_t local_mem;  /* KERNEL: local memory per thread, bytes */
    uint32_t cluster[3]; /* KERNEL: cluster dims (Hopper), 0 when none */
    uint32_t graph;      /* KERNEL/MEMCPY/MEMSET: graph id, 0 if not from a graph */
    uint8_t flags;       /* TT_RF_* */
    uint64_t queued;     /* KERNEL: when the host put the launch in the command
                            buffer (CUPTI latency timestamp); 0 = unknown */
    uint64_t submitted;  /* KERNEL: when that buffer was submitted; 0 = unknown */
} tt_rec;

enum {
    TT_RF_ASYNC = 1 << 0,     /* MEMCPY/MEMSET: issued by an *Async call */
    TT_RF_ESTIMATED = 1 << 1, /* API: reconstructed by lite.c, times estimated */
    TT_RF_HOST_TIME = 1 << 2, /* EVENT: start/end are the host call's (callback) */
    TT_RF_END_ONLY = 1 << 3,  /* SYNC: a synchronize-domain completion: end known
                                 (start 0), no correlation id until lite.c gives
                                 it one */
    TT_RF_NESTED = 1 << 4,    /* HOSTCALL: a driver launch made inside a timed
                                 runtime call (its times are the outer call's) */
    TT_RF_LEAD_COPIED = 1 << 5, /* KERNEL: queued/submitted copied from a sampled
                                   iteration (lite_sample.c), not CUPTI's */
};

enum { TT_ITER_RECORDED = 0, TT_ITER_SKIPPED = 1 };

/* CUPTI's enum values the writer and lite.c need (inject.c checks that they
 * equal CUPTI's): both build without the CUPTI headers. */
enum {
    TT_COPY_HTOD = 1, TT_COPY_DTOH = 2, TT_COPY_HTOA = 3, TT_COPY_ATOH = 4, TT_COPY_ATOA = 5,
    TT_COPY_ATOD = 6, TT_COPY_DTOA = 7, TT_COPY_DTOD = 8, TT_COPY_HTOH = 9, TT_COPY_PTOP = 10,
};
enum {
    TT_MEM_PAGEABLE = 1, TT_MEM_PINNED = 2, TT_MEM_DEVICE = 3, TT_MEM_ARRAY = 4,
    TT_MEM_MANAGED = 5, TT_MEM_DEVICE_STATIC = 6, TT_MEM_MANAGED_STATIC = 7,
};
enum { /* SYNC record types (tt_rec.sub) */
    TT_SYNCT_EVENT = 1, TT_SYNCT_STREAM_WAIT = 2, TT_SYNCT_STREAM = 3, TT_SYNCT_CONTEXT = 4,
};
#define TT_NO_ID UINT32_MAX /* CUPTI's invalid stream/event id */

/* Append-only chunked array of records plus an interned string table. Not
 * thread-safe by itself: the injection library holds its own mutex. */
typedef struct tt_store {
    tt_rec **chunks;
    size_t n_chunks, cap_chunks;
    size_t n;            /* records */
    char **strings;      /* strings[0] = "" */
    uint32_t n_strings, cap_strings;
    uint32_t *slots;     /* open-addressing hash of string ids, 0 = empty */
    uint32_t n_slots;
} tt_store;

void tt_store_init(tt_store *s);
void tt_store_free(tt_store *s);
tt_rec *tt_store_add(tt_store *s);           /* zeroed record; NULL if out of memory */
tt_rec *tt_store_at(const tt_store *s, size_t i);
uint32_t tt_intern(tt_store *s, const char *str); /* 0 for NULL, "" or no memory */
void tt_store_clear(tt_store *s);
/* Forget the records from index n on (n <= s->n); strings stay. */
void tt_store_truncate(tt_store *s, size_t n);

/* ---- the lite host timeline (lite.c) ---- */

/* What the reconstruction did, written into the trace. */
typedef struct tt_lite_stats {
    uint64_t calls;             /* API records added */
    uint64_t launches;          /* ... for kernel launches (one per correlation id) */
    uint64_t launches_queued;   /* ... whose host time is CUPTI's queued timestamp */
    uint64_t launches_copied;   /* ... whose host time was copied from a sampled
                                   iteration (--latency-sample, lite_sample.c) */
    uint64_t launches_timed;    /* ... whose host start and end are the call's own,
                                   from callbacks (--launch-times callback) */
    uint64_t launches_clamped;  /* ... queued (or timed) after the GPU start:
                                   moved to it */
    uint64_t copies_timed;      /* copy and memset calls timed by callbacks */
    uint64_t host_calls_unused; /* HOSTCALL records no GPU record claimed (a failed
                                   launch, an outer call whose GPU work carries a
                                   nested call's id, work outside the window):
                                   dropped */
    uint64_t host_calls_lost;   /* timed calls not kept (memory guard; set by the
                                   library, not by tt_lite_reconstruct) */
    uint64_t interpolated;      /* calls placed between their neighbours (copies,
                                   memsets, event records, launches without a
                                   queued timestamp) */
    uint64_t blocking_copies;   /* copies the host waited for */
    uint64_t waits;             /* synchronize / stream-wait calls (host times known) */
    uint64_t waits_inferred;    /* ... of them from completions: end known, start
                                   and place among the calls inferred */
    uint64_t waits_unplaced;    /* completions left out: no correlation id could
                                   be made free where they belong (only when the
                                   ids would pass UINT32_MAX) */
    uint64_t corr_moved;        /* calls whose correlation id was moved up to
                                   make room for inferred waits */
    /* The moves (owned; tt_lite_corr reads them, tt_lite_restore undoes and
     * frees them): from correlation id move_at[k] on (ascending), ids are
     * raised by move_by[k]. */
    size_t n_moves;
    uint32_t *move_at, *move_by;
} tt_lite_stats;

/* Default duration given to a reconstructed call whose end is not known. */
#define TT_LITE_CALL_NS 1000
/* A launch's call lasts submitted - queued when that is at most this. */
#define TT_LITE_MAX_CALL_NS 50000
/* A completed synchronize that returned more than this after the work it
 * waited for ended: the host came late and waited for nothing (returns took
 * 3-31 us on the H100). */
#define TT_LITE_LATE_NS 50000

/* Append to s one TT_R_API record (flags TT_RF_ESTIMATED, thread tid) per
 * host call that the GPU, synchronization and event records of s imply,
 * ordered by correlation id (CUPTI hands them out as calls begin). Records
 * that already have an API record of their correlation id get none. GPU
 * records with a TT_R_HOSTCALL record of their id get a call with its times,
 * name, sub and id, without TT_RF_ESTIMATED.
 * Completions (TT_RF_END_ONLY) are placed by time and given a correlation id
 * between the calls around them (and their start) in s, so that the writer
 * joins them to their call. CUPTI gives ids only to the calls it traces
 * (those that make GPU work, and those with a callback or an API activity
 * kind on): with completions only, the calls around a synchronize have
 * consecutive ids. Then the ids of s's records from there on are moved up
 * to make room (st->corr_moved, st->move_*); call tt_lite_restore after
 * writing. Returns 0, or -1 when out of memory (s then holds what was added
 * so far; tt_lite_restore is still due). */
int tt_lite_reconstruct(tt_store *s, uint32_t tid, tt_lite_stats *st);

/* A correlation id as CUPTI gave it -> as tt_lite_reconstruct left it in the
 * store (0 stays 0; the same id without moves). */
uint32_t tt_lite_corr(const tt_lite_stats *st, uint32_t corr);

/* After writing: give s's records their CUPTI correlation ids back
 * (completions lose the ones they were given) and free the moves; the API
 * records the reconstruction added are then to be dropped
 * (tt_store_truncate). Safe on a zeroed st. */
void tt_lite_restore(tt_store *s, tt_lite_stats *st);

/* --latency-sample (lite_sample.c): give the kernels of iterations traced
 * without latency timestamps the queued/submitted times of the nearest
 * sampled iteration that made the same calls (TT_RF_LEAD_COPIED), before
 * tt_lite_reconstruct. Iterations are the ITER records with a correlation
 * id. Returns the number of launches given one, or -1 when out of memory. */
long tt_lite_copy_leads(tt_store *s);
/* After writing: take the copied times out again. */
void tt_lite_uncopy_leads(tt_store *s);

/* ---- launch host times from callbacks (hostcalls.c) ---- */

#define TT_HC_CHUNK 1024 /* entries per thread buffer */
#define TT_HC_NESTED 4   /* timed calls remembered inside one outer call */

/* One timed call: its host entry and exit (CUPTI clock). */
typedef struct tt_hc_entry {
    uint32_t corr;
    uint16_t cbid;   /* of the outermost call */
    uint8_t driver;  /* the outermost call is a driver API call */
    uint8_t flags;   /* TT_RF_NESTED: made inside the outermost call */
    uint64_t start, end;
} tt_hc_entry;

typedef struct tt_hc_buf tt_hc_buf; /* one thread's entries (hostcalls.c) */

/* Every thread's entries; the writer collects them into `all`. */
typedef struct tt_hc_log {
    pthread_mutex_t mu;   /* bufs, all, lost; never held around a callback */
    pthread_key_t key;    /* hands a thread's buffer back when it ends */
    bool ready;
    tt_hc_buf *bufs;
    tt_hc_entry *all;     /* collected, in no particular order */
    size_t n, cap;
    size_t max;           /* at most this many kept (0: no limit) */
    uint64_t lost;        /* past max, or out of memory */
} tt_hc_log;

/* The calling thread's state (thread-local in the library). Zeroed to start. */
typedef struct tt_hc_thread {
    tt_hc_buf *buf;
    uint32_t depth;       /* timed calls under way, nested */
    uint32_t outer;       /* correlation id of the outermost */
    uint32_t nested[TT_HC_NESTED];
    uint8_t n_nested;
} tt_hc_thread;

/* Returns 0, or -1 when the mutex or thread key cannot be made. */
int tt_hc_init(tt_hc_log *log, size_t max_entries);
void tt_hc_free(tt_hc_log *log);
/* A timed call's entry callback: true when it is the outermost (stamp its
 * start), false when it runs inside another (it will get that one's times).
 * Its exit callback, tt_hc_exit: true when the outermost call returns (record
 * it). Inline: both run in every timed launch. */
static inline bool tt_hc_enter(tt_hc_thread *th, uint32_t corr)
{
    if (th->depth++ == 0) {
        th->outer = corr;
        th->n_nested = 0;
        return true;
    }
    /* (with CUDA 13 every runtime launch makes a driver launch callback
     * with the runtime call's own id: nothing to add for it) */
    if (corr != th->outer && th->n_nested < TT_HC_NESTED)
        th->nested[th->n_nested++] = corr;
    return false;
}

static inline bool tt_hc_exit(tt_hc_thread *th)
{
    if (th->depth > 1) {
        th->depth--;
        return false;
    }
    th->depth = 0;
    return true;
}

/* Record the outermost call (and the calls nested in it, flagged
 * TT_RF_NESTED, with its times and cbid). */
void tt_hc_add(tt_hc_log *log, tt_hc_thread *th, int driver, uint32_t cbid, uint32_t corr,
               uint64_t start, uint64_t end);
/* Writer: move every published entry into log->all; drop those with a
 * correlation id below `below` (0: keep all). */
void tt_hc_collect(tt_hc_log *log, uint32_t below);
/* The same in steps, for a writer that must not wait forever (a signal may
 * have stopped a thread inside its once-per-buffer critical section):
 * tt_hc_lock returns 0 with log->mu held, or -1 after wait_ms; then
 * tt_hc_collect_locked, read log->all, tt_hc_unlock. */
int tt_hc_lock(tt_hc_log *log, int wait_ms);
void tt_hc_collect_locked(tt_hc_log *log, uint32_t below);
void tt_hc_unlock(tt_hc_log *log);

/* ---- device properties (from the driver, at context creation) ---- */

typedef struct tt_device {
    int ordinal;
    char name[256];
    char uuid[40];
    int cc_major, cc_minor;
    int sms;
    int max_threads_per_sm, max_threads_per_block, max_blocks_per_sm;
    int regs_per_sm, regs_per_block;
    int smem_per_sm, smem_per_block, smem_per_block_optin, smem_reserved_per_block;
    int warp_size;
    int l2_bytes;
    int clock_khz, mem_clock_khz, mem_bus_bits;
    int async_engines;
    int stream_prio_least, stream_prio_greatest;
    uint64_t total_mem;
} tt_device;

/* ---- output ---- */

/* What the writer needs besides the records. */
typedef struct tt_trace_meta {
    int pid;
    const tt_options *opts;
    const tt_device *devices;
    int n_devices;
    uint64_t window_start_ts;  /* keep records at or after (CUPTI clock); 0 = all */
    uint32_t window_start_corr;/* first correlation id kept; 0 = all */
    uint64_t window_stop_ts;   /* keep records before; UINT64_MAX = open */
    uint32_t window_stop_corr; /* first correlation id dropped; UINT32_MAX = open */
    bool truncated;
    const char *truncation_reason;
    const char *end_reason;    /* "exit", "stop-after-iterations", "signal SIGTERM", ... */
    uint64_t dropped_records;  /* CUPTI said it dropped these (buffer full) */
    uint64_t incomplete_records; /* GPU records without timestamps at the end */
    uint64_t iterations_seen;  /* boundaries found by the tracer, whole run */
    int64_t cupti_to_unix_ns;  /* add to a CUPTI timestamp to get Unix time */
    const tt_lite_stats *lite; /* LITE: what the reconstruction did; else NULL */
    bool latency_timestamps;   /* LITE: CUPTI accepted to collect queued times */
} tt_trace_meta;

/* Write store (filtered by the window in meta) to path atomically: a temp file
 * in the same folder, renamed over path when complete. gzip uses zlib loaded
 * at run time. Returns 0, or -1 with a message in msg. */
int tt_write_trace(const tt_store *s, const tt_trace_meta *meta, const char *path,
                   char *msg, size_t msg_len);

/* Strip CUPTI's "_vNNNN" suffix from an API function name into out. */
void tt_api_base_name(const char *name, char *out, size_t out_len);

#endif
