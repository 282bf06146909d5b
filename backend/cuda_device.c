/* The tl_device on CUDA: contexts, streams, launches, copies, timers and the
 * event loop (overview in cuda_device.h; kernel plans: cuda_plan.c). */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_internal.h"

static tl_cuda *C(tl_device *d) { return (tl_cuda *)d->impl; }

static tl_ns host_now(tl_cuda *c) { return tl_mono_ns() - c->t0; }
/* What now() tells a caller: inside a callback the event's time, else the
 * wall clock (wall: host_now(c), read by the caller). */
static tl_ns event_time(const tl_cuda *c, tl_ns wall) { return c->in_cb ? c->logical : wall; }

/* One more sample v of a duration the loop keeps figures of (timer lateness,
 * graph issue lag, idle-stream start latency): its sum, maximum and how many
 * were over over_ns. */
/* The calling thread's involuntary context switches so far: how often the
 * kernel took the CPU from the event loop (a late timer the loop did not
 * cause itself). -1 where getrusage cannot say. */
static long thread_nivcsw(void)
{
    struct rusage u;
    return getrusage(RUSAGE_THREAD, &u) == 0 ? u.ru_nivcsw : -1;
}

static void ns_stat_add(tl_ns v, tl_ns *sum, tl_ns *max, uint64_t *over, tl_ns over_ns)
{
    *sum += v;
    if (v > *max) *max = v;
    if (v > over_ns) (*over)++;
}

/* ---- events ---------------------------------------------------------------- */

static int ev_get(tl_cuda *c, bool timing, cudaEvent_t *out)
{
    if (!timing && c->n_ev_pool) { *out = c->ev_pool[--c->n_ev_pool]; return 0; }
    if (timing && c->n_evt_pool) { *out = c->evt_pool[--c->n_evt_pool]; return 0; }
    return (int)cudaEventCreateWithFlags(out, timing ? cudaEventDefault : cudaEventDisableTiming);
}

static void ev_put(tl_cuda *c, bool timing, cudaEvent_t e)
{
    if (!e) return;
    cudaEvent_t **pool = timing ? &c->evt_pool : &c->ev_pool;
    size_t *n = timing ? &c->n_evt_pool : &c->n_ev_pool, *cap = timing ? &c->cap_evt_pool : &c->cap_ev_pool;
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *pool = tl_xrealloc(*pool, *cap * sizeof **pool);
    }
    (*pool)[(*n)++] = e;
}

/* ---- stream queues ----------------------------------------------------------- */

static tl_pending *q_push(tl_dstream *s)
{
    void *q = s->q;
    tl_ring_reserve(&q, sizeof *s->q, &s->head, s->n, &s->cap, 64);
    s->q = q;
    tl_pending *p = &s->q[(s->head + s->n) % s->cap];
    s->n++;
    memset(p, 0, sizeof *p);
    return p;
}

static tl_pending *q_head(tl_dstream *s) { return s->n ? &s->q[s->head] : NULL; }

static void q_pop(tl_dstream *s)
{
    s->head = (s->head + 1) % s->cap;
    s->n--;
}

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

static void remote_dones(tl_cuda *c, int worker, const tl_wmsg *m)
{
    for (uint32_t i = 0; i < m->n; i++) remote_done(c, worker, &m->u.done[i]);
}

/* ---- timers (min-heap on (at, seq)) ----------------------------------------------- */

static bool t_less(const tl_timer_ent *a, const tl_timer_ent *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void t_push(tl_cuda *c, tl_timer_ent e)
{
    if (c->n_timers == c->cap_timers) {
        c->cap_timers = c->cap_timers ? c->cap_timers * 2 : 64;
        c->timers = tl_xrealloc(c->timers, c->cap_timers * sizeof *c->timers);
    }
    size_t i = c->n_timers++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!t_less(&e, &c->timers[p])) break;
        c->timers[i] = c->timers[p];
        i = p;
    }
    c->timers[i] = e;
}

static tl_timer_ent t_pop(tl_cuda *c)
{
    tl_timer_ent top = c->timers[0], last = c->timers[--c->n_timers];
    size_t i = 0, n = c->n_timers;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const tl_timer_ent *mv = &last;
        if (l < n && t_less(&c->timers[l], mv)) { m = l; mv = &c->timers[l]; }
        if (r < n && t_less(&c->timers[r], mv)) { m = r; }
        if (m == i) break;
        c->timers[i] = c->timers[m];
        i = m;
    }
    if (n) c->timers[i] = last;
    return top;
}

/* ---- copy buffers ------------------------------------------------------------- */

int tl_cuda_ensure_buffers(tl_cuda *c, size_t bytes, tl_err *err)
{
    if (bytes <= c->buf_bytes) return 0;
    size_t nb = c->buf_bytes ? c->buf_bytes : (size_t)1 << 20;
    while (nb < bytes) nb *= 2;
    cudaDeviceSynchronize();
    if (c->host_buf) cudaFreeHost(c->host_buf);
    if (c->dev_buf) cudaFree(c->dev_buf);
    c->host_buf = c->dev_buf = NULL;
    c->buf_bytes = 0;
    int e;
    if ((e = cudaHostAlloc(&c->host_buf, nb, 0))) return tl_cuda_errf(err, e, "pinned copy buffer");
    if ((e = cudaMalloc(&c->dev_buf, 2 * nb))) return tl_cuda_errf(err, e, "device copy buffer");
    c->buf_bytes = nb;
    return 0;
}

/* ---- ops ---------------------------------------------------------------------- */

/* A worker process for a context (MPS client, or a further time-sliced one). */
static int start_worker(tl_cuda *c, const tl_ctx_config *cfg, tl_dctx *x, tl_err *err)
{
    char env[6][320];
    int n_env = 0;
    if (cfg->kind == TL_CTX_MPS) {
        if (!c->mps) {
            char ctl[512];
            int r = tl_mps_find_control(ctl, sizeof ctl, err);
            if (r) return r;
            char root[] = "/tmp/tally-mps-XXXXXX";
            if (!mkdtemp(root)) return tl_errf(err, TL_EIO, "/tmp: cannot create the MPS folder");
            static tl_mps the_mps; /* static: the exit/signal cleanup reaches it */
            tl_mps_layout(&the_mps, ctl, root);
            tl_procs_set_mps(&the_mps);
            if ((r = tl_mps_start(&the_mps, err))) return r;
            c->mps = &the_mps;
        }
        n_env = tl_mps_client_env(c->mps, cfg->sm_percent, cfg->mps_priority, env, 6);
    } else if (c->mps) {
        /* a time-sliced context next to a running MPS daemon: not its client */
        snprintf(env[n_env++], 320, "CUDA_MPS_PIPE_DIRECTORY=/nonexistent-tally-no-mps");
    }
    c->workers = tl_xrealloc(c->workers, (size_t)(c->n_workers + 1) * sizeof *c->workers);
    int r = tl_worker_spawn(&c->workers[c->n_workers], c->device, env, n_env, err);
    if (r) return r;
    x->worker = c->n_workers++;
    if (c->workers[x->worker].sms > 0) x->sms = c->workers[x->worker].sms;
    return 0;
}

