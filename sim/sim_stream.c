/* Streams, execution-engine queues, copy engines and launch completion.
 *
 * A stream is a FIFO: only its head is active. A kernel at the head enters
 * its context's EE queue for the stream's priority level; a copy at the head
 * enters its copy engine's queue. The head leaves the stream when it
 * completes, and the next item becomes active (after its launch latency). */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

/* ---------- launch slots (ids stay valid and unique; stale ids are ignored) ---------- */

launch *launch_alloc(sim *s)
{
    uint32_t slot;
    if (s->n_lfree) {
        slot = s->lfree[--s->n_lfree];
    } else {
        if (s->n_lslots == s->cap_lslots) {
            s->cap_lslots = s->cap_lslots ? s->cap_lslots * 2 : 256;
            s->lslots = tl_xrealloc(s->lslots, s->cap_lslots * sizeof *s->lslots);
            s->lgen = tl_xrealloc(s->lgen, s->cap_lslots * sizeof *s->lgen);
        }
        slot = s->n_lslots++;
        s->lslots[slot] = tl_xmalloc(sizeof(launch));
        s->lgen[slot] = 0;
    }
    launch *l = s->lslots[slot];
    /* Every field, one by one: a memset of the whole struct compiles to
     * 'rep stos', whose start-up cost was a few percent of a shared run. */
    l->kind = ITEM_KERNEL;
    l->st = NULL;
    l->next = l->ee_next = l->ee_prev = NULL;
    l->in_ee = false;
    l->op = NULL;
    l->job = 0;
    l->tag = 0;
    l->cb = NULL;
    l->arg = NULL;
    l->submitted_at = l->ready_at = 0;
    l->ready_ev = 0;
    l->active = l->done = l->dead = l->gap_held = false;
    l->block_begin = l->block_end = 0;
    l->to_dispatch = l->reserved = 0;
    l->n_trains = l->groups_live = l->groups_started = 0;
    l->blk_ns = l->blk_rem = 0;
    l->cost = (tl_block_cost){ 0 };
    l->occ = l->max_per_sm = 0;
    l->carveout = -1;
    l->carve_need = -1;
    l->ee_seq = 0;
    l->ptb = l->retreat = false;
    l->claimed = l->blocks_done = 0;
    l->start_ns = l->end_ns = 0;
    l->started = false;
    l->last_place = l->wake_at = 0;
    l->first_try = -1;
    l->sms_now = 0;
    l->sms_last = 0;
    l->sms_integral = 0;
    l->lane = 0;
    l->copy_ns = 0;
    s->lgen[slot]++;
    l->slot = slot;
    l->id = ((uint64_t)s->lgen[slot] << 32) | (uint64_t)(slot + 1);
    return l;
}

void launch_free(sim *s, launch *l)
{
    l->dead = true;
    s->lgen[l->slot]++; /* the id no longer resolves */
    if (s->n_lfree == s->cap_lfree) {
        s->cap_lfree = s->cap_lfree ? s->cap_lfree * 2 : 256;
        s->lfree = tl_xrealloc(s->lfree, s->cap_lfree * sizeof *s->lfree);
    }
    s->lfree[s->n_lfree++] = l->slot;
}

launch *launch_find(sim *s, tl_launch_id id)
{
    uint32_t slot1 = (uint32_t)(id & 0xffffffffu);
    if (slot1 == 0 || slot1 > s->n_lslots)
        return NULL;
    launch *l = s->lslots[slot1 - 1];
    if (l->dead || l->id != id)
        return NULL;
    return l;
}

/* ---------- EE queues ---------- */

void ee_push(sim *s, launch *l)
{
    sctx *c = l->st->c;
    int lvl = l->st->level;
    l->ee_next = NULL;
    l->ee_prev = c->ee_tail[lvl];
    if (c->ee_tail[lvl])
        c->ee_tail[lvl]->ee_next = l;
    else
        c->ee_head[lvl] = l;
    c->ee_tail[lvl] = l;
    c->ee_mask |= 1ull << lvl;
    l->in_ee = true;
    l->ee_seq = s->next_ee_seq++;
    if (c->u->n_trains)
        trains_break_unit(s, c->u); /* someone else may want the room at the next wave */
    unit_work_added(s, c->u);
    unit_dirty(s, c->u);
}

/* Take l out of its EE queue (normally the head; a launch whose last blocks
 * end before the next dispatch pass completes while still queued). */
