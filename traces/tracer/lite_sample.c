/* tally-trace: launch host times for the iterations traced without latency
 * timestamps (--latency-sample N; LITE with --launch-times queued).
 *
 * CUPTI's latency timestamps (a kernel's queued and submitted times) are
 * what gives LITE each launch's host time, but with them on the H100 leaves
 * ~2.3 us instead of ~1.2 us between back-to-back kernels: +4-5% on
 * ResNet-50 training steps (experiments/results/tracer/README.md). With
 * --latency-sample N the library collects them in one iteration of every N
 * only (activity_kinds.c turns them on and off at iteration boundaries), and this
 * file gives the launches of the other iterations the host times of the
 * nearest sampled iteration that made the same calls, measured from the
 * same place:
 *
 * - An iteration is the span of correlation ids from one boundary (an ITER
 *   record with a correlation id: --iteration-sync) to the next. It is
 *   sampled when all its kernels have a queued timestamp, unsampled when
 *   none has (the boundary toggles them, so there is nothing in between).
 * - Two iterations made the same calls when their GPU records and host-timed
 *   waits (synchronizes, stream waits, event records seen by callbacks) come
 *   in the same order with the same kernel names and wait types.
 * - A launch's host time is an offset from its anchor: the last host-timed
 *   call before it in its iteration (the host resumes its own pace when a
 *   wait returns), else the boundary. The unsampled launch gets the sampled
 *   one's offset from its own anchor, stretched by the ratio of the two
 *   iterations' times from that anchor to the next host-timed call (the
 *   synchronize that ends the step, when nothing else: the host's pace
 *   varies from step to step; copied unstretched, launch times were off by
 *   a median 0.96 ms on a ResNet-50 capture, stretched 0.37 ms), never
 *   later than its GPU start or the start of the next host-timed call, never
 *   earlier than the launch before it. Its call lasts what the sampled one's
 *   did (submitted - queued). These are estimates: their error is what the
 *   host's pace varies within a step.
 *
 * The copied times are written into the kernel records' queued/submitted
 * fields with TT_RF_LEAD_COPIED for lite.c to use, and taken out again by
 * tt_lite_uncopy_leads after the write (a later write copies afresh).
 * Launches of an iteration that matches no sampled one keep no host time:
 * lite.c places them between their neighbours as before.
 * Nothing here depends on CUPTI's headers (tests build it without them). */
#include <stdbool.h>
#include <stdlib.h>

#include "tracer.h"

typedef struct sample_elem {
    uint32_t corr;
    size_t rec;
} sample_elem;

typedef struct sample_window {
    size_t lo, hi;    /* elements [lo, hi) */
    uint64_t ts;      /* the boundary's host time */
    uint64_t sig;     /* hash of the calls made */
    bool sampled, unsampled;
} sample_window;

static int by_corr_rec(const void *a, const void *b)
{
    const sample_elem *x = a, *y = b;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    return x->rec < y->rec ? -1 : x->rec > y->rec;
}

/* A call whose host time is its own (a wait or an event record seen by a
 * callback), not one that waits for a completion to be placed. */
static bool is_anchor(const tt_rec *r)
{
    if (r->type == TT_R_SYNC)
        return !(r->flags & TT_RF_END_ONLY) && r->start && r->end >= r->start;
    return r->type == TT_R_EVENT && (r->flags & TT_RF_HOST_TIME);
}

static bool is_gpu_rec(const tt_rec *r)
{
    return r->type == TT_R_KERNEL || r->type == TT_R_MEMCPY || r->type == TT_R_MEMSET;
}

/* What identifies a call in the signature: its kind and, for kernels, its
 * name; for waits, their type. */
static uint64_t call_key(const tt_rec *r)
{
    return (uint64_t)r->type << 40 | (uint64_t)r->sub << 32 |
           (r->type == TT_R_KERNEL ? r->name : 0);
}

static bool same_calls(const tt_store *s, const sample_elem *e, const sample_window *a,
                       const sample_window *b)
{
    if (a->sig != b->sig || a->hi - a->lo != b->hi - b->lo)
        return false;
    for (size_t i = 0; i < a->hi - a->lo; i++)
        if (call_key(tt_store_at(s, e[a->lo + i].rec)) != call_key(tt_store_at(s, e[b->lo + i].rec)))
            return false;
    return true;
}

/* Give window w's launches the host times of sampled window x's. Returns
 * the number of launches (correlation ids) given one. */
