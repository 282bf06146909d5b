/* The runner: replays each job's host timeline on a device under a policy.
 * See include/tally/runner.h for the contract. Everything is driven by device
 * timers and completion callbacks, so the same code runs on the simulator and
 * on real hardware. */
#include "tally/runner.h"

#include <stdlib.h>
#include <string.h>

#include "tally/rng.h"

/* Why a job's host is not issuing ops right now. */
typedef enum host_state {
    HOST_IDLE = 0,    /* between requests: waiting for an arrival */
    HOST_SCHEDULED,   /* a timer will issue the next op */
    HOST_BLOCKED,     /* waiting on a sync / blocking copy */
    HOST_DONE,        /* window over: issues nothing more */
} host_state;

typedef struct busy_iv {
    tl_ns a, b;
} busy_iv;

/* A request (inference) or iteration (training) in flight. */
typedef struct req_slot {
    uint32_t id;
    tl_ns arrival, start, host_end, gpu_end;
    uint32_t outstanding;  /* its tasks not yet complete */
    uint32_t graph_live;   /* graph ops issued in it whose room is not yet back
                              (given back when it has nothing outstanding) */
    busy_iv *ivs;          /* GPU intervals of its completed tasks; busy time is their
                              union, merged when the slot finishes (tasks of several
                              streams complete out of start order) */
    size_t n_ivs, cap_ivs; /* the buffer is kept when the slot is reused */
    bool ivs_unsorted;     /* some interval came before its predecessor (sort first) */
    bool host_finished;
    bool in_use;
} req_slot;

#define MAX_INFLIGHT 64    /* training iterations overlap on the GPU; bounded */
/* Pending launches a CUDA context accepts before the launch call blocks. */
#define TL_LAUNCH_QUEUE_DEPTH 1024

/* A held op: issued by the host on a stream gated by a cross-stream wait. */
typedef struct held_op {
    const tl_op *op;
    uint32_t iter, index, slot;
    tl_ns issued;
    uint64_t before;      /* UNTRACED: tasks issued on its stream before it */
} held_op;

struct job_rt;

typedef struct stream_state {
    uint64_t issued;      /* tasks issued on this trace stream (UNTRACED ops count) */
    uint64_t completed;   /* tasks completed */
    int gate_event;       /* -1: open; else ops wait for this event's work */
    held_op *held;
    size_t n_held, cap_held, head_held;
    /* An UNTRACED op holding the stream: GPU time the trace has no record
     * for. It starts once the stream's earlier work is done, lasts dur_ns on
     * a timer (no device task, no SMs, no busy time) and holds later work. */
    const tl_op *untraced;
    uint64_t untraced_after; /* starts when this many tasks have completed */
    uint32_t untraced_slot;
    bool untraced_running;
    struct job_rt *owner; /* for the timer callback */
    int index;
} stream_state;

typedef struct event_state {
    int32_t stream;
    uint64_t count;       /* stream's issued count at record time */
    bool recorded;
} event_state;

typedef struct job_rt {
    tl_runtime *rt;
    int id;
    const tl_job_spec *spec;
    tl_job *job;
    tl_rng rng;
    host_state host;
    tl_ns host_free;      /* when the host finished its last step */
    tl_ns next_at;        /* when the host takes its next step (op or iteration end) */
    uint32_t iter;        /* trace iteration being played */
    uint32_t op_index;    /* next op to issue */
    uint32_t cur_slot;    /* request slot being played by the host */
    uint32_t next_req_id;
    uint64_t seq;
    uint64_t outstanding; /* tasks issued, not complete */
    /* A graph job's launch-queue room comes back a whole graph at a time: the
     * host learns of a graph's kernels only when the graph ends (CUDA reports
     * a graph launch as one; tally-run's graphs do the same), so the room its
     * ops took is held until its iteration has nothing left outstanding. */
    uint64_t graph_live_ops;   /* the sum of the slots' graph_live */
    uint32_t graph_live_slots; /* slots with graph_live > 0 */
    /* blocking condition */
    int block_stream;     /* -2 none, -1 all streams, else stream index */
    uint64_t block_count[TL_MAX_JOB_STREAMS];
    tl_ns block_since;
    const tl_op *block_op;
    stream_state streams[TL_MAX_JOB_STREAMS];
    event_state *events;
    int n_events;
    /* arrivals */
    tl_ns *queue;         /* arrival times waiting for the host */
    size_t q_head, q_len, q_cap;
    size_t file_pos;
    double rate_per_ns;
    req_slot slots[MAX_INFLIGHT];
} job_rt;

struct tl_runtime {
    const tl_run_config *cfg;
    tl_device *dev;
    tl_policy policy;
    tl_job *jobs;
    job_rt *jrt;
    int n_jobs;
    tl_run_result *out;
    tl_ns window_start, window_end;
    tl_job_stats *stats_at_start;
    bool window_over;
    tl_task *free_tasks;  /* recycled task structs (chained through runner_data) */
    struct task_chunk *task_chunks; /* where every task struct lives: freed at the
                                       end, with any a run cut short left in flight */
    int error;
    /* The first job whose waiting requests passed TL_RUN_MAX_WAITING (-1:
     * none), and when: its arrivals stopped there (see arrival_timer). */
    int overloaded_job;
    tl_ns overloaded_at;
};

/* An offered load far beyond what the GPU serves (a rate of 1e7/s, an
 * arrival file of millions of times in a second) would queue requests without
 * bound and then drain for simulated hours: a run that seems never to end,
 * and a "throughput" that is the offered rate. Two limits turn that into an
 * error naming the job. Both sit far above legitimate growing queues: the
 * bundled specs' worst (MobileNetV3 under time slicing at load 0.5) ends its
 * 20 s window with about 8,000 requests waiting and drains them in 6 s. */