void ee_unlink(sim *s, launch *l)
{
    if (!l->in_ee)
        return;
    sctx *c = l->st->c;
    int lvl = l->st->level;
    if (l->ee_prev)
        l->ee_prev->ee_next = l->ee_next;
    else
        c->ee_head[lvl] = l->ee_next;
    if (l->ee_next)
        l->ee_next->ee_prev = l->ee_prev;
    else
        c->ee_tail[lvl] = l->ee_prev;
    if (!c->ee_head[lvl])
        c->ee_mask &= ~(1ull << lvl);
    l->ee_next = l->ee_prev = NULL;
    l->in_ee = false;
}

void ee_pop(sim *s, sctx *c, int lvl)
{
    launch *l = c->ee_head[lvl];
    ee_unlink(s, l);
    /* A PTB launch told to retreat before any worker ran has nothing left. */
    if (l->to_dispatch == 0 && l->groups_live == 0 && !l->done)
        launch_complete_later(s, l);
}

/* ---------- copy engines ---------- */

static void copy_end_ev(void *ctx, void *arg, uint64_t u)
{
    sim *s = ctx;
    launch *l = arg;
    int lane = l->lane;
    s->lanes[lane].busy = NULL;
    launch_complete(s, l);
    copy_lane_start(s, lane);
}

void copy_lane_start(sim *s, int lane)
{
    copy_lane *q = &s->lanes[lane];
    if (q->busy || !q->head)
        return;
    launch *l = q->head;
    q->head = l->ee_next;
    if (!q->head)
        q->tail = NULL;
    q->busy = l;
    l->started = true;
    l->start_ns = sim_now(s);
    tl_engine_at(&s->eng, sim_now(s) + l->copy_ns, copy_end_ev, s, l, 0);
}

static void lane_push(sim *s, launch *l)
{
    copy_lane *q = &s->lanes[l->lane];
    l->ee_next = NULL;
    if (q->tail)
        q->tail->ee_next = l;
    else
        q->head = l;
    q->tail = l;
    copy_lane_start(s, l->lane);
}

/* ---------- streams ---------- */

static void ready_ev(void *ctx, void *arg, uint64_t u)
{
    sim *s = ctx;
    launch *l = arg;
    l->ready_ev = 0;
    stream_advance(s, l->st);
}

/* gap_beside_*: the extra gap of a kernel of st whose predecessor just ended,
 * from the other work its GPU's front end is serving: another context's
 * kernels in the unit (MPS clients), else another stream's of its own. */
static tl_ns gap_beside(const sim *s, const sstream *st)
{
    const sctx *c = st->c;
    const unit *u = c->u;
    if (s->p.gap_beside_ctx_ns > 0)
        for (int i = 0; i < u->n_ctxs; i++) {
            const sctx *o = u->ctxs[i];
            if (o != c && (o->sms_now > 0 || o->ee_mask))
                return s->p.gap_beside_ctx_ns;
        }
    return c->sms_now > 0 || c->ee_mask ? s->p.gap_beside_stream_ns : 0;
}

/* Did kernel launch l end with every SM full of small blocks? Its blocks of
 * at most TAIL_MAX_THREADS threads fill at least TAIL_FULL_NUM/TAIL_FULL_DEN
 * of every SM's block slots in its last wave. On the H100 a graph kernel
 * after such a kernel starts 1.1-2.2 us later than after any other (sim/
 * README.md, "The tail after full SMs"): ResNet-50 b8's batch norms of 64
 * threads a block and 4,096-16,384 blocks, not the same of 2,048 blocks (15.5
 * an SM) nor those of 256 threads. PTB launches keep few workers an SM: never. */
#define TAIL_MAX_THREADS 64
#define TAIL_FULL_NUM 7 /* 28 of the H100's 32 block slots */
#define TAIL_FULL_DEN 8
static bool full_tail(const sim *s, const launch *l)
{
    const tl_op *op = l->op;
    if (l->kind != ITEM_KERNEL || l->ptb || !op || tl_op_threads(op) > TAIL_MAX_THREADS)
        return false;
    int per_sm = tl_occupancy(&s->gpu, (int)tl_op_threads(op), (int)op->regs,
                              (int)(op->static_smem + op->dynamic_smem), NULL);
    uint64_t blocks = l->block_end - l->block_begin;
    uint64_t wave = (uint64_t)s->gpu.sms * (uint64_t)(per_sm > 0 ? per_sm : 1);
    uint64_t last = blocks ? blocks - (blocks - 1) / wave * wave : 0;
    return last * TAIL_FULL_DEN >=
           (uint64_t)s->gpu.sms * (uint64_t)s->gpu.max_blocks_per_sm * TAIL_FULL_NUM;
}

