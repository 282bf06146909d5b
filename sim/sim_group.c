/* Block groups: how a launch's blocks run once placed.
 *
 * A launch's kernel timing is prepared when it enters the hardware (residency:
 * how long a block takes with k of the kernel's blocks on its SM; the shared-memory
 * carveout it needs). The blocks placed together in one dispatch form a group,
 * which runs at its solo rate divided by the slowdown its neighbours cause
 * (contention.c), re-evaluated when they change; a launch alone in its unit with
 * two or more full waves left runs as a wave train (one event for all its
 * waves). The block scheduler that places the blocks is sim_dispatch.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

static uint64_t u64_min(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* The traced kernel's own blocks per SM: its grid spread over the GPU, at most
 * its occupancy (residency and crowding compare a launch's with it). */
uint64_t kernel_bps(const sim *s, uint64_t grid, int occ)
{
    uint64_t sms = (uint64_t)s->gpu.sms;
    return u64_min((grid + sms - 1) / sms, (uint64_t)occ);
}

/* A launch holding fewer of its blocks on an SM than the traced kernel did
 * (a slice, a PTB launch with few workers per SM) runs each block faster:
 * block time scales as 1 - r (1 - k / occupancy) with k its blocks per SM,
 * relative to the kernel's own k (residency_speedup r; sim/README.md,
 * "Residency"). Whole kernels keep their traced time. */
static void scale_for_residency(sim *s, launch *l, int occ, uint64_t grid, uint64_t k_launch)
{
    double r = s->p.residency_speedup;
    uint64_t k_kernel = kernel_bps(s, grid, occ);
    if (k_launch == 0 || k_launch >= k_kernel)
        return;
    double f_kernel = 1 - r * (1 - (double)k_kernel / occ);
    double f_launch = 1 - r * (1 - (double)k_launch / occ);
    l->blk_ns = (tl_ns)((double)l->blk_ns * f_launch / f_kernel + 0.5);
    l->blk_rem = 0;
}

/* The carveout rule (sim/README.md, "Carveout"): the driver configures each
 * launch's SMs with the smallest shared-memory capacity (the H100's
 * choices, KB) that holds the kernel's occupancy without the shared-memory
 * limit, each block taking its shared memory and the reserved 1 KB. With
 * carveout 1 an SM holds blocks of one capacity at a time
 * (experiments/results/hw/placement/); with carveout 2 a kernel joins an SM
 * whose capacity holds what its occupancy takes (sm_fit;
 * experiments/results/hw/carveout_matrix/). */
static int carveout_of(const sim *s, int threads, int regs, const tl_block_cost *k)
{
    static const int kb[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};
    const tl_gpu_props *g = &s->gpu;
    /* without shared memory only the reserved 1 KB a block counts, which
     * never binds before the block limit; a block that does not fit runs one
     * an SM (launch_kernel_prepare) */
    int occ = tl_occupancy(g, threads, regs, 0, NULL);
    if (occ == 0)
        occ = 1;
    long long need = (long long)occ * k->smem;
    if (s->p.carveout == 2 && k->smem <= g->smem_reserved_per_block && threads > 0) {
        /* without shared memory the H100's driver configures 8 KB x 1024 /
         * threads, at most 32 KB (Nsight Compute: 8, 16, 32 and 32 KB for
         * 1024-, 512-, 256- and 64-thread blocks; experiments/results/hw/
         * carveout_matrix/h100/ncu.txt, session13/carveouts.csv) */
        long long least = 8192LL * 1024 / threads;
        if (least > 32 * 1024)
            least = 32 * 1024;
        if (least > need)
            need = least;
    }
    for (size_t i = 0; i < sizeof kb / sizeof kb[0]; i++)
        if ((long long)kb[i] * 1024 >= need && kb[i] * 1024 <= g->smem_per_sm)
            return kb[i];
    return g->smem_per_sm / 1024;
}