#define TL_RUN_MAX_WAITING ((size_t)1 << 20) /* requests waiting in one job */
#define TL_RUN_DRAIN_FACTOR 10               /* drain at most 10x warm-up + window, */
#define TL_RUN_DRAIN_MIN_NS (60 * TL_NS_PER_S) /* or 60 s (a short window's long request) */

static void host_continue(job_rt *j);
static void start_iteration(job_rt *j, uint32_t slot, tl_ns now);

/* ---------- small helpers ---------- */

static void push_rec(tl_run_result *out, const tl_request_rec *r)
{
    if (out->n_recs == out->cap_recs) {
        out->cap_recs = out->cap_recs ? out->cap_recs * 2 : 1024;
        out->recs = tl_xrealloc(out->recs, out->cap_recs * sizeof *out->recs);
    }
    out->recs[out->n_recs++] = *r;
}

typedef struct task_chunk {
    struct task_chunk *next;
    uint32_t used;
    tl_task tasks[256];
} task_chunk;

static tl_task *task_alloc(tl_runtime *rt)
{
    tl_task *t = rt->free_tasks;
    if (t) {
        rt->free_tasks = t->runner_data;
        memset(t, 0, sizeof *t);
        return t;
    }
    task_chunk *c = rt->task_chunks;
    if (!c || c->used == sizeof c->tasks / sizeof c->tasks[0]) {
        c = tl_xcalloc(1, sizeof *c);
        c->next = rt->task_chunks;
        rt->task_chunks = c;
    }
    return &c->tasks[c->used++];
}

static void task_free(tl_runtime *rt, tl_task *t)
{
    t->runner_data = rt->free_tasks;
    rt->free_tasks = t;
}

static const tl_iteration *cur_iter(const job_rt *j)
{
    return &j->spec->trace->iters[j->iter];
}

tl_ns tl_trace_mean_iteration(const tl_trace *t)
{
    if (!t || t->n_iters == 0)
        return 0;
    long double sum = 0;
    for (uint32_t i = 0; i < t->n_iters; i++)
        sum += t->iters[i].traced_ns;
    return (tl_ns)(sum / t->n_iters);
}

static bool is_gpu_work(const tl_op *op)
{
    return op->kind == TL_OP_KERNEL || op->kind == TL_OP_MEMCPY || op->kind == TL_OP_MEMSET;
}

/* ---------- request slots ---------- */

static uint32_t slot_open(job_rt *j, tl_ns arrival, tl_ns start)
{
    for (uint32_t s = 0; s < MAX_INFLIGHT; s++) {
        if (!j->slots[s].in_use) {
            req_slot *r = &j->slots[s];
            busy_iv *ivs = r->ivs;
            size_t cap = r->cap_ivs;
            memset(r, 0, sizeof *r);
            r->ivs = ivs;
            r->cap_ivs = cap;
            r->in_use = true;
            r->id = j->next_req_id++;
            r->arrival = arrival;
            r->start = start;
            return s;
        }
    }
    return UINT32_MAX;
}

static void try_start_request(job_rt *j);

/* A training job has started as many iterations as the run allows. */
static bool iterations_done(const job_rt *j)
{
    uint32_t max = j->rt->cfg->max_iterations;
    return max && j->next_req_id >= max;
}

/* The host is idle and a slot freed: start the next request or step. */
static void kick_timer(void *arg, tl_ns now)
{
    job_rt *j = arg;
    if (j->host != HOST_IDLE)
        return;
    if (j->spec->role == TL_ROLE_INFERENCE) {
        try_start_request(j);
    } else if (!j->rt->window_over && !iterations_done(j)) {
        uint32_t s = slot_open(j, now, now);
        if (s != UINT32_MAX)
            start_iteration(j, s, now);
    }
}

static int cmp_busy_iv(const void *x, const void *y)
{
    const busy_iv *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : (p->b > q->b);
}

/* Length of the union of a slot's task intervals. */
static tl_ns slot_busy(req_slot *r)
{
    if (r->n_ivs == 0)
        return 0;
    /* One stream's tasks complete in start order: the common case needs no sort. */
    if (r->ivs_unsorted)
        qsort(r->ivs, r->n_ivs, sizeof *r->ivs, cmp_busy_iv);
    tl_ns total = 0, a = r->ivs[0].a, b = r->ivs[0].b;
    for (size_t i = 1; i < r->n_ivs; i++) {
        if (r->ivs[i].a > b) {
            total += b - a;
            a = r->ivs[i].a;
            b = r->ivs[i].b;
        } else if (r->ivs[i].b > b) {
            b = r->ivs[i].b;
        }
    }
    return total + (b - a);
}

static void slot_maybe_finish(job_rt *j, uint32_t s)
{
    req_slot *r = &j->slots[s];
    if (!r->in_use || !r->host_finished || r->outstanding)
        return;
    tl_runtime *rt = j->rt;
    tl_ns end = r->host_end > r->gpu_end ? r->host_end : r->gpu_end;
    bool inference = j->spec->role == TL_ROLE_INFERENCE;
    /* Inference requests count by arrival inside the window (all are drained);
     * training iterations count by completion inside the window. */
    bool counted = inference ? (r->arrival >= rt->window_start && r->arrival < rt->window_end)
                             : (end >= rt->window_start && end < rt->window_end);
    if (counted) {
        tl_request_rec rec = { .job = j->id, .id = r->id, .arrival_ns = r->arrival,
                               .start_ns = r->start, .end_ns = end,
                               .busy_ns = slot_busy(r) };
        push_rec(rt->out, &rec);
    }
    r->in_use = false;
    if (j->host == HOST_IDLE) /* start the next one from a timer, not from here */
        tl_dev_timer(rt->dev, tl_dev_now(rt->dev), kick_timer, j);
}

/* ---------- task completion (called by policies) ---------- */