void stream_advance(sim *s, sstream *st)
{
    launch *l = st->head;
    if (!l || l->active)
        return;
    tl_ns now = sim_now(s);
    bool graph = l->op && l->op->graph;
    tl_ns free_at = st->last_end + (graph ? s->p.graph_gap_ns : s->p.stream_gap_ns);
    if (graph && l->kind == ITEM_KERNEL && st->last_full_tail)
        free_at += s->p.graph_tail_ns;
    if (l->kind == ITEM_KERNEL && st->last_end == now &&
        (s->p.gap_beside_stream_ns > 0 || s->p.gap_beside_ctx_ns > 0))
        free_at += gap_beside(s, st);
    if (l->ready_at > now || free_at > now) {
        /* A kernel already issued that waits only for the gap behind the
         * one before it is on the GPU: it is its unit's work, or the time
         * slicer would hand the GPU over at every kernel's end. (Not yet
         * issued, it is the host's: nothing to count.) */
        if (l->ready_at <= now && l->kind == ITEM_KERNEL && !l->gap_held) {
            l->gap_held = true;
            unit_work_added(s, st->c->u);
        }
        if (!l->ready_ev) {
            tl_ns at = l->ready_at > now ? l->ready_at : free_at;
            l->ready_ev = tl_engine_at_inline(&s->eng, at, ready_ev, s, l, 0);
        }
        return;
    }
    if (l->gap_held) { /* ee_push counts it from here */
        l->gap_held = false;
        unit_work_removed(s, st->c->u);
    }
    l->active = true;
    if (l->kind == ITEM_KERNEL)
        ee_push(s, l);
    else
        lane_push(s, l);
}

static void complete_ev(void *ctx, void *arg, uint64_t u)
{
    launch_complete(ctx, arg);
}

void launch_complete_later(sim *s, launch *l)
{
    l->done = true; /* not to be completed twice */
    tl_engine_at(&s->eng, sim_now(s), complete_ev, s, l, 0);
}

void launch_complete(sim *s, launch *l)
{
    tl_ns now = sim_now(s);
    sstream *st = l->st;
    l->done = true;
    l->end_ns = now;
    if (!l->started)
        l->start_ns = now;
    st->head = l->next;
    if (!st->head)
        st->tail = NULL;
    st->last_end = now;
    st->last_full_tail = s->p.graph_tail_ns > 0 && full_tail(s, l);

    uint64_t total = l->block_end - l->block_begin;
    uint64_t next_block = l->ptb ? l->block_begin + l->claimed : l->block_end;
    tl_launch_result r = {
        .id = l->id, .start_ns = l->start_ns, .end_ns = l->end_ns,
        .next_block = l->kind == ITEM_KERNEL ? next_block : 0,
        .retreated = l->kind == ITEM_KERNEL && l->ptb && l->claimed < total,
        .submitted_ns = l->submitted_at,
    };
    if (l->kind == ITEM_KERNEL) {
        ee_unlink(s, l);
        unit_work_removed(s, st->c->u);
        job_acct *j = acct_job(s, l->job);
        if (j)
            j->kernels++;
        s->stats.kernels++;
        tl_device *d = s->dev;
        if (d && d->observer) {
            tl_kernel_record rec = {
                .job = l->job, .stream = st->id, .op = l->op, .tag = l->tag,
                .blocks = l->blocks_done, .start_ns = l->start_ns, .end_ns = l->end_ns,
                .avg_sms = l->end_ns > l->start_ns
                               ? l->sms_integral / (double)(l->end_ns - l->start_ns)
                               : 0.0,
                .ptb = l->ptb, .retreated = r.retreated,
            };
            d->observer(d->observer_arg, &rec);
        }
    } else {
        s->stats.copies++;
    }
    tl_launch_cb cb = l->cb;
    void *arg = l->arg;
    launch_free(s, l);
    stream_advance(s, st);
    if (cb) {
        /* launches made from here pay callback_launch_latency_ns */
        bool outer = s->in_callback;
        s->in_callback = true;
        cb(arg, &r);
        s->in_callback = outer;
    }
}