void launch_kernel_prepare(sim *s, launch *l)
{
    const tl_op *op = l->op;
    int threads = (int)((uint64_t)op->block[0] * op->block[1] * op->block[2]);
    uint64_t smem = (uint64_t)op->static_smem + op->dynamic_smem;
    int regs = (int)(op->regs > 100000 ? 100000 : op->regs);
    int sm = (int)(smem > (1u << 30) ? (1u << 30) : smem);
    unsigned h = ((unsigned)threads * 2654435761u ^ (unsigned)regs * 40503u ^ (unsigned)sm * 97u);
    shape_ent *e = &s->shapes[(h ^ (h >> 15)) % SHAPE_CACHE];
    int occ;
    if (e->threads == threads && e->regs == regs && e->smem == sm) {
        occ = e->occ;
        l->cost = e->cost;
        l->carveout = e->carveout;
    } else {
        occ = tl_block_cost_of(&s->gpu, threads, regs, sm, &l->cost, NULL);
        l->carveout = s->p.carveout ? carveout_of(s, threads, regs, &l->cost) : -1;
        *e = (shape_ent){ threads, regs, sm, occ, l->carveout, l->cost };
    }
    if (occ == 0) {
        /* The block does not fit this GPU (a trace from a bigger one): run it
         * one block per SM holding the whole SM, and count it. */
        occ = 1;
        s->stats.unfit_kernels++;
    }
    l->occ = occ;
    l->carve_need = -1;
    l->smem_sm = s->gpu.smem_per_sm;
    if (s->p.carveout == 2) /* the shared memory its occupancy takes on an SM (at most
                               32 blocks of an SM's bytes: no overflow) */
        l->carve_need = occ * l->cost.smem;
    uint64_t grid = (uint64_t)op->grid[0] * op->grid[1] * op->grid[2];
    uint64_t per_wave = (uint64_t)occ * (uint64_t)s->gpu.sms;
    tl_ns dur = op->dur_ns > 0 ? op->dur_ns : 0;
    uint64_t waves;
    /* One wave (most kernels): no divisions. Else 32-bit divisions when the
     * operands fit (nearly always): a 64-bit division costs several times
     * more. */
    if (grid <= per_wave) {
        waves = 1;
        l->blk_ns = dur;
        l->blk_rem = 0;
    } else if (grid + per_wave - 1 <= UINT32_MAX) {
        waves = (uint32_t)(grid + per_wave - 1) / (uint32_t)per_wave;
    } else {
        waves = (grid + per_wave - 1) / per_wave;
    }
    if (waves == 1) {
        /* blk_ns, blk_rem set above */
    } else if ((uint64_t)dur <= UINT32_MAX && waves <= UINT32_MAX) {
        l->blk_ns = (uint32_t)dur / (uint32_t)waves;
        l->blk_rem = (uint32_t)dur % (uint32_t)waves;
    } else {
        l->blk_ns = dur / (tl_ns)waves;
        l->blk_rem = dur % (tl_ns)waves;
    }
    uint64_t logical = l->block_end - l->block_begin;
    sctx *c = l->st->c;
    if (l->ptb) {
        l->max_per_sm = (int)u64_min((uint64_t)l->max_per_sm, (uint64_t)occ);
        if (s->p.residency_speedup > 0)
            scale_for_residency(s, l, occ, grid, (uint64_t)l->max_per_sm);
        l->blk_ns += s->p.ptb_block_overhead_ns;
        l->blk_rem = 0;
        l->to_dispatch = u64_min(logical, (uint64_t)l->max_per_sm * (uint64_t)c->cap_sms);
    } else {
        l->max_per_sm = occ;
        l->to_dispatch = logical;
        if (s->p.residency_speedup > 0 && logical < grid) { /* a slice */
            uint64_t sms = (uint64_t)(c->cap_sms > 0 ? c->cap_sms : s->gpu.sms);
            scale_for_residency(s, l, occ, grid, u64_min((logical + sms - 1) / sms, (uint64_t)occ));
        }
    }
    l->churns = s->p.contention.model == TL_CONTENTION_KINDS && l->work == TL_WORK_MEMORY &&
                l->blk_ns < s->p.contention.churn_block_ns;
}

void emit_activity_now(sim *s, group *g, tl_sim_activity_kind kind, bool paused)
{
    launch *l = g->l;
    tl_sim_activity a = {
        .kind = kind, .time = sim_now(s), .ctx = l->st->c->id, .job = l->job,
        .launch = l->id, .tag = l->tag, .blocks = g->blocks, .waves = g->waves, .sms = g->sms,
        .ctx_sms = l->st->c->sms_now, .paused = paused,
    };
    s->act_fn(s->act_arg, &a);
}


/* ---------- groups ---------- */

/* contention.starved_tail: is g partly starved (some of its SMs, not all),
 * so that its free blocks run ahead of its starved ones? Only for an
 * ordinary group (not a wave train, not PTB workers) under the plain KINDS
 * starvation rule. */
