/* SM classes: SMs counted by identical residency, never iterated one by one.
 *
 * A class is (pool, n SMs, the block groups resident on each of them with
 * their blocks per SM). Placing a group on m SMs of a class splits it into
 * the m SMs that receive the group and the n - m that do not; removing a
 * group can make two classes identical, which are then merged. Resource use,
 * contention (foreign threads) and residency accounting (SMs per launch, job
 * and context) are all updated per class, i.e. in bulk. */
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

/* An entry's share of its class's hash: order-independent (summed), and
 * different for the same group with another number of blocks per SM (the
 * uid is mixed at creation; odd multipliers keep it apart). */
static inline uint64_t ent_hash(const group *g, int bps)
{
    return g->uid * (2 * (uint64_t)bps + 1);
}

/* Every resource of an SM free. */
static void class_empty(const sim *s, smclass *c)
{
    c->n_ents = 0;
    c->free_thr = s->gpu.max_threads_per_sm;
    c->free_regs = s->gpu.regs_per_sm;
    c->free_smem = s->gpu.smem_per_sm;
    c->free_blocks = s->gpu.max_blocks_per_sm;
    c->hash = 0;
}

smclass *sm_class_new(const sim *s, int pool, int n)
{
    smclass *c = tl_xcalloc(1, sizeof *c);
    c->pool = pool;
    c->n = n;
    class_empty(s, c);
    return c;
}

void sm_class_free(smclass *c)
{
    if (c) {
        free(c->ents);
        free(c);
    }
}

static inline void unit_push_class(unit *u, smclass *c)
{
    if (u->n_cls == u->cap_cls) {
        u->cap_cls = u->cap_cls ? u->cap_cls * 2 : 8;
        u->cls = tl_xrealloc(u->cls, (size_t)u->cap_cls * sizeof *u->cls);
    }
    u->cls[u->n_cls++] = c;
}

void unit_add_pool(sim *s, unit *u, int pool, int sms)
{
    u->pools = tl_xrealloc(u->pools, (size_t)(u->n_pools + 1) * sizeof *u->pools);
    u->pools[u->n_pools++].sms = sms;
    unit_push_class(u, sm_class_new(s, pool, sms));
}

/* Classes are recycled through a free list, their entry arrays with them:
 * splits and merges happen about once per kernel. */
void sm_class_release(sim *s, smclass *c)
{
    c->next_free = s->cfree;
    s->cfree = c;
}

static smclass *class_clone(sim *s, const smclass *c, int n)
{
    smclass *t = s->cfree;
    cls_ent *ents = NULL;
    int cap = 0;
    if (t) {
        s->cfree = t->next_free;
        ents = t->ents;
        cap = t->cap_ents;
    } else {
        t = tl_xmalloc(sizeof *t);
    }
    *t = *c;
    t->n = n;
    t->next_free = NULL;
    if (cap < c->n_ents + 1) {
        cap = c->n_ents + 4;
        ents = tl_xrealloc(ents, (size_t)cap * sizeof *ents);
    }
    t->ents = ents;
    t->cap_ents = cap;
    for (int i = 0; i < c->n_ents; i++) /* a handful: no memcpy call */
        ents[i] = c->ents[i];
    return t;
}

int sm_launch_blocks_in(const smclass *c, const launch *l)
{
    int b = 0;
    for (int i = 0; i < c->n_ents; i++)
        if (c->ents[i].l == l)
            b += c->ents[i].bps;
    return b;
}

bool sm_ctx_present(const smclass *c, const sctx *ctx)
{
    for (int i = 0; i < c->n_ents; i++)
        if (c->ents[i].ctx == ctx)
            return true;
    return false;
}

job_acct *acct_job_grow(sim *s, int job)
{
    if (job < 0 || job >= (1 << 20))
        return NULL;
    if (job >= s->n_jobs) {
        int n = s->n_jobs ? s->n_jobs : 8;
        while (n <= job)
            n *= 2;
        s->jobs = tl_xrealloc(s->jobs, (size_t)n * sizeof *s->jobs);
        memset(s->jobs + s->n_jobs, 0, (size_t)(n - s->n_jobs) * sizeof *s->jobs);
        s->n_jobs = n;
    }
    return &s->jobs[job];
}

