/* The CUDA device's completions: ops a context worker reports done, kernels
 * whose record says so, copies whose event has passed; their times, put on the
 * host clock, and their callbacks, in order of end time. */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* A worker reported a completion: mark the op in its stream's queue. Reports
 * come in the stream's order and a batch's (up to a few hundred) are marked
 * before any is popped, so the search starts after the last one found rather
 * than at the head (from the head it was quadratic in the batch). */
static void remote_done(tl_cuda *c, int worker, const tl_wdone *m)
{
    for (int i = 0; i < c->n_streams; i++) {
        tl_dstream *s = &c->streams[i];
        if (s->worker != worker || s->remote != m->stream || s->n == 0) continue;
        /* rdone_at may be stale (popped, or the ring regrown): any start finds the op */
        size_t from = (s->rdone_at + s->cap - s->head) % s->cap; /* offset from the head */
        if (from >= s->n) from = 0;
        for (size_t k = 0, j = from; k < s->n; k++, j = j + 1 == s->n ? 0 : j + 1) {
            size_t slot = s->head + j < s->cap ? s->head + j : s->head + j - s->cap;
            tl_pending *p = &s->q[slot];
            if (p->id != m->id) continue;
            s->rdone_at = slot;
            p->r_done = true;
            p->r_failed = m->status != 0;
            p->r_start_gt = m->start_gt;
            p->r_end_gt = m->end_gt;
            p->r_claimed = m->claimed;
            p->r_sms = m->sms;
            p->r_dur = m->dur_ns;
            return;
        }
    }
}

void tl_cuda_remote_dones(tl_cuda *c, int worker, const tl_wmsg *m)
{
    for (uint32_t i = 0; i < m->n; i++) remote_done(c, worker, &m->u.done[i]);
}

/* A completed op, collected before its callback runs. */
typedef struct done_rec {
    tl_pending p;
    tl_launch_result r;
} done_rec;

static int cmp_done(const void *a, const void *b)
{
    const done_rec *x = a, *y = b;
    if (x->r.end_ns != y->r.end_ns) return x->r.end_ns < y->r.end_ns ? -1 : 1;
    return x->p.id < y->p.id ? -1 : x->p.id > y->p.id;
}

static void finish(tl_cuda *c, tl_device *d, tl_pending *p, tl_ns seen, tl_launch_result *r)
{
    memset(r, 0, sizeof *r);
    r->id = p->id;
    r->submitted_ns = p->submitted_ns;
    if (p->is_kernel) {
        uint64_t sg, eg, claimed, sms;
        bool valid;
        if (p->remote) {
            sg = p->r_start_gt;
            eg = p->r_end_gt;
            claimed = p->r_claimed;
            sms = p->r_sms;
            valid = eg != 0;
        } else {
            const volatile tl_synth_rec *rec = tl_synth_record(c->synth, (unsigned)p->slot);
            sg = rec->start_gt;
            eg = rec->end_gt;
            claimed = rec->claimed;
            sms = rec->sms;
            valid = rec->gen == tl_synth_slot_gen(c->synth, (unsigned)p->slot);
        }
        tl_ns start = (tl_ns)sg - c->gt_offset - c->t0;
        tl_ns end = (tl_ns)eg - c->gt_offset - c->t0;
        tl_ns dur = end - start;
        if (dur < 0 || !valid) dur = 0;
        if (end > seen || end < p->issued_ns) end = seen; /* offset error: trust what we saw */
        start = end - dur;
        if (p->idle_stream && valid && p->submitted_ns > 0 && start >= p->submitted_ns) {
            c->loop.start_lat_count++;
            ns_stat_add(start - p->submitted_ns, &c->loop.start_lat_sum_ns, &c->loop.start_lat_max_ns,
                        &c->loop.start_lat_over_500us, 500 * TL_NS_PER_US);
        }
        r->start_ns = start;
        r->end_ns = end;
        uint64_t count = p->end - p->begin;
        uint64_t done = count;
        if (p->ptb) {
            done = claimed < count ? claimed : count;
            r->retreated = done < count;
        }
        r->next_block = p->begin + done;
        if (!p->remote && p->batched) tl_gcache_done(c->gcache, p->graph);
        else if (!p->remote) tl_synth_slot_release(c->synth, (unsigned)p->slot);
        bool kernel = p->op && p->op->kind == TL_OP_KERNEL; /* else a memset node */
        if (kernel && p->job >= 0 && p->job < c->n_jstats) {
            tl_job_stats *js = &c->jstats[p->job];
            js->sm_busy_ns += (tl_ns)((double)dur * p->avg_sms);
            js->kernels++;
            js->blocks += done;
        }
        if (kernel && d->observer) {
            tl_kernel_record kr;
            memset(&kr, 0, sizeof kr);
            kr.job = p->job;
            kr.op = p->op;
            kr.tag = p->tag;
            kr.blocks = done;
            kr.start_ns = start;
            kr.end_ns = end;
            /* TALLY_SM_TRACE: the SMs its blocks ran on, as counted on the GPU */
            kr.avg_sms = valid && sms ? (double)sms : p->avg_sms;
            kr.ptb = p->ptb;
            kr.retreated = r->retreated;
            kr.stream = p->stream;
            d->observer(d->observer_arg, &kr);
        }
    } else {
        float ms = 0;
        if (!p->remote) cudaEventElapsedTime(&ms, p->ev_start, p->ev_end);
        tl_ns dur = p->remote ? p->r_dur : (tl_ns)((double)ms * 1e6);
        r->end_ns = seen;
        r->start_ns = seen - dur < p->issued_ns ? p->issued_ns : seen - dur;
        r->next_block = 0;
        if (!p->remote) {
            ev_put(c, true, p->ev_start);
            ev_put(c, true, p->ev_end);
        }
    }
}