static inline bool group_tail_free(const sim *s, const group *g)
{
    const tl_contention_params *cp = &s->p.contention;
    return cp->starved_tail && g->starve > 0 && g->starve < g->sms && g->waves == 1 &&
           !g->l->ptb && cp->model == TL_CONTENTION_KINDS && cp->partial_starve;
}

/* mem_share / cc_share: is g slowed, not starved, beside the co-residents
 * that would starve it? */
static inline bool group_shares(const sim *s, const group *g)
{
    const tl_contention_params *cp = &s->p.contention;
    return g->starve > 0 && (g->l->work == TL_WORK_MEMORY ? cp->mem_share > 0 : cp->cc_share > 0);
}

/* mem_share / cc_share: g's rate when a share f of its SMs is shared with
 * the co-residents that would starve it and it runs at free_sd elsewhere. */
static double group_shared_rate(sim *s, const group *g, double f, double free_sd)
{
    const tl_contention_params *cp = &s->p.contention;
    double block_ns = g->starve_ns / (double)g->starve;
    if (g->l->work == TL_WORK_COMPUTE) /* beside older compute blocks */
        return contention_cc_share_slowdown(cp, f, block_ns, free_sd);
    /* the other launches' compute warps on an SM it shares with them */
    double shared = g->starve < g->sms ? (double)g->starve : (double)g->sms;
    double warps = (double)(g->foreign - g->foreign_mem) / 32.0 / shared;
    return contention_mem_share_slowdown(cp, g->l->churns, f, warps / s->p.crowding_warps,
                                         block_ns, free_sd);
}

/* The rate of a group beside other launches' blocks. */
static double group_slowdown_shared(sim *s, const group *g)
{
    if (s->p.contention.model == TL_CONTENTION_KINDS) {
        const tl_contention_params *cp = &s->p.contention;
        bool shares = group_shares(s, g);
        if (g->starve > 0 && !cp->partial_starve && !shares)
            return contention_kinds_slowdown_memo(&s->p.contention, NULL, true, g->l->work, 0.0, 0.0);
        /* Not memory beside memory: no slowdown, and no divisions. */
        double sd = 1.0;
        if (g->l->work == TL_WORK_MEMORY && g->foreign_mem > 0) {
            double slots = (double)g->sms * (double)s->gpu.max_threads_per_sm;
            double fs = (double)g->blocks * (double)g->l->cost.threads / slots;
            if (!s->cmemo)
                s->cmemo = tl_xcalloc(1, sizeof *s->cmemo);
            sd = contention_kinds_slowdown_memo(&s->p.contention, s->cmemo, false, g->l->work,
                                                (double)g->foreign_mem / slots, fs);
        }
        /* compute beside memory, and (cc_share) beside younger compute blocks */
        int64_t beside = (cp->compute_share > 0 ? g->mem_long : 0) + (cp->cc_share > 0 ? g->young : 0);
        if (g->churn > 0 || beside > 0)
            sd = contention_compute_beside_memory(cp, (double)g->churn / g->sms,
                                                  (double)beside / g->sms, (double)g->l->blk_ns);
        if (group_tail_free(s, g))
            return sd; /* the free blocks' rate; the starved ones lag (g->lag) */
        if (shares) /* slower, not starved, where it shares (mem_share, cc_share) */
            return group_shared_rate(s, g, (double)g->starve / g->sms, sd);
        return g->starve > 0 ? contention_partly_starved(&s->p.contention, (double)g->starve / g->sms, sd)
                             : sd;
    }
    double slots = (double)g->sms * (double)s->gpu.max_threads_per_sm;
    return contention_slowdown(&s->p.contention, (double)g->foreign / slots);
}

/* A group alone on its SMs (most of them) runs at its solo rate (times its
 * crowding): no call. */
static inline double group_slowdown(sim *s, const group *g)
{
    double f = g->crowd;
    if (g->gbps > 0) { /* dram_share: the unit's demand over the capacity */
        double share = g->u->mem_gbps / contention_dram_gbps(s->gpu.sms);
        if (share > 1)
            f *= share;
    }
    if (g->foreign <= 0 || g->sms <= 0)
        return f;
    return f * group_slowdown_shared(s, g);
}

/* dram_share (sim/README.md): a running memory-bound group adds (sign 1) or
 * takes back (-1) its demand in its unit; every other memory-bound group there
 * re-evaluates its rate at the end of the instant. */