static inline bool unit_running(const sim *s, const unit *u)
{
    return s->active == u && !s->switching;
}

/* What sm_place learns from a class's residents: is the launch, job or
 * context of the new group already there (its SM counts do not change). */
enum { HERE_L = 1, HERE_J = 2, HERE_C = 4 };

/* The new group g (entry ne, m SMs) meets the residents of class c:
 * contention counts both ways. Returns HERE_* flags. */
static unsigned place_beside(sim *s, const smclass *c, group *g, const cls_ent *ne, int m)
{
    const launch *l = ne->l;
    int work = ne->work;
    unsigned here = 0;
    int64_t my_thr = (int64_t)m * ne->bps * ne->thr;
    int64_t foreign = 0, foreign_mem = 0, starve = 0, churn = 0, mem_long = 0;
    double starve_ns = 0;
    int64_t young = 0;
    for (const cls_ent *e = c->ents, *end = c->ents + c->n_ents; e < end; e++) {
        if (e->l == l) {
            here |= HERE_L;
        } else {
            /* every resident is older than g, which is being placed */
            group *eg = e->g;
            int64_t e_thr = (int64_t)m * e->bps * e->thr;
            foreign += e_thr;
            eg->foreign += my_thr;
            if (e->work == TL_WORK_MEMORY)
                foreign_mem += e_thr;
            if (work == TL_WORK_MEMORY)
                eg->foreign_mem += my_thr;
            if (contention_starves(s, work, g->age, e->work, eg->age)) {
                starve += m;
                starve_ns += (double)m * (double)e->l->blk_ns;
                if (work == TL_WORK_COMPUTE)
                    eg->young += m; /* g, younger, beside e */
            }
            if (contention_starves(s, e->work, eg->age, work, g->age)) {
                eg->starve += m;
                eg->starve_ns += (double)m * (double)l->blk_ns;
                if (e->work == TL_WORK_COMPUTE)
                    young += m;
            }
            if (e->l->churns && work == TL_WORK_COMPUTE)
                churn += m;
            if (l->churns && e->work == TL_WORK_COMPUTE)
                eg->churn += m;
            if (e->work == TL_WORK_MEMORY && !e->l->churns && work == TL_WORK_COMPUTE)
                mem_long += m;
            if (work == TL_WORK_MEMORY && !l->churns && e->work == TL_WORK_COMPUTE)
                eg->mem_long += m;
            group_rate_dirty(s, eg);
        }
        if (e->job == ne->job)
            here |= HERE_J;
        if (e->ctx == ne->ctx)
            here |= HERE_C;
    }
    g->foreign += foreign;
    g->foreign_mem += foreign_mem;
    g->starve += starve;
    g->starve_ns += starve_ns;
    g->young += young;
    g->churn += churn;
    g->mem_long += mem_long;
    return here;
}

/* Append entry ne to class c and charge its blocks' resources. */
static inline void class_push_ent(smclass *c, const cls_ent *ne, const tl_block_cost *k)
{
    if (c->n_ents == c->cap_ents) {
        c->cap_ents = c->cap_ents ? c->cap_ents * 2 : 4;
        c->ents = tl_xrealloc(c->ents, (size_t)c->cap_ents * sizeof *c->ents);
    }
    c->ents[c->n_ents++] = *ne;
    int bps = ne->bps;
    c->free_thr -= bps * k->threads;
    c->free_regs -= bps * k->regs;
    c->free_smem -= bps * k->smem;
    c->free_blocks -= bps;
    c->hash += ent_hash(ne->g, bps);
}

/* The pieces of one placement share the launch's figures, and the SM
 * counts of its launch, job and context change at one instant, so the
 * accounting takes the sum of the pieces (the same integrals). */