static int cu_ctx_create(tl_device *d, const tl_ctx_config *cfg, tl_ctx_id *out, tl_err *err)
{
    tl_cuda *c = C(d);
    tl_dctx x;
    memset(&x, 0, sizeof x);
    x.cfg = *cfg;
    x.sms = d->gpu.sms;
    x.worker = -1;
    switch (cfg->kind) {
    case TL_CTX_TIMESLICED:
        if (c->have_primary) { /* a context of its own: another process */
            int r = start_worker(c, cfg, &x, err);
            if (r) return r;
            break;
        }
        c->have_primary = true;
        break;
    case TL_CTX_PARTITION: {
        if (cfg->sm_count <= 0 || cfg->sm_count > d->gpu.sms)
            return tl_errf(err, TL_ERANGE, "context %d: sm_count %d outside 1..%d", c->n_ctxs, cfg->sm_count,
                           d->gpu.sms);
        int got = 0;
        int r = tl_cuda_green_create(c, cfg->sm_count, &x.green, &got, err);
        if (r) return r;
        x.sms = got;
        break;
    }
    case TL_CTX_MPS: {
        if (cfg->sm_percent < 0 || cfg->sm_percent > 100)
            return tl_errf(err, TL_ERANGE, "context %d: sm_percent %g outside (0, 100]", c->n_ctxs, cfg->sm_percent);
        int r = start_worker(c, cfg, &x, err);
        if (r) return r;
        break;
    }
    default:
        return tl_errf(err, TL_EINVAL, "context %d: unknown kind %d", c->n_ctxs, (int)cfg->kind);
    }
    if (c->n_ctxs == c->cap_ctxs) {
        c->cap_ctxs = c->cap_ctxs ? c->cap_ctxs * 2 : 8;
        c->ctxs = tl_xrealloc(c->ctxs, (size_t)c->cap_ctxs * sizeof *c->ctxs);
    }
    c->ctxs[c->n_ctxs] = x;
    *out = c->n_ctxs++;
    if (cfg->job >= c->n_jstats) {
        c->jstats = tl_xrealloc(c->jstats, (size_t)(cfg->job + 1) * sizeof *c->jstats);
        memset(c->jstats + c->n_jstats, 0, (size_t)(cfg->job + 1 - c->n_jstats) * sizeof *c->jstats);
        c->n_jstats = cfg->job + 1;
    }
    return 0;
}

static int cu_stream_create(tl_device *d, tl_ctx_id ctx, int prio, tl_stream_id *out, tl_err *err)
{
    tl_cuda *c = C(d);
    if (ctx < 0 || ctx >= c->n_ctxs) return tl_errf(err, TL_EINVAL, "stream: unknown context %d", ctx);
    if (prio > 0 || prio < d->gpu.stream_prio_greatest)
        return tl_errf(err, TL_ERANGE, "stream: priority %d outside %d..0", prio, d->gpu.stream_prio_greatest);
    cudaStream_t s = NULL;
    int r, remote = -1;
    if (c->ctxs[ctx].worker >= 0) {
        tl_worker *w = &c->workers[c->ctxs[ctx].worker];
        tl_wmsg m;
        memset(&m, 0, offsetof(tl_wmsg, u));
        m.type = TL_W_STREAM;
        m.prio = prio;
        if (tl_worker_send(w, &m)) return tl_errf(err, TL_EIO, "context %d: its worker is gone", ctx);
        for (;;) {
            int g = tl_worker_recv_wait(w, &m, 30000);
            if (g <= 0) return tl_errf(err, TL_EIO, "context %d: its worker did not create a stream", ctx);
            if (m.type == TL_W_STREAM) break;
            if (m.type == TL_W_DONES) remote_dones(c, c->ctxs[ctx].worker, &m);
        }
        if (m.stream < 0) return tl_errf(err, TL_EIO, "context %d: stream in worker: CUDA error %d", ctx, m.status);
        remote = m.stream;
    } else if (c->ctxs[ctx].green) {
        if ((r = tl_cuda_green_stream(c, c->ctxs[ctx].green, prio, &s, err))) return r;
    } else if ((r = cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, prio))) {
        return tl_cuda_errf(err, r, "cudaStreamCreateWithPriority");
    }
    if (c->n_streams == c->cap_streams) {
        c->cap_streams = c->cap_streams ? c->cap_streams * 2 : 16;
        c->streams = tl_xrealloc(c->streams, (size_t)c->cap_streams * sizeof *c->streams);
    }
    tl_dstream *ds = &c->streams[c->n_streams];
    memset(ds, 0, sizeof *ds);
    ds->s = s;
    ds->ctx = ctx;
    ds->prio = prio;
    ds->worker = c->ctxs[ctx].worker;
    ds->remote = remote;
    *out = c->n_streams++;
    return 0;
}

static int ctx_sms(tl_cuda *c, int ctx)
{
    const tl_dctx *x = &c->ctxs[ctx];
    if (x->worker >= 0) return x->sms; /* as the worker's context reports it (MPS: its share) */
    if (x->cfg.kind == TL_CTX_MPS && x->cfg.sm_percent > 0 && x->cfg.sm_percent < 100) {
        int n = (int)(x->sms * x->cfg.sm_percent / 100.0 + 0.999);
        return n < 1 ? 1 : n;
    }
    return x->sms;
}

/* Batches (graph jobs, graph_cache.h) ------------------------------------------ */

static int send_launch(tl_cuda *c, tl_dstream *s, tl_launch_id id, const tl_synth_launch *l)
{
    tl_wmsg m;
    memset(&m, 0, offsetof(tl_wmsg, u));
    m.type = TL_W_LAUNCH;
    m.stream = s->remote;
    m.id = id;
    m.launch = *l;
    if (tl_worker_send(&c->workers[s->worker], &m)) {
        fprintf(stderr, "tally-run: launch: the context's worker process is gone\n");
        return TL_EIO;
    }
    return 0;
}

/* A local launch outside a graph: its own slot. */
static int enqueue_local(tl_cuda *c, tl_dstream *s, tl_synth_launch *l, int *slot_out)
{
    int slot = tl_synth_slot_acquire(c->synth);
    if (slot < 0) return TL_ENOMEM;
    l->slot = (unsigned)slot;
    /* No completion event: the kernel's last block writes the launch's
     * generation into the host-mapped record, and the loop polls that (a
     * memory read instead of an event record and queries per launch). */
    int e = tl_synth_enqueue(c->synth, l, s->s);
    if (e) {
        fprintf(stderr, "tally-run: launch: %s\n", cudaGetErrorString((cudaError_t)e));
        tl_synth_slot_release(c->synth, (unsigned)slot);
        return TL_EIO;
    }
    *slot_out = slot;
    return 0;
}

static int batch_failed(tl_cuda *c, int code, const char *what, int cuda_err)
{
    if (!c->flush_failed) {
        c->flush_failed = code;
        if (cuda_err) tl_cuda_errf(&c->flush_err, cuda_err, what);
        else tl_errf(&c->flush_err, code, "%s", what);
    }
    return code;
}

/* The last n pending entries of stream s (a batch) go to the GPU now: their
 * submission time, and the batch's lag behind the event that issued its first
 * op (the replay's own issue cost: the loop's lateness, the runner, the policy
 * and this backend per op, the launch or its messages; run metrics
 * cuda_graph_lag_*, which tally-validate turns into graph_node_ns). */
