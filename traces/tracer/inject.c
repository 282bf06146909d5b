/* tally-trace: the CUPTI injection library (libtally_trace.so).
 *
 * The CUDA driver loads this library when the process initializes CUDA and
 * CUDA_INJECTION64_PATH names it, and calls InitializeInjection once. From
 * there on CUPTI's activity API records kernels (CONCURRENT_KERNEL: the plain
 * KERNEL kind serializes them), copies, memsets, synchronizations, CUDA event
 * records, streams and NVTX ranges, and the host side as --host-timeline
 * says: lite (default) records no API call but kernels' queued/submitted
 * latency timestamps (or, with --launch-times callback, the launch calls'
 * host entry and exit from callbacks on those calls only: hostcalls.c), and
 * lite.c rebuilds the calls when writing; full
 * records every runtime and driver API call (host start/end, thread); none
 * records GPU work only. A few callbacks, enabled only where an option needs
 * them, find iteration boundaries as they happen (NVTX ranges, synchronize
 * calls; an iteration kernel is found in the kernel records instead), time
 * the synchronize and event calls (lite with --sync-records callback) and
 * see cudaDeviceReset and context creation (device properties).
 *
 * The trace is written (tracer write.c) at exit, on SIGINT/SIGTERM and crash
 * signals, after cudaDeviceReset and when a stop condition is met. The heavy
 * work (flush, write) runs on a thread of ours: a signal handler only asks for
 * it through a pipe and waits, bounded, for the answer.
 *
 * This file holds the entry point, the library's state (g), the signal
 * handler and the fork handler; inject.h lists the other files.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"
#include "tally/common.h" /* tl_parse_int64: core/common.c is linked in (cuda.mk) */

/* tracer.h mirrors these CUPTI values so that write.c and lite.c build
 * without CUPTI's headers. */
_Static_assert((int)TT_COPY_HTOD == (int)CUPTI_ACTIVITY_MEMCPY_KIND_HTOD &&
                   (int)TT_COPY_DTOH == (int)CUPTI_ACTIVITY_MEMCPY_KIND_DTOH &&
                   (int)TT_COPY_HTOA == (int)CUPTI_ACTIVITY_MEMCPY_KIND_HTOA &&
                   (int)TT_COPY_ATOH == (int)CUPTI_ACTIVITY_MEMCPY_KIND_ATOH &&
                   (int)TT_COPY_ATOA == (int)CUPTI_ACTIVITY_MEMCPY_KIND_ATOA &&
                   (int)TT_COPY_ATOD == (int)CUPTI_ACTIVITY_MEMCPY_KIND_ATOD &&
                   (int)TT_COPY_DTOA == (int)CUPTI_ACTIVITY_MEMCPY_KIND_DTOA &&
                   (int)TT_COPY_DTOD == (int)CUPTI_ACTIVITY_MEMCPY_KIND_DTOD &&
                   (int)TT_COPY_HTOH == (int)CUPTI_ACTIVITY_MEMCPY_KIND_HTOH &&
                   (int)TT_COPY_PTOP == (int)CUPTI_ACTIVITY_MEMCPY_KIND_PTOP,
               "copy kinds");
_Static_assert((int)TT_MEM_PAGEABLE == (int)CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE &&
                   (int)TT_MEM_PINNED == (int)CUPTI_ACTIVITY_MEMORY_KIND_PINNED &&
                   (int)TT_MEM_DEVICE == (int)CUPTI_ACTIVITY_MEMORY_KIND_DEVICE &&
                   (int)TT_MEM_ARRAY == (int)CUPTI_ACTIVITY_MEMORY_KIND_ARRAY &&
                   (int)TT_MEM_MANAGED == (int)CUPTI_ACTIVITY_MEMORY_KIND_MANAGED &&
                   (int)TT_MEM_DEVICE_STATIC == (int)CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC &&
                   (int)TT_MEM_MANAGED_STATIC == (int)CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC,
               "memory kinds");