void sm_place(sim *s, unit *u, group *g, const sm_piece *pieces, int np)
{
    launch *l = g->l;
    sctx *ctx = l->st->c;
    cls_ent ne = { g, l, ctx, l->job, l->cost.threads, 0, l->work };
    int add_l = 0, add_j = 0, add_c = 0, sms = 0;
    for (const sm_piece *p = pieces, *pend = pieces + np; p != pend; p++) {
        int m = p->m;
        smclass *c = u->cls[p->ci];
        if (m < c->n) {
            smclass *t = class_clone(s, c, m);
            c->n -= m;
            unit_push_class(u, t);
            c = t;
        }
        ne.bps = p->bps;
        /* an empty class (the common case) has no one to meet */
        unsigned here = c->n_ents ? place_beside(s, c, g, &ne, m) : 0;
        class_push_ent(c, &ne, &l->cost);
        sms += m;
        add_l += here & HERE_L ? 0 : m;
        add_j += here & HERE_J ? 0 : m;
        add_c += here & HERE_C ? 0 : m;
    }
    g->sms += sms;
    if (unit_running(s, u)) {
        if (add_l)
            acct_launch_sms(s, l, add_l);
        if (add_j)
            acct_job_sms(s, ne.job, add_j);
    }
    ctx->sms_now += add_c;
}

/* sm_place on an idle unit of one pool: its one class (index 0) is empty and
 * holds every SM. The group takes bps_hi blocks on m_hi SMs and bps_lo on the
 * rest (may be 0); with no one to meet, the launch, job and context gain
 * every SM placed. About half the placements of a shared run are on an idle
 * unit, and most of those groups leave before another group is placed beside
 * them: the classes wait (unit.solo) until something reads them. */
void sm_place_idle(sim *s, unit *u, group *g, int m_hi, int bps_hi, int bps_lo)
{
    launch *l = g->l;
    int n = u->cls[0]->n;
    int sms = (m_hi > 0 ? m_hi : 0) + (bps_lo > 0 && n > m_hi ? n - m_hi : 0);
    u->solo = g;
    u->solo_m_hi = m_hi;
    u->solo_bps_hi = bps_hi;
    u->solo_bps_lo = bps_lo;
    g->sms += sms;
    if (sms && unit_running(s, u)) {
        acct_launch_sms(s, l, sms);
        acct_job_sms(s, l->job, sms);
    }
    l->st->c->sms_now += sms;
}

/* The classes sm_place_idle defers: m_hi SMs split off into a new last
 * class, as sm_place splits a class, holding bps_hi blocks each; the rest
 * keep bps_lo (if any). The same classes, in the same order, as sm_place
 * with those pieces. */
void sm_solo_build(sim *s, unit *u)
{
    group *g = u->solo;
    launch *l = g->l;
    smclass *k = u->cls[0];
    cls_ent ne = { g, l, l->st->c, l->job, l->cost.threads, 0, l->work };
    u->solo = NULL;
    if (u->solo_m_hi > 0) {
        smclass *t = class_clone(s, k, u->solo_m_hi);
        k->n -= u->solo_m_hi;
        unit_push_class(u, t);
        ne.bps = u->solo_bps_hi;
        class_push_ent(t, &ne, &l->cost);
    }
    if (u->solo_bps_lo > 0 && k->n > 0) {
        ne.bps = u->solo_bps_lo;
        class_push_ent(k, &ne, &l->cost);
    }
}

static bool class_equal(const smclass *a, const smclass *b)
{
    if (a->pool != b->pool || a->n_ents != b->n_ents)
        return false;
    for (int i = 0; i < a->n_ents; i++) {
        bool found = false;
        for (int j = 0; j < b->n_ents && !found; j++)
            found = b->ents[j].g == a->ents[i].g && b->ents[j].bps == a->ents[i].bps;
        if (!found)
            return false;
    }
    return true;
}

/* Merge classes that became identical into the one of lowest index, keeping
 * the order of the others. Classes are pairwise distinct before a removal,
 * so a set of identical classes holds at most one that did not lose an
 * entry: looking from each touched class for its equals gives the same
 * merges as comparing every pair. */