static void dram_share_update(sim *s, group *g, int sign)
{
    if (!s->p.dram_share || g->l->work != TL_WORK_MEMORY)
        return;
    unit *u = g->u;
    if (sign > 0) {
        g->gbps = contention_dram_gbps(g->sms);
        u->mem_gbps += g->gbps;
    } else {
        u->mem_gbps -= g->gbps;
        if (u->mem_gbps < 1e-6)
            u->mem_gbps = 0;
        g->gbps = 0;
    }
    for (group *o = u->groups; o; o = o->next)
        if (o != g && o->gbps > 0)
            group_rate_dirty(s, o);
}

static void group_end_ev(void *ctx, void *arg, uint64_t u);

/* ceil(remaining x slowdown) in ns, capped. Exactly ceil(): below 2^53 the
 * truncation is exact and corrected up when short; from there on every
 * double is an integer. (A call to libm's ceil is most of this function's
 * cost without SSE4.1.) */
static tl_ns delay_of(const group *g)
{
    double t = g->remaining * g->slowdown;
    if (!(t < (double)SIM_MAX_DELAY_NS))
        return SIM_MAX_DELAY_NS;
    tl_ns n = (tl_ns)t;
    return (double)n < t ? n + 1 : n;
}

/* The group's progress from last_t to now at its rate: its remaining work,
 * and (starved_tail) how far its starved blocks fall behind meanwhile. */
static inline void group_advance(sim *s, group *g, tl_ns now)
{
    double dt = (double)(now - g->last_t), done = dt / g->slowdown;
    g->remaining -= done;
    if (g->remaining < 0)
        g->remaining = 0;
    if (g->tail_free) {
        double behind = done - dt * g->tail_rate;
        if (behind > 0)
            g->lag += behind;
    }
    g->last_t = now;
}

/* starved_tail: the progress (solo ns per ns) of a tail-free group's starved
 * blocks, its free ones running at slowdown: starved_rate, or with mem_share /
 * cc_share the rate of a block on an SM it shares (f = 1). */
static double group_tail_rate(sim *s, const group *g, double slowdown)
{
    if (!group_shares(s, g))
        return s->p.contention.starved_rate;
    return 1.0 / (slowdown * group_shared_rate(s, g, 1.0, 1.0));
}

/* Its rate now, and whether that is a partly starved group's free rate. */
static inline void group_set_rate(sim *s, group *g)
{
    g->slowdown = group_slowdown(s, g);
    g->tail_free = group_tail_free(s, g);
    g->tail_rate = g->tail_free ? group_tail_rate(s, g, g->slowdown) : 0;
}

static void group_schedule(sim *s, group *g)
{
    g->end_at = sim_now(s) + delay_of(g);
    g->ev = tl_engine_at_inline(&s->eng, g->end_at, group_end_ev, s, g, 0);
}

/* Move a running group's end event after its remaining work or rate changed
 * (left alone when the time did not move). Moving it in the queue orders it
 * exactly as cancelling and scheduling it again would. */
static void group_reschedule(sim *s, group *g)
{
    tl_ns end = sim_now(s) + delay_of(g);
    if (g->ev && end == g->end_at)
        return;
    g->end_at = end;
    if (!tl_engine_move_inline(&s->eng, g->ev, end))
        g->ev = tl_engine_at_inline(&s->eng, end, group_end_ev, s, g, 0);
}

static void group_release(sim *s, group *g)
{
    g->next = s->gfree;
    s->gfree = g;
}

/* ---------- wave trains ----------
 *
 * When a launch is the only kernel in its unit's EE queues and has at least
 * two full waves left for a placement, the placement becomes a wave train:
 * the same blocks re-run back to back on the same SMs, one event for all the
 * waves, which is exactly what per-wave dispatch would do as long as nothing
 * else wants the room. The launch stays at the head of its EE queue with the
 * train's later blocks reserved, so nothing behind it dispatches early. A
 * train is cut back to its current wave (train_break) as soon as that may no
 * longer hold: a kernel enters an EE queue of the unit, the launch can place
 * blocks elsewhere, or the train's contention rate changes. Per-wave
 * dispatch then resumes at the current wave's end. */

static void group_reschedule(sim *s, group *g);