/* The GPU clock's offset is estimated from below at open (tl_synth_clock_offset:
 * a published globaltimer value is read after it was written), and the two
 * clocks drift apart during a run (~9 us a second on the H100, session 10:
 * kernels seemed to start up to 68 us before they were launched). Before a
 * batch of completions is converted, the offset is moved once so that the
 * batch's kernels end no later than the host saw them (raise it by the largest
 * excess) or, when none does, start no earlier than they were handed to the
 * GPU (lower it by the largest shortfall). Each kernel keeps its GPU-side
 * times relative to the others (clamping every end to the moment it was
 * seen, as finish() still does as a last resort, put a whole batch at one
 * instant: zero durations apart, negative gaps between them). Moves beyond
 * 1 ms are not clock error and are left to that clamp. The arithmetic:
 * tl_clock_offset_move (clock_fix.c, tested without a GPU). */
static void fix_offset(tl_cuda *c, const done_rec *buf, int n, tl_ns seen)
{
    tl_clock_sample k[64];
    int m = 0;
    for (int i = 0; i < n && m < 64; i++) {
        const tl_pending *p = &buf[i].p;
        if (!p->is_kernel) continue;
        tl_clock_sample *x = &k[m];
        if (p->remote) {
            x->start_gt = p->r_start_gt;
            x->end_gt = p->r_end_gt;
        } else {
            const volatile tl_synth_rec *rec = tl_synth_record(c->synth, (unsigned)p->slot);
            if (rec->gen != tl_synth_slot_gen(c->synth, (unsigned)p->slot)) continue;
            x->start_gt = rec->start_gt;
            x->end_gt = rec->end_gt;
        }
        /* stamps on the host clock's origin: the offset's t0 part taken out */
        x->submitted_ns = p->submitted_ns > 0 ? p->submitted_ns + c->t0 : 0;
        m++;
    }
    tl_ns move = tl_clock_offset_move(k, m, c->gt_offset, seen + c->t0);
    if (move > 0) {
        c->gt_offset += move;
        c->loop.offset_raises++;
        c->loop.offset_raised_ns += move;
    } else if (move < 0) {
        c->gt_offset += move;
        c->loop.offset_lowers++;
        c->loop.offset_lowered_ns -= move;
    }
}

/* Collect completed heads of all streams, then run their callbacks in order of
 * end time. Returns how many completed, or a negative error. */
int tl_cuda_poll_completions(tl_device *d, tl_err *err)
{
    tl_cuda *c = C(d);
    done_rec buf[64];
    int n = 0;
    for (int w = 0; w < c->n_workers; w++) {
        tl_wmsg m;
        int g;
        while ((g = tl_worker_recv(&c->workers[w], &m)) > 0) {
            if (m.type == TL_W_DONES) tl_cuda_remote_dones(c, w, &m);
            else if (m.type == TL_W_ERROR) return tl_errf(err, TL_EIO, "context worker %d: %s", w, m.text);
        }
        if (g < 0) return tl_errf(err, TL_EIO, "context worker %d (pid %d) is gone", w, (int)c->workers[w].pid);
    }
    tl_ns seen = host_now(c);
    for (int i = 0; i < c->n_streams && n < 64; i++) {
        tl_dstream *s = &c->streams[i];
        tl_pending *p;
        while (n < 64 && (p = q_head(s))) {
            if (p->remote) {
                if (!p->r_done) break;
                if (p->r_failed) return tl_errf(err, TL_EIO, "GPU work failed in a context worker");
            } else if (p->is_kernel) {
                if (p->unflushed) break;
                if (tl_synth_record(c->synth, (unsigned)p->slot)->gen != p->gen) {
                    /* Not done yet; now and then ask the stream whether it failed. */
                    if ((++c->spins & 1023) == 0) {
                        cudaError_t e = cudaStreamQuery(s->s);
                        if (e != cudaSuccess && e != cudaErrorNotReady) return tl_cuda_errf(err, e, "GPU work failed");
                    }
                    break;
                }
            } else {
                cudaError_t e = cudaEventQuery(p->ev_end);
                if (e == cudaErrorNotReady) break;
                if (e != cudaSuccess) return tl_cuda_errf(err, e, "GPU work failed");
            }
            buf[n].p = *p;
            q_pop(s);
            c->inflight--;
            n++;
        }
    }
    fix_offset(c, buf, n, seen);
    for (int i = 0; i < n; i++) finish(c, d, &buf[i].p, seen, &buf[i].r);
    if (n > 1) qsort(buf, (size_t)n, sizeof buf[0], cmp_done);
    for (int i = 0; i < n; i++)
        if (buf[i].p.cb) {
            enter_cb(c, buf[i].r.end_ns < seen ? buf[i].r.end_ns : seen);
            buf[i].p.cb(buf[i].p.arg, &buf[i].r);
            c->in_cb--;
        }
    if (n) tl_watchdog_kick(c->watchdog, c->inflight > 0);
    return n;
}
