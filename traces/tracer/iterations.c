/* tally-trace: iteration boundaries, as the other files find them (NVTX
 * ranges and synchronize calls in callbacks.c, the iteration kernel in
 * activity.c): each opens the recording window when the start condition is
 * met, closes it when the stop condition is, samples iterations
 * (activity_kinds.c) and leaves an iteration record.
 */
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inject.h"

static uint32_t gettid_(void) { return (uint32_t)syscall(SYS_gettid); }

/* A boundary: the iteration with this index starts at ts; its first API call
 * has correlation id corr. Either may be unknown (0): an NVTX range has no
 * correlation id, a kernel record no host time; they are resolved from the
 * API records when writing. Called with tt_state.mu held. */
void tt_boundary_locked(uint64_t ts, uint32_t corr)
{
    if (tt_state.stopping)
        return;
    uint64_t it = tt_state.opts.iter_sync > 0 && !*tt_state.opts.iter_marker && !*tt_state.opts.iter_kernel
                      ? tt_state.iters_seen + 1 /* sync: iteration 0 starts with the program */
                      : tt_state.iters_seen;
    tt_state.iters_seen++;
    if (!tt_state.started && tt_state.opts.start_iters >= 0 && (int64_t)it >= tt_state.opts.start_iters) {
        tt_state.started = true;
        tt_state.start_ts = ts;
        tt_state.start_corr = corr;
        tt_state.first_iter = (int64_t)it;
        if (tt_state.opts.stop_seconds >= 0) {
            tt_state.stop_deadline = (ts ? ts : tt_now_cupti()) + (uint64_t)(tt_state.opts.stop_seconds * 1e9);
            tt_wake_writer(TT_REQ_TIMER); /* the writer re-reads its timer */
        }
    } else if (!tt_state.started && tt_state.opts.start_seconds >= 0 && ts >= tt_state.start_ts) {
        tt_state.started = true; /* start by time: iterations count from the first whole one */
        tt_state.first_iter = (int64_t)it;
    }
    tt_sample_latency_locked(it);
    bool skipped = tt_sample_records_locked(it);
    if (!tt_state.started)
        return;
    if (tt_state.opts.stop_iters > 0 && (int64_t)it >= tt_state.first_iter + tt_state.opts.stop_iters) {
        tt_state.stopping = true; /* this boundary starts the first iteration not wanted */
        tt_state.stop_ts = ts ? ts : UINT64_MAX;
        tt_state.stop_corr = corr ? corr : UINT32_MAX;
        tt_state.end_reason = "stop-after-iterations";
        tt_wake_writer(TT_REQ_STOP);
        return;
    }
    tt_rec *r = tt_add_record(TT_R_ITER);
    if (r) {
        r->start = ts, r->corr = corr, r->id = (uint32_t)it, r->tid = ts ? gettid_() : 0;
        r->sub = skipped ? TT_ITER_SKIPPED : TT_ITER_RECORDED;
    }
}

void tt_boundary(uint64_t ts, uint32_t corr)
{
    pthread_mutex_lock(&tt_state.mu);
    tt_boundary_locked(ts, corr);
    pthread_mutex_unlock(&tt_state.mu);
}