static void batch_submitted(tl_cuda *c, tl_dstream *s, size_t n)
{
    tl_ns t = host_now(c);
    for (size_t i = 0; i < n; i++) s->q[(s->head + s->n - n + i) % s->cap].submitted_ns = t;
    c->loop.lag_batches++;
    c->loop.lag_ops += n;
    ns_stat_add(t > s->batch_event_ns ? t - s->batch_event_ns : 0, &c->loop.lag_sum_ns,
                &c->loop.lag_max_ns, &c->loop.lag_over_500us, 500 * TL_NS_PER_US);
}

/* Launch stream s's batch: as one CUDA graph, or, when the graphs hold too
 * many slots to build another, one by one. Its pending entries are the last
 * n_batch of the queue (anything else issued to s flushes the batch first). */
static int flush_stream(tl_cuda *c, tl_dstream *s, bool cut)
{
    size_t n = s->n_batch;
    if (!n) return 0;
    if (cut) c->loop.batch_cuts++;
    s->n_batch = 0;
    c->open_batches--;
    if (s->worker >= 0) {
        /* the batch's launches and ids, TL_W_BULK to a message; the worker
         * launches the graph once it has the last one */
        tl_wmsg *m = &c->graph_msg;
        memset(m, 0, offsetof(tl_wmsg, u));
        m->type = TL_W_GRAPH;
        m->stream = s->remote;
        for (size_t i = 0; i < n; i++) {
            m->u.node[m->n].id = s->q[(s->head + s->n - n + i) % s->cap].id;
            m->u.node[m->n++].launch = s->batch[i];
            m->last = i + 1 == n;
            if (m->last) batch_submitted(c, s, n);
            if ((m->n == TL_W_BULK || m->last) && tl_worker_send(&c->workers[s->worker], m))
                return batch_failed(c, TL_EIO, "graph launch: the context's worker process is gone", 0);
            if (m->n == TL_W_BULK) m->n = 0;
        }
        return 0;
    }
    c->loop.batches++;
    c->loop.batch_open_sum_ns += host_now(c) - s->q[(s->head + s->n - n) % s->cap].issued_ns;
    const unsigned int *slots = NULL;
    int graph = -1;
    batch_submitted(c, s, n);
    int e = tl_gcache_launch(c->gcache, s->batch, n, s->s, &slots, &graph);
    for (size_t i = 0; i < n; i++) {
        tl_pending *p = &s->q[(s->head + s->n - n + i) % s->cap];
        p->unflushed = false;
        if (e == TL_ENOMEM) {
            /* No slots for a graph: launched one by one, with the node plan's
             * work units (counted as cuda_graph_one_by_one; none in the
             * headline runs). */
            p->batched = false;
            int r = enqueue_local(c, s, &s->batch[i], &p->slot);
            if (r) return batch_failed(c, r, "launch of a graph job's kernel failed", 0);
        } else {
            p->slot = e ? -1 : (int)slots[i];
            p->graph = graph;
        }
        p->gen = p->slot >= 0 ? tl_synth_slot_gen(c->synth, (unsigned)p->slot) : 0;
    }
    if (e > 0) return batch_failed(c, TL_EIO, "CUDA graph launch", e);
    return 0;
}

static int flush_error(tl_cuda *c, tl_err *err)
{
    if (err) *err = c->flush_err;
    return c->flush_failed;
}

/* Called when the loop gets control back (end of a callback, top of the loop)
 * and before anything that waits for the GPU. */
static int flush_all(tl_cuda *c, bool cut)
{
    for (int i = 0; i < c->n_streams && c->open_batches > 0; i++) flush_stream(c, &c->streams[i], cut);
    return c->flush_failed;
}

static void batch_add(tl_cuda *c, tl_dstream *s, const tl_synth_launch *l)
{
    if (s->n_batch == s->cap_batch) {
        s->cap_batch = s->cap_batch ? 2 * s->cap_batch : 256;
        s->batch = tl_xrealloc(s->batch, s->cap_batch * sizeof *s->batch);
    }
    s->batch[s->n_batch++] = *l;
    if (s->n_batch == 1) {
        c->open_batches++;
        s->batch_event_ns = event_time(c, host_now(c));
    }
}

/* Issue synthetic launch l (slot and salt are set here) on stream s for op:
 * into the stream's open graph batch when batch, else at once; the pending
 * entry reports op's completion to cb. */
static int issue_synth(tl_cuda *c, tl_stream_id sid, tl_synth_launch *l, bool batch, const tl_op *op, int job,
                       uint64_t tag, tl_launch_cb cb, void *arg, tl_launch_id *out)
{
    tl_dstream *s = &c->streams[sid];
    if (!batch && s->n_batch && flush_stream(c, s, true)) return c->flush_failed;
    l->salt = c->salt;
    c->salt += 0x9e3779b97f4a7c15ull >> 20;
    tl_launch_id id = c->next_id + 1;
    int slot = -1, r = 0;
    tl_ns before = host_now(c); /* the GPU cannot start it earlier */
    bool idle_stream = s->n == 0; /* nothing ahead of it: its start is the launch's latency */
    if (!batch && s->worker >= 0) r = send_launch(c, s, id, l);
    else if (!batch) r = enqueue_local(c, s, l, &slot);
    if (r) return r;
    tl_pending *p = q_push(s);
    p->remote = s->worker >= 0;
    p->id = ++c->next_id;
    p->stream = sid;
    p->is_kernel = true;
    p->ptb = l->workers > 0;
    p->slot = slot;
    p->batched = batch;
    p->unflushed = batch && !p->remote;
    p->graph = -1;
    p->gen = slot >= 0 ? tl_synth_slot_gen(c->synth, (unsigned)slot) : 0;
    p->cb = cb;
    p->arg = arg;
    p->op = op;
    p->job = job;
    p->tag = tag;
    p->begin = l->begin;
    p->end = l->end;
    int sms = ctx_sms(c, s->ctx);
    uint64_t grid = p->ptb ? (l->workers < l->end - l->begin ? l->workers : l->end - l->begin) : l->end - l->begin;
    p->avg_sms = (double)(grid < (uint64_t)sms ? grid : (uint64_t)sms);
    p->issued_ns = host_now(c);
    p->submitted_ns = batch ? 0 : before; /* a batch's: set when it is flushed */
    p->idle_stream = idle_stream;
    if (!batch) {
        tl_ns event = event_time(c, before);
        c->loop.launch_lag_count++;
        c->loop.launch_lag_sum_ns += before > event ? before - event : 0;
    }
    c->inflight++;
    if (batch) batch_add(c, s, l); /* launched at the end of the turn (a worker's: sent then) */
    tl_watchdog_kick(c->watchdog, true);
    if (out) *out = p->id;
    return 0;
}