/* Would a launch call block now (the launch queue full)? Ops launched one by
 * one take one entry each, given back as each completes. A graph job's
 * iteration is one launch (it blocks only before one, so its GPU work comes in
 * the same pieces every iteration), and its room comes back by whole graphs;
 * one graph may always queue behind another, as a graph of more ops than the
 * queue holds is one launch too. */
static bool launch_queue_full(const job_rt *j, bool graph)
{
    if (!graph)
        return j->outstanding >= TL_LAUNCH_QUEUE_DEPTH;
    return j->graph_live_ops >= TL_LAUNCH_QUEUE_DEPTH && j->graph_live_slots >= 2;
}

static bool host_condition_met(const job_rt *j)
{
    if (j->block_stream == -2)
        return true;
    if (j->block_stream == -3) /* the op it could not launch is the next one */
        return !launch_queue_full(j, cur_iter(j)->ops[j->op_index].graph);
    const tl_trace *t = j->spec->trace;
    for (int s = 0; s < t->n_streams; s++) {
        if (j->block_stream >= 0 && s != j->block_stream)
            continue;
        if (j->streams[s].completed < j->block_count[s])
            return false;
    }
    return true;
}

static void release_held(job_rt *j, int s);
static void start_iteration(job_rt *j, uint32_t slot, tl_ns now);
static void host_timer(void *arg, tl_ns now);

/* After a step ended at host_free: when does the next one happen? */
static void set_next_step(job_rt *j)
{
    const tl_iteration *it = &j->spec->trace->iters[j->iter];
    j->next_at = j->host_free + (j->op_index < it->n_ops ? it->ops[j->op_index].host_gap_ns
                                                         : it->tail_host_ns);
}

static void untraced_try_start(job_rt *j, int s);

static bool stream_gated(const stream_state *ss)
{
    return ss->gate_event >= 0 || ss->untraced;
}

static void check_gates(job_rt *j)
{
    const tl_trace *t = j->spec->trace;
    for (int s = 0; s < t->n_streams; s++) {
        stream_state *ss = &j->streams[s];
        if (ss->untraced && !ss->untraced_running)
            untraced_try_start(j, s);
        if (ss->gate_event < 0)
            continue;
        const event_state *ev = &j->events[ss->gate_event];
        if (!ev->recorded || j->streams[ev->stream].completed >= ev->count) {
            ss->gate_event = -1;
            release_held(j, s);
        }
    }
}

static void stream_work_done(job_rt *j, uint32_t slot);

void tl_task_complete(tl_runtime *rt, tl_task *t, tl_ns start_ns, tl_ns end_ns)
{
    job_rt *j = &rt->jrt[t->job->id];
    uintptr_t slot = (uintptr_t)t->runner_data;
    const tl_op *op = t->op;
    j->streams[op->stream].completed++;
    j->outstanding--;
    rt->out->tasks++;
    req_slot *r = &j->slots[slot];
    if (r->gpu_end < end_ns)
        r->gpu_end = end_ns;
    if (end_ns > start_ns) {
        if (r->n_ivs == r->cap_ivs) {
            r->cap_ivs = r->cap_ivs ? r->cap_ivs * 2 : 64;
            r->ivs = tl_xrealloc(r->ivs, r->cap_ivs * sizeof *r->ivs);
        }
        busy_iv iv = { start_ns, end_ns };
        if (r->n_ivs && cmp_busy_iv(&iv, &r->ivs[r->n_ivs - 1]) < 0)
            r->ivs_unsorted = true;
        r->ivs[r->n_ivs++] = iv;
    }
    task_free(rt, t);
    stream_work_done(j, (uint32_t)slot);
    if (j->outstanding == 0)
        tl_policy_job_idle(&rt->policy, j->job);
}

/* A task or UNTRACED op of request 'slot' completed (its stream's count is
 * already updated): open gates, finish the request, wake a blocked host. */
static void stream_work_done(job_rt *j, uint32_t slot)
{
    tl_runtime *rt = j->rt;
    req_slot *r = &j->slots[slot];
    r->outstanding--;
    if (!r->outstanding && r->graph_live) { /* its graphs have ended */
        j->graph_live_ops -= r->graph_live;
        j->graph_live_slots--;
        r->graph_live = 0;
    }
    check_gates(j);
    slot_maybe_finish(j, slot);
    if (j->host == HOST_BLOCKED && j->block_stream != -2 && host_condition_met(j)) {
        /* The wait is over: the call returns after its own overhead. Resume on
         * a timer so policy callbacks never nest host work. */
        tl_ns now = tl_dev_now(rt->dev);
        if (j->block_stream == -3) { /* launch queue had room again: retry the op */
            j->host_free = now;
            j->next_at = now;
        } else {
            j->host_free = now + j->block_op->host_call_ns;
            set_next_step(j);
        }
        j->block_stream = -2;
        j->host = HOST_SCHEDULED;
        tl_dev_timer(rt->dev, j->next_at, host_timer, j);
    }
}

static void untraced_timer(void *arg, tl_ns now)
{
    stream_state *ss = arg;
    job_rt *j = ss->owner;
    (void)now;
    ss->untraced = NULL;
    ss->untraced_running = false;
    ss->completed++;
    stream_work_done(j, ss->untraced_slot);
    release_held(j, ss->index);
}

/* Start the stream's UNTRACED op once the work before it is done. */
static void untraced_try_start(job_rt *j, int s)
{
    stream_state *ss = &j->streams[s];
    if (!ss->untraced || ss->untraced_running || ss->completed < ss->untraced_after)
        return;
    ss->untraced_running = true;
    tl_dev_timer(j->rt->dev, tl_dev_now(j->rt->dev) + ss->untraced->dur_ns, untraced_timer, ss);
}

static void untraced_begin(job_rt *j, int s, const tl_op *op, uint32_t slot, uint64_t before)
{
    stream_state *ss = &j->streams[s];
    ss->untraced = op;
    ss->untraced_after = before; /* everything issued before it */
    ss->untraced_slot = slot;
    ss->untraced_running = false;
    untraced_try_start(j, s);
}

