/* The simulated tl_device: the ops table, contexts, streams, launches,
 * copies, timers, run, measure and accounting. The model is in the other
 * sim_*.c files; sim/README.md describes it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "evq.h"
#include "sim_internal.h"

/* ---------- flush: once per instant ---------- */

void sim_flush(void *ctx)
{
    sim *s = ctx;
    s->in_flush = true;
    slice_update(s);
    unit *u = s->active;
    if (u && !s->switching && u->dirty) {
        u->dirty = false;
        dispatch_unit(s, u);
    }
    if (s->dirty_groups)
        groups_reevaluate(s);
    s->in_flush = false;
}

/* ---------- contexts and streams ---------- */

static unit *unit_new(sim *s, tl_ctx_kind kind)
{
    unit *u = tl_xcalloc(1, sizeof *u);
    u->kind = kind;
    u->index = s->n_units;
    s->units = tl_xrealloc(s->units, (size_t)(s->n_units + 1) * sizeof *s->units);
    s->units[s->n_units++] = u;
    return u;
}

static void unit_add_ctx(unit *u, sctx *c)
{
    u->ctxs = tl_xrealloc(u->ctxs, (size_t)(u->n_ctxs + 1) * sizeof *u->ctxs);
    u->ctxs[u->n_ctxs++] = c;
}

static int sim_ctx_create(tl_device *d, const tl_ctx_config *cfg, tl_ctx_id *out, tl_err *err)
{
    sim *s = sim_of(d);
    if (!cfg || !out)
        return tl_errf(err, TL_EINVAL, "sim: ctx_create: no config");
    if (s->n_ctxs >= 100000)
        return tl_errf(err, TL_ERANGE, "sim: ctx_create: too many contexts");
    int sms = s->gpu.sms;
    sctx *c = tl_xcalloc(1, sizeof *c);
    c->cfg = *cfg;
    c->id = s->n_ctxs;
    switch (cfg->kind) {
    case TL_CTX_TIMESLICED:
        c->u = unit_new(s, TL_CTX_TIMESLICED);
        unit_add_pool(s, c->u, 0, sms);
        c->pool = 0;
        c->cap_sms = sms;
        break;
    case TL_CTX_MPS: {
        double pct = cfg->sm_percent == 0 ? 100.0 : cfg->sm_percent;
        if (!(pct > 0 && pct <= 100)) {
            free(c);
            return tl_errf(err, TL_ERANGE, "sim: ctx_create: MPS sm_percent %g not in (0,100]",
                           cfg->sm_percent);
        }
        if (cfg->mps_priority != 0 && cfg->mps_priority != 1) {
            free(c);
            return tl_errf(err, TL_ERANGE, "sim: ctx_create: MPS mps_priority %d not 0 or 1",
                           cfg->mps_priority);
        }
        if (!s->mps_unit) {
            s->mps_unit = unit_new(s, TL_CTX_MPS);
            unit_add_pool(s, s->mps_unit, 0, sms);
        }
        c->u = s->mps_unit;
        c->pool = 0;
        /* ceil(pct/100 x SMs), robust to 33.333...% style rounding */
        int cap = (int)ceil(pct * sms / 100.0 - 1e-9);
        c->cap_sms = cap < 1 ? 1 : cap > sms ? sms : cap;
        break;
    }
    case TL_CTX_PARTITION:
        if (cfg->sm_count <= 0 || cfg->sm_count > sms - s->part_sms_used) {
            free(c);
            return tl_errf(err, TL_ERANGE,
                           "sim: ctx_create: partition sm_count %d (only %d SMs left)",
                           cfg->sm_count, sms - s->part_sms_used);
        }
        if (!s->part_unit)
            s->part_unit = unit_new(s, TL_CTX_PARTITION);
        c->u = s->part_unit;
        c->pool = s->part_unit->n_pools;
        unit_add_pool(s, c->u, c->pool, cfg->sm_count);
        c->cap_sms = cfg->sm_count;
        s->part_sms_used += cfg->sm_count;
        break;
    default:
        free(c);
        return tl_errf(err, TL_ERANGE, "sim: ctx_create: unknown context kind %d", (int)cfg->kind);
    }
    unit_add_ctx(c->u, c);
    s->ctxs = tl_xrealloc(s->ctxs, (size_t)(s->n_ctxs + 1) * sizeof *s->ctxs);
    s->ctxs[s->n_ctxs++] = c;
    *out = c->id;
    return 0;
}

