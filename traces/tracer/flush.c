/* tally-trace: writing the trace out. One write (write_now: the lite host
 * calls rebuilt for it, the window's and the boundaries' ids and times
 * resolved, tt_write_trace, the store put back as it was), and when it
 * happens: on the writer thread of ours (a stop condition met, cudaDeviceReset
 * returned, a signal), which the other files wake through a pipe
 * (tt_wake_writer), and in the exit handler (tt_at_exit), the final one.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inject.h"

/* ---- one write ---- */

/* Correlation ids are handed out in order as API calls begin, so a boundary
 * known only by its time (NVTX, seconds) becomes one the GPU records can use:
 * the window starts at the first call that began at or after its start and
 * ends after the last call that began before its stop. */
static uint32_t first_corr_from(uint64_t ts)
{
    uint32_t best = UINT32_MAX;
    for (size_t i = 0; i < tt_state.store.n; i++) {
        const tt_rec *r = tt_store_at(&tt_state.store, i);
        if (r->type == TT_R_API && r->start >= ts && r->corr < best)
            best = r->corr;
    }
    return best;
}

static uint32_t corr_after_last_before(uint64_t ts)
{
    uint32_t last = 0;
    for (size_t i = 0; i < tt_state.store.n; i++) {
        const tt_rec *r = tt_store_at(&tt_state.store, i);
        if (r->type == TT_R_API && r->start < ts && r->corr > last)
            last = r->corr;
    }
    return last + 1;
}

/* Boundaries found in kernel records know the launch's correlation id, not
 * its host time: take the time (and thread) of the launch's API call. */
static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* start_corr, stop_corr: tt_state's, as the lite reconstruction moved them. */
static void resolve_boundary_times(uint32_t start_corr, uint32_t stop_corr)
{
    size_t n = 0;
    for (size_t i = 0; i < tt_state.store.n; i++) {
        const tt_rec *r = tt_store_at(&tt_state.store, i);
        n += r->type == TT_R_ITER && r->start == 0;
    }
    bool need_start = start_corr && !tt_state.start_ts;
    bool need_stop = stop_corr != UINT32_MAX && tt_state.stop_ts == UINT64_MAX;
    if (!n && !need_start && !need_stop)
        return;
    uint32_t *corrs = malloc((n + 2) * sizeof *corrs);
    if (!corrs)
        return;
    size_t k = 0;
    for (size_t i = 0; i < tt_state.store.n; i++) {
        const tt_rec *r = tt_store_at(&tt_state.store, i);
        if (r->type == TT_R_ITER && r->start == 0)
            corrs[k++] = r->corr;
    }
    qsort(corrs, k, sizeof *corrs, cmp_u32);
    /* API records with those correlation ids: time and thread, by position */
    uint64_t *ts = calloc(k + 1, sizeof *ts);
    uint32_t *tid = calloc(k + 1, sizeof *tid);
    for (size_t i = 0; ts && tid && i < tt_state.store.n; i++) {
        const tt_rec *r = tt_store_at(&tt_state.store, i);
        if (r->type != TT_R_API)
            continue;
        if (need_start && r->corr == start_corr)
            tt_state.start_ts = r->start, need_start = false;
        if (need_stop && r->corr == stop_corr)
            tt_state.stop_ts = r->start, need_stop = false;
        uint32_t *hit = k ? bsearch(&r->corr, corrs, k, sizeof *corrs, cmp_u32) : NULL;
        if (hit)
            ts[hit - corrs] = r->start, tid[hit - corrs] = r->tid;
    }
    for (size_t i = 0; ts && tid && i < tt_state.store.n; i++) {
        tt_rec *r = tt_store_at(&tt_state.store, i);
        if (r->type != TT_R_ITER || r->start != 0)
            continue;
        uint32_t *hit = bsearch(&r->corr, corrs, k, sizeof *corrs, cmp_u32);
        if (hit && ts[hit - corrs])
            r->start = ts[hit - corrs], r->tid = tid[hit - corrs];
        else
            r->type = TT_R_DEAD; /* its launch was not recorded: no boundary */
    }
    free(ts);
    free(tid);
    free(corrs);
}