/* ---------- issuing ops ---------- */

static void submit_task(job_rt *j, const tl_op *op, uint32_t iter, uint32_t index,
                        uint32_t slot, tl_ns issued)
{
    tl_runtime *rt = j->rt;
    tl_task *t = task_alloc(rt);
    t->job = j->job;
    t->op = op;
    t->iter = iter;
    t->index = index;
    t->seq = j->seq++;
    t->issued_ns = issued;
    t->runner_data = (void *)(uintptr_t)slot;
    tl_policy_submit(&rt->policy, t);
}

static void hold(stream_state *ss, const held_op *h)
{
    if (ss->n_held == ss->cap_held) {
        /* compact before growing */
        if (ss->head_held) {
            memmove(ss->held, ss->held + ss->head_held, (ss->n_held - ss->head_held) * sizeof *ss->held);
            ss->n_held -= ss->head_held;
            ss->head_held = 0;
        }
        if (ss->n_held == ss->cap_held) {
            ss->cap_held = ss->cap_held ? ss->cap_held * 2 : 16;
            ss->held = tl_xrealloc(ss->held, ss->cap_held * sizeof *ss->held);
        }
    }
    ss->held[ss->n_held++] = *h;
}

/* Apply a stream wait: ops after it on the stream wait for the event's work. */
static void apply_stream_wait(job_rt *j, const tl_op *op)
{
    if (op->event < 0 || op->event >= j->n_events)
        return;
    const event_state *ev = &j->events[op->event];
    if (ev->recorded && j->streams[ev->stream].completed < ev->count)
        j->streams[op->stream].gate_event = op->event;
}

static void release_held(job_rt *j, int s)
{
    stream_state *ss = &j->streams[s];
    while (ss->head_held < ss->n_held && !stream_gated(ss)) {
        held_op h = ss->held[ss->head_held++];
        if (h.op->kind == TL_OP_STREAM_WAIT)
            apply_stream_wait(j, h.op);
        else if (h.op->kind == TL_OP_UNTRACED)
            untraced_begin(j, s, h.op, h.slot, h.before);
        else
            submit_task(j, h.op, h.iter, h.index, h.slot, h.issued);
    }
    if (ss->head_held == ss->n_held)
        ss->head_held = ss->n_held = 0;
}

/* Issue GPU work (or a stream wait) on its stream, respecting gates. */
static void issue_on_stream(job_rt *j, const tl_op *op, tl_ns now)
{
    stream_state *ss = &j->streams[op->stream];
    if (is_gpu_work(op)) {
        req_slot *r = &j->slots[j->cur_slot];
        ss->issued++;
        j->outstanding++;
        r->outstanding++;
        if (op->graph) {
            j->graph_live_slots += !r->graph_live;
            r->graph_live++;
            j->graph_live_ops++;
        }
    } else if (op->kind == TL_OP_UNTRACED) { /* stream work, but no device task */
        ss->issued++;
        j->slots[j->cur_slot].outstanding++;
    }
    if (stream_gated(ss) || ss->head_held < ss->n_held) {
        held_op h = { op, j->iter, j->op_index, j->cur_slot, now, ss->issued - 1 };
        hold(ss, &h);
        return;
    }
    if (op->kind == TL_OP_STREAM_WAIT)
        apply_stream_wait(j, op);
    else if (op->kind == TL_OP_UNTRACED)
        untraced_begin(j, op->stream, op, j->cur_slot, ss->issued - 1);
    else
        submit_task(j, op, j->iter, j->op_index, j->cur_slot, now);
}

/* Set the host's blocking condition for a sync op; true if it must wait. */
static bool begin_wait(job_rt *j, const tl_op *op)
{
    const tl_trace *t = j->spec->trace;
    j->block_stream = -2;
    if (op->kind == TL_OP_SYNC) {
        switch (op->sync_kind) {
        case TL_SYNC_STREAM:
            j->block_stream = op->stream;
            break;
        case TL_SYNC_DEVICE:
            j->block_stream = -1;
            break;
        case TL_SYNC_EVENT:
            if (op->event >= 0 && op->event < j->n_events && j->events[op->event].recorded) {
                j->block_stream = j->events[op->event].stream;
                memset(j->block_count, 0, sizeof j->block_count);
                j->block_count[j->block_stream] = j->events[op->event].count;
                return !host_condition_met(j);
            }
            return false;
        }
    } else { /* blocking copy/memset: wait for everything issued on its stream */
        j->block_stream = op->stream;
    }
    for (int s = 0; s < t->n_streams; s++)
        j->block_count[s] = j->streams[s].issued;
    return !host_condition_met(j);
}

static void finish_iteration_on_host(job_rt *j, tl_ns now);
static void start_iteration(job_rt *j, uint32_t slot, tl_ns now);

/* Play the host: take every step whose time has come, then sleep on a timer
 * until the next one, or block on a wait. */