static int cu_launch(tl_device *d, tl_stream_id sid, const tl_kernel_desc *k, tl_launch_cb cb, void *arg,
                     tl_launch_id *out)
{
    tl_cuda *c = C(d);
    if (sid < 0 || sid >= c->n_streams || !k || !k->op || k->op->kind != TL_OP_KERNEL) return TL_EINVAL;
    uint64_t total = tl_op_blocks(k->op);
    uint64_t end = k->block_end ? k->block_end : total;
    if (end > total || k->block_begin >= end) return TL_ERANGE;
    /* A graph job's whole-grid launches wait for the end of this loop turn and
     * go as one graph; slices and PTB launches (a policy's own) go alone. */
    bool batch = k->op->graph && !k->ptb_workers_per_sm && k->block_begin == 0 && end == total;
    tl_kernel_plan pl;
    tl_err err;
    tl_err_clear(&err);
    if ((batch ? tl_cuda_node_plan : tl_cuda_plan)(d, NULL, k->op, &pl, &err)) {
        fprintf(stderr, "tally-run: %s\n", err.msg);
        return err.code ? err.code : TL_EIO;
    }
    tl_synth_launch l;
    memset(&l, 0, sizeof l);
    l.kind = pl.kind == TL_KIND_COMPUTE ? TL_SYNTH_COMPUTE : TL_SYNTH_MEMORY;
    l.variant = pl.variant;
    for (int i = 0; i < 3; i++) l.block[i] = k->op->block[i] ? k->op->block[i] : 1;
    l.smem = k->op->static_smem + k->op->dynamic_smem;
    l.begin = k->block_begin;
    l.end = end;
    l.workers = k->ptb_workers_per_sm ? k->ptb_workers_per_sm * (unsigned)ctx_sms(c, c->streams[sid].ctx) : 0;
    l.iters = pl.iters;
    return issue_synth(c, sid, &l, batch, k->op, k->job, k->tag, cb, arg, out);
}

/* A graph job's memset, as a node of its graph: a real graph holds memset
 * nodes, and the GPU runs small memsets as kernels. Its stand-in is a memory
 * kernel touching as many bytes (16 per thread, 256 threads a block), which
 * stamps its times as the other nodes do; left to the copy path, each memset
 * would end one graph and start another (a launch and two stream gaps). */
static int memset_node(tl_cuda *c, tl_stream_id sid, const tl_op *op, int job, tl_launch_cb cb, void *arg,
                       tl_launch_id *out)
{
    enum { THREADS = 256, BYTES_PER_BLOCK = THREADS * 16, MAX_BLOCKS = 1 << 20 };
    uint64_t blocks = (op->bytes + BYTES_PER_BLOCK - 1) / BYTES_PER_BLOCK;
    if (blocks < 1) blocks = 1;
    if (blocks > MAX_BLOCKS) blocks = MAX_BLOCKS;
    tl_synth_launch l;
    memset(&l, 0, sizeof l);
    l.kind = TL_SYNTH_MEMORY;
    l.variant = 0;
    l.block[0] = THREADS;
    l.block[1] = l.block[2] = 1;
    l.end = blocks;
    l.iters = 1;
    return issue_synth(c, sid, &l, true, op, job, 0, cb, arg, out);
}

/* Records a copy or memset just issued on stream sid (on a worker's stream
 * when the stream has one; e0/e1 are its timing events when local, NULL when
 * remote) as pending, the same way for both paths. */
static int queue_copy(tl_cuda *c, tl_stream_id sid, const tl_op *op, int job, tl_launch_cb cb, void *arg,
                      cudaEvent_t e0, cudaEvent_t e1, tl_launch_id *out)
{
    tl_dstream *s = &c->streams[sid];
    tl_pending *p = q_push(s);
    p->remote = s->worker >= 0;
    p->id = ++c->next_id;
    p->stream = sid;
    p->slot = -1;
    p->ev_start = e0;
    p->ev_end = e1;
    p->cb = cb;
    p->arg = arg;
    p->op = op;
    p->job = job;
    p->issued_ns = p->submitted_ns = host_now(c);
    c->inflight++;
    tl_watchdog_kick(c->watchdog, true);
    if (out) *out = p->id;
    return 0;
}

static int cu_copy(tl_device *d, tl_stream_id sid, const tl_op *op, int job, tl_launch_cb cb, void *arg,
                   tl_launch_id *out)
{
    tl_cuda *c = C(d);
    if (sid < 0 || sid >= c->n_streams || !op || (op->kind != TL_OP_MEMCPY && op->kind != TL_OP_MEMSET))
        return TL_EINVAL;
    if (op->kind == TL_OP_MEMSET && op->graph) return memset_node(c, sid, op, job, cb, arg, out);
    tl_dstream *s = &c->streams[sid];
    if (s->n_batch && flush_stream(c, s, true)) return c->flush_failed;
    size_t bytes = op->bytes ? op->bytes : 1;
    if (s->worker >= 0) {
        tl_wmsg m;
        memset(&m, 0, offsetof(tl_wmsg, u));
        m.type = TL_W_COPY;
        m.stream = s->remote;
        m.id = c->next_id + 1;
        m.op_kind = op->kind;
        m.copy_kind = op->copy_kind;
        m.bytes = bytes;
        if (tl_worker_send(&c->workers[s->worker], &m)) return TL_EIO;
        return queue_copy(c, sid, op, job, cb, arg, NULL, NULL, out);
    }
    if (bytes > c->buf_bytes) {
        tl_err err;
        if (tl_cuda_ensure_buffers(c, bytes, &err)) {
            fprintf(stderr, "tally-run: %s\n", err.msg);
            return TL_ENOMEM;
        }
    }
    cudaEvent_t e0 = NULL, e1 = NULL;
    int e = ev_get(c, true, &e0);
    if (!e) e = ev_get(c, true, &e1);
    if (!e) e = (int)cudaEventRecord(e0, s->s);
    if (!e) {
        char *dst = c->dev_buf;
        if (op->kind == TL_OP_MEMSET) e = (int)cudaMemsetAsync(dst, 0, bytes, s->s);
        else if (op->copy_kind == TL_COPY_H2D) e = (int)cudaMemcpyAsync(dst, c->host_buf, bytes, cudaMemcpyHostToDevice, s->s);
        else if (op->copy_kind == TL_COPY_D2H) e = (int)cudaMemcpyAsync(c->host_buf, dst, bytes, cudaMemcpyDeviceToHost, s->s);
        else e = (int)cudaMemcpyAsync(dst + c->buf_bytes, dst, bytes, cudaMemcpyDeviceToDevice, s->s);
    }
    if (!e) e = (int)cudaEventRecord(e1, s->s);
    if (e) {
        fprintf(stderr, "tally-run: copy: %s\n", cudaGetErrorString((cudaError_t)e));
        ev_put(c, true, e0);
        ev_put(c, true, e1);
        return TL_EIO;
    }
    return queue_copy(c, sid, op, job, cb, arg, e0, e1, out);
}

static int cu_retreat(tl_device *d, tl_launch_id id)
{
    tl_cuda *c = C(d);
    for (int i = 0; i < c->n_streams; i++) {
        tl_dstream *s = &c->streams[i];
        for (size_t j = 0; j < s->n; j++) {
            tl_pending *p = &s->q[(s->head + j) % s->cap];
            if (p->id != id) continue;
            if (!p->ptb) return 0;
            if (p->remote) {
                tl_wmsg m;
                memset(&m, 0, offsetof(tl_wmsg, u));
                m.type = TL_W_RETREAT;
                m.id = id;
                return tl_worker_send(&c->workers[s->worker], &m) ? TL_EIO : 0;
            }
            int e = tl_synth_retreat(c->synth, (unsigned)p->slot, c->ctl_stream);
            return e ? TL_EIO : 0;
        }
    }
    return 0; /* finished already: harmless */
}

