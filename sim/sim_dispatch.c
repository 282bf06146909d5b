/* The block scheduler: where a launch's blocks go (groups: sim_group.c).
 *
 * Dispatch runs once per instant for the active unit (engine flush), after
 * every event of that instant, so blocks that end together are replaced
 * together. Rules (FACTS.md, "Published rules of the hardware block
 * scheduler"):
 *  - per context, one execution-engine (EE) queue per priority level; only the
 *    head of a queue dispatches, the next kernel gets the leftovers once the
 *    head has dispatched all its blocks (head-of-line blocking);
 *  - a level dispatches only when every higher level of the context is empty;
 *  - a block goes only where threads, registers, shared memory and a block
 *    slot are free; placement ignores contention; running blocks are never
 *    preempted;
 *  - blocks are spread breadth-first (one per SM, then a second, ...).
 * Contexts of one unit (MPS clients, partitions) dispatch independently, in
 * order of (MPS client priority, arrival of their head kernel); a priority-1
 * MPS client dispatches nothing while a priority-0 client waits for room.
 * With mps_client_priority 0 (the H100's default) client priority is
 * ignored: arrival order alone. With mps_order 1 the client that has placed
 * blocks in the fewest dispatch rounds goes before arrival order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

enum { PLACE_DONE = 0, PLACE_ROOM = 1, PLACE_CAP = 2, PLACE_LATER = 3 };

static uint64_t u64_min(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* ---------- placement ---------- */

/* A candidate class: ci, its m usable SMs and the blocks per SM that fit
 * there (bps). A piece has the same shape, so when every candidate is
 * filled (the common case) the candidates are the placement's pieces. */
typedef sm_piece cand;
typedef sm_piece piece;

static void coalesce_wake_ev(void *ctx, void *arg, uint64_t x)
{
    sim *s = ctx;
    launch *l = arg;
    if (l->dead || l->id != x)
        return;
    l->wake_at = 0;
    unit_dirty(s, l->st->c->u);
}

/* Coalescing (sim/README.md): a launch split into many live groups places
 * new blocks at most once per coalesce_fraction x its block time, so that
 * interference cannot multiply its start phases without bound. */
static bool coalesce_defer(sim *s, launch *l)
{
    if (s->p.coalesce_groups <= 0 || l->groups_live < (uint32_t)s->p.coalesce_groups)
        return false;
    tl_ns q = (tl_ns)((double)l->blk_ns * s->p.coalesce_fraction);
    tl_ns at = l->last_place + q;
    if (sim_now(s) >= at)
        return false;
    if (!l->wake_at) {
        l->wake_at = at;
        tl_engine_at_inline(&s->eng, at, coalesce_wake_ev, s, l, l->id);
    }
    s->stats.coalesced++;
    return true;
}

/* A new group g of l, its 'placed' blocks on their SMs, starts: a wave train
 * when l is alone in its unit with full waves left. */
static inline void place_start(sim *s, unit *u, launch *l, group *g, uint64_t placed)
{
    l->to_dispatch -= placed;
    l->last_place = sim_now(s);
    if (!l->ptb && l->blk_ns > 0 && l->to_dispatch >= placed && alone_in_unit(u, l)) {
        uint64_t more = l->to_dispatch / placed;
        if (more > UINT32_MAX - 1)
            more = UINT32_MAX - 1;
        g->waves = 1 + (uint32_t)more;
        l->reserved += more * placed;
        l->n_trains++;
        u->n_trains++;
    }
    group_start(s, g);
}

/* Crowding (sim/README.md): a whole compute-bound kernel's group with more
 * blocks on its most crowded SM (max_bps) than the traced kernel's own
 * k0 = min(occupancy, ceil(grid / SMs)) runs each block at
 * tl_sim_crowding(crowding_warps, its warps a block, k0, max_bps) of its solo
 * time. Memory-bound kernels: not measured (tally-run crowding loads every
 * SM, so DRAM bandwidth, not the SM, sets their times there). PTB launches
 * and slices have their own rule (residency). */