static int sim_stream_create(tl_device *d, tl_ctx_id ctx, int priority, tl_stream_id *out,
                             tl_err *err)
{
    sim *s = sim_of(d);
    if (ctx < 0 || ctx >= s->n_ctxs)
        return tl_errf(err, TL_EINVAL, "sim: stream_create: no context %d", (int)ctx);
    if (!out)
        return tl_errf(err, TL_EINVAL, "sim: stream_create: no output");
    /* CUDA clamps priorities into [greatest, 0]. */
    int g = s->gpu.stream_prio_greatest;
    int p = priority < g ? g : priority > 0 ? 0 : priority;
    if (s->n_streams == s->cap_streams) {
        s->cap_streams = s->cap_streams ? s->cap_streams * 2 : 16;
        s->streams = tl_xrealloc(s->streams, (size_t)s->cap_streams * sizeof *s->streams);
    }
    sstream *st = tl_xcalloc(1, sizeof *st);
    st->id = s->n_streams;
    st->c = s->ctxs[ctx];
    st->level = p - g;
    st->last_end = -TL_NS_PER_S; /* nothing ended before: no gap to wait out */
    s->streams[s->n_streams++] = st;
    *out = st->id;
    return 0;
}

/* ---------- launches and copies ---------- */

static void stream_append(sim *s, sstream *st, launch *l)
{
    /* A graph's later nodes arrive behind its first: they do not renew a
     * slice (slice_overtime); a kernel on its own or a graph's first does. */
    l->renews = l->kind == ITEM_KERNEL && (!l->op || !l->op->graph || !st->tail);
    l->st = st;
    l->next = NULL;
    if (st->tail)
        st->tail->next = l;
    else
        st->head = l;
    st->tail = l;
    if (st->head == l)
        stream_advance(s, st);
}

static int sim_launch(tl_device *d, tl_stream_id sid, const tl_kernel_desc *k, tl_launch_cb cb,
                      void *arg, tl_launch_id *out)
{
    sim *s = sim_of(d);
    if (sid < 0 || sid >= s->n_streams || !k || !k->op || k->op->kind != TL_OP_KERNEL)
        return TL_EINVAL;
    const tl_op *op = k->op;
    for (int i = 0; i < 3; i++)
        if (op->grid[i] < 1 || op->block[i] < 1 || op->block[i] > 1024)
            return TL_ERANGE;
    /* CUDA's grid limits (also keeps the block count inside 64 bits) */
    if (op->grid[0] > 0x7fffffffu || op->grid[1] > 65535 || op->grid[2] > 65535)
        return TL_ERANGE;
    uint64_t threads = (uint64_t)op->block[0] * op->block[1] * op->block[2];
    if (threads > (uint64_t)s->gpu.max_threads_per_block || op->dur_ns < 0 ||
        op->dur_ns > SIM_MAX_DUR_NS)
        return TL_ERANGE;
    uint64_t grid = (uint64_t)op->grid[0] * op->grid[1] * op->grid[2];
    uint64_t end = k->block_end ? k->block_end : grid;
    if (k->block_begin >= end || end > grid)
        return TL_ERANGE;
    launch *l = launch_alloc(s);
    l->kind = ITEM_KERNEL;
    l->op = op;
    l->job = k->job;
    l->tag = k->tag;
    l->cb = cb;
    l->arg = arg;
    l->block_begin = k->block_begin;
    l->block_end = end;
    l->ptb = k->ptb_workers_per_sm > 0;
    l->work = k->op->work == TL_WORK_COMPUTE ? TL_WORK_COMPUTE : TL_WORK_MEMORY;
    l->max_per_sm = l->ptb ? (int)(k->ptb_workers_per_sm > 1024 ? 1024 : k->ptb_workers_per_sm) : 0;
    l->st = s->streams[sid];
    l->sms_last = sim_now(s);
    launch_kernel_prepare(s, l);
    l->submitted_at = sim_now(s);
    l->ready_at = sim_now(s) + s->p.launch_latency_ns +
                  (s->in_callback ? s->p.callback_launch_latency_ns : 0) +
                  (k->block_begin > 0 ? s->p.slice_launch_ns : 0);
    if (out)
        *out = l->id;
    stream_append(s, s->streams[sid], l);
    return 0;
}