static void host_continue(job_rt *j)
{
    tl_runtime *rt = j->rt;
    tl_ns now = tl_dev_now(rt->dev);
    for (;;) {
        if (j->next_at > now) {
            j->host = HOST_SCHEDULED;
            tl_dev_timer(rt->dev, j->next_at, host_timer, j);
            return;
        }
        const tl_iteration *it = cur_iter(j);
        if (j->op_index >= it->n_ops) {
            finish_iteration_on_host(j, now);
            return;
        }
        const tl_op *op = &it->ops[j->op_index];
        /* The launch queue is full: the API call blocks (CUDA does). A CUDA
         * graph job launches its iteration at once (one graph launch), so it
         * blocks only before an iteration, never in the middle of one: its
         * GPU work then comes in the same pieces every iteration. */
        if ((!op->graph || j->op_index == 0) && launch_queue_full(j, op->graph)) {
            j->host = HOST_BLOCKED;
            j->block_stream = -3;
            return;
        }
        bool waits = false;
        switch (op->kind) {
        case TL_OP_KERNEL:
        case TL_OP_MEMCPY:
        case TL_OP_MEMSET:
            issue_on_stream(j, op, now);
            waits = op->blocking && begin_wait(j, op);
            break;
        case TL_OP_EVENT_RECORD:
            if (op->event >= 0 && op->event < j->n_events) {
                event_state *ev = &j->events[op->event];
                ev->stream = op->stream;
                ev->count = j->streams[op->stream].issued;
                ev->recorded = true;
            }
            break;
        case TL_OP_STREAM_WAIT:
        case TL_OP_UNTRACED:
            issue_on_stream(j, op, now);
            break;
        case TL_OP_SYNC:
            waits = begin_wait(j, op);
            break;
        }
        j->op_index++;
        if (waits) {
            j->host = HOST_BLOCKED;
            j->block_op = op;
            return;
        }
        j->block_stream = -2;
        j->host_free = now + op->host_call_ns;
        set_next_step(j);
    }
}

static void host_timer(void *arg, tl_ns now)
{
    job_rt *j = arg;
    if (j->host == HOST_SCHEDULED)
        host_continue(j);
}

static void start_iteration(job_rt *j, uint32_t slot, tl_ns now)
{
    const tl_trace *t = j->spec->trace;
    j->cur_slot = slot;
    j->op_index = 0;
    j->host_free = now;
    set_next_step(j);
    (void)t;
    j->host = HOST_SCHEDULED;
    host_continue(j);
}

/* The host has played the last op and the tail of the iteration. */
static void finish_iteration_on_host(job_rt *j, tl_ns now)
{
    tl_runtime *rt = j->rt;
    const tl_trace *t = j->spec->trace;
    uint32_t slot = j->cur_slot;
    j->slots[slot].host_finished = true;
    j->slots[slot].host_end = now;
    j->iter = (j->iter + 1) % t->n_iters;
    j->host = HOST_IDLE;
    j->host_free = now;
    slot_maybe_finish(j, slot);
    if (j->host != HOST_IDLE)
        return; /* slot_maybe_finish already started the next request */
    if (j->spec->role == TL_ROLE_TRAINING) {
        if (rt->window_over || iterations_done(j)) {
            j->host = HOST_DONE;
            return;
        }
        /* Closed loop: the next step starts as soon as the host is free; its
         * GPU work queues behind the previous step's. Bound the overlap. */
        uint32_t s = slot_open(j, now, now);
        if (s == UINT32_MAX) {
            j->host = HOST_IDLE; /* a finishing slot restarts us (see below) */
            return;
        }
        start_iteration(j, s, now);
        return;
    }
    try_start_request(j);
}

/* Inference: start the next queued request once the previous one is complete. */
static void try_start_request(job_rt *j)
{
    tl_runtime *rt = j->rt;
    if (j->host != HOST_IDLE)
        return;
    for (uint32_t s = 0; s < MAX_INFLIGHT; s++)
        if (j->slots[s].in_use)
            return; /* requests are served one at a time */
    tl_ns now = tl_dev_now(rt->dev);
    tl_ns arrival;
    if (j->spec->arrival == TL_ARRIVAL_CLOSED) {
        if (rt->window_over) {
            j->host = HOST_DONE;
            return;
        }
        arrival = now;
    } else {
        if (j->q_len == 0)
            return;
        arrival = j->queue[j->q_head];
        j->q_head = (j->q_head + 1) % j->q_cap;
        j->q_len--;
    }
    uint32_t s = slot_open(j, arrival, now);
    start_iteration(j, s, now);
}

/* ---------- arrivals ---------- */

static void queue_push(job_rt *j, tl_ns t)
{
    if (j->q_len == j->q_cap) {
        size_t ncap = j->q_cap ? j->q_cap * 2 : 64;
        tl_ns *nq = tl_xmalloc(ncap * sizeof *nq);
        for (size_t i = 0; i < j->q_len; i++)
            nq[i] = j->queue[(j->q_head + i) % j->q_cap];
        free(j->queue);
        j->queue = nq;
        j->q_cap = ncap;
        j->q_head = 0;
    }
    j->queue[(j->q_head + j->q_len) % j->q_cap] = t;
    j->q_len++;
}

static tl_ns next_arrival(job_rt *j, tl_ns after, bool *none)
{
    *none = false;
    if (j->spec->arrival == TL_ARRIVAL_FILE) {
        if (j->file_pos >= j->spec->n_arrival_times) {
            *none = true;
            return 0;
        }
        return j->spec->arrival_times[j->file_pos++];
    }
    double gap = tl_rng_exponential(&j->rng, 1.0 / j->rate_per_ns);
    if (gap < 1)
        gap = 1;
    /* A tiny rate's gap can pass what a tl_ns holds: such an arrival is past
     * any run's end (and the cast would wrap it into the past). */
    if (!(gap < (double)(INT64_MAX / 2 - after))) {
        *none = true;
        return 0;
    }
    return after + (tl_ns)gap;
}

static void arrival_timer(void *arg, tl_ns now)
{
    job_rt *j = arg;
    tl_runtime *rt = j->rt;
    if (now >= rt->window_end)
        return; /* no arrivals after the window: the run drains */
    if (j->q_len >= TL_RUN_MAX_WAITING) {
        /* Stop this job's arrivals and drop its backlog, so that the run ends
         * soon; tl_run reports the overload as its error. */
        if (rt->overloaded_job < 0) {
            rt->overloaded_job = j->id;
            rt->overloaded_at = now;
        }
        j->q_len = 0;
        return;
    }
    queue_push(j, now);
    tl_policy_request_arrived(&rt->policy, j->job);
    bool none;
    tl_ns t = next_arrival(j, now, &none);
    if (!none)
        tl_dev_timer(rt->dev, t, arrival_timer, j);
    try_start_request(j);
}