static double crowd_of(const sim *s, const launch *l, int max_bps)
{
    const tl_op *op = l->op;
    uint64_t grid = (uint64_t)op->grid[0] * op->grid[1] * op->grid[2];
    if (l->work == TL_WORK_MEMORY || l->ptb || l->block_end - l->block_begin < grid)
        return 1.0;
    uint64_t k0 = kernel_bps(s, grid, l->occ);
    if ((uint64_t)max_bps <= k0)
        return 1.0;
    return tl_sim_crowding(s->p.crowding_warps, (l->cost.threads + 31) / 32, (int)k0, max_bps);
}

/* A new group of l: 'placed' blocks on the pieces. */
static inline void place_commit(sim *s, unit *u, launch *l, const piece *pieces, int np,
                                uint64_t placed)
{
    group *g = group_new(s, l, u);
    g->blocks = placed;
    if (s->p.crowding_warps > 0) {
        int max_bps = 0;
        for (int i = 0; i < np; i++)
            if (pieces[i].bps > max_bps)
                max_bps = pieces[i].bps;
        g->crowd = crowd_of(s, l, max_bps);
    }
    sm_place(s, u, g, pieces, np);
    place_start(s, u, l, g, placed);
}

/* An idle unit of one pool (no live group: one empty class, hence no trains
 * to break) without an SM cap: the placement that place() below would
 * compute, without its candidate lists or pieces. Returns PLACE_*. */
static int place_idle(sim *s, unit *u, launch *l)
{
    smclass *k = u->cls[0];
    int f = sm_fit(k, l), m = k->n;
    if (f == 0)
        return PLACE_ROOM;
    uint64_t cap = (uint64_t)m * (uint64_t)f;
    uint64_t need = l->to_dispatch - l->reserved;
    if (need == 0)
        return l->to_dispatch ? PLACE_ROOM : PLACE_DONE;
    int m_hi = 0, bps_hi = 0, bps_lo;
    if (need >= cap) {
        bps_lo = f;
        need = cap;
    } else { /* k full rounds (k < f), the rest one more on the first SMs */
        int kr = need <= UINT32_MAX ? (int)((uint32_t)need / (uint32_t)m)
                                    : (int)(need / (uint64_t)m);
        m_hi = (int)(need - (uint64_t)kr * (uint64_t)m);
        bps_hi = kr + 1;
        bps_lo = kr;
    }
    group *g = group_new(s, l, u);
    g->blocks = need;
    if (s->p.crowding_warps > 0)
        g->crowd = crowd_of(s, l, m_hi > 0 ? bps_hi : bps_lo);
    sm_place_idle(s, u, g, m_hi, bps_hi, bps_lo);
    place_start(s, u, l, g, need);
    return l->to_dispatch == 0 ? PLACE_DONE : PLACE_ROOM;
}

/* Does a live group of another job share l's unit? */
static bool other_job_in_unit(const unit *u, const launch *l)
{
    for (const group *g = u->groups; g; g = g->next)
        if (g->l->job != l->job)
            return true;
    return false;
}

/* Packing (pack_foreign): a launch that waited for room, placed into the room
 * other jobs' blocks freed. On the hardware that room appears SM by SM (block
 * ends are staggered) and the waiting kernel's blocks fill each SM as it frees
 * (experiments/results/hw/placement/); the simulator frees a group's SMs at
 * one instant. So: 'need' blocks (less than the candidates hold) on the
 * candidates with the most room per SM first (class order among equals),
 * each SM filled to its room; the last SM takes the rest. Returns the pieces
 * (at most 2 x nc). */
static int pack_pieces(const cand *cands, int nc, uint64_t need, piece *pieces)
{
    int np = 0;
    bool used_stack[16] = { false };
    bool *used = nc <= 16 ? used_stack : tl_xcalloc((size_t)nc, sizeof *used);
    while (need > 0) {
        int best = -1;
        for (int i = 0; i < nc; i++)
            if (!used[i] && (best < 0 || cands[i].bps > cands[best].bps))
                best = i;
        if (best < 0)
            break;
        used[best] = true;
        const cand *c = &cands[best];
        uint64_t full = need / (uint64_t)c->bps;
        if (full >= (uint64_t)c->m) {
            pieces[np++] = *c;
            need -= (uint64_t)c->m * (uint64_t)c->bps;
            continue;
        }
        if (full > 0)
            pieces[np++] = (piece){ c->ci, (int)full, c->bps };
        uint64_t rest = need - full * (uint64_t)c->bps;
        if (rest > 0)
            pieces[np++] = (piece){ c->ci, 1, (int)rest };
        need = 0;
    }
    if (used != used_stack)
        free(used);
    return np;
}