static void train_break(sim *s, group *g)
{
    if (g->waves <= 1)
        return;
    launch *l = g->l;
    tl_ns now = sim_now(s);
    double rem = g->remaining;
    bool running = !g->paused && g->ev;
    if (running)
        rem -= (double)(now - g->last_t) / g->slowdown;
    if (rem < 0)
        rem = 0;
    double w = (double)g->wave_ns, extra = (double)g->extra;
    double done = extra + (double)g->waves * w - rem;
    /* the wave in progress: the first whose end is at or after 'done' */
    uint64_t i = 0;
    if (done > extra + w)
        i = (uint64_t)ceil((done - extra) / w) - 1;
    if (i > g->waves - 1)
        i = g->waves - 1;
    double cur = extra + (double)(i + 1) * w - done;
    uint64_t b = g->blocks;
    l->to_dispatch -= i * b;
    l->reserved -= (uint64_t)(g->waves - 1) * b;
    l->blocks_done += i * b;
    job_acct *j = acct_job(s, l->job);
    if (j)
        j->blocks += i * b;
    g->waves = 1;
    g->extra = 0;
    g->remaining = cur > 0 ? cur : 0;
    l->n_trains--;
    g->u->n_trains--;
    s->stats.train_breaks++;
    if (running) {
        g->last_t = now;
        group_reschedule(s, g);
    }
}

static void group_retire(sim *s, group *g);

/* Break l's trains; a train whose current wave ends exactly now leaves its
 * SMs at once (as the wave's end event would have, before this dispatch).
 * Returns whether SMs were freed. Never completes l: it has blocks left. */
bool trains_break_launch(sim *s, launch *l)
{
    bool freed = false;
    group *g = l->n_trains ? l->st->c->u->groups : NULL;
    while (g && l->n_trains) {
        group *next = g->next;
        if (g->l == l && g->waves > 1) {
            train_break(s, g);
            if (!g->paused && g->remaining <= 0) {
                tl_engine_cancel_inline(&s->eng, g->ev);
                g->ev = 0;
                l->blocks_done += g->blocks;
                job_acct *j = acct_job(s, l->job);
                if (j)
                    j->blocks += g->blocks;
                group_retire(s, g);
                freed = true;
            }
        }
        g = next;
    }
    return freed;
}

void trains_break_unit(sim *s, unit *u)
{
    for (group *g = u->n_trains ? u->groups : NULL; g && u->n_trains; g = g->next)
        train_break(s, g);
}

/* Is l the only kernel in its unit's EE queues? */
bool alone_in_unit(const unit *u, const launch *l)
{
    if (l->ee_next)
        return false;
    for (int i = 0; i < u->n_ctxs; i++) {
        const sctx *c = u->ctxs[i];
        if (c == l->st->c) {
            if (c->ee_mask != (1ull << l->st->level) || c->ee_head[l->st->level] != l)
                return false;
        } else if (c->ee_mask) {
            return false;
        }
    }
    return true;
}

/* starved_tail: once nothing starves g, its blocks end together when its
 * lagging ones do: the lag becomes work of the whole group. */
static inline void tail_catch_up(sim *s, group *g)
{
    if (g->lag > 0 && !g->tail_free && g->starve == 0) {
        g->remaining += g->lag;
        g->lag = 0;
    }
}

/* Apply rate changes batched during this instant. Groups that ended in the
 * meantime (l == NULL) are released here. */
void groups_reevaluate(sim *s)
{
    group *g = s->dirty_groups;
    s->dirty_groups = NULL;
    while (g) {
        group *next = g->dirty_next;
        g->dirty = false;
        if (!g->l) {
            group_release(s, g);
        } else if (!g->paused && g->ev) {
            double sd = group_slowdown(s, g);
            bool moved = sd != g->slowdown;
            if (moved) {
                train_break(s, g); /* later waves would start at their own rate */
                if (s->p.contention.starved_tail) /* one wave now: may run ahead of its starved blocks */
                    sd = group_slowdown(s, g);
            }
            bool tail_free = group_tail_free(s, g);
            double tail_rate = tail_free ? group_tail_rate(s, g, sd) : 0;
            /* starved_tail: a group that stops or starts running ahead of its
             * starved blocks, whose starved blocks' rate moved, or whose lag is
             * due, is re-timed at its rate */
            if (moved || tail_free != g->tail_free || tail_rate != g->tail_rate ||
                (g->lag > 0 && !tail_free)) {
                group_advance(s, g, sim_now(s));
                g->slowdown = sd;
                g->tail_free = tail_free;
                g->tail_rate = tail_rate;
                tail_catch_up(s, g);
                group_reschedule(s, g);
            }
        }
        g = next;
    }
}