static uint64_t copy_window(tt_store *s, const sample_elem *e, const sample_window *w,
                            const sample_window *x)
{
    size_t n = w->hi - w->lo;
    uint64_t anchor_w = w->ts, anchor_x = x->ts, prev = 0, copied = 0;
    uint32_t last_corr = 0;
    size_t next = 0; /* index of the next host-timed call after i, n if none; found
                        again once i has reached it */
    for (size_t i = 0; i < n; i++) {
        tt_rec *rw = tt_store_at(s, e[w->lo + i].rec);
        const tt_rec *rx = tt_store_at(s, e[x->lo + i].rec);
        if (is_anchor(rw)) {
            anchor_w = rw->end, anchor_x = rx->end;
            if (rw->end > prev)
                prev = rw->end;
            continue;
        }
        if (rw->type != TT_R_KERNEL || !rx->queued)
            continue;
        if (next <= i)
            for (next = i + 1; next < n && !is_anchor(tt_store_at(s, e[w->lo + next].rec)); next++)
                ;
        /* the sampled offset from the anchor, stretched by how much longer
         * (or shorter) the host took to reach the next host-timed call */
        double off = rx->queued > anchor_x ? (double)(rx->queued - anchor_x) : 0;
        uint64_t cap = UINT64_MAX;
        if (next < n) {
            uint64_t bw = tt_store_at(s, e[w->lo + next].rec)->start;
            uint64_t bx = tt_store_at(s, e[x->lo + next].rec)->start;
            cap = bw;
            if (bw > anchor_w && bx > anchor_x)
                off *= (double)(bw - anchor_w) / (double)(bx - anchor_x);
        }
        uint64_t q = anchor_w + (uint64_t)off;
        if (q < prev)
            q = prev;
        if (q > cap)
            q = cap;
        if (rw->start && q > rw->start)
            q = rw->start;
        rw->queued = q;
        rw->submitted = q + (rx->submitted >= rx->queued ? rx->submitted - rx->queued : 0);
        rw->flags |= TT_RF_LEAD_COPIED;
        prev = q;
        copied += rw->corr != last_corr;
        last_corr = rw->corr;
    }
    return copied;
}

long tt_lite_copy_leads(tt_store *s)
{
    size_t n_iter = 0, n_elem = 0;
    for (size_t i = 0; i < s->n; i++) {
        const tt_rec *r = tt_store_at(s, i);
        n_iter += r->type == TT_R_ITER && r->corr && r->corr != UINT32_MAX && r->start;
        n_elem += r->corr && (is_gpu_rec(r) || is_anchor(r));
    }
    if (!n_iter || !n_elem)
        return 0;
    sample_elem *b = malloc(n_iter * sizeof *b), *e = malloc(n_elem * sizeof *e);
    sample_window *w = malloc(n_iter * sizeof *w);
    if (!b || !e || !w) {
        free(b), free(e), free(w);
        return -1;
    }
    size_t nb = 0, ne = 0;
    for (size_t i = 0; i < s->n; i++) {
        const tt_rec *r = tt_store_at(s, i);
        if (r->type == TT_R_ITER && r->corr && r->corr != UINT32_MAX && r->start)
            b[nb++] = (sample_elem){.corr = r->corr, .rec = i};
        else if (r->corr && (is_gpu_rec(r) || is_anchor(r)))
            e[ne++] = (sample_elem){.corr = r->corr, .rec = i};
    }
    qsort(b, nb, sizeof *b, by_corr_rec);
    qsort(e, ne, sizeof *e, by_corr_rec);

    size_t at = 0;
    while (at < ne && e[at].corr < b[0].corr)
        at++;
    for (size_t k = 0; k < nb; k++) {
        sample_window *x = &w[k];
        uint32_t end = k + 1 < nb ? b[k + 1].corr : UINT32_MAX;
        x->lo = at;
        x->ts = tt_store_at(s, b[k].rec)->start;
        x->sig = 1469598103934665603ULL; /* FNV-1a */
        size_t kernels = 0, queued = 0;
        while (at < ne && e[at].corr < end) {
            const tt_rec *r = tt_store_at(s, e[at++].rec);
            x->sig = (x->sig ^ call_key(r)) * 1099511628211ULL;
            kernels += r->type == TT_R_KERNEL;
            queued += r->type == TT_R_KERNEL && r->queued && !(r->flags & TT_RF_LEAD_COPIED);
        }
        x->hi = at;
        x->sampled = kernels && queued == kernels;
        x->unsampled = kernels && queued == 0;
    }
    /* the nearest sampled window that made the same calls, earlier first */
    uint64_t copied = 0;
    for (size_t k = 0; k < nb; k++) {
        if (!w[k].unsampled)
            continue;
        for (size_t d = 1; d < nb; d++) {
            const sample_window *x = NULL;
            if (d <= k && w[k - d].sampled && same_calls(s, e, &w[k], &w[k - d]))
                x = &w[k - d];
            else if (k + d < nb && w[k + d].sampled && same_calls(s, e, &w[k], &w[k + d]))
                x = &w[k + d];
            if (x) {
                copied += copy_window(s, e, &w[k], x);
                break;
            }
            if (d > k && k + d >= nb)
                break;
        }
    }
    free(b), free(e), free(w);
    return (long)copied;
}

void tt_lite_uncopy_leads(tt_store *s)
{
    for (size_t i = 0; i < s->n; i++) {
        tt_rec *r = tt_store_at(s, i);
        if (r->flags & TT_RF_LEAD_COPIED) {
            r->queued = r->submitted = 0;
            r->flags &= (uint8_t)~TT_RF_LEAD_COPIED;
        }
    }
}
