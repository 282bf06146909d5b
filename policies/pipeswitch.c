/* pipeswitch: exclusive task switching with pipelined model transfer
 * (PipeSwitch, OSDI'20; FACTS.md).
 *
 * Model:
 *  - The GPU belongs to one job at a time (its owner); other jobs' tasks wait
 *    in per-job FIFOs. All jobs share one context (PipeSwitch's standby
 *    workers live in one process), each on its own streams.
 *  - A job wants the GPU while it has tasks waiting or in flight; an
 *    inference (latency-critical, smallest rank) job also from a request's
 *    arrival until its request's last GPU op completes, so host gaps inside a
 *    request do not hand the GPU back.
 *  - Preemption at kernel boundaries: when a job of a smaller rank wants the
 *    GPU, the owner launches nothing more; training keeps at most
 *    train_inflight tasks on the device (default 1: the running kernel), and
 *    once they finish the GPU switches. When the owner no longer wants the GPU
 *    and another job does (inference queue empty: back to training), it
 *    switches too. Among candidates: smallest rank, then least recently owned.
 *  - A switch into job j costs startup_ms (activating a standby worker), then
 *    the H2D transfer of the first of `groups` equal layer groups of j's model
 *    (tl_job.model_bytes) over PCIe (gpu.pcie_gbps), which the first layer
 *    needs; then j owns the GPU while the other groups' transfer (one copy of
 *    the rest, on a loader stream) overlaps its computation: the pipelining.
 *    The charged delay is startup + first group (tl_pipeswitch_switch_cost);
 *    the rest occupies the H2D copy engine, delaying j's own uploads if any.
 *
 * Parameters:
 *   startup_ms      ms   default 5    range [0, 10000]   fixed task start-up cost
 *   groups          int  default 10   range [1, 100000]  layer groups of a model
 *   train_inflight  int  default 1    range [1, 1024]    training tasks on the device
 *
 * Approximate: equal groups (PipeSwitch groups layers to minimise the first
 * group's stall); a layer never waits for its group's transfer after the
 * first; an unknown model size (0) charges the start-up cost only; an unknown
 * PCIe bandwidth is taken as 25 GB/s.
 */
#include <stddef.h>
#include <stdlib.h>

#include "tally/policy.h"
#include "tally/policy_util.h"

typedef struct ps_job {
    tl_task_queue q;
    int inflight;
    uint64_t arrived, started, done; /* requests (latency-critical jobs) */
    uint64_t owned_at;               /* switch count when it last got the GPU */
    bool count_arrivals;             /* every iteration has a GPU op */
    int32_t *first_gpu, *last_gpu;   /* per iteration, -1: none */
    tl_op load_first, load_rest;     /* synthetic model transfers */
} ps_job;

typedef struct ps_state {
    /* parameters */
    tl_ns startup_ns;
    int groups, train_inflight;
    /* runtime */
    tl_policy *p;
    tl_stream_map *maps;
    tl_stream_id loader;
    ps_job *jobs;
    bool *high;
    int owner, switch_to;
    bool switching;
    uint64_t switches;
} ps_state;

static const tl_param_desc ps_params[] = {
    { "startup_ms", TL_PARAM_NS_FROM_MS, offsetof(ps_state, startup_ns), 5, 0, 10000,
      "fixed cost of starting a task on a switch (standby worker activation)" },
    { "groups", TL_PARAM_INT, offsetof(ps_state, groups), 10, 1, 100000,
      "layer groups of a model; the first group's transfer is on the critical path" },
    { "train_inflight", TL_PARAM_INT, offsetof(ps_state, train_inflight), 1, 1, 1024,
      "training tasks on the device at once (preemption waits for them)" },
    { NULL },
};

/* ---- switch cost (pure) ---- */

tl_ns tl_pcie_ns(uint64_t bytes, double gbps)
{
    if (gbps <= 0)
        gbps = 25;
    return (tl_ns)((double)bytes / gbps + 0.5); /* GB/s = bytes per ns */
}

void tl_pipeswitch_switch_cost(uint64_t model_bytes, int groups, double pcie_gbps,
                               tl_ns startup_ns, tl_pipeswitch_cost *out)
{
    uint64_t g = groups > 0 ? (uint64_t)groups : 1;
    out->startup_ns = startup_ns;
    out->first_bytes = (model_bytes + g - 1) / g;
    out->rest_bytes = model_bytes - out->first_bytes;
    out->first_ns = tl_pcie_ns(out->first_bytes, pcie_gbps);
    out->rest_ns = tl_pcie_ns(out->rest_bytes, pcie_gbps);
    out->critical_ns = startup_ns + out->first_ns;
}