_Static_assert((int)TT_SYNCT_EVENT == (int)CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE &&
                   (int)TT_SYNCT_STREAM_WAIT == (int)CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT &&
                   (int)TT_SYNCT_STREAM == (int)CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE &&
                   (int)TT_SYNCT_CONTEXT == (int)CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE,
               "synchronization types");
_Static_assert((int)TT_NO_ID == (int)CUPTI_INVALID_STREAM_ID, "invalid id");

#define TT_SIGNAL_WAIT_MS 10000

static const int handled_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT,
                                      SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define N_HANDLED (sizeof handled_signals / sizeof handled_signals[0])

tt_inject_state tt_state = {.mu = PTHREAD_MUTEX_INITIALIZER, .stop_ts = UINT64_MAX,
                     .stop_corr = UINT32_MAX, .recording = true};

void tt_say(const char *fmt, ...)
{
    if (tt_state.opts.quiet)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(line, sizeof line, "tally-trace[%d]: ", (int)getpid());
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = strlen(line);
    if (len + 1 < sizeof line)
        line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

/* ---- signals, fork ---- */

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    /* (a crash on the writer thread itself must not wait for the writer) */
    if (!atomic_load(&tt_state.inert) && tt_state.writer_running && !pthread_equal(pthread_self(), tt_state.writer) &&
        atomic_exchange(&tt_state.signal_busy, 1) == 0) {
        char req = (char)(TT_REQ_SIGNAL | sig);
        if (write(tt_state.req_pipe[1], &req, 1) == 1) {
            struct pollfd pfd = {.fd = tt_state.done_pipe[0], .events = POLLIN};
            while (poll(&pfd, 1, TT_SIGNAL_WAIT_MS) < 0 && errno == EINTR)
                ;
        }
    }
    /* Chain: the program's own handler, or the default action. */
    struct sigaction *old = &tt_state.old_act[sig];
    if (tt_state.have_old[sig] && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
        old->sa_sigaction(sig, si, uc);
    } else if (tt_state.have_old[sig] && old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
    } else if (!tt_state.have_old[sig] || old->sa_handler == SIG_DFL) {
        signal(sig, SIG_DFL);
        raise(sig); /* blocked while we run: delivered, with the default action, on return */
    }
    errno = saved;
}

static void install_signals(void)
{
    for (size_t i = 0; i < N_HANDLED; i++) {
        int sig = handled_signals[i];
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sig, NULL, &tt_state.old_act[sig]) == 0) {
            tt_state.have_old[sig] = true;
            if (tt_state.old_act[sig].sa_handler == SIG_IGN)
                continue; /* the program asked to ignore it (nohup): leave it so */
        }
        sigaction(sig, &sa, NULL);
    }
}

/* A forked child shares nothing of ours that works (no CUPTI thread, no
 * writer thread) and must not write its parent's records: it goes inert. If
 * it execs and uses CUDA, the new image loads us afresh and writes its own
 * file. */
static void after_fork_child(void)
{
    atomic_store(&tt_state.inert, true);
}

/* ---- entry point ---- */