/* --launch-times callback: the timed calls of every thread so far, as
 * HOSTCALL records for lite.c, appended for this write only (write_now
 * truncates them with the calls it rebuilds). Names are looked up here, not
 * in the handler. Called with tt_state.mu held. */
static uint64_t add_host_calls(void)
{
    /* Bounded: a signal may have stopped a launching thread inside the
     * lock (once per 1024 calls); the trace is then written with those
     * launches estimated rather than not at all. */
    if (tt_hc_lock(&tt_state.hc, 1000) < 0) {
        tt_say("the launch-time log is busy; launch times are estimated in this write");
        return 0;
    }
    tt_hc_collect_locked(&tt_state.hc, tt_state.started && tt_state.start_corr ? tt_state.start_corr : 0);
    for (size_t i = 0; i < tt_state.hc.n; i++) {
        const tt_hc_entry *e = &tt_state.hc.all[i];
        if (!tt_keep_corr(e->corr))
            continue;
        tt_rec *r = tt_store_add(&tt_state.store);
        if (!r)
            break; /* their calls are estimated instead */
        r->type = TT_R_HOSTCALL;
        r->corr = e->corr;
        r->start = e->start, r->end = e->end;
        r->sub = e->driver;
        r->id = e->cbid;
        r->flags = e->flags;
        r->name = tt_api_name(e->driver, e->cbid);
    }
    uint64_t lost = tt_state.hc.lost;
    tt_hc_unlock(&tt_state.hc);
    return lost;
}

/* Called with tt_state.mu held. */
static int write_now(const char *end_reason, bool truncated, const char *why)
{
    /* LITE: the host calls are rebuilt for this write and forgotten after
     * it (a later write, at exit after a cudaDeviceReset, rebuilds them
     * from all the records). Boundaries and windows known by time or by
     * launch find their calls among them, as with recorded ones. */
    size_t n_recorded = tt_state.store.n;
    tt_lite_stats lite = {0};
    uint64_t hc_lost = tt_state.opts.host_timeline == TT_HOST_LITE && tt_state.hc.ready ? add_host_calls() : 0;
    bool copy_leads = tt_state.opts.host_timeline == TT_HOST_LITE && tt_state.latency_ts &&
                      tt_state.opts.latency_sample > 1;
    if (copy_leads && tt_lite_copy_leads(&tt_state.store) < 0)
        tt_say("out of memory while copying launch times from the sampled iterations: the "
               "others' launches are placed between their neighbours");
    if (tt_state.opts.host_timeline == TT_HOST_LITE &&
        tt_lite_reconstruct(&tt_state.store, (uint32_t)tt_state.pid, &lite) < 0 && !tt_state.truncated) {
        tt_state.truncated = true;
        snprintf(tt_state.trunc_reason, sizeof tt_state.trunc_reason,
                 "out of memory while rebuilding the host calls");
    }
    lite.host_calls_lost = hc_lost;
    /* the window's ids as the reconstruction moved them (completions) */
    uint32_t start_corr = tt_lite_corr(&lite, tt_state.start_corr);
    uint32_t stop_corr = tt_state.stop_corr != UINT32_MAX ? tt_lite_corr(&lite, tt_state.stop_corr) : UINT32_MAX;
    resolve_boundary_times(start_corr, stop_corr);
    tt_trace_meta m = {0};
    m.pid = tt_state.pid;
    m.opts = &tt_state.opts;
    m.devices = tt_state.devices;
    m.n_devices = tt_state.n_devices;
    bool any_window = tt_state.opts.start_iters >= 0 || tt_state.opts.start_seconds >= 0;
    bool started = tt_state.started || (tt_state.opts.start_seconds >= 0 && tt_now_cupti() >= tt_state.start_ts);
    if (any_window && !started) {
        truncated = true;
        why = "the program ended before the start condition was met";
        m.window_start_ts = UINT64_MAX; /* nothing in the window */
        m.window_start_corr = UINT32_MAX;
    } else {
        m.window_start_ts = tt_state.start_ts;
        m.window_start_corr = start_corr             ? start_corr
                              : tt_state.start_ts           ? first_corr_from(tt_state.start_ts)
                                                     : 0;
    }
    m.window_stop_ts = tt_state.stop_ts;
    m.window_stop_corr = stop_corr != UINT32_MAX   ? stop_corr
                         : tt_state.stop_ts != UINT64_MAX ? corr_after_last_before(tt_state.stop_ts)
                                                   : UINT32_MAX;
    if (tt_state.truncated) { /* a limit hit while recording wins */
        truncated = true;
        why = tt_state.trunc_reason;
    }
    m.truncated = truncated;
    m.truncation_reason = why;
    m.end_reason = end_reason;
    m.dropped_records = tt_state.dropped;
    m.incomplete_records = tt_state.incomplete;
    m.iterations_seen = tt_state.iters_seen;
    m.cupti_to_unix_ns = tt_state.cupti_to_unix;
    m.lite = tt_state.opts.host_timeline == TT_HOST_LITE ? &lite : NULL;
    m.latency_timestamps = tt_state.latency_ts;
    char msg[9000];
    int rc = tt_write_trace(&tt_state.store, &m, tt_state.path, msg, sizeof msg);
    tt_say("%s%s", rc < 0 ? "cannot write the trace: " : "wrote ", msg);
    tt_lite_restore(&tt_state.store, &lite); /* CUPTI's ids again, for a later write */
    if (copy_leads)
        tt_lite_uncopy_leads(&tt_state.store);
    tt_store_truncate(&tt_state.store, n_recorded);
    return rc;
}