static int sim_copy(tl_device *d, tl_stream_id sid, const tl_op *op, int job, tl_launch_cb cb,
                    void *arg, tl_launch_id *out)
{
    sim *s = sim_of(d);
    if (sid < 0 || sid >= s->n_streams || !op ||
        (op->kind != TL_OP_MEMCPY && op->kind != TL_OP_MEMSET))
        return TL_EINVAL;
    if (op->dur_ns < 0 || op->dur_ns > SIM_MAX_DUR_NS)
        return TL_ERANGE;
    launch *l = launch_alloc(s);
    l->kind = ITEM_COPY;
    l->op = op;
    l->job = job;
    l->cb = cb;
    l->arg = arg;
    /* Lanes: 0 H2D, 1 D2H (or 0 with one copy engine), 2 device-side. */
    if (op->kind == TL_OP_MEMCPY && op->copy_kind == TL_COPY_H2D)
        l->lane = 0;
    else if (op->kind == TL_OP_MEMCPY && op->copy_kind == TL_COPY_D2H)
        l->lane = s->p.copy_engines == 1 ? 0 : 1;
    else
        l->lane = 2;
    if (op->dur_ns > 0) {
        l->copy_ns = op->dur_ns;
    } else {
        double gbps = l->lane == 2 ? s->p.device_copy_gbps : s->gpu.pcie_gbps;
        double ns = ceil((double)op->bytes / gbps); /* GB/s = bytes/ns */
        l->copy_ns = ns > (double)SIM_MAX_DUR_NS ? SIM_MAX_DUR_NS : (tl_ns)ns;
    }
    l->submitted_at = sim_now(s);
    l->ready_at = sim_now(s) + s->p.launch_latency_ns +
                  (s->in_callback ? s->p.callback_launch_latency_ns : 0);
    if (out)
        *out = l->id;
    stream_append(s, s->streams[sid], l);
    return 0;
}

static int sim_retreat(tl_device *d, tl_launch_id id)
{
    sim *s = sim_of(d);
    launch *l = launch_find(s, id);
    if (!l || l->done)
        return 0; /* already finished: harmless */
    if (l->kind != ITEM_KERNEL || !l->ptb)
        return TL_EINVAL;
    if (l->retreat)
        return 0;
    l->retreat = true;
    l->to_dispatch = 0; /* no more workers start; running ones finish their block */
    if (l->active)
        unit_dirty(s, l->st->c->u);
    return 0;
}

/* ---------- timers ---------- */

/* A timer is an event whose payload is the callback itself (u, as an integer:
 * POSIX function pointers convert to and from uintptr_t) and its argument:
 * no record to allocate or recycle per timer (the runner sets one per host
 * step). */
static void timer_ev(void *ctx, void *arg, uint64_t u)
{
    sim *s = ctx;
    tl_timer_cb cb = (tl_timer_cb)(uintptr_t)u;
    cb(arg, sim_now(s));
}

static int sim_timer(tl_device *d, tl_ns at, tl_timer_cb cb, void *arg)
{
    sim *s = sim_of(d);
    if (!cb)
        return TL_EINVAL;
    /* A time in the past fires now (the engine clamps). */
    tl_engine_at_inline(&s->eng, at, timer_ev, s, arg, (uint64_t)(uintptr_t)cb);
    return 0;
}

static tl_ns sim_now_op(tl_device *d)
{
    return sim_now(sim_of(d));
}

static int sim_run(tl_device *d, tl_ns until, tl_err *err)
{
    sim *s = sim_of(d);
    if (s->running)
        return tl_errf(err, TL_EINVAL, "sim: run called from inside a callback");
    s->running = true;
    tl_engine_run(&s->eng, until);
    s->running = false;
    return 0;
}

/* ---------- measure: a private idle copy of the device ---------- */

typedef struct measure_out {
    bool done;
    tl_launch_result r;
} measure_out;

static void measure_cb(void *arg, const tl_launch_result *r)
{
    measure_out *m = arg;
    m->done = true;
    m->r = *r;
}

static int sim_measure(tl_device *d, const tl_kernel_desc *k, tl_ns *out, tl_err *err)
{
    sim *s = sim_of(d);
    tl_device priv;
    int r = tl_sim_open(&priv, &s->gpu, &s->p, err);
    if (r < 0)
        return r;
    tl_ctx_config cfg = { .kind = TL_CTX_TIMESLICED, .job = -1 };
    tl_ctx_id c;
    tl_stream_id st;
    measure_out m = { 0 };
    tl_kernel_desc kd = *k;
    kd.job = -1;
    if ((r = tl_dev_ctx_create(&priv, &cfg, &c, err)) < 0 ||
        (r = tl_dev_stream_create(&priv, c, 0, &st, err)) < 0)
        goto out;
    if ((r = tl_dev_launch(&priv, st, &kd, measure_cb, &m, NULL)) < 0) {
        r = tl_errf(err, r, "sim: measure: launch rejected (%s)", tl_strerror(r));
        goto out;
    }
    if ((r = tl_dev_run(&priv, -1, err)) < 0)
        goto out;
    if (!m.done) {
        r = tl_errf(err, TL_EINVAL, "sim: measure: launch did not complete");
        goto out;
    }
    *out = m.r.end_ns - m.r.start_ns;
out:
    tl_dev_close(&priv);
    return r;
}

