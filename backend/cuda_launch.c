/* The CUDA device's launches and copies (tl_device_ops launch, copy,
 * retreat) and the graph jobs' batches: the whole-grid launches a stream gets
 * in one loop turn, launched as one CUDA graph when the turn ends. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"

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

int tl_cuda_flush_error(tl_cuda *c, tl_err *err)
{
    if (err) *err = c->flush_err;
    return c->flush_failed;
}

/* Called when the loop gets control back (end of a callback, top of the loop)
 * and before anything that waits for the GPU. */
int tl_cuda_flush_all(tl_cuda *c, bool cut)
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

void tl_cuda_synth_from_plan(tl_synth_launch *l, const tl_kernel_plan *pl, const tl_op *op, uint64_t begin,
                             uint64_t end)
{
    memset(l, 0, sizeof *l);
    l->kind = pl->kind == TL_KIND_COMPUTE ? TL_SYNTH_COMPUTE : TL_SYNTH_MEMORY;
    l->variant = pl->variant;
    for (int i = 0; i < 3; i++) l->block[i] = op->block[i] ? op->block[i] : 1;
    l->smem = op->static_smem + op->dynamic_smem;
    l->begin = begin;
    l->end = end;
    l->iters = pl->iters;
}

int tl_cuda_launch(tl_device *d, tl_stream_id sid, const tl_kernel_desc *k, tl_launch_cb cb, void *arg,
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
    tl_cuda_synth_from_plan(&l, &pl, k->op, k->block_begin, end);
    l.workers = k->ptb_workers_per_sm ? k->ptb_workers_per_sm * (unsigned)ctx_sms(c, c->streams[sid].ctx) : 0;
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

int tl_cuda_copy(tl_device *d, tl_stream_id sid, const tl_op *op, int job, tl_launch_cb cb, void *arg,
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

int tl_cuda_retreat(tl_device *d, tl_launch_id id)
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
