/* herald: SLO-aware space-time sharing (Herald; FACTS.md "How the reference
 * systems schedule").
 *
 * Model:
 *  - One context for all jobs: the latency-critical jobs (the smallest rank,
 *    normally the inference job) on streams of the greatest priority, training
 *    on the least; so when both have blocks to dispatch, inference goes first.
 *  - Every kernel of the latency-critical job is classified from its profile
 *    (the trace stands for Herald's offline profile): heavy when its footprint
 *    (occupancy x SM share: the fraction of the GPU's thread slots it holds
 *    when alone, tl_herald_footprint) >= heavy_footprint and its duration >=
 *    heavy_min_ms; light otherwise. Copies and memsets are light.
 *  - Training tasks wait in a per-job FIFO; at most train_inflight of them are
 *    on the device per job. They are released (space sharing) unless a
 *    latency-critical job
 *      (a) has a heavy kernel running: at the head of its stream's tasks in
 *          flight (a heavy kernel queued behind a light one does not yet hold
 *          training, until the light one is within lookahead_ms of its
 *          expected end: head start + traced duration), or
 *      (b) is inside a request whose next GPU op is heavy and due within
 *          lookahead_ms of host time (drain training before it starts), or
 *      (c) has its SLO at risk: time since the request's arrival + estimated
 *          remaining solo time of the request >= slo_guard x SLO
 *          (tl_herald_slo_at_risk; remaining = max(remaining host time,
 *          remaining GPU time) from the trace).
 *    (b) and (c) apply as well to a request that has arrived but not started
 *    (queued behind the previous one): its first GPU op, its whole estimate.
 *    In those cases the inference job has the GPU in time (training holds; the
 *    training blocks already running finish). When inference is idle, training
 *    fills the GPU.
 *
 * Parameters:
 *   heavy_footprint  double  default 0.5   range [0, 1]     footprint of a heavy kernel
 *   heavy_min_ms     ms      default 0.02  range [0, 1000]  shortest heavy kernel
 *   lookahead_ms     ms      default 0.05  range [0, 1000]  host time to a heavy op that holds training
 *   slo_guard        double  default 0.8   range [0.05, 1]  fraction of the SLO that triggers the guard
 *   train_inflight   int     default 2     range [1, 1024]  training tasks on the device per job
 *
 * Approximate: requests are recognised from the op index restarting; the
 * remaining-time estimate is solo (it ignores interference); holding stops
 * new training launches only: training kernels already running finish.
 */
#include <stddef.h>
#include <stdlib.h>

#include "tally/policy.h"
#include "tally/policy_util.h"

typedef struct herald_op {
    uint8_t heavy;
    int32_t next_gpu;  /* index of the next GPU op of the iteration, -1: none */
    tl_ns host_at;     /* host time from the iteration start to this op's call */
    tl_ns remaining;   /* estimated solo time from this op to the iteration's end */
} herald_op;

typedef struct herald_hp {
    herald_op **iters; /* per iteration, built on first use */
    /* Its tasks in flight per trace stream (they complete in FIFO order), and
     * since when the head has been at the head: it runs from about then. */
    tl_task_queue sq[TL_MAX_JOB_STREAMS];
    tl_ns head_since[TL_MAX_JOB_STREAMS];
    bool in_request, have_last;
    uint32_t last_iter, last_index;
    tl_ns req_arrival;
    tl_ns *arrivals;   /* FIFO of request arrivals not yet started */
    size_t arr_head, arr_len, arr_cap;
} herald_hp;

typedef struct herald_state {
    /* parameters */
    double heavy_footprint, slo_guard;
    tl_ns heavy_min_ns, lookahead_ns;
    int train_inflight;
    /* runtime */
    tl_policy *p;
    tl_stream_map *maps;
    bool *high;
    herald_hp *hp;
    tl_task_queue *q;
    int *inflight;
} herald_state;

static const tl_param_desc herald_params[] = {
    { "heavy_footprint", TL_PARAM_DOUBLE, offsetof(herald_state, heavy_footprint), 0.5, 0, 1,
      "footprint (occupancy x SM share) from which a kernel is heavy" },
    { "heavy_min_ms", TL_PARAM_NS_FROM_MS, offsetof(herald_state, heavy_min_ns), 0.02, 0, 1000,
      "shortest duration of a heavy kernel" },
    { "lookahead_ms", TL_PARAM_NS_FROM_MS, offsetof(herald_state, lookahead_ns), 0.05, 0, 1000,
      "host time to the next heavy op within which training is held" },
    { "slo_guard", TL_PARAM_DOUBLE, offsetof(herald_state, slo_guard), 0.8, 0.05, 1,
      "fraction of the SLO at which the rest of a request gets the GPU alone" },
    { "train_inflight", TL_PARAM_INT, offsetof(herald_state, train_inflight), 2, 1, 1024,
      "training tasks on the device at once, per job" },
    { NULL },
};