/* ---- demand ---- */

static bool wants(const ps_state *st, int j)
{
    const ps_job *b = &st->jobs[j];
    return b->q.len || b->inflight > 0 ||
           (st->high[j] && (b->arrived > b->done || b->started > b->done));
}

static int pick(const ps_state *st, int except)
{
    int best = -1;
    for (int j = 0; j < st->p->n_jobs; j++) {
        if (j == except || !wants(st, j))
            continue;
        if (best < 0 || st->p->jobs[j].priority < st->p->jobs[best].priority ||
            (st->p->jobs[j].priority == st->p->jobs[best].priority &&
             st->jobs[j].owned_at < st->jobs[best].owned_at))
            best = j;
    }
    return best;
}

/* ---- switching ---- */

static void pump(ps_state *st);

static void noop_done(void *arg, const tl_launch_result *r) {}

static void switch_done(void *arg, const tl_launch_result *r)
{
    ps_state *st = arg;
    int j = st->switch_to;
    st->owner = j;
    st->switching = false;
    st->jobs[j].owned_at = st->switches;
    if (st->jobs[j].load_rest.bytes) {
        tl_launch_id id;
        int rc = tl_dev_copy(st->p->dev, st->loader, &st->jobs[j].load_rest, j, noop_done, st, &id);
        if (rc < 0)
            tl_policy_fail(st->p, rc, "policy pipeswitch: the device refused a model transfer (%s)",
                           tl_strerror(rc));
    }
    pump(st);
}

static void startup_done(void *arg, tl_ns now)
{
    ps_state *st = arg;
    ps_job *b = &st->jobs[st->switch_to];
    if (!b->load_first.bytes) {
        switch_done(st, NULL);
        return;
    }
    tl_launch_id id;
    int rc = tl_dev_copy(st->p->dev, st->loader, &b->load_first, st->switch_to, switch_done, st, &id);
    if (rc < 0) {
        tl_policy_fail(st->p, rc, "policy pipeswitch: the device refused a model transfer (%s)",
                       tl_strerror(rc));
        switch_done(st, NULL);
    }
}

static void start_switch(ps_state *st, int j)
{
    st->switching = true;
    st->switch_to = j;
    st->switches++;
    tl_ns now = tl_dev_now(st->p->dev);
    int rc = tl_dev_timer(st->p->dev, now + st->startup_ns, startup_done, st);
    if (rc < 0) {
        tl_policy_fail(st->p, rc, "policy pipeswitch: the device refused a timer (%s)",
                       tl_strerror(rc));
        startup_done(st, now);
    }
}

/* ---- running the owner ---- */

static void task_done(tl_policy *p, tl_task *t, const tl_launch_result *r)
{
    ps_state *st = p->state;
    ps_job *b = &st->jobs[t->job->id];
    b->inflight--;
    if (st->high[t->job->id] && b->last_gpu && t->iter < t->job->trace->n_iters &&
        (int32_t)t->index == b->last_gpu[t->iter])
        b->done++;
    pump(st);
}

static void pump(ps_state *st)
{
    if (st->switching)
        return;
    int o = st->owner;
    if (o < 0) {
        int next = pick(st, -1);
        if (next >= 0)
            start_switch(st, next);
        return;
    }
    int next = pick(st, o);
    bool yield = next >= 0 && st->p->jobs[next].priority < st->p->jobs[o].priority;
    if (next >= 0 && (yield || !wants(st, o))) {
        if (st->jobs[o].inflight == 0)
            start_switch(st, next);
        return; /* launch nothing more: wait for the kernel boundary */
    }
    ps_job *b = &st->jobs[o];
    while (b->q.len && (st->high[o] || b->inflight < st->train_inflight)) {
        tl_task *t = tl_task_queue_pop(&b->q);
        b->inflight++;
        if (tl_policy_run_plain_then(st->p, t, tl_stream_map_get(&st->maps[o], t->op),
                                     task_done) < 0)
            b->inflight--;
    }
}

/* ---- ops ---- */

static void make_load_op(tl_op *op, uint64_t bytes, double gbps)
{
    *op = (tl_op){ .kind = TL_OP_MEMCPY, .copy_kind = TL_COPY_H2D, .event = -1, .bytes = bytes };
    op->dur_ns = tl_pcie_ns(bytes, gbps);
    if (op->dur_ns <= 0)
        op->dur_ns = 1;
}