/* Place as many undispatched blocks of l as fit; returns PLACE_*. */
static int place(sim *s, sctx *c, launch *l)
{
    unit *u = c->u;
    if (l->first_try < 0)
        l->first_try = sim_now(s);
    if (coalesce_defer(s, l))
        return PLACE_LATER;
    if (!u->groups && u->n_cls == 1 && c->cap_sms >= u->pools[c->pool].sms)
        return place_idle(s, u, l);
    sm_classes(s, u);
again:;
    int n_cls = u->n_cls;
    cand stack_cands[16];
    cand *cands = n_cls <= 16 ? stack_cands : tl_xmalloc((size_t)n_cls * sizeof *cands);
    int nc = 0;
    bool capped = c->cap_sms < u->pools[c->pool].sms;
    bool cap_limited = false;
    uint64_t cap = 0;
    int maxf = 0;
    if (!capped) { /* every SM of the pool is usable */
        for (int ci = 0; ci < n_cls; ci++) {
            smclass *k = u->cls[ci];
            if (k->pool != c->pool)
                continue;
            int f = sm_fit(k, l);
            if (f == 0)
                continue;
            cands[nc++] = (cand){ ci, k->n, f };
            cap += (uint64_t)k->n * (uint64_t)f;
            if (f > maxf)
                maxf = f;
        }
    } else {
        /* With a cap (MPS), SMs that already hold the client's blocks are
         * free to use; new ones only up to the cap. */
        for (int pass = 0; pass < 2; pass++) {
            int allowed = c->cap_sms - c->sms_now;
            for (int ci = 0; ci < n_cls; ci++) {
                smclass *k = u->cls[ci];
                if (k->pool != c->pool)
                    continue;
                bool present = sm_ctx_present(k, c);
                if (present != (pass == 0))
                    continue;
                int f = sm_fit(k, l);
                if (f == 0)
                    continue;
                int m = k->n;
                if (!present) {
                    if (m > allowed) {
                        cap_limited = true;
                        m = allowed;
                    }
                    allowed -= m;
                }
                if (m > 0)
                    cands[nc++] = (cand){ ci, m, f };
            }
        }
        for (int i = 0; i < nc; i++) {
            cap += (uint64_t)cands[i].m * (uint64_t)cands[i].bps;
            if (cands[i].bps > maxf)
                maxf = cands[i].bps;
        }
    }
    if (cap == 0) {
        if (cands != stack_cands)
            free(cands);
        return cap_limited ? PLACE_CAP : PLACE_ROOM;
    }
    /* Room elsewhere: per-wave dispatch would fill it with this launch's next
     * blocks now, so its trains give their reserved waves back first. */
    if (l->n_trains && trains_break_launch(s, l)) {
        if (cands != stack_cands)
            free(cands);
        goto again;
    }
    uint64_t need = l->to_dispatch - l->reserved;
    if (need == 0) { /* a train cut in its last wave: everything has started */
        if (cands != stack_cands)
            free(cands);
        return l->to_dispatch ? PLACE_ROOM : PLACE_DONE;
    }
    if (need >= cap) { /* every candidate filled: they are the pieces */
        place_commit(s, u, l, cands, nc, cap);
        if (cands != stack_cands)
            free(cands);
        if (l->to_dispatch == 0)
            return PLACE_DONE;
        return cap_limited ? PLACE_CAP : PLACE_ROOM;
    }
    piece stack_pieces[32];
    piece *pieces = 2 * nc <= 32 ? stack_pieces : tl_xmalloc((size_t)(2 * nc) * sizeof *pieces);
    int np = 0;
    if (s->p.pack_foreign && (s->p.pack_foreign == 2 || l->first_try < sim_now(s)) &&
        other_job_in_unit(u, l)) {
        np = pack_pieces(cands, nc, need, pieces);
        goto commit;
    }
    /* Breadth-first: every usable SM gets min(f, k) blocks, where k is the
     * largest number of full rounds that fits in 'need'; the rest go one
     * more per SM, in class order. */
    int k = 0;
    uint64_t tot_k = 0;
    if (nc == 1) { /* one class: k full rounds directly */
        k = need <= UINT32_MAX ? (int)((uint32_t)need / (uint32_t)cands[0].m)
                               : (int)(need / (uint64_t)cands[0].m);
        tot_k = (uint64_t)k * (uint64_t)cands[0].m;
    } else for (;;) {
        uint64_t t = 0;
        for (int i = 0; i < nc; i++)
            t += (uint64_t)cands[i].m * (uint64_t)(cands[i].bps < k + 1 ? cands[i].bps : k + 1);
        if (t > need || k >= maxf)
            break;
        tot_k = t;
        k++;
    }
    uint64_t rest = need - tot_k;
    for (int i = 0; i < nc; i++) {
        int lo = cands[i].bps < k ? cands[i].bps : k;
        int x = 0;
        if (cands[i].bps > k && rest > 0) {
            x = (int)u64_min((uint64_t)cands[i].m, rest);
            rest -= (uint64_t)x;
            pieces[np++] = (piece){ cands[i].ci, x, k + 1 };
        }
        if (lo > 0 && cands[i].m - x > 0)
            pieces[np++] = (piece){ cands[i].ci, cands[i].m - x, lo };
    }
commit:
    place_commit(s, u, l, pieces, np, need);
    if (pieces != stack_pieces)
        free(pieces);
    if (cands != stack_cands)
        free(cands);
    if (l->to_dispatch == 0)
        return PLACE_DONE;
    return cap_limited ? PLACE_CAP : PLACE_ROOM;
}