/* ---------- window ---------- */

static void window_start_timer(void *arg, tl_ns now)
{
    tl_runtime *rt = arg;
    for (int i = 0; i < rt->n_jobs; i++)
        tl_dev_job_stats(rt->dev, i, &rt->stats_at_start[i]);
}

static void window_end_timer(void *arg, tl_ns now)
{
    tl_runtime *rt = arg;
    rt->window_over = true;
    for (int i = 0; i < rt->n_jobs; i++) {
        tl_job_stats st;
        tl_dev_job_stats(rt->dev, i, &st);
        tl_job_stats *o = &rt->out->job_stats[i];
        o->sm_busy_ns = st.sm_busy_ns - rt->stats_at_start[i].sm_busy_ns;
        o->kernels = st.kernels - rt->stats_at_start[i].kernels;
        o->blocks = st.blocks - rt->stats_at_start[i].blocks;
        job_rt *j = &rt->jrt[i];
        if (j->host == HOST_IDLE && j->spec->role == TL_ROLE_TRAINING)
            j->host = HOST_DONE;
    }
}

static void kernel_observer(void *arg, const tl_kernel_record *rec)
{
    tl_runtime *rt = arg;
    tl_run_result *out = rt->out;
    if (rec->end_ns < rt->window_start || rec->start_ns >= rt->window_end)
        return;
    if (out->n_kernels == out->cap_kernels) {
        out->cap_kernels = out->cap_kernels ? out->cap_kernels * 2 : 4096;
        out->kernels = tl_xrealloc(out->kernels, out->cap_kernels * sizeof *out->kernels);
    }
    tl_kernel_record *k = &out->kernels[out->n_kernels++];
    *k = *rec;
    if (rec->job >= 0 && rec->job < rt->n_jobs && rec->op)
        k->name = tl_trace_op_name(rt->cfg->jobs[rec->job].trace, rec->op);
}

/* ---------- set-up ---------- */

static int check_spec(const tl_job_spec *s, int i, tl_err *err)
{
    const char *n = s->name ? s->name : "?";
    if (!s->trace || s->trace->n_iters == 0)
        return tl_errf(err, TL_EINVAL, "job %d (%s): trace has no iterations", i, n);
    if (s->trace->n_streams > TL_MAX_JOB_STREAMS)
        return tl_errf(err, TL_ERANGE, "job %d (%s): trace uses %d streams, at most %d supported",
                       i, n, s->trace->n_streams, TL_MAX_JOB_STREAMS);
    if (s->role == TL_ROLE_INFERENCE) {
        if (s->arrival == TL_ARRIVAL_POISSON_RATE && !(s->rate > 0))
            return tl_errf(err, TL_ERANGE, "job %d (%s): arrival rate must be > 0", i, n);
        if (s->arrival == TL_ARRIVAL_POISSON_LOAD && !(s->load > 0))
            return tl_errf(err, TL_ERANGE, "job %d (%s): load must be > 0", i, n);
    }
    return 0;
}

static void job_rt_init(tl_runtime *rt, int i)
{
    job_rt *j = &rt->jrt[i];
    const tl_job_spec *s = &rt->cfg->jobs[i];
    j->rt = rt;
    j->id = i;
    j->spec = s;
    j->job = &rt->jobs[i];
    j->block_stream = -2;
    tl_rng_init(&j->rng, tl_rng_derive_seed(rt->cfg->seed, s->rng_stream, 1));
    for (int k = 0; k < TL_MAX_JOB_STREAMS; k++) {
        j->streams[k].gate_event = -1;
        j->streams[k].owner = j;
        j->streams[k].index = k;
    }
    int max_event = -1;
    for (uint32_t it = 0; it < s->trace->n_iters; it++)
        for (uint32_t k = 0; k < s->trace->iters[it].n_ops; k++)
            if (s->trace->iters[it].ops[k].event > max_event)
                max_event = s->trace->iters[it].ops[k].event;
    j->n_events = max_event + 1;
    j->events = j->n_events ? tl_xcalloc((size_t)j->n_events, sizeof *j->events) : NULL;
    if (s->arrival == TL_ARRIVAL_POISSON_RATE)
        j->rate_per_ns = s->rate / 1e9;
    else if (s->arrival == TL_ARRIVAL_POISSON_LOAD)
        j->rate_per_ns = s->load / (double)tl_trace_mean_iteration(s->trace);

    tl_job *job = &rt->jobs[i];
    job->id = i;
    job->name = s->name;
    job->role = s->role;
    job->priority = s->priority;
    job->slo_ns = s->slo_ns;
    job->sm_percent = s->sm_percent;
    job->model_bytes = s->model_bytes;
    job->trace = s->trace;
}

static void job_start(job_rt *j)
{
    tl_runtime *rt = j->rt;
    if (j->spec->role == TL_ROLE_TRAINING || j->spec->arrival == TL_ARRIVAL_CLOSED) {
        j->host = HOST_IDLE;
        if (j->spec->role == TL_ROLE_TRAINING)
            start_iteration(j, slot_open(j, 0, 0), 0);
        else
            try_start_request(j);
        return;
    }
    j->host = HOST_IDLE;
    bool none;
    tl_ns t = next_arrival(j, 0, &none);
    if (!none)
        tl_dev_timer(rt->dev, t, arrival_timer, j);
}

static void runtime_close(tl_runtime *rt)
{
    for (int i = 0; i < rt->n_jobs; i++) {
        job_rt *j = &rt->jrt[i];
        free(j->events);
        free(j->queue);
        for (int s = 0; s < TL_MAX_JOB_STREAMS; s++)
            free(j->streams[s].held);
        for (int s = 0; s < MAX_INFLIGHT; s++)
            free(j->slots[s].ivs);
    }
    while (rt->task_chunks) {
        task_chunk *c = rt->task_chunks;
        rt->task_chunks = c->next;
        free(c);
    }
    rt->free_tasks = NULL;
    free(rt->jrt);
    free(rt->jobs);
    free(rt->stats_at_start);
}

