/* tally-trace: what the files of the injection library (libtally_trace.so)
 * share: its one state, g, and the functions one file calls in another.
 * These files use CUDA's and CUPTI's headers; tracer.h holds what builds
 * without them (options, records, the lite timeline, the writer).
 *
 *   inject.c          the entry point (InitializeInjection), signals, fork
 *   devices.c         device properties and contexts, through the driver
 *   activity.c        records from CUPTI's activity buffers; query calls dropped
 *   activity_kinds.c  which CUPTI activity kinds are on: at the start, and
 *                     per iteration with --record-every / --latency-sample
 *   iterations.c      iteration boundaries: the recording window's start and stop
 *   callbacks.c       CUPTI callbacks: synchronize, event and launch calls,
 *                     NVTX ranges, contexts, cudaDeviceReset
 *   flush.c           writing the trace: one write, the stop, the writer
 *                     thread, the exit
 */
#ifndef TALLY_TRACER_INJECT_H
#define TALLY_TRACER_INJECT_H

#include <cuda.h>
#include <cupti.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "tracer.h"

#define TT_MAX_DEVICES 64
#define TT_MAX_CONTEXTS 64

/* Requests to the writer thread, one byte each through the pipe. */
enum { TT_REQ_STOP = 'S', TT_REQ_RESET = 'R', TT_REQ_TIMER = 'T',
       TT_REQ_SIGNAL = 0x80 /* | signo */ };

/* The library's state; its one instance is tt_state, in inject.c (nearly
 * every function of the library reads it). */
typedef struct tt_inject_state {
    tt_options opts;
    pthread_mutex_t mu;        /* store, window, devices, contexts */
    tt_store store;
    uint32_t *demangled;       /* demangled[mangled string id] = string id, 0 = not yet */
    uint32_t n_demangled;
    uint32_t api_names[2][1024]; /* string id per (runtime/driver, cbid), 0 = not yet */
    tt_device devices[TT_MAX_DEVICES];
    int n_devices;
    CUcontext contexts[TT_MAX_CONTEXTS];
    int n_contexts;
    CUpti_SubscriberHandle subscriber;

    /* recording window (CUPTI clock and correlation ids) */
    bool started;
    uint64_t start_ts, stop_ts;
    uint32_t start_corr, stop_corr;
    uint64_t stop_deadline;    /* CUPTI clock; 0 = none */
    uint64_t iters_seen;       /* boundaries found */
    int64_t first_iter;        /* index of the first iteration in the window */
    bool stopping;             /* stop condition met: no more boundaries matter */
    bool final_written;        /* the trace is on disk for good */
    const char *end_reason;
    char trunc_reason[256];
    bool truncated;
    uint64_t dropped, incomplete;
    int64_t cupti_to_unix;
    bool latency_ts;           /* LITE: CUPTI collects kernels' queued/submitted */
    bool latency_on;           /* --latency-sample: ... in the current iteration */
    bool latency_toggle_failed;/* CUPTI refused to turn them on or off: said once */
    uint64_t latency_toggles;
    atomic_bool recording;     /* --record-every: GPU activity kinds and our
                                  callbacks' records on (the iteration is kept) */
    bool record_toggle_failed;
    tt_hc_log hc;              /* LITE, --launch-times callback: timed calls */
    char path[8448];
    int pid;

    int req_pipe[2], done_pipe[2];
    pthread_t writer;
    bool writer_running;
    atomic_int signal_busy;    /* a signal's write is under way */
    atomic_bool inert;         /* forked child, or setup failed: do nothing */
    struct sigaction old_act[65];
    bool have_old[65];
} tt_inject_state;

extern tt_inject_state tt_state;

/* inject.c */
void tt_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* CUPTI's clock, the one its records use. Inline (the compiler inlined it
 * when all of this was one file): the launch callback reads it twice a call. */
static inline uint64_t tt_now_cupti(void)
{
    uint64_t t = 0;
    cuptiGetTimestamp(&t);
    return t;
}

/* devices.c */
void tt_load_driver_symbols(void);
void tt_note_device(CUcontext ctx, uint32_t ordinal);
void tt_sync_contexts(void);

/* activity.c */
void tt_find_queries(void);
uint32_t tt_api_name(int driver, uint32_t cbid);
bool tt_keep_corr(uint32_t corr);
tt_rec *tt_add_record(uint8_t type);
void CUPTIAPI tt_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records);
void CUPTIAPI tt_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                  size_t valid);

/* activity_kinds.c */
int tt_enable_activities(unsigned acts);
void tt_sample_latency_locked(uint64_t it);
bool tt_sample_records_locked(uint64_t it);

/* iterations.c */
void tt_boundary_locked(uint64_t ts, uint32_t corr);
void tt_boundary(uint64_t ts, uint32_t corr);

/* callbacks.c */
bool tt_lite_callbacks(void);
bool tt_lite_completions(void);
int tt_setup_callbacks(void);

/* flush.c */
void tt_wake_writer(char req);
void *tt_writer_main(void *arg);
void tt_at_exit(void);

#endif