static int cu_timer(tl_device *d, tl_ns at, tl_timer_cb cb, void *arg)
{
    tl_cuda *c = C(d);
    if (!cb) return TL_EINVAL;
    tl_timer_ent e = {at, c->timer_seq++, cb, arg, c->timer_log ? host_now(c) : 0};
    t_push(c, e);
    return 0;
}

/* Inside a callback, now() is the time of the event being handled (a timer's
 * due time, a completion's GPU end), kept monotonic, as in the simulator:
 * otherwise the loop's few microseconds of lateness per event would add up
 * along a replayed host timeline (every host gap would restart from the late
 * firing). Outside callbacks it is the wall clock. Both are <= the wall clock. */
static tl_ns cu_now(tl_device *d)
{
    tl_cuda *c = C(d);
    return event_time(c, host_now(c));
}

/* Time 0 of the run (tl_device_ops.begin): the clock's origin moves to now,
 * so the setup's time (contexts in worker processes, MPS clients: 0.13-0.44 s
 * on the H100, session 18) does not become a backlog of late arrivals. Timers
 * the setup set keep their times, now on the run's clock, as in the
 * simulator, where the setup happens at time 0. Work still on the GPU from
 * the setup would have its times on the old origin: then nothing moves. */
static void cu_begin(tl_device *d)
{
    tl_cuda *c = C(d);
    if (c->inflight) return;
    tl_ns setup = host_now(c);
    if (setup <= 0) return;
    c->t0 += setup;
    c->logical = 0;
    c->loop.setup_ns = setup;
    c->loop.nivcsw_begin = thread_nivcsw();
    if (c->timer_log) fprintf(c->timer_log, "# origin_mono_ns=%lld\n", (long long)c->t0);
}