/* ---- classification (pure) ---- */

double tl_herald_footprint(const tl_gpu_props *g, const tl_op *op)
{
    if (op->kind != TL_OP_KERNEL || g->sms <= 0 || g->max_threads_per_sm <= 0)
        return 0;
    uint64_t blocks = tl_op_blocks(op);
    uint64_t tpb = tl_op_threads(op);
    tl_occ_limit lim;
    int occ = tl_occupancy(g, (int)tpb, (int)op->regs, (int)(op->static_smem + op->dynamic_smem),
                           &lim);
    uint64_t resident = (uint64_t)(occ > 0 ? occ : 1) * (uint64_t)g->sms;
    if (blocks < resident)
        resident = blocks;
    double f = (double)(resident * tpb) / ((double)g->sms * g->max_threads_per_sm);
    return f > 1 ? 1 : f;
}

bool tl_herald_is_heavy(const tl_gpu_props *g, const tl_op *op, double footprint_min,
                        tl_ns dur_min)
{
    return op->kind == TL_OP_KERNEL && op->dur_ns >= dur_min &&
           tl_herald_footprint(g, op) >= footprint_min;
}

bool tl_herald_slo_at_risk(tl_ns elapsed, tl_ns remaining, tl_ns slo, double guard)
{
    return slo > 0 && (double)(elapsed + remaining) >= guard * (double)slo;
}

/* ---- per-iteration tables of the latency-critical job ---- */

static const herald_op *iter_table(herald_state *st, int job, uint32_t iter)
{
    const tl_trace *tr = st->p->jobs[job].trace;
    herald_hp *h = &st->hp[job];
    if (!tr || iter >= tr->n_iters)
        return NULL;
    if (!h->iters)
        h->iters = tl_xcalloc(tr->n_iters, sizeof *h->iters);
    if (h->iters[iter])
        return h->iters[iter];
    const tl_iteration *it = &tr->iters[iter];
    herald_op *t = tl_xcalloc(it->n_ops + 1, sizeof *t);
    tl_ns host = 0;
    for (uint32_t i = 0; i < it->n_ops; i++) {
        host += it->ops[i].host_gap_ns;
        t[i].host_at = host;
        host += it->ops[i].host_call_ns;
        t[i].heavy = tl_herald_is_heavy(&st->p->dev->gpu, &it->ops[i], st->heavy_footprint,
                                        st->heavy_min_ns);
    }
    tl_ns host_end = host + it->tail_host_ns, gpu_rem = 0;
    int32_t next = -1;
    for (uint32_t k = it->n_ops; k-- > 0;) {
        const tl_op *op = &it->ops[k];
        t[k].next_gpu = next;
        bool gpu = op->kind == TL_OP_KERNEL || op->kind == TL_OP_MEMCPY ||
                   op->kind == TL_OP_MEMSET;
        if (gpu) {
            gpu_rem += op->dur_ns;
            next = (int32_t)k;
        }
        tl_ns host_rem = host_end - t[k].host_at;
        t[k].remaining = host_rem > gpu_rem ? host_rem : gpu_rem;
    }
    /* the sentinel entry describes the iteration from its start */
    t[it->n_ops].next_gpu = next;
    t[it->n_ops].remaining = host_end > gpu_rem ? host_end : gpu_rem;
    h->iters[iter] = t;
    return t;
}

/* The table entry of op (iter, index) of job j; NULL if out of range. */
static const herald_op *op_info(herald_state *st, int j, uint32_t iter, uint32_t index)
{
    const herald_op *t = iter_table(st, j, iter);
    return t && index < st->p->jobs[j].trace->iters[iter].n_ops ? &t[index] : NULL;
}

/* ---- holding training ---- */

/* No request in progress but one has arrived: it starts at once (the runner
 * plays the next iteration). Hold if its first GPU op is heavy and due within
 * the lookahead, or if its SLO is already at risk. */