static const char *job_name(const tl_runtime *rt, int i)
{
    return rt->cfg->jobs[i].name ? rt->cfg->jobs[i].name : "?";
}

tl_ns tl_run_drain_ns(tl_ns window_end)
{
    tl_ns drain = window_end <= INT64_MAX / (4 * TL_RUN_DRAIN_FACTOR)
                      ? window_end * TL_RUN_DRAIN_FACTOR : INT64_MAX / 4;
    return drain > TL_RUN_DRAIN_MIN_NS ? drain : TL_RUN_DRAIN_MIN_NS;
}

static size_t live_work(const job_rt *j)
{
    size_t live = j->q_len;
    for (uint32_t s = 0; s < MAX_INFLIGHT; s++)
        live += j->slots[s].in_use;
    return live;
}

/* After tl_dev_run: did a job's queue pass TL_RUN_MAX_WAITING, or is work
 * left at the drain's limit? An open-loop inference job's requests arrive at
 * their rate whatever the GPU serves: an offered load it cannot serve, named
 * first, as it may be what held the others back. A training job (or a
 * closed-loop one) offers no load and starts nothing after the window: what it
 * has left is an iteration (request) that outlasts the drain. */
static int check_overload(const tl_runtime *rt, tl_err *err)
{
    const char *policy = rt->cfg->policy->name;
    if (rt->overloaded_job >= 0)
        return tl_errf(err, TL_ERANGE,
                       "policy %s: job %s: over %zu requests waiting at %.3f s: the offered load far "
                       "exceeds what the GPU serves; lower the job's rate or load",
                       policy, job_name(rt, rt->overloaded_job), TL_RUN_MAX_WAITING,
                       (double)rt->overloaded_at / 1e9);
    double after_s = (double)(tl_dev_now(rt->dev) - rt->window_end) / 1e9;
    int limit_s = (int)(TL_RUN_DRAIN_MIN_NS / TL_NS_PER_S);
    for (int i = 0; i < rt->n_jobs; i++) {
        const tl_job_spec *js = rt->jrt[i].spec;
        size_t live = live_work(&rt->jrt[i]);
        if (live && js->role == TL_ROLE_INFERENCE && js->arrival != TL_ARRIVAL_CLOSED)
            return tl_errf(err, TL_ERANGE,
                           "policy %s: job %s: %zu requests unfinished %.1f s after the window ended "
                           "(the drain's limit: %dx warm-up plus window, at least %d s): the offered "
                           "load far exceeds what the GPU serves; lower the job's rate or load, or "
                           "shorten the run",
                           policy, job_name(rt, i), live, after_s, TL_RUN_DRAIN_FACTOR, limit_s);
    }
    for (int i = 0; i < rt->n_jobs; i++) {
        bool training = rt->jrt[i].spec->role == TL_ROLE_TRAINING;
        const char *what = training ? "training iteration" : "request";
        size_t live = live_work(&rt->jrt[i]);
        if (live)
            return tl_errf(err, TL_ERANGE,
                           "policy %s: job %s: %zu %s%s unfinished %.1f s after the window ended "
                           "(the drain's limit: %dx warm-up plus window, at least %d s): the %s job "
                           "had not finished its %ss by the drain's limit, and starts none after the "
                           "window: one lasts longer than the run waits; check the trace's times, "
                           "or lengthen the run",
                           policy, job_name(rt, i), live, what, live == 1 ? "" : "s", after_s,
                           TL_RUN_DRAIN_FACTOR, limit_s, training ? "training" : "closed-loop", what);
    }
    return 0;
}

/* Waves of blocks faster than any GPU retires them (under TL_MIN_WAVE_NS each,
 * past TL_MAX_FAST_WAVES waves): a broken or hand-made trace, whose every wave
 * would be an event of its own while another launch shares the GPU (days of
 * simulation for one kernel of 2^31 blocks in 100 ns). A real kernel of a
 * thousand waves takes a millisecond or more; a trace's zero-length kernels,
 * stretched to 1 ns, are one wave or a few. */
#define TL_MIN_WAVE_NS 10
#define TL_MAX_FAST_WAVES 1000
static int check_wave_time(const tl_trace *t, uint32_t i, uint32_t k, const tl_gpu_props *g,
                           int occ, tl_err *err)
{
    const tl_op *op = &t->iters[i].ops[k];
    uint64_t grid = (uint64_t)op->grid[0] * op->grid[1] * op->grid[2];
    uint64_t per_wave = (uint64_t)occ * (uint64_t)g->sms;
    uint64_t waves = grid / per_wave + (grid % per_wave != 0);
    if (waves <= TL_MAX_FAST_WAVES || (uint64_t)op->dur_ns >= waves * TL_MIN_WAVE_NS)
        return 0;
    return tl_errf(err, TL_ERANGE, "%s: iteration %u op %u (kernel '%s'): %llu blocks are %llu waves "
                   "on the %s (%d a SM) in %lld ns, under %d ns a wave: no GPU runs blocks that fast "
                   "(a broken trace?)",
                   t->path ? t->path : "trace", i, k, tl_trace_op_name(t, op),
                   (unsigned long long)grid, (unsigned long long)waves, g->name, occ,
                   (long long)op->dur_ns, TL_MIN_WAVE_NS);
}

/* Every kernel must be launchable on the GPU: CUDA refuses a block of more
 * threads, shared memory or registers than one SM of the GPU holds
 * (tl_occupancy's rule, the one the simulator places blocks by), and a
 * simulation that placed it anyway would be a silent wrong answer (a trace
 * from a larger GPU, or a hand-made one). A job's streams are bounded too. */