/* ---- the stop and the writer thread ---- */

static const unsigned api_kinds[] = {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
                                     CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                     CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_CUDA_EVENT};
static const unsigned gpu_kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                     CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                     CUPTI_ACTIVITY_KIND_STREAM};

static void disable_kinds(const unsigned *kinds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cuptiActivityDisable((CUpti_ActivityKind)kinds[i]);
}

/* The stop condition was met: the window is closed. Stop the host-side
 * records at once (they are the overhead), let the GPU finish the window's
 * work, write, then turn everything off. */
static void finish_stop(void)
{
    disable_kinds(api_kinds, sizeof api_kinds / sizeof api_kinds[0]);
    cuptiEnableAllDomains(0, tt_state.subscriber);
    tt_sync_contexts();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&tt_state.mu);
    if (!tt_state.final_written) {
        write_now(tt_state.end_reason ? tt_state.end_reason : "stop", false, NULL);
        tt_state.final_written = true;
    }
    pthread_mutex_unlock(&tt_state.mu);
    disable_kinds(gpu_kinds, sizeof gpu_kinds / sizeof gpu_kinds[0]);
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
    }
}

/* Held by the writer while it works and, for good, by the exit handler: a
 * stop found only while the exit handler flushes (an iteration kernel's
 * record) must not have the writer call CUPTI while the process unloads it. */
static pthread_mutex_t work_mu = PTHREAD_MUTEX_INITIALIZER;

void tt_wake_writer(char req)
{
    if (tt_state.writer_running) {
        ssize_t w = write(tt_state.req_pipe[1], &req, 1);
        (void)w;
    }
}