/* Place what l can; PLACE_DONE once it has no blocks left to place. */
static int place_queued(sim *s, sctx *c, launch *l)
{
    if (l->ptb) { /* no more workers than logical blocks left to hand out */
        uint64_t left = l->block_end - l->block_begin - l->claimed;
        if (l->to_dispatch > left)
            l->to_dispatch = left;
    }
    return l->to_dispatch > 0 ? place(s, c, l) : PLACE_DONE;
}

/* stream_order 1: the turn of the level's kernels (one per stream, each its
 * stream's head): fewest placing rounds of its stream first, then arrival. */
static bool turn_before(const launch *a, const launch *b)
{
    if (a->st->placing_rounds != b->st->placing_rounds)
        return a->st->placing_rounds < b->st->placing_rounds;
    return a->ee_seq < b->ee_seq;
}

/* stream_order 1, a level holding kernels of several streams: each places
 * blocks in its turn (sim/README.md, "Streams of one priority"). Returns
 * PLACE_* for the first kernel left waiting, PLACE_DONE if none is. */
static int dispatch_level_turns(sim *s, sctx *c, int lvl)
{
    launch *stack[16], **order = stack;
    int n = 0, cap = 16;
    for (launch *l = c->ee_head[lvl]; l; l = l->ee_next) {
        if (n == cap) {
            launch **more = tl_xmalloc((size_t)cap * 2 * sizeof *more);
            memcpy(more, order, (size_t)n * sizeof *more);
            if (order != stack)
                free(order);
            order = more;
            cap *= 2;
        }
        int i = n++;
        for (; i > 0 && turn_before(l, order[i - 1]); i--) /* insertion: a few streams */
            order[i] = order[i - 1];
        order[i] = l;
    }
    int first = PLACE_DONE;
    for (int i = 0; i < n; i++) {
        launch *l = order[i];
        uint64_t groups_before = s->stats.block_groups;
        int r = place_queued(s, c, l);
        if (s->stats.block_groups != groups_before)
            l->st->placing_rounds++;
        if (l->to_dispatch == 0) {
            ee_unlink(s, l);
            /* A PTB launch told to retreat before any worker ran has nothing left. */
            if (l->groups_live == 0 && !l->done)
                launch_complete_later(s, l);
        } else if (first == PLACE_DONE) {
            first = r;
        }
    }
    if (order != stack)
        free(order);
    return first;
}