int tl_trace_check_replayable(const tl_trace *t, const tl_gpu_props *g, tl_err *err)
{
    const char *path = t->path ? t->path : "trace";
    if (t->n_streams > TL_MAX_JOB_STREAMS)
        return tl_errf(err, TL_ERANGE, "%s: %d streams; at most %d supported", path, t->n_streams,
                       TL_MAX_JOB_STREAMS);
    for (uint32_t i = 0; i < t->n_iters; i++)
        for (uint32_t k = 0; k < t->iters[i].n_ops; k++) {
            const tl_op *op = &t->iters[i].ops[k];
            if (op->kind != TL_OP_KERNEL)
                continue;
            uint64_t threads = (uint64_t)op->block[0] * op->block[1] * op->block[2];
            uint64_t smem = (uint64_t)op->static_smem + op->dynamic_smem;
            int occ = threads <= INT32_MAX && smem <= INT32_MAX && op->regs <= INT32_MAX
                          ? tl_occupancy(g, (int)threads, (int)op->regs, (int)smem, NULL)
                          : 0;
            if (occ > 0) {
                int r = check_wave_time(t, i, k, g, occ, err);
                if (r < 0)
                    return r;
                continue;
            }
            return tl_errf(err, TL_ERANGE, "%s: iteration %u op %u (kernel '%s'): a block of %llu threads, "
                           "%u registers a thread and %llu bytes of shared memory does not fit an SM of "
                           "the %s (at most %d threads, %d registers a thread, %d registers and %d bytes "
                           "of shared memory a block), so CUDA would not launch it",
                           path, i, k, tl_trace_op_name(t, op), (unsigned long long)threads, op->regs,
                           (unsigned long long)smem, g->name, g->max_threads_per_block,
                           g->max_regs_per_thread, g->regs_per_block, g->smem_per_block_optin);
        }
    return 0;
}

int tl_run(const tl_run_config *cfg, tl_device *dev, tl_run_result *out, tl_err *err)
{
    memset(out, 0, sizeof *out);
    if (!cfg || cfg->n_jobs <= 0 || !cfg->policy)
        return tl_errf(err, TL_EINVAL, "run: no jobs or no policy");
    if (cfg->duration_ns <= 0 || cfg->warmup_ns < 0)
        return tl_errf(err, TL_ERANGE, "run: duration must be > 0 and warm-up >= 0");
    for (int i = 0; i < cfg->n_jobs; i++) {
        int r = check_spec(&cfg->jobs[i], i, err);
        if (r < 0)
            return r;
    }
    tl_runtime rt = { 0 };
    rt.cfg = cfg;
    rt.dev = dev;
    rt.n_jobs = cfg->n_jobs;
    rt.out = out;
    rt.window_start = cfg->warmup_ns;
    rt.window_end = cfg->warmup_ns + cfg->duration_ns;
    rt.overloaded_job = -1;
    rt.jobs = tl_xcalloc((size_t)cfg->n_jobs, sizeof *rt.jobs);
    rt.jrt = tl_xcalloc((size_t)cfg->n_jobs, sizeof *rt.jrt);
    rt.stats_at_start = tl_xcalloc((size_t)cfg->n_jobs, sizeof *rt.stats_at_start);
    out->n_jobs = cfg->n_jobs;
    out->job_stats = tl_xcalloc((size_t)cfg->n_jobs, sizeof *out->job_stats);
    out->window_start_ns = rt.window_start;
    out->window_end_ns = rt.window_end;
    for (int i = 0; i < cfg->n_jobs; i++)
        job_rt_init(&rt, i);

    int r = tl_policy_init(&rt.policy, cfg->policy, cfg->policy_params, dev, &rt, rt.jobs,
                           cfg->n_jobs, err);
    if (r < 0)
        goto done;
    r = tl_policy_setup(&rt.policy, err);
    if (r < 0)
        goto close_policy;
    if (cfg->record_kernels) {
        dev->observer = kernel_observer;
        dev->observer_arg = &rt;
    }
    /* Time 0 of the run is here, after the setup: arrivals and the window
     * count from it on every device. */
    tl_dev_begin(dev);
    tl_dev_timer(dev, rt.window_start, window_start_timer, &rt);
    tl_dev_timer(dev, rt.window_end, window_end_timer, &rt);
    for (int i = 0; i < cfg->n_jobs; i++)
        job_start(&rt.jrt[i]);
    /* Run to the end of the window, then drain: no new training steps or
     * arrivals; requests that arrived inside the window finish. */
    tl_ns drain_end = rt.window_end + tl_run_drain_ns(rt.window_end);
    r = tl_dev_run(dev, drain_end, err);
    if (r == 0)
        r = check_overload(&rt, err);
    if (r == 0 && rt.policy.error.code) { /* a hook met a failure it could not return */
        if (err)
            *err = rt.policy.error;
        r = rt.policy.error.code;
    }
    /* The device drained: every issued task must have completed. A policy
     * that held one forever would otherwise lose records silently. */
    for (int i = 0; r == 0 && i < cfg->n_jobs; i++)
        if (rt.jrt[i].outstanding)
            r = tl_errf(err, TL_EINVAL, "policy %s: job %d (%s): %llu issued operations never completed",
                        cfg->policy->name, i, job_name(&rt, i),
                        (unsigned long long)rt.jrt[i].outstanding);
    dev->observer = NULL;
    dev->observer_arg = NULL;
close_policy:
    tl_policy_close(&rt.policy);
done:
    runtime_close(&rt);
    if (r < 0)
        tl_run_result_close(out);
    return r;
}

void tl_run_result_close(tl_run_result *r)
{
    free(r->recs);
    free(r->kernels);
    free(r->job_stats);
    memset(r, 0, sizeof *r);
}