static bool waiting_request_holds(herald_state *st, int j, tl_ns now)
{
    herald_hp *h = &st->hp[j];
    const tl_trace *tr = st->p->jobs[j].trace;
    if (!h->arr_len || !tr || !tr->n_iters)
        return false;
    uint32_t iter = h->have_last ? (h->last_iter + 1) % tr->n_iters : 0;
    const herald_op *t = iter_table(st, j, iter);
    const herald_op *start = &t[tr->iters[iter].n_ops];
    if (start->next_gpu >= 0 && t[start->next_gpu].heavy &&
        t[start->next_gpu].host_at <= st->lookahead_ns)
        return true;
    return tl_herald_slo_at_risk(now - h->arrivals[h->arr_head], start->remaining,
                                 st->p->jobs[j].slo_ns, st->slo_guard);
}

static bool hp_holds(herald_state *st, int j, tl_ns now)
{
    herald_hp *h = &st->hp[j];
    const tl_trace *tr = st->p->jobs[j].trace;
    for (int s = 0; tr && s < tr->n_streams && s < TL_MAX_JOB_STREAMS; s++) {
        const tl_task_queue *q = &h->sq[s];
        if (!q->len)
            continue;
        const tl_task *head = q->v[q->head];
        const herald_op *o = op_info(st, j, head->iter, head->index);
        if (o && o->heavy)
            return true;
        if (q->len > 1) {
            const tl_task *second = q->v[(q->head + 1) % q->cap];
            const herald_op *o2 = op_info(st, j, second->iter, second->index);
            if (o2 && o2->heavy && now + st->lookahead_ns >= h->head_since[s] + head->op->dur_ns)
                return true;
        }
    }
    if (!h->in_request)
        return waiting_request_holds(st, j, now);
    const herald_op *t = iter_table(st, j, h->last_iter);
    const herald_op *cur = op_info(st, j, h->last_iter, h->last_index);
    if (!cur)
        return false;
    if (cur->next_gpu >= 0 && t[cur->next_gpu].heavy &&
        t[cur->next_gpu].host_at - cur->host_at <= st->lookahead_ns)
        return true;
    return tl_herald_slo_at_risk(now - h->req_arrival, cur->remaining, st->p->jobs[j].slo_ns,
                                 st->slo_guard);
}

static void train_done(tl_policy *p, tl_task *t, const tl_launch_result *r);

static int stream_of(const tl_task *t)
{
    return t->op->stream >= 0 ? t->op->stream % TL_MAX_JOB_STREAMS : 0;
}

static void pump(herald_state *st)
{
    tl_policy *p = st->p;
    tl_ns now = tl_dev_now(p->dev);
    for (int j = 0; j < p->n_jobs; j++)
        if (st->high[j] && hp_holds(st, j, now))
            return;
    for (int j = 0; j < p->n_jobs; j++) {
        while (!st->high[j] && st->inflight[j] < st->train_inflight && st->q[j].len) {
            tl_task *t = tl_task_queue_pop(&st->q[j]);
            st->inflight[j]++;
            if (tl_policy_run_plain_then(p, t, tl_stream_map_get(&st->maps[j], t->op),
                                         train_done) < 0)
                st->inflight[j]--;
        }
    }
}

static void train_done(tl_policy *p, tl_task *t, const tl_launch_result *r)
{
    herald_state *st = p->state;
    st->inflight[t->job->id]--;
    pump(st);
}

static void hp_done(tl_policy *p, tl_task *t, const tl_launch_result *r)
{
    herald_state *st = p->state;
    int j = t->job->id;
    herald_hp *h = &st->hp[j];
    int s = stream_of(t);
    if (tl_task_queue_peek(&h->sq[s]) == t) {
        tl_task_queue_pop(&h->sq[s]);
    } else { /* not in FIFO order: remove it wherever it is */
        tl_task_queue rest;
        tl_task_queue_init(&rest);
        for (tl_task *x; (x = tl_task_queue_pop(&h->sq[s]));)
            if (x != t)
                tl_task_queue_push(&rest, x);
        tl_task_queue_close(&h->sq[s]);
        h->sq[s] = rest;
    }
    h->head_since[s] = tl_dev_now(p->dev);
    const herald_op *o = op_info(st, j, t->iter, t->index);
    if (o && o->next_gpu < 0 && h->in_request && t->iter == h->last_iter &&
        t->index == h->last_index)
        h->in_request = false; /* the request's last GPU op is done */
    pump(st);
}