static void merge_classes(sim *s, unit *u)
{
    int n = u->n_cls;
    smclass **cls = u->cls;
    bool merged = false;
    for (int i = 0; i < n; i++) {
        smclass *t = cls[i];
        if (!t || !t->touched)
            continue;
        t->touched = false;
        /* A lower equal cannot be touched (it would have taken t already):
         * it keeps the SMs. Otherwise t keeps them. */
        smclass *k = t;
        uint64_t h = t->hash;
        for (smclass **bp = cls, **bend = cls + i; bp != bend; bp++) {
            smclass *b = *bp;
            if (b && b->hash == h && class_equal(b, t)) {
                k = b;
                k->n += t->n;
                sm_class_release(s, t);
                cls[i] = NULL;
                merged = true;
                break;
            }
        }
        for (smclass **bp = cls + i + 1, **bend = cls + n; bp != bend; bp++) {
            smclass *b = *bp;
            if (b && b->hash == h && class_equal(k, b)) {
                k->n += b->n;
                b->touched = false;
                sm_class_release(s, b);
                *bp = NULL;
                merged = true;
            }
        }
    }
    if (merged) {
        int w = 0;
        for (int i = 0; i < n; i++)
            if (cls[i])
                cls[w++] = cls[i];
        u->n_cls = w;
    }
}

/* g is the unit's only live group: every class of its pool holds g alone,
 * so the pool goes back to one empty class, the first of the pool (what
 * removing g class by class and merging would give; SM counts change at one
 * instant, so the accounting takes them in one step). */
static void remove_only_group(sim *s, unit *u, group *g)
{
    launch *l = g->l;
    int pool = 0;
    smclass *kept;
    if (u->n_pools == 1) { /* every class is of the pool: the first stays */
        kept = u->cls[0];
        for (smclass **cp = u->cls + 1, **cend = u->cls + u->n_cls; cp != cend; cp++)
            sm_class_release(s, *cp);
        u->n_cls = 1;
    } else {
        pool = -1;
        for (int ci = 0; ci < u->n_cls && pool < 0; ci++)
            if (u->cls[ci]->n_ents) /* only g's classes have entries */
                pool = u->cls[ci]->pool;
        kept = NULL;
        int w = 0;
        for (int ci = 0; ci < u->n_cls; ci++) {
            smclass *c = u->cls[ci];
            if (c->pool == pool) {
                if (kept) {
                    sm_class_release(s, c);
                    continue;
                }
                kept = c;
            }
            u->cls[w++] = c;
        }
        u->n_cls = w;
    }
    kept->n = u->pools[pool].sms;
    class_empty(s, kept);
    if (unit_running(s, u)) {
        acct_launch_sms(s, l, -g->sms);
        acct_job_sms(s, l->job, -g->sms);
    }
    l->st->c->sms_now -= g->sms;
}

/* g's entry in class c, NULL if g has no blocks on c's SMs. */
static inline cls_ent *entry_of(smclass *c, const group *g)
{
    for (cls_ent *e = c->ents, *end = c->ents + c->n_ents; e != end; e++)
        if (e->g == g)
            return e;
    return NULL;
}

/* The lone group of an idle unit whose classes were never built leaves:
 * its one class is empty and holds every SM already, as remove_only_group
 * would leave it; only the accounting changes. */
static void remove_solo(sim *s, unit *u, group *g)
{
    launch *l = g->l;
    u->solo = NULL;
    if (unit_running(s, u)) {
        acct_launch_sms(s, l, -g->sms);
        acct_job_sms(s, l->job, -g->sms);
    }
    l->st->c->sms_now -= g->sms;
}

/* g is leaving class c while staying elsewhere (sm_keep_starved): its own
 * contention counts lose the co-residents of c's SMs (place_beside's, undone). */