void group_pause(sim *s, group *g)
{
    if (g->paused)
        return;
    tl_ns now = sim_now(s);
    if (g->ev) {
        group_advance(s, g, now);
        tl_engine_cancel_inline(&s->eng, g->ev);
        g->ev = 0;
    }
    g->last_t = now;
    g->paused = true;
    dram_share_update(s, g, -1);
    emit_activity(s, g, TL_SIM_RUN_STOP, true);
}

void group_resume(sim *s, group *g)
{
    if (!g->paused)
        return;
    g->paused = false;
    g->last_t = sim_now(s);
    dram_share_update(s, g, 1);
    group_set_rate(s, g);
    group_schedule(s, g);
    emit_activity(s, g, TL_SIM_RUN_START, true);
}

/* PTB: hand the group's workers their next logical blocks. */
static void ptb_claim(launch *l, group *g)
{
    uint64_t total = l->block_end - l->block_begin;
    uint64_t c = u64_min(g->blocks, total - l->claimed);
    l->claimed += c;
    g->round_blocks = c;
    g->remaining = (double)l->blk_ns;
}

void group_start(sim *s, group *g)
{
    launch *l = g->l;
    tl_ns now = sim_now(s);
    if (!l->started) {
        l->started = true;
        l->start_ns = now;
        slice_launch_started(s, l);
    }
    if (l->ptb) {
        ptb_claim(l, g);
    } else {
        g->wave_ns = l->blk_ns;
        g->extra = l->groups_started == 0 ? l->blk_rem : 0;
        g->remaining = (double)g->extra + (double)g->waves * (double)g->wave_ns;
    }
    l->groups_started++;
    l->groups_live++;
    g->last_t = now;
    dram_share_update(s, g, 1);
    group_set_rate(s, g);
    group_schedule(s, g);
    s->stats.block_groups++;
    emit_activity(s, g, TL_SIM_RUN_START, false);
}

/* The group's blocks leave their SMs. */
static void group_retire(sim *s, group *g)
{
    launch *l = g->l;
    unit *un = g->u;
    emit_activity(s, g, TL_SIM_RUN_STOP, false);
    if (!g->paused)
        dram_share_update(s, g, -1);
    sm_remove(s, g);
    if (g->prev)
        g->prev->next = g->next;
    else
        un->groups = g->next;
    if (g->next)
        g->next->prev = g->prev;
    l->groups_live--;
    g->l = NULL;
    if (!g->dirty)
        group_release(s, g);
    unit_dirty(s, un);
}

/* Wave recycling: when a group's blocks end and its launch is the first in
 * line for the room (head of the highest non-empty level of the only context
 * with queued work in its unit) with at least as many blocks left, per-wave
 * dispatch would put the same number of its blocks back on those SMs: restart
 * the group in place instead of leaving and re-placing (same SMs, same
 * neighbours, same rate). Room freed elsewhere at the same instant is still
 * dispatched by the flush. */
static bool recycle(sim *s, group *g)
{
    launch *l = g->l;
    sctx *c = l->st->c;
    unit *u = g->u;
    if (!l->in_ee || l->ptb || l->retreat || l->to_dispatch - l->reserved < g->blocks)
        return false;
    int lvl = l->st->level;
    if (c->ee_head[lvl] != l || (c->ee_mask & ((1ull << lvl) - 1)))
        return false;
    if (s->p.stream_order && l->ee_next)
        return false; /* another stream's kernel of its level takes its turn */
    for (int i = 0; i < u->n_ctxs && u->n_ctxs > 1; i++)
        if (u->ctxs[i] != c && u->ctxs[i]->ee_mask)
            return false;
    if (s->p.coalesce_groups > 0 && l->groups_live >= (uint32_t)s->p.coalesce_groups)
        return false; /* let coalescing see it */
    emit_activity(s, g, TL_SIM_RUN_STOP, false);
    l->to_dispatch -= g->blocks;
    l->last_place = sim_now(s);
    g->waves = 1;
    if (l->to_dispatch - l->reserved >= g->blocks && alone_in_unit(u, l)) {
        uint64_t more = (l->to_dispatch - l->reserved) / g->blocks;
        if (more > UINT32_MAX - 1)
            more = UINT32_MAX - 1;
        g->waves = 1 + (uint32_t)more;
        l->reserved += more * g->blocks;
        l->n_trains++;
        u->n_trains++;
    }
    g->wave_ns = l->blk_ns;
    g->extra = 0;
    g->remaining = (double)g->waves * (double)g->wave_ns;
    l->groups_started++;
    g->last_t = sim_now(s);
    if (s->p.contention.model == TL_CONTENTION_KINDS) {
        sm_renew_age(s, g, ++s->next_age);
        group_set_rate(s, g);
    }
    group_schedule(s, g);
    s->stats.block_groups++;
    s->stats.recycled++;
    emit_activity(s, g, TL_SIM_RUN_START, false);
    if (l->to_dispatch == 0)
        unit_dirty(s, u); /* leaves its EE queue: the next kernel may get leftovers */
    return true;
}