__attribute__((visibility("default"))) int InitializeInjection(void)
{
    static atomic_bool once;
    if (atomic_exchange(&once, true))
        return 1;
    char msg[512];
    if (tt_options_from_env(&tt_state.opts, msg, sizeof msg) < 0) {
        tt_say("%s; not tracing", msg);
        atomic_store(&tt_state.inert, true);
        return 1;
    }
    tt_state.pid = (int)getpid();
    /* A fixed name (no %p) belongs to the process tally-trace started; its
     * children get the pid inserted, so that nobody overwrites anybody. */
    char pattern[4200];
    snprintf(pattern, sizeof pattern, "%s", tt_state.opts.output);
    const char *root = getenv("TALLY_TRACE_ROOT_PID");
    long long root_pid = -1; /* unset or not a pid: this process is not tally-trace's */
    if (root)
        tl_parse_int64(root, 1, INT_MAX, &root_pid);
    if (!strstr(pattern, "%p") && root && root_pid != tt_state.pid) {
        char *dot = strstr(pattern, ".json");
        char tail[4200];
        snprintf(tail, sizeof tail, "%s", dot ? dot : "");
        snprintf(dot ? dot : pattern + strlen(pattern),
                 sizeof pattern - (size_t)((dot ? dot : pattern + strlen(pattern)) - pattern),
                 ".%%p%s", tail);
    }
    char rel[4200];
    if (tt_expand_output(pattern, tt_state.pid, tt_state.opts.gzip, rel, sizeof rel) < 0) {
        tt_say("output path too long; not tracing");
        atomic_store(&tt_state.inert, true);
        return 1;
    }
    /* Absolute now: the program may chdir before it exits. */
    char cwd[PATH_MAX];
    if (rel[0] != '/' && getcwd(cwd, sizeof cwd))
        snprintf(tt_state.path, sizeof tt_state.path, "%s/%s", cwd, rel);
    else
        snprintf(tt_state.path, sizeof tt_state.path, "%s", rel);
    tt_load_driver_symbols();
    tt_store_init(&tt_state.store);

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t cupti_now = tt_now_cupti();
    tt_state.cupti_to_unix = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - (int64_t)cupti_now;
    if (tt_state.opts.start_seconds >= 0) {
        int64_t t = tt_state.opts.t0_unix_ns + (int64_t)(tt_state.opts.start_seconds * 1e9) - tt_state.cupti_to_unix;
        tt_state.start_ts = t > 0 ? (uint64_t)t : 1;
        if (tt_state.start_ts <= cupti_now)
            tt_state.started = true;
    } else if (tt_state.opts.start_iters < 0 || (tt_state.opts.start_iters == 0 && tt_state.opts.iter_sync > 0 &&
                                          !*tt_state.opts.iter_marker && !*tt_state.opts.iter_kernel)) {
        tt_state.started = true; /* record from the beginning */
    }
    if (tt_state.opts.stop_seconds >= 0 && (tt_state.started || tt_state.opts.start_seconds >= 0)) {
        uint64_t from = tt_state.opts.start_seconds >= 0 ? tt_state.start_ts : cupti_now;
        tt_state.stop_deadline = from + (uint64_t)(tt_state.opts.stop_seconds * 1e9);
    }
    bool counting = *tt_state.opts.iter_marker || *tt_state.opts.iter_kernel || tt_state.opts.iter_sync > 0;
    if ((tt_state.opts.start_iters >= 0 || tt_state.opts.stop_iters > 0) && !counting)
        tt_say("--start/stop-after-iterations need an iteration method (--iteration-marker, "
               "--iteration-kernel or --iteration-sync); they are ignored");

    cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    tt_find_queries();
    if (cuptiActivityRegisterCallbacks(tt_buffer_requested, tt_buffer_completed) != CUPTI_SUCCESS ||
        tt_setup_callbacks() < 0 || tt_enable_activities(tt_state.opts.activities) < 0) {
        tt_say("CUPTI setup failed; not tracing");
        atomic_store(&tt_state.inert, true);
        return 1;
    }

    if (pipe2(tt_state.req_pipe, O_CLOEXEC) == 0 && pipe2(tt_state.done_pipe, O_CLOEXEC) == 0 &&
        pthread_create(&tt_state.writer, NULL, tt_writer_main, NULL) == 0) {
        tt_state.writer_running = true;
        pthread_detach(tt_state.writer);
    } else {
        tt_say("cannot start the writer thread: stop conditions and signals will not write");
    }
    install_signals();
    pthread_atfork(NULL, NULL, after_fork_child);
    atexit(tt_at_exit);
    return 1;
}