static void forget_residents(const sim *s, group *g, const smclass *c)
{
    int work = g->l->work, n = c->n;
    for (const cls_ent *o = c->ents, *end = c->ents + c->n_ents; o < end; o++) {
        if (o->l == g->l)
            continue;
        int64_t o_thr = (int64_t)n * o->bps * o->thr;
        g->foreign -= o_thr;
        if (o->work == TL_WORK_MEMORY)
            g->foreign_mem -= o_thr;
        if (o->work == TL_WORK_COMPUTE && contention_starves(s, o->work, o->g->age, work, g->age))
            g->young -= n;
        if (o->l->churns && work == TL_WORK_COMPUTE)
            g->churn -= n;
        if (o->work == TL_WORK_MEMORY && !o->l->churns && work == TL_WORK_COMPUTE)
            g->mem_long -= n;
    }
}

/* g's entry e leaves class c: the class frees its blocks' resources, and
 * the co-residents lose g's contention counts. Adds the class's SMs to
 * sub_l / sub_j / sub_c where g's launch / job / context is not left there. */
static inline void class_drop(sim *s, smclass *c, cls_ent *e, const group *g, int *sub_l,
                              int *sub_j, int *sub_c)
{
    const launch *l = g->l;
    const sctx *ctx = l->st->c;
    int job = l->job, work = l->work;
    int thr = l->cost.threads;
    cls_ent *end = c->ents + c->n_ents;
    int bps = e->bps, n = c->n;
    *e = *--end;
    c->n_ents--;
    c->free_thr += bps * thr;
    c->free_regs += bps * l->cost.regs;
    c->free_smem += bps * l->cost.smem;
    c->free_blocks += bps;
    c->hash -= g->uid * (2 * (uint64_t)bps + 1); /* ent_hash */
    c->touched = true;
    int64_t my_thr = (int64_t)n * bps * thr;
    bool l_here = false, j_here = false, c_here = false;
    for (e = c->ents; e < end; e++) {
        if (e->l == l) {
            l_here = true;
        } else {
            group *eg = e->g;
            eg->foreign -= my_thr;
            if (work == TL_WORK_MEMORY)
                eg->foreign_mem -= my_thr;
            if (contention_starves(s, e->work, eg->age, work, g->age)) {
                eg->starve -= n;
                eg->starve_ns -= (double)n * (double)l->blk_ns;
            }
            if (work == TL_WORK_COMPUTE && contention_starves(s, work, g->age, e->work, eg->age))
                eg->young -= n; /* g, younger, leaves e's SMs */
            if (l->churns && e->work == TL_WORK_COMPUTE)
                eg->churn -= n;
            if (work == TL_WORK_MEMORY && !l->churns && e->work == TL_WORK_COMPUTE)
                eg->mem_long -= n;
            group_rate_dirty(s, eg);
        }
        j_here |= e->job == job;
        c_here |= e->ctx == ctx;
    }
    if (!l_here)
        *sub_l += n;
    if (!j_here)
        *sub_j += n;
    if (!c_here)
        *sub_c += n;
}

/* SM counts change at one instant: one accounting step (the same integrals). */
static inline void account_left(sim *s, unit *u, const group *g, int sub_l, int sub_j, int sub_c)
{
    launch *l = g->l;
    if (unit_running(s, u)) {
        if (sub_l)
            acct_launch_sms(s, l, -sub_l);
        if (sub_j)
            acct_job_sms(s, l->job, -sub_j);
    }
    l->st->c->sms_now -= sub_c;
}

/* g's blocks leave the classes of its unit: all of them, or (keep_starved)
 * those where no co-resident starves them, g then losing the contention
 * counts of the co-residents it left. Returns the blocks g keeps. One body
 * for both, so that class_drop and merge_classes stay inlined in it. */