static void hp_submit(herald_state *st, tl_task *t)
{
    int j = t->job->id;
    herald_hp *h = &st->hp[j];
    if (!h->have_last || t->iter != h->last_iter || t->index <= h->last_index) {
        h->in_request = true;
        if (h->arr_len) {
            h->req_arrival = h->arrivals[h->arr_head];
            h->arr_head = (h->arr_head + 1) % h->arr_cap;
            h->arr_len--;
        } else {
            h->req_arrival = t->issued_ns;
        }
    }
    h->have_last = true;
    h->last_iter = t->iter;
    h->last_index = t->index;
    int s = stream_of(t);
    tl_task_queue_push(&h->sq[s], t);
    if (h->sq[s].len == 1)
        h->head_since[s] = tl_dev_now(st->p->dev);
    if (tl_policy_run_plain_then(st->p, t, tl_stream_map_get(&st->maps[j], t->op), hp_done) < 0 &&
        h->sq[s].len && h->sq[s].v[(h->sq[s].head + h->sq[s].len - 1) % h->sq[s].cap] == t)
        h->sq[s].len--; /* refused and completed at once: not in flight */
}

/* ---- ops ---- */

static int herald_setup(tl_policy *p, tl_err *err)
{
    herald_state *st = p->state;
    size_t n = (size_t)p->n_jobs + 1;
    st->p = p;
    st->maps = tl_xcalloc(n, sizeof *st->maps);
    st->high = tl_xcalloc(n, sizeof *st->high);
    st->hp = tl_xcalloc(n, sizeof *st->hp);
    st->q = tl_xcalloc(n, sizeof *st->q);
    st->inflight = tl_xcalloc(n, sizeof *st->inflight);
    int *prio = tl_xcalloc(n, sizeof *prio);
    for (int j = 0; j < p->n_jobs; j++) {
        st->high[j] = tl_policy_job_is_high(p, &p->jobs[j]);
        prio[j] = st->high[j] ? tl_policy_stream_priority(p, 0) : TL_STREAM_PRIO_LEAST;
    }
    tl_job_ctx_plan plan = { .shared = true, .kind = TL_CTX_TIMESLICED, .stream_prio = prio };
    int r = tl_policy_setup_jobs(p, &plan, NULL, st->maps, err);
    free(prio);
    return r;
}

static void herald_submit(tl_policy *p, tl_task *t)
{
    herald_state *st = p->state;
    int j = t->job->id;
    if (st->high[j]) {
        hp_submit(st, t);
        return;
    }
    tl_task_queue_push(&st->q[j], t);
    pump(st);
}

static void herald_request_arrived(tl_policy *p, tl_job *job)
{
    herald_state *st = p->state;
    herald_hp *h = &st->hp[job->id];
    if (!st->high[job->id])
        return;
    if (h->arr_len == h->arr_cap) {
        size_t cap = h->arr_cap ? h->arr_cap * 2 : 16;
        tl_ns *v = tl_xmalloc(cap * sizeof *v);
        for (size_t i = 0; i < h->arr_len; i++)
            v[i] = h->arrivals[(h->arr_head + i) % h->arr_cap];
        free(h->arrivals);
        h->arrivals = v;
        h->arr_cap = cap;
        h->arr_head = 0;
    }
    h->arrivals[(h->arr_head + h->arr_len++) % h->arr_cap] = tl_dev_now(p->dev);
}

static void herald_teardown(tl_policy *p)
{
    herald_state *st = p->state;
    for (int j = 0; st->hp && j < p->n_jobs; j++) {
        herald_hp *h = &st->hp[j];
        const tl_trace *tr = p->jobs[j].trace;
        for (uint32_t i = 0; h->iters && tr && i < tr->n_iters; i++)
            free(h->iters[i]);
        free(h->iters);
        free(h->arrivals);
        for (int s = 0; s < TL_MAX_JOB_STREAMS; s++)
            tl_task_queue_close(&h->sq[s]);
        tl_task_queue_close(&st->q[j]);
    }
    free(st->hp);
    free(st->q);
    free(st->inflight);
    free(st->maps);
    free(st->high);
    st->hp = NULL;
    st->q = NULL;
    st->inflight = NULL;
    st->maps = NULL;
    st->high = NULL;
}

const tl_policy_ops tl_policy_herald = {
    .name = "herald",
    .summary = "SLO-aware space-time sharing: light inference ops share, heavy ones hold training",
    .state_size = sizeof(herald_state),
    .params = herald_params,
    .setup = herald_setup,
    .submit = herald_submit,
    .request_arrived = herald_request_arrived,
    .teardown = herald_teardown,
};