static void index_gpu_ops(ps_job *b, const tl_trace *tr)
{
    b->count_arrivals = tr && tr->n_iters > 0;
    if (!tr || !tr->n_iters)
        return;
    b->first_gpu = tl_xmalloc(tr->n_iters * sizeof *b->first_gpu);
    b->last_gpu = tl_xmalloc(tr->n_iters * sizeof *b->last_gpu);
    for (uint32_t i = 0; i < tr->n_iters; i++) {
        b->first_gpu[i] = b->last_gpu[i] = -1;
        for (uint32_t k = 0; k < tr->iters[i].n_ops; k++) {
            uint8_t kind = tr->iters[i].ops[k].kind;
            if (kind == TL_OP_KERNEL || kind == TL_OP_MEMCPY || kind == TL_OP_MEMSET) {
                if (b->first_gpu[i] < 0)
                    b->first_gpu[i] = (int32_t)k;
                b->last_gpu[i] = (int32_t)k;
            }
        }
        if (b->first_gpu[i] < 0)
            b->count_arrivals = false; /* a request without GPU work would never be done */
    }
}

static int ps_setup(tl_policy *p, tl_err *err)
{
    ps_state *st = p->state;
    size_t n = (size_t)p->n_jobs + 1;
    st->p = p;
    st->owner = -1;
    st->maps = tl_xcalloc(n, sizeof *st->maps);
    st->jobs = tl_xcalloc(n, sizeof *st->jobs);
    st->high = tl_xcalloc(n, sizeof *st->high);
    tl_ctx_id *ctxs = tl_xcalloc(n, sizeof *ctxs);
    double gbps = p->dev->gpu.pcie_gbps;
    for (int j = 0; j < p->n_jobs; j++) {
        ps_job *b = &st->jobs[j];
        st->high[j] = tl_policy_job_is_high(p, &p->jobs[j]);
        tl_task_queue_init(&b->q);
        tl_pipeswitch_cost c;
        tl_pipeswitch_switch_cost(p->jobs[j].model_bytes, st->groups, gbps, st->startup_ns, &c);
        make_load_op(&b->load_first, c.first_bytes, gbps);
        make_load_op(&b->load_rest, c.rest_bytes, gbps);
        index_gpu_ops(b, p->jobs[j].trace);
    }
    tl_job_ctx_plan plan = { .shared = true, .kind = TL_CTX_TIMESLICED };
    int r = tl_policy_setup_jobs(p, &plan, ctxs, st->maps, err);
    if (r == 0 && p->n_jobs > 0)
        r = tl_dev_stream_create(p->dev, ctxs[0], TL_STREAM_PRIO_LEAST, &st->loader, err);
    free(ctxs);
    return r;
}

static void ps_submit(tl_policy *p, tl_task *t)
{
    ps_state *st = p->state;
    int j = t->job->id;
    ps_job *b = &st->jobs[j];
    if (st->high[j] && b->first_gpu && t->iter < t->job->trace->n_iters &&
        (int32_t)t->index == b->first_gpu[t->iter])
        b->started++;
    tl_task_queue_push(&b->q, t);
    pump(st);
}

static void ps_request_arrived(tl_policy *p, tl_job *job)
{
    ps_state *st = p->state;
    ps_job *b = &st->jobs[job->id];
    if (!st->high[job->id] || !b->count_arrivals)
        return;
    b->arrived++;
    pump(st);
}

static void ps_teardown(tl_policy *p)
{
    ps_state *st = p->state;
    for (int j = 0; st->jobs && j < p->n_jobs; j++) {
        tl_task_queue_close(&st->jobs[j].q);
        free(st->jobs[j].first_gpu);
        free(st->jobs[j].last_gpu);
    }
    free(st->jobs);
    free(st->maps);
    free(st->high);
    st->jobs = NULL;
    st->maps = NULL;
    st->high = NULL;
}

const tl_policy_ops tl_policy_pipeswitch = {
    .name = "pipeswitch",
    .summary = "one job owns the GPU at a time; switches cost start-up plus pipelined model transfer",
    .state_size = sizeof(ps_state),
    .params = ps_params,
    .setup = ps_setup,
    .submit = ps_submit,
    .request_arrived = ps_request_arrived,
    .teardown = ps_teardown,
};