static uint64_t remove_where(sim *s, group *g, bool keep_starved)
{
    unit *u = g->u;
    int work = g->l->work;
    int sub_l = 0, sub_j = 0, sub_c = 0, kept_sms = 0;
    uint64_t kept = 0;
    /* the classes holding g add up to g->sms SMs: stop once they are found */
    int left = g->sms;
    for (smclass **cp = u->cls, **cend = u->cls + u->n_cls; cp != cend && left > 0; cp++) {
        smclass *c = *cp;
        cls_ent *e = entry_of(c, g);
        if (!e)
            continue;
        int n = c->n;
        left -= n;
        if (keep_starved) {
            bool starved = false;
            for (const cls_ent *o = c->ents, *end = c->ents + c->n_ents; o < end && !starved; o++)
                starved = o->l != g->l && contention_starves(s, work, g->age, o->work, o->g->age);
            if (starved) {
                kept += (uint64_t)n * (uint64_t)e->bps;
                kept_sms += n;
                continue;
            }
            forget_residents(s, g, c);
        }
        class_drop(s, c, e, g, &sub_l, &sub_j, &sub_c);
    }
    if (keep_starved)
        g->sms = kept_sms;
    account_left(s, u, g, sub_l, sub_j, sub_c);
    merge_classes(s, u);
    return kept;
}

void sm_remove(sim *s, group *g)
{
    unit *u = g->u;
    if (u->solo == g) {
        remove_solo(s, u, g);
        return;
    }
    sm_classes(s, u);
    if (u->groups == g && !g->next) {
        remove_only_group(s, u, g);
        return;
    }
    remove_where(s, g, false);
}

/* contention.starved_tail: g's blocks leave the SMs where no co-resident
 * starves them and stay where one does. The caller knows g is starved
 * somewhere (g->starve > 0, so it is not a unit's lone group). Returns the
 * blocks kept. */
uint64_t sm_keep_starved(sim *s, group *g)
{
    sm_classes(s, g->u);
    return remove_where(s, g, true);
}

void sm_presence_all(sim *s, unit *u, int sign)
{
    sm_classes(s, u);
    for (int ci = 0; ci < u->n_cls; ci++) {
        smclass *c = u->cls[ci];
        for (int i = 0; i < c->n_ents; i++) {
            launch *l = c->ents[i].l;
            bool l_seen = false, j_seen = false;
            for (int k = 0; k < i; k++) {
                l_seen |= c->ents[k].l == l;
                j_seen |= c->ents[k].job == l->job;
            }
            if (!l_seen)
                acct_launch_sms(s, l, sign * c->n);
            if (!j_seen)
                acct_job_sms(s, l->job, sign * c->n);
        }
    }
}

/* A recycled wave is placed anew: its blocks become the youngest on their
 * SMs, which turns the age-dependent relations (compute beside compute)
 * around. Kind-only relations and thread counts stay as they are. */
void sm_renew_age(sim *s, group *g, uint64_t age)
{
    /* Age only decides compute beside compute: a memory group, or one with
     * no other launch on its SMs, just takes the new age (the common case,
     * and the scan below is not free). */
    if (g->l->work != TL_WORK_COMPUTE || g->foreign == 0) {
        g->age = age;
        return;
    }
    unit *u = g->u;
    launch *l = g->l;
    int left = g->sms;
    sm_classes(s, u);
    for (int ci = 0; ci < u->n_cls && left > 0; ci++) {
        smclass *c = u->cls[ci];
        if (!entry_of(c, g))
            continue;
        left -= c->n;
        for (cls_ent *e = c->ents, *end = c->ents + c->n_ents; e < end; e++) {
            if (e->l == l)
                continue;
            int64_t d_g = (int64_t)contention_starves(s, l->work, age, e->work, e->g->age) -
                          (int64_t)contention_starves(s, l->work, g->age, e->work, e->g->age);
            int64_t d_e = (int64_t)contention_starves(s, e->work, e->g->age, l->work, age) -
                          (int64_t)contention_starves(s, e->work, e->g->age, l->work, g->age);
            g->starve += d_g * c->n;
            g->starve_ns += (double)(d_g * c->n) * (double)e->l->blk_ns;
            g->young += d_e * c->n; /* e starved by g: e is the younger */
            if (d_e || d_g) {
                e->g->starve += d_e * c->n;
                e->g->starve_ns += (double)(d_e * c->n) * (double)l->blk_ns;
                e->g->young += d_g * c->n;
                group_rate_dirty(s, e->g);
            }
        }
    }
    g->age = age;
}