/* starved_tail: g's free blocks are done, its starved ones lag. Those on SMs
 * where something still starves them stay as g (their lag its work, the
 * others' room freed); if nothing starves it now, all of g waits for the lag.
 * Returns whether g goes on. */
static bool tail_end(sim *s, group *g)
{
    launch *l = g->l;
    tl_ns now = sim_now(s);
    group_advance(s, g, now);
    if (g->lag <= 0)
        return false;
    if (g->starve > 0) {
        emit_activity(s, g, TL_SIM_RUN_STOP, false);
        uint64_t kept = sm_keep_starved(s, g), gone = g->blocks - kept;
        l->blocks_done += gone;
        job_acct *j = acct_job(s, l->job);
        if (j)
            j->blocks += gone;
        g->blocks = kept;
        emit_activity(s, g, TL_SIM_RUN_START, false);
        unit_dirty(s, g->u); /* the room its free blocks left */
    }
    g->remaining = g->lag;
    g->lag = 0;
    group_set_rate(s, g);
    group_schedule(s, g);
    return true;
}

static void group_end_ev(void *ctx, void *arg, uint64_t u)
{
    sim *s = ctx;
    group *g = arg;
    launch *l = g->l;
    unit *un = g->u;
    job_acct *j = acct_job(s, l->job);
    g->ev = 0;
    if (s->p.contention.starved_tail && (g->lag > 0 || g->tail_free) && tail_end(s, g))
        return;
    if (l->ptb) {
        l->blocks_done += g->round_blocks;
        if (j)
            j->blocks += g->round_blocks;
        if (!l->retreat && l->claimed < l->block_end - l->block_begin) {
            ptb_claim(l, g);
            g->last_t = sim_now(s);
            group_schedule(s, g);
            return;
        }
    } else {
        uint64_t b = g->blocks * g->waves;
        if (g->waves > 1) {
            uint64_t later = (uint64_t)(g->waves - 1) * g->blocks;
            l->to_dispatch -= later;
            l->reserved -= later;
            l->n_trains--;
            un->n_trains--;
        }
        l->blocks_done += b;
        if (j)
            j->blocks += b;
        if (recycle(s, g))
            return;
    }
    group_retire(s, g);
    if (l->to_dispatch == 0 && l->groups_live == 0)
        launch_complete(s, l);
}

group *group_new(sim *s, launch *l, unit *u)
{
    group *g = s->gfree;
    if (g)
        s->gfree = g->next;
    else
        g = tl_xmalloc(sizeof *g);
    /* every field, without a memset (hot path) */
    /* mixed once here: class hashes and masks use it as it is */
    uint64_t x = ++s->next_group_uid * 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    g->uid = x ^ (x >> 29);
    g->l = l;
    g->u = u;
    g->prev = NULL;
    g->dirty_next = NULL;
    g->dirty = g->paused = false;
    g->sms = 0;
    g->blocks = 0;
    g->waves = 1;
    g->wave_ns = g->extra = 0;
    g->foreign = g->foreign_mem = g->starve = g->churn = g->mem_long = g->young = 0;
    g->starve_ns = 0;
    g->age = ++s->next_age;
    g->slowdown = 1.0;
    g->crowd = 1.0;
    g->gbps = 0;
    g->remaining = 0;
    g->last_t = 0;
    g->ev = 0;
    g->round_blocks = 0;
    g->lag = 0;
    g->tail_free = false;
    g->tail_rate = 0;
    g->next = u->groups;
    if (u->groups)
        u->groups->prev = g;
    u->groups = g;
    return g;
}