static void enter_cb(tl_cuda *c, tl_ns event_time)
{
    if (event_time > c->logical) c->logical = event_time;
    c->in_cb++;
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
static int poll_completions(tl_device *d, tl_err *err)
{
    tl_cuda *c = C(d);
    done_rec buf[64];
    int n = 0;
    for (int w = 0; w < c->n_workers; w++) {
        tl_wmsg m;
        int g;
        while ((g = tl_worker_recv(&c->workers[w], &m)) > 0) {
            if (m.type == TL_W_DONES) remote_dones(c, w, &m);
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

static int cu_run(tl_device *d, tl_ns until, tl_err *err)
{
    tl_cuda *c = C(d);
    for (;;) {
        if (flush_all(c, false)) return flush_error(c, err);
        int r = poll_completions(d, err);
        if (r < 0) return r;
        tl_ns now = host_now(c);
        /* Fire due timers, earliest first; callbacks may add more. */
        int fired = 0;
        while (c->n_timers && c->timers[0].at <= now && fired < 64) {
            tl_timer_ent t = t_pop(c);
            c->loop.timers++;
            ns_stat_add(now - t.at, &c->loop.late_sum_ns, &c->loop.late_max_ns, &c->loop.late_over_10us,
                        10 * TL_NS_PER_US);
            c->loop.late_over_1ms += now - t.at > TL_NS_PER_MS;
            if (c->timer_log)
                fprintf(c->timer_log, "%lld,%lld,%lld,%lld,%lld\n", (long long)t.at, (long long)t.set_wall,
                        (long long)now, (long long)c->logical,
                        (long long)((uintptr_t)t.cb - (uintptr_t)cu_timer));
            enter_cb(c, t.at < now ? t.at : now);
            t.cb(t.arg, c->logical);
            c->in_cb--;
            if (flush_all(c, false)) return flush_error(c, err);
            fired++;
            now = host_now(c);
        }
        if (!c->inflight && !c->n_timers) {
            tl_watchdog_kick(c->watchdog, false);
            return 0;
        }
        if (until > 0 && now >= until) return 0;
        if (!c->inflight) {
            tl_watchdog_kick(c->watchdog, false);
            /* Nothing on the GPU: sleep until shortly before the next timer. */
            tl_ns m = c->sleep_margin;
            tl_ns wait = c->timers[0].at - now - m;
            if (until > 0 && until - now - m < wait) wait = until - now - m;
            if (m >= 0 && wait > 0) {
                struct timespec ts = {wait / TL_NS_PER_S, wait % TL_NS_PER_S};
                nanosleep(&ts, NULL);
            }
        }
        /* else spin: completions and short host gaps need microsecond timing. */
    }
}

static void meas_put(void *arg, const char *key, tl_ns ns)
{
    tl_cuda *c = arg;
    if (c->n_meas == c->cap_meas) {
        c->cap_meas = c->cap_meas ? c->cap_meas * 2 : 256;
        c->meas = tl_xrealloc(c->meas, c->cap_meas * sizeof *c->meas);
    }
    snprintf(c->meas[c->n_meas].key, sizeof c->meas[c->n_meas].key, "%s", key);
    c->meas[c->n_meas++].ns = ns;
}

static int cu_measure(tl_device *d, const tl_kernel_desc *k, tl_ns *out, tl_err *err)
{
    tl_cuda *c = C(d);
    if (!k || !k->op || k->op->kind != TL_OP_KERNEL) return tl_errf(err, TL_EINVAL, "measure: not a kernel");
    tl_kernel_plan pl;
    int r = tl_cuda_plan(d, NULL, k->op, &pl, err);
    if (r) return r;
    uint64_t total = tl_op_blocks(k->op);
    tl_synth_launch l;
    memset(&l, 0, sizeof l);
    l.kind = pl.kind == TL_KIND_COMPUTE ? TL_SYNTH_COMPUTE : TL_SYNTH_MEMORY;
    l.variant = pl.variant;
    for (int i = 0; i < 3; i++) l.block[i] = k->op->block[i] ? k->op->block[i] : 1;
    l.smem = k->op->static_smem + k->op->dynamic_smem;
    l.begin = k->block_begin;
    l.end = k->block_end ? k->block_end : total;
    if (l.end > total || l.begin >= l.end) return tl_errf(err, TL_ERANGE, "measure: block range outside the grid");
    l.workers = k->ptb_workers_per_sm * (unsigned)d->gpu.sms;
    l.iters = pl.iters;
    /* Cached per launch configuration: policies measure lazily, during runs,
     * and a timed run blocks the event loop (the simulator's are free). */
    char key[200];
    snprintf(key, sizeof key, "%d/%d/%u/%llu/%u,%u,%u/%u/%llu-%llu/%u", l.kind, l.variant, l.iters,
             (unsigned long long)total, l.block[0], l.block[1], l.block[2], l.smem, (unsigned long long)l.begin,
             (unsigned long long)l.end, l.workers);
    for (size_t i = 0; i < c->n_meas; i++)
        if (!strcmp(c->meas[i].key, key)) {
            *out = c->meas[i].ns;
            return 0;
        }
    if (flush_all(c, true)) return flush_error(c, err); /* what is queued goes before the timed run */
    c->measuring = true;
    r = tl_cuda_time_launch(c, &l, 5, c->calib_stream, out, err);
    c->measuring = false;
    if (r) return r;
    meas_put(c, key, *out);
    tl_err e2;
    tl_calib_db_measure_put(&c->calib, c->info.name, key, *out, &e2);
    return 0;
}

static void cu_job_stats(tl_device *d, int job, tl_job_stats *out)
{
    tl_cuda *c = C(d);
    memset(out, 0, sizeof *out);
    if (job >= 0 && job < c->n_jstats) *out = c->jstats[job];
}

static void cu_close(tl_device *d)
{
    tl_cuda *c = C(d);
    if (!c) return;
    cudaDeviceSynchronize();
    tl_gcache_stats gs = {0};
    if (c->gcache) tl_gcache_get_stats(c->gcache, &gs);
    if (gs.launches || gs.no_room)
        fprintf(stderr, "tally-run: CUDA graphs: %llu launches of %llu kernels; %llu instantiated (%.1f ms in all, "
                        "longest %.2f ms); %llu relaunched for work within %.0f%%; %llu updated (%llu nodes, %.1f ms in all); %llu dropped for slots; "
                        "%llu batches launched one by one (no slots); %llu of %llu batches cut before the loop turn ended; "
                        "per graph launch: %.1f us from its first "
                        "kernel's issue to its flush, %.1f us in cudaGraphLaunch; timers fired %.1f us late on average\n",
                (unsigned long long)gs.launches, (unsigned long long)gs.nodes, (unsigned long long)gs.instantiations,
                gs.instantiate_ns / 1e6, gs.instantiate_max_ns / 1e6, (unsigned long long)gs.reuses,
                TL_GCACHE_REUSE_PCT, (unsigned long long)gs.updates,
                (unsigned long long)gs.node_updates, gs.update_ns / 1e6, (unsigned long long)gs.evictions,
                (unsigned long long)gs.no_room, (unsigned long long)c->loop.batch_cuts,
                (unsigned long long)c->loop.batches,
                c->loop.batches ? c->loop.batch_open_sum_ns / 1e3 / (double)c->loop.batches : 0.0,
                gs.launches ? gs.launch_call_ns / 1e3 / (double)gs.launches : 0.0,
                c->loop.timers ? c->loop.late_sum_ns / 1e3 / (double)c->loop.timers : 0.0);
    if (c->loop.lag_batches)
        fprintf(stderr, "tally-run: graph batches: %llu of %.1f ops on average, each sent to the GPU %.1f us "
                        "after the event that issued its first op (%.0f ns an op)\n",
                (unsigned long long)c->loop.lag_batches, (double)c->loop.lag_ops / (double)c->loop.lag_batches,
                c->loop.lag_sum_ns / 1e3 / (double)c->loop.lag_batches,
                (double)c->loop.lag_sum_ns / (double)c->loop.lag_ops);
    if (c->timer_log) fclose(c->timer_log);
    tl_gpu_sampler_stop(c->sampler, NULL, NULL);
    free(c->samples);
    tl_watchdog_stop(c->watchdog);
    for (int i = 0; i < c->n_workers; i++) tl_worker_stop(&c->workers[i]);
    free(c->workers);
    if (c->mps) {
        tl_mps_stop(c->mps);
        tl_procs_set_mps(NULL);
    }
    for (int i = 0; i < c->n_streams; i++) {
        if (c->streams[i].worker < 0) cudaStreamDestroy(c->streams[i].s);
        free(c->streams[i].q);
        free(c->streams[i].batch);
    }
    for (int i = 0; i < c->n_ctxs; i++)
        if (c->ctxs[i].green && c->drv.GreenCtxDestroy) c->drv.GreenCtxDestroy(c->ctxs[i].green);
    for (size_t i = 0; i < c->n_ev_pool; i++) cudaEventDestroy(c->ev_pool[i]);
    for (size_t i = 0; i < c->n_evt_pool; i++) cudaEventDestroy(c->evt_pool[i]);
    if (c->ctl_stream) cudaStreamDestroy(c->ctl_stream);
    if (c->calib_stream) cudaStreamDestroy(c->calib_stream);
    if (c->host_buf) cudaFreeHost(c->host_buf);
    if (c->dev_buf) cudaFree(c->dev_buf);
    tl_gcache_free(c->gcache);
    tl_synth_close(c->synth);
    tl_calib_db_close(&c->calib);
    free(c->streams);
    free(c->ctxs);
    free(c->timers);
    free(c->ev_pool);
    free(c->evt_pool);
    free(c->plans);
    free(c->traces);
    free(c->jstats);
    free(c->mem);
    free(c->meas);
    bool reset = !c->opt.keep_context;
    free(c);
    d->impl = NULL;
    /* Every CUDA object of this device is gone: start the next one from a
     * fresh primary context (tl_cuda_options.keep_context says why). */
    if (reset) cudaDeviceReset();
    d->ops = NULL;
}

/* The replay's own figures of the run, warm-up included (what cu_close's
 * "CUDA graphs" line prints), recorded with the run: how the graph jobs'
 * batches were launched and how long after the event that issued them (also
 * a context worker's: the parent sends them); the same for launches made one
 * by one, and how long after their launch call kernels on an idle stream
 * started on the GPU (on the corrected GPU clock: fix_offset keeps that >= 0,
 * so a mean, not a bound); how late the event loop fired its timers, and how
 * far fix_offset moved the GPU clock's offset each way. This
 * process's contexts only: a context worker's graphs are its own. */
/* The GPU's clocks over the run (time 0 to now), from the sampler, which
 * stops here; with TALLY_GPU_SAMPLE_LOG every sample is appended there too. */
static void gpu_clock_metrics(tl_cuda *c, tl_dev_metric_fn fn, void *arg)
{
    if (!c->sampler) return;
    tl_gpu_sampler_stop(c->sampler, &c->samples, &c->n_samples);
    c->sampler = NULL;
    tl_gpu_clock_summary g;
    tl_gpu_clock_summarize(c->samples, c->n_samples, c->t0, tl_mono_ns(), &g);
    const char *log = getenv("TALLY_GPU_SAMPLE_LOG");
    FILE *f = log && *log ? fopen(log, "a") : NULL;
    if (f) {
        fprintf(f, "# t_ns (run clock),sm_mhz,mem_mhz,reasons,power_mw,temp_c\n");
        for (size_t i = 0; i < c->n_samples; i++)
            fprintf(f, "%lld,%u,%u,%#llx,%u,%u\n", (long long)(c->samples[i].t_ns - c->t0), c->samples[i].sm_mhz,
                    c->samples[i].mem_mhz, c->samples[i].reasons, c->samples[i].power_mw, c->samples[i].temp_c);
        fclose(f);
    }
    fn(arg, "gpu_clock_samples", (double)g.samples);
    if (!g.samples) return;
    fn(arg, "gpu_sm_mhz_min", g.sm_min_mhz);
    fn(arg, "gpu_sm_mhz_mean", g.sm_mean_mhz);
    fn(arg, "gpu_sm_mhz_max", g.sm_max_mhz);
    fn(arg, "gpu_mem_mhz_min", g.mem_min_mhz);
    fn(arg, "gpu_sm_dip_samples", (double)g.dip_samples);
    fn(arg, "gpu_sm_dip_longest_ns", (double)g.dip_longest_ns);
    fn(arg, "gpu_clock_reasons", (double)g.reasons);
    fn(arg, "gpu_power_max_w", g.power_max_mw / 1e3);
    fn(arg, "gpu_temp_max_c", g.temp_max_c);
}

static void cu_run_metrics(tl_device *d, tl_dev_metric_fn fn, void *arg)
{
    tl_cuda *c = C(d);
    tl_gcache_stats gs = {0};
    if (c->gcache) tl_gcache_get_stats(c->gcache, &gs);
    const tl_cuda_loop_stats *l = &c->loop;
    fn(arg, "cuda_timers", (double)l->timers);
    fn(arg, "cuda_setup_ns", (double)l->setup_ns);
    fn(arg, "cuda_clock_offset_raised_ns", (double)l->offset_raised_ns);
    fn(arg, "cuda_clock_offset_lowered_ns", (double)l->offset_lowered_ns);
    if (l->launch_lag_count) {
        fn(arg, "cuda_launch_lag_count", (double)l->launch_lag_count);
        fn(arg, "cuda_launch_lag_sum_ns", (double)l->launch_lag_sum_ns);
    }
    if (l->start_lat_count) {
        fn(arg, "cuda_start_latency_count", (double)l->start_lat_count);
        fn(arg, "cuda_start_latency_sum_ns", (double)l->start_lat_sum_ns);
        fn(arg, "cuda_start_latency_max_ns", (double)l->start_lat_max_ns);
        fn(arg, "cuda_start_latency_over_500us", (double)l->start_lat_over_500us);
    }
    if (l->lag_batches) {
        fn(arg, "cuda_graph_lag_batches", (double)l->lag_batches);
        fn(arg, "cuda_graph_lag_ops", (double)l->lag_ops);
        fn(arg, "cuda_graph_lag_sum_ns", (double)l->lag_sum_ns);
        fn(arg, "cuda_graph_lag_max_ns", (double)l->lag_max_ns);
        fn(arg, "cuda_graph_lag_over_500us", (double)l->lag_over_500us);
    }
    if (l->timers) {
        fn(arg, "cuda_timer_late_mean_ns", (double)l->late_sum_ns / (double)l->timers);
        fn(arg, "cuda_timer_late_max_ns", (double)l->late_max_ns);
        fn(arg, "cuda_timer_late_over_1ms", (double)l->late_over_1ms);
    }
    gpu_clock_metrics(c, fn, arg);
    long nivcsw = thread_nivcsw(); /* since time 0 (or the open, without a begin) */
    if (nivcsw >= 0 && l->nivcsw_begin >= 0)
        fn(arg, "cuda_loop_preemptions", (double)(nivcsw - l->nivcsw_begin));
    if (!gs.launches && !gs.no_room) return;
    fn(arg, "cuda_graph_launches", (double)gs.launches);
    fn(arg, "cuda_graph_kernels", (double)gs.nodes);
    fn(arg, "cuda_graph_instantiations", (double)gs.instantiations);
    fn(arg, "cuda_graph_reuses", (double)gs.reuses);
    fn(arg, "cuda_graph_updates", (double)gs.updates);
    fn(arg, "cuda_graph_one_by_one", (double)gs.no_room);
    fn(arg, "cuda_graph_batch_cuts", (double)l->batch_cuts);
    if (l->batches)
        fn(arg, "cuda_graph_issue_to_flush_mean_ns", (double)l->batch_open_sum_ns / (double)l->batches);
    if (gs.launches)
        fn(arg, "cuda_graph_launch_call_mean_ns", (double)gs.launch_call_ns / (double)gs.launches);
}

static const tl_device_ops cuda_ops = {
    .name = "cuda",
    .ctx_create = cu_ctx_create,
    .stream_create = cu_stream_create,
    .launch = cu_launch,
    .copy = cu_copy,
    .retreat = cu_retreat,
    .timer = cu_timer,
    .now = cu_now,
    .run = cu_run,
    .measure = cu_measure,
    .job_stats = cu_job_stats,
    .close = cu_close,
    .run_metrics = cu_run_metrics,
    .begin = cu_begin,
};

/* The watchdog's last words: what each stream was waiting for. Racy reads
 * from another thread, only on the way out. */
static void hang_report(void *arg)
{
    tl_cuda *c = arg;
    tl_ns now = host_now(c);
    fprintf(stderr, "tally-run: in flight: %zu ops; in a callback: %s; loop logical time %.6f s, wall %.6f s; "
                    "measuring: %s; measurements %llu; timers pending %zu\n",
            c->inflight, c->in_cb ? "yes" : "no", (double)c->logical / 1e9, (double)now / 1e9,
            c->measuring ? "yes" : "no", (unsigned long long)c->n_meas, c->n_timers);
    for (int i = 0; i < c->n_streams; i++) {
        tl_dstream *s = &c->streams[i];
        if (!s->n) continue;
        tl_pending *p = &s->q[s->head];
        const volatile tl_synth_rec *rec = p->is_kernel && !p->remote ? tl_synth_record(c->synth, (unsigned)p->slot) : NULL;
        fprintf(stderr,
                "tally-run:   stream %d (ctx %d, prio %d, worker %d): %zu queued; head id %llu %s%s blocks %llu-%llu "
                "grid %llu block %ux%ux%u issued %.6f s; slot %d gen %u record gen %u cudaStreamQuery %d\n",
                i, s->ctx, s->prio, s->worker, s->n, (unsigned long long)p->id, p->is_kernel ? "kernel" : "copy",
                p->ptb ? " PTB" : "", (unsigned long long)p->begin, (unsigned long long)p->end,
                p->op ? (unsigned long long)tl_op_blocks(p->op) : 0ull, p->op ? p->op->block[0] : 0,
                p->op ? p->op->block[1] : 0, p->op ? p->op->block[2] : 0, (double)p->issued_ns / 1e9, p->slot, p->gen,
                rec ? rec->gen : 0u, s->s ? (int)cudaStreamQuery(s->s) : -1);
        if (rec) {
            const tl_synth_hist *h = tl_synth_history(c->synth, (unsigned)p->slot);
            for (int k = 0; h && k < TL_SYNTH_HIST && h[k].what; k++)
                fprintf(stderr, "tally-run:     slot history: %c gen %u at %.6f s kind %d v%d iters %u blocks %llu-%llu workers %u\n",
                        h[k].what, h[k].gen, (double)(h[k].t_ns - c->t0) / 1e9, h[k].kind, h[k].variant, h[k].iters,
                        (unsigned long long)h[k].begin, (unsigned long long)h[k].end, h[k].workers);
            unsigned long long dv[6] = {0};
            int e = tl_synth_slot_dump(c->synth, (unsigned)p->slot, dv);
            fprintf(stderr, "tally-run:     slot on the device (%d): start %llu end %llu exited %llu claimed %llu "
                            "retreat_gen %llu group exits %llu\n", e, dv[0], dv[1], dv[2], dv[3], dv[4], dv[5]);
        }
    }
}

/* A whole number from the environment, for the loop's diagnostics: 0 when
 * the variable is unset or empty (*v untouched), 1 with *v set, -1 when it is
 * not a whole number in [lo, hi]. */
static int env_ll(const char *name, long long lo, long long hi, long long *v)
{
    const char *s = getenv(name);
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end || x < lo || x > hi) return -1;
    *v = x;
    return 1;
}

int tl_cuda_open(tl_device *d, const tl_cuda_options *o, tl_err *err)
{
    memset(d, 0, sizeof *d);
    tl_cuda_options opt;
    memset(&opt, 0, sizeof opt);
    if (o) opt = *o;
    tl_cuda_info info;
    int r = tl_cuda_probe(opt.device, &info, err);
    if (r) return r;
    int e = (int)cudaSetDevice(opt.device);
    if (e) return tl_cuda_errf(err, e, "cudaSetDevice");
    tl_cuda *c = tl_xcalloc(1, sizeof *c);
    c->opt = opt;
    c->info = info;
    c->device = opt.device;
    d->impl = c;
    d->ops = &cuda_ops;
    tl_cuda_props(c->device, &d->gpu);
    tl_drv_load(&c->drv); /* optional: only partitions need it */
    char *path = opt.calib_db ? tl_xstrdup(opt.calib_db) : tl_calib_default_path();
    r = tl_calib_db_open(&c->calib, path, err);
    free(path);
    if (r) goto fail;
    if ((r = tl_cuda_calib_load(c, err))) goto fail;
    if ((r = tl_calib_db_measure_each(&c->calib, c->info.name, meas_put, c, err))) goto fail;
    if ((e = tl_synth_open(&c->synth, TL_GCACHE_PROCESS_SLOTS))) { r = tl_cuda_errf(err, e, "synthetic kernels"); goto fail; }
    c->gcache = tl_gcache_new(c->synth);
    if ((e = (int)cudaStreamCreateWithPriority(&c->ctl_stream, cudaStreamNonBlocking, d->gpu.stream_prio_greatest)) ||
        (e = (int)cudaStreamCreateWithFlags(&c->calib_stream, cudaStreamNonBlocking))) {
        r = tl_cuda_errf(err, e, "control streams");
        goto fail;
    }
    long long res = 0;
    if (!tl_synth_timer_resolution(c->synth, &res)) c->info.timer_res_ns = res;
    long long off = 0;
    if ((e = tl_synth_clock_offset(c->synth, &off))) { r = tl_cuda_errf(err, e, "GPU clock offset"); goto fail; }
    c->gt_offset = off;
    c->info.clock_offset_ns = off;
    c->t0 = tl_mono_ns();
    c->loop.nivcsw_begin = thread_nivcsw();
    if (opt.watchdog_ns >= 0 && (r = tl_watchdog_start(&c->watchdog, opt.watchdog_ns ? opt.watchdog_ns : 20 * TL_NS_PER_S, err)))
        goto fail;
    tl_watchdog_set_report(c->watchdog, hang_report, c);
    /* The GPU's clocks every 10 ms (TALLY_GPU_SAMPLE_MS; 0: off). Without NVML
     * the run goes on without them, saying so once. */
    long long sample_ms = 10;
    if (env_ll("TALLY_GPU_SAMPLE_MS", 0, 10000, &sample_ms) < 0) {
        r = tl_errf(err, TL_EINVAL, "TALLY_GPU_SAMPLE_MS=%s: want 0 (off) to 10000 ms", getenv("TALLY_GPU_SAMPLE_MS"));
        goto fail;
    }
    if (sample_ms > 0) {
        char bus[64] = "";
        tl_err serr = {0};
        if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, c->device) != cudaSuccess) bus[0] = '\0';
        if (tl_gpu_sampler_start(&c->sampler, bus[0] ? bus : NULL, c->device, sample_ms * TL_NS_PER_MS, &serr)) {
            static bool said;
            if (!said) fprintf(stderr, "tally-run: %s; runs go on without the GPU's clocks\n", serr.msg);
            said = true;
        }
    }
    /* Diagnostic: how long before its next timer the idle loop wakes up
     * (session 18: spinning instead served requests at an idle GPU 5-9% sooner
     * at the median; sleeping stays the default every earlier run had). */
    long long margin_us = 60;
    if (env_ll("TALLY_SLEEP_MARGIN_US", LLONG_MIN, 1000000, &margin_us) < 0) {
        r = tl_errf(err, TL_EINVAL, "TALLY_SLEEP_MARGIN_US=%s: not a whole number of us up to 1000000 "
                    "(negative: never sleep)", getenv("TALLY_SLEEP_MARGIN_US"));
        goto fail;
    }
    c->sleep_margin = margin_us < 0 ? -1 : margin_us * TL_NS_PER_US;
    /* Diagnostic: the loop thread's timer slack, how much later than asked
     * the kernel may end its sleeps (Linux's default is 50 us; the loop wakes
     * sleep_margin early and spins the rest, so the slack only matters where
     * an oversleep passes the margin; `tally-run jitter` measures both). */
    long long slack_ns;
    int set = env_ll("TALLY_TIMER_SLACK_NS", 1, 1000000, &slack_ns);
    if (set < 0 || (set > 0 && prctl(PR_SET_TIMERSLACK, (unsigned long)slack_ns, 0, 0, 0) != 0)) {
        r = tl_errf(err, TL_EINVAL, "TALLY_TIMER_SLACK_NS=%s: want 1 to 1000000 ns (and a Linux that "
                    "takes it)", getenv("TALLY_TIMER_SLACK_NS"));
        goto fail;
    }
    /* Diagnostic: every timer the loop fires, one CSV line each (times on the
     * run's clock; the callback as its address less cu_timer's, which nm on
     * the same build resolves whether or not the binary is position-independent).
     * It changes nothing the loop does but the line written. */
    const char *tlog = getenv("TALLY_TIMER_LOG");
    if (tlog && *tlog) {
        if (!(c->timer_log = fopen(tlog, "a"))) {
            r = tl_errf(err, TL_EIO, "TALLY_TIMER_LOG=%s: cannot open", tlog);
            goto fail;
        }
        fprintf(c->timer_log, "# due_ns,set_wall_ns,fired_wall_ns,logical_before_ns,callback_minus_cu_timer\n"
                              "# origin_mono_ns=%lld\n", (long long)c->t0);
    }
    return 0;
fail:
    cu_close(d);
    return r;
}

void tl_cuda_get_info(tl_device *d, tl_cuda_info *out) { *out = C(d)->info; }
void tl_cuda_get_calib_stats(tl_device *d, tl_cuda_calib_stats *out) { *out = C(d)->cstats; }
void tl_cuda_get_loop_stats(tl_device *d, tl_cuda_loop_stats *out) { *out = C(d)->loop; }
void tl_cuda_get_graph_stats(tl_device *d, tl_gcache_stats *out) { tl_gcache_get_stats(C(d)->gcache, out); }

int tl_cuda_sync(tl_device *d, tl_err *err)
{
    if (flush_all(C(d), true)) return flush_error(C(d), err);
    int e = (int)cudaDeviceSynchronize();
    return e ? tl_cuda_errf(err, e, "cudaDeviceSynchronize") : 0;
}
