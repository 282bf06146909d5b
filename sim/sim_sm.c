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

static uint64_t ent_hash(const group *g, int bps)
{
    uint64_t x = g->uid * 0x9E3779B97F4A7C15ull + (uint64_t)bps;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return x;
}

smclass *sm_class_new(int pool, int n)
{
    smclass *c = tl_xcalloc(1, sizeof *c);
    c->pool = pool;
    c->n = n;
    return c;
}

void sm_class_free(smclass *c)
{
    if (c) {
        free(c->ents);
        free(c);
    }
}

static void unit_push_class(unit *u, smclass *c)
{
    if (u->n_cls == u->cap_cls) {
        u->cap_cls = u->cap_cls ? u->cap_cls * 2 : 8;
        u->cls = tl_xrealloc(u->cls, (size_t)u->cap_cls * sizeof *u->cls);
    }
    u->cls[u->n_cls++] = c;
}

void unit_add_pool(unit *u, int pool, int sms)
{
    u->pools = tl_xrealloc(u->pools, (size_t)(u->n_pools + 1) * sizeof *u->pools);
    u->pools[u->n_pools++].sms = sms;
    unit_push_class(u, sm_class_new(pool, sms));
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
    if (c->n_ents)
        memcpy(t->ents, c->ents, (size_t)c->n_ents * sizeof *c->ents);
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

int sm_fit(const sim *s, const smclass *c, const launch *l)
{
    const tl_gpu_props *g = &s->gpu;
    if (c->blocks == 0) /* an empty SM: the occupancy (no divisions) */
        return l->max_per_sm < l->occ ? l->max_per_sm : l->occ;
    /* full on any resource: nothing fits (the common case on a busy GPU) */
    if (c->thr + l->cost.threads > g->max_threads_per_sm ||
        c->regs + l->cost.regs > g->regs_per_sm || c->smem + l->cost.smem > g->smem_per_sm ||
        c->blocks >= g->max_blocks_per_sm)
        return 0;
    int f = g->max_blocks_per_sm - c->blocks;
    if (l->cost.threads > 0) {
        int x = (g->max_threads_per_sm - c->thr) / l->cost.threads;
        if (x < f)
            f = x;
    }
    if (l->cost.regs > 0) {
        int x = (g->regs_per_sm - c->regs) / l->cost.regs;
        if (x < f)
            f = x;
    }
    if (l->cost.smem > 0) {
        int x = (g->smem_per_sm - c->smem) / l->cost.smem;
        if (x < f)
            f = x;
    }
    if (l->max_per_sm < l->occ) { /* PTB: at most max_per_sm workers per SM */
        int x = l->max_per_sm - sm_launch_blocks_in(c, l);
        if (x < f)
            f = x;
    }
    return f > 0 ? f : 0;
}

void acct_launch_sms(sim *s, launch *l, int delta)
{
    tl_ns now = sim_now(s);
    l->sms_integral += (double)l->sms_now * (double)(now - l->sms_last);
    l->sms_last = now;
    l->sms_now += delta;
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

void acct_job_sms(sim *s, int job, int delta)
{
    job_acct *j = acct_job(s, job);
    if (!j)
        return;
    tl_ns now = sim_now(s);
    j->busy += (tl_ns)j->sms_now * (now - j->last);
    j->last = now;
    j->sms_now += delta;
}

static inline bool unit_running(const sim *s, const unit *u)
{
    return s->active == u && !s->switching;
}

void sm_place(sim *s, unit *u, int ci, int m, int bps, group *g)
{
    smclass *c = u->cls[ci];
    if (m < c->n) {
        smclass *t = class_clone(s, c, m);
        c->n -= m;
        unit_push_class(u, t);
        c = t;
    }
    launch *l = g->l;
    sctx *ctx = l->st->c;
    bool l_here = false, j_here = false, c_here = false;
    int64_t my_thr = (int64_t)bps * l->cost.threads;
    for (int i = 0; i < c->n_ents; i++) {
        cls_ent *e = &c->ents[i];
        if (e->l == l) {
            l_here = true;
        } else {
            g->foreign += (int64_t)m * e->bps * e->thr;
            e->g->foreign += (int64_t)m * my_thr;
            group_rate_dirty(s, e->g);
        }
        j_here |= e->job == l->job;
        c_here |= e->ctx == ctx;
    }
    if (c->n_ents == c->cap_ents) {
        c->cap_ents = c->cap_ents ? c->cap_ents * 2 : 4;
        c->ents = tl_xrealloc(c->ents, (size_t)c->cap_ents * sizeof *c->ents);
    }
    c->ents[c->n_ents++] = (cls_ent){ g, l, ctx, l->job, l->cost.threads, bps };
    c->thr += bps * l->cost.threads;
    c->regs += bps * l->cost.regs;
    c->smem += bps * l->cost.smem;
    c->blocks += bps;
    c->hash += ent_hash(g, bps);
    g->sms += m;
    if (unit_running(s, u)) {
        if (!l_here)
            acct_launch_sms(s, l, m);
        if (!j_here)
            acct_job_sms(s, l->job, m);
    }
    if (!c_here)
        l->st->c->sms_now += m;
}

static bool class_equal(const smclass *a, const smclass *b)
{
    if (a->pool != b->pool || a->hash != b->hash || a->n_ents != b->n_ents)
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

/* Merge classes that became identical; keeps the lower index (stable order). */
static void merge_classes(sim *s, unit *u)
{
    for (int i = 0; i < u->n_cls; i++)
        for (int j = i + 1; j < u->n_cls; j++)
            if (class_equal(u->cls[i], u->cls[j])) {
                u->cls[i]->n += u->cls[j]->n;
                sm_class_release(s, u->cls[j]);
                memmove(&u->cls[j], &u->cls[j + 1], (size_t)(u->n_cls - j - 1) * sizeof *u->cls);
                u->n_cls--;
                j--;
            }
}

void sm_remove(sim *s, group *g)
{
    unit *u = g->u;
    launch *l = g->l;
    bool running = unit_running(s, u);
    bool changed = false;
    for (int ci = 0; ci < u->n_cls; ci++) {
        smclass *c = u->cls[ci];
        int k = -1;
        for (int i = 0; i < c->n_ents; i++)
            if (c->ents[i].g == g) {
                k = i;
                break;
            }
        if (k < 0)
            continue;
        int bps = c->ents[k].bps;
        c->ents[k] = c->ents[--c->n_ents];
        c->thr -= bps * l->cost.threads;
        c->regs -= bps * l->cost.regs;
        c->smem -= bps * l->cost.smem;
        c->blocks -= bps;
        c->hash -= ent_hash(g, bps);
        int64_t my_thr = (int64_t)bps * l->cost.threads;
        bool l_here = false, j_here = false, c_here = false;
        for (int i = 0; i < c->n_ents; i++) {
            cls_ent *e = &c->ents[i];
            if (e->l == l) {
                l_here = true;
            } else {
                e->g->foreign -= (int64_t)c->n * my_thr;
                group_rate_dirty(s, e->g);
            }
            j_here |= e->job == l->job;
            c_here |= e->ctx == l->st->c;
        }
        if (running) {
            if (!l_here)
                acct_launch_sms(s, l, -c->n);
            if (!j_here)
                acct_job_sms(s, l->job, -c->n);
        }
        if (!c_here)
            l->st->c->sms_now -= c->n;
        changed = true;
    }
    if (changed)
        merge_classes(s, u);
}

void sm_presence_all(sim *s, unit *u, int sign)
{
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