void *tt_writer_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals go to the program's threads */
    for (;;) {
        int timeout = -1;
        pthread_mutex_lock(&tt_state.mu);
        uint64_t deadline = tt_state.final_written ? 0 : tt_state.stop_deadline;
        pthread_mutex_unlock(&tt_state.mu);
        if (deadline) {
            uint64_t now = tt_now_cupti();
            timeout = now >= deadline ? 0 : (int)((deadline - now) / 1000000 + 1);
        }
        /* Iteration kernels are seen in delivered records: deliver them
         * often while a start or stop condition waits on them. */
        bool poll_kernels = *tt_state.opts.iter_kernel && !tt_state.final_written && !tt_state.stopping &&
                            (tt_state.opts.start_iters >= 0 || tt_state.opts.stop_iters > 0);
        if (poll_kernels && (timeout < 0 || timeout > 200))
            timeout = 200;
        struct pollfd pfd = {.fd = tt_state.req_pipe[0], .events = POLLIN};
        int pr = poll(&pfd, 1, timeout);
        if (pr < 0 && errno == EINTR)
            continue;
        unsigned char req = 0;
        if (pr == 0 && poll_kernels) {
            pthread_mutex_lock(&work_mu);
            cuptiActivityFlushAll(0);
            pthread_mutex_unlock(&work_mu);
        }
        if (pr == 0) {
            pthread_mutex_lock(&tt_state.mu);
            bool fire = !tt_state.stopping && tt_state.stop_deadline && tt_now_cupti() >= tt_state.stop_deadline;
            if (fire) {
                tt_state.stopping = true;
                tt_state.stop_ts = tt_state.stop_deadline;
                tt_state.end_reason = "stop-after-seconds";
            }
            tt_state.stop_deadline = 0;
            pthread_mutex_unlock(&tt_state.mu);
            if (fire) {
                pthread_mutex_lock(&work_mu);
                finish_stop();
                pthread_mutex_unlock(&work_mu);
            }
            continue;
        }
        if (read(tt_state.req_pipe[0], &req, 1) != 1 || req == TT_REQ_TIMER)
            continue; /* TT_REQ_TIMER: the stop deadline changed; loop to re-read it */
        pthread_mutex_lock(&work_mu);
        if (req == TT_REQ_STOP) {
            finish_stop();
        } else if (req == TT_REQ_RESET) {
            /* cudaDeviceReset returned: the context's records were delivered
             * when it was destroyed. The program may go on: what is written
             * now says so, and the exit rewrites it whole. */
            cuptiActivityFlushAll(0);
            pthread_mutex_lock(&tt_state.mu);
            if (!tt_state.final_written)
                write_now("cudaDeviceReset", true,
                          "written at cudaDeviceReset; the process had not exited yet");
            pthread_mutex_unlock(&tt_state.mu);
        } else if (req & TT_REQ_SIGNAL) {
            int sig = req & 0x7f;
            /* Forced: GPU work still running when the signal came has no end
             * time; those records are counted as incomplete. */
            cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
            pthread_mutex_lock(&tt_state.mu);
            if (!tt_state.final_written) {
                char why[128], end[64];
                snprintf(end, sizeof end, "signal %s", signal_name(sig));
                snprintf(why, sizeof why, "the process received %s", signal_name(sig));
                write_now(end, true, why);
            }
            pthread_mutex_unlock(&tt_state.mu);
            char done = 1;
            ssize_t w = write(tt_state.done_pipe[1], &done, 1);
            (void)w;
        }
        pthread_mutex_unlock(&work_mu);
    }
    return NULL; /* not reached: the thread ends with the process */
}

/* ---- exit: the final write ---- */

void tt_at_exit(void)
{
    if (atomic_load(&tt_state.inert))
        return;
    pthread_mutex_lock(&work_mu); /* never released: the writer is done */
    pthread_mutex_lock(&tt_state.mu);
    bool done = tt_state.final_written;
    pthread_mutex_unlock(&tt_state.mu);
    if (done)
        return;
    /* The program is done calling CUDA: what follows is ours (the context
     * synchronize that completes the GPU records) and must not be recorded,
     * nor seen as a wait or an iteration by the synchronize domain. */
    disable_kinds(api_kinds, sizeof api_kinds / sizeof api_kinds[0]);
    if (tt_lite_completions())
        cuptiEnableDomain(0, tt_state.subscriber, CUPTI_CB_DOMAIN_SYNCHRONIZE);
    tt_sync_contexts();
    cuptiActivityFlushAll(0);
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&tt_state.mu);
    if (!tt_state.final_written) {
        bool trunc = tt_state.incomplete > 0;
        char why[128];
        snprintf(why, sizeof why, "%llu GPU records had not completed at exit",
                 (unsigned long long)tt_state.incomplete);
        write_now(tt_state.end_reason ? tt_state.end_reason : "exit", trunc, why);
        tt_state.final_written = true;
    }
    pthread_mutex_unlock(&tt_state.mu);
}