/* Dispatch one context's EE queues; returns PLACE_* for its first blocked head. */
int dispatch_ctx(sim *s, sctx *c)
{
    while (c->ee_mask) {
        int lvl = __builtin_ctzll(c->ee_mask);
        launch *l = c->ee_head[lvl];
        if (s->p.stream_order && l->ee_next) {
            int r = dispatch_level_turns(s, c, lvl);
            if (c->ee_head[lvl])
                return r == PLACE_DONE ? PLACE_ROOM : r;
            continue;
        }
        uint64_t groups_before = s->stats.block_groups;
        int r = place_queued(s, c, l);
        if (s->stats.block_groups != groups_before)
            l->st->placing_rounds++; /* counted for its turns (stream_order 1) */
        if (l->to_dispatch == 0) {
            ee_pop(s, c, lvl);
            continue;
        }
        return r;
    }
    return PLACE_DONE;
}

/* Arrival of the contexts' oldest head kernels. */
static int ctx_order_arrival(const void *a, const void *b)
{
    const sctx *x = *(const sctx *const *)a, *y = *(const sctx *const *)b;
    uint64_t sx = x->ee_head[__builtin_ctzll(x->ee_mask)]->ee_seq;
    uint64_t sy = y->ee_head[__builtin_ctzll(y->ee_mask)]->ee_seq;
    return sx < sy ? -1 : sx > sy;
}

/* MPS client priority (mps_client_priority 1): the lower value first; 0 on a tie. */
static int ctx_priority_cmp(const void *a, const void *b)
{
    const sctx *x = *(const sctx *const *)a, *y = *(const sctx *const *)b;
    if (x->cfg.mps_priority == y->cfg.mps_priority)
        return 0;
    return x->cfg.mps_priority < y->cfg.mps_priority ? -1 : 1;
}

/* MPS client priority first, then arrival. */
static int ctx_order(const void *a, const void *b)
{
    int c = ctx_priority_cmp(a, b);
    return c ? c : ctx_order_arrival(a, b);
}

/* mps_order 1: the client that placed blocks in fewer dispatch rounds first,
 * then arrival. */
static int ctx_order_turns(const void *a, const void *b)
{
    const sctx *x = *(const sctx *const *)a, *y = *(const sctx *const *)b;
    if (x->placing_rounds != y->placing_rounds)
        return x->placing_rounds < y->placing_rounds ? -1 : 1;
    return ctx_order_arrival(a, b);
}

/* The same after MPS client priority (mps_client_priority 1). */
static int ctx_order_prio_turns(const void *a, const void *b)
{
    int c = ctx_priority_cmp(a, b);
    return c ? c : ctx_order_turns(a, b);
}

void dispatch_unit_multi(sim *s, unit *u)
{
    sctx *stack[16];
    sctx **order = u->n_ctxs <= 16 ? stack : tl_xmalloc((size_t)u->n_ctxs * sizeof *order);
    int n = 0;
    for (int i = 0; i < u->n_ctxs; i++)
        if (u->ctxs[i]->ee_mask)
            order[n++] = u->ctxs[i];
    bool strict = s->p.mps_client_priority != 0;
    if (n > 1) {
        int (*cmp)(const void *, const void *) = strict ? ctx_order : ctx_order_arrival;
        if (s->p.mps_order)
            cmp = strict ? ctx_order_prio_turns : ctx_order_turns;
        qsort(order, (size_t)n, sizeof *order, cmp);
    }
    bool p0_waiting = false;
    for (int i = 0; i < n; i++) {
        sctx *c = order[i];
        if (!c->ee_mask)
            continue;
        if (strict && c->cfg.mps_priority > 0 && p0_waiting)
            continue;
        uint64_t groups_before = s->stats.block_groups;
        int r = dispatch_ctx(s, c);
        if (s->stats.block_groups != groups_before)
            c->placing_rounds++; /* it placed blocks this round (mps_order 1) */
        if ((r == PLACE_ROOM || r == PLACE_LATER) && c->cfg.mps_priority == 0)
            p0_waiting = true;
    }
    if (order != stack)
        free(order);
}