/* ---------- accounting ---------- */

static void sim_job_stats(tl_device *d, int job, tl_job_stats *out)
{
    sim *s = sim_of(d);
    memset(out, 0, sizeof *out);
    if (job < 0 || job >= s->n_jobs)
        return;
    acct_job_sms(s, job, 0); /* bring the integral up to now */
    job_acct *j = &s->jobs[job];
    out->sm_busy_ns = j->busy;
    out->kernels = j->kernels;
    out->blocks = j->blocks;
}

void tl_sim_get_stats(tl_device *d, tl_sim_stats *out)
{
    sim *s = sim_of(d);
    *out = s->stats;
    out->events = s->eng.processed;
    out->peak_queue = s->eng.q->peak;
}

void tl_sim_set_activity_hook(tl_device *d, tl_sim_activity_fn fn, void *arg)
{
    sim *s = sim_of(d);
    s->act_fn = fn;
    s->act_arg = arg;
}

/* ---------- open / close ---------- */

static void sim_close(tl_device *d)
{
    sim *s = sim_of(d);
    if (!s)
        return;
    for (int i = 0; i < s->n_units; i++) {
        unit *u = s->units[i];
        for (int c = 0; c < u->n_cls; c++)
            sm_class_free(u->cls[c]);
        free(u->cls);
        free(u->pools);
        free(u->ctxs);
        group *g = u->groups;
        while (g) {
            group *n = g->next;
            if (!g->dirty)
                free(g);
            else
                g->l = NULL; /* freed below from the dirty list */
            g = n;
        }
        free(u);
    }
    group *g = s->dirty_groups;
    while (g) {
        group *n = g->dirty_next;
        free(g);
        g = n;
    }
    g = s->gfree;
    while (g) {
        group *n = g->next;
        free(g);
        g = n;
    }
    smclass *k = s->cfree;
    while (k) {
        smclass *n = k->next_free;
        sm_class_free(k);
        k = n;
    }
    free(s->units);
    for (int i = 0; i < s->n_ctxs; i++)
        free(s->ctxs[i]);
    free(s->ctxs);
    for (int i = 0; i < s->n_streams; i++)
        free(s->streams[i]);
    free(s->streams);
    for (uint32_t i = 0; i < s->n_lslots; i++)
        free(s->lslots[i]);
    free(s->lslots);
    free(s->lgen);
    free(s->lfree);
    free(s->jobs);
    free(s->cmemo);
    tl_engine_close(&s->eng);
    free(s);
    d->impl = NULL;
    d->ops = NULL;
}

static const tl_device_ops sim_ops = {
    .name = "sim",
    .ctx_create = sim_ctx_create,
    .stream_create = sim_stream_create,
    .launch = sim_launch,
    .copy = sim_copy,
    .retreat = sim_retreat,
    .timer = sim_timer,
    .now = sim_now_op,
    .run = sim_run,
    .measure = sim_measure,
    .job_stats = sim_job_stats,
    .close = sim_close,
};

int tl_sim_open(tl_device *d, const tl_gpu_props *gpu, const tl_sim_params *p, tl_err *err)
{
    int r;
    if (!d || !gpu)
        return tl_errf(err, TL_EINVAL, "sim: open: no device or GPU");
    memset(d, 0, sizeof *d);
    if ((r = tl_gpu_validate(gpu, err)) < 0)
        return r;
    tl_sim_params def;
    if (!p) {
        tl_sim_params_default(&def, gpu);
        p = &def;
    }
    if ((r = tl_sim_params_validate(p, err)) < 0)
        return r;
    sim *s = tl_xcalloc(1, sizeof *s);
    s->dev = d;
    s->gpu = *gpu;
    s->p = *p;
    s->levels = 1 - gpu->stream_prio_greatest;
    tl_engine_init(&s->eng);
    tl_engine_set_flush(&s->eng, sim_flush, s);
    d->ops = &sim_ops;
    d->gpu = *gpu;
    d->impl = s;
    return 0;
}
