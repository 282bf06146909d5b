/* tally: block-level, priority-aware sharing (Tally, ASPLOS; FACTS.md "How the
 * reference systems schedule").
 *
 * Model:
 *  - One context for all jobs (their kernels may overlap). High-priority jobs
 *    (the smallest rank, normally 0) get streams of the greatest priority;
 *    their tasks launch at once, untransformed, and are never preempted.
 *  - Best-effort jobs: at most one task (kernel or copy) in flight per job; the
 *    rest wait in a per-job FIFO. A kernel runs in the configuration chosen for
 *    its (name, grid, block): untransformed, grid slices, or PTB (persistent
 *    worker blocks pulling logical blocks, able to retreat).
 *  - A high-priority arrival (a submit of its task, or request_arrived) stops
 *    best-effort work: no further slices are issued and every PTB launch in
 *    flight is told to retreat; a retreated kernel is relaunched later from
 *    the launch's next_block, so no logical block is lost or run twice.
 *  - Best-effort work resumes once the high-priority jobs have had no task in
 *    flight for idle_wait_ms; after untransformed_after_ms of such idleness
 *    best-effort kernels run untransformed (whole rest of the grid per launch)
 *    until the next high-priority arrival.
 *  - Configuration choice: Tally's candidates (tl_tally_candidates: blocks per
 *    SM from 1 while bps x threads/block <= 3/4 of the SM's threads, PTB with
 *    that many workers per SM and slices of bps x SMs blocks), each timed with
 *    tl_dev_measure against the original, speed = original / candidate, and
 *    estimated preemption latency (PTB: time / ceil(blocks / workers) / 2;
 *    sliced: time / slices); sweep a speed threshold 1.0, 0.9, ... 0.1 and take
 *    the first candidate meeting it within preempt_bound_ms (tl_tally_choose);
 *    if none ever does, the fastest of those within 10% of the least latency.
 *    Kernels shorter than the bound, or with no more blocks than SMs, run
 *    untransformed. Choices are cached per (kernel name, grid, block).
 *
 * Parameters:
 *   preempt_bound_ms        ms    default 0.0316  range [0.001, 1000]
 *                           bound on the estimated preemption latency
 *   idle_wait_ms            ms    default 0.1     range [0, 1000]
 *                           high-priority idleness before best-effort resumes
 *   untransformed_after_ms  ms    default 100     range [0, 1e6]
 *                           idleness after which best-effort runs untransformed
 *   ptb                     bool  default true    consider PTB candidates
 *   slicing                 bool  default true    consider sliced candidates
 *
 * Diagnostic: with TALLY_TALLY_LOG=PATH in the environment every configuration
 * choice appends CSV lines to PATH (simulator and hardware alike: the same code),
 * one per candidate and one for the original, with the choice marked:
 * kernel,grid,block,mode,blocks_per_sm,time_ns,speed,latency_ns,chosen (mode
 * "whole" is the original); a line "# tally run ..." starts each run. It reads
 * nothing back and changes no decision.
 *
 * Approximate: the bound is on the *estimated* latency (as in Tally); a PTB
 * retreat waits for each worker's current logical block, up to twice the
 * estimate. Without tl_dev_measure the traced duration stands in for every
 * candidate's time (speed 1).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tally/policy.h"
#include "tally/policy_util.h"

typedef struct tally_state tally_state;

typedef struct tally_be {
    tally_state *st;
    tl_policy *p;
    tl_task_queue q;         /* issued, waiting */
    tl_task *cur;            /* the one in flight (possibly between launches) */
    tl_tally_config cfg;
    bool have_cfg;
    uint64_t total, next_block, piece_end;
    bool launched, piece_ptb, retreat_sent, started;
    tl_launch_id lid;
    tl_ns first_start, last_end;
} tally_be;

typedef struct tally_cache_ent {
    uint64_t hash;
    const char *name;
    uint32_t grid[3], block[3];
    tl_tally_config cfg;
} tally_cache_ent;

struct tally_state {
    /* parameters */
    tl_ns bound_ns, idle_wait_ns, untransformed_after_ns;
    bool ptb, slicing;
    /* runtime */
    tl_policy *p;
    tl_stream_map *maps;
    tally_be *be;               /* per job (unused for high-priority jobs) */
    bool *high;
    int hp_outstanding;
    bool be_allowed, untransformed;
    tl_ns idle_since;
    bool resume_armed, untrans_armed;
    tally_cache_ent *cache;     /* open addressing, name == NULL: empty */
    size_t cache_cap, cache_len;
    FILE *log;                  /* TALLY_TALLY_LOG (diagnostic), or NULL */
};

static const tl_param_desc tally_params[] = {
    { "preempt_bound_ms", TL_PARAM_NS_FROM_MS, offsetof(tally_state, bound_ns), 0.0316, 0.001,
      1000, "bound on a best-effort kernel's estimated preemption latency" },
    { "idle_wait_ms", TL_PARAM_NS_FROM_MS, offsetof(tally_state, idle_wait_ns), 0.1, 0, 1000,
      "high-priority idleness before best-effort work resumes" },
    { "untransformed_after_ms", TL_PARAM_NS_FROM_MS, offsetof(tally_state, untransformed_after_ns),
      100, 0, 1e6, "high-priority idleness after which best-effort kernels run untransformed" },
    { "ptb", TL_PARAM_BOOL, offsetof(tally_state, ptb), 1, 0, 1,
      "consider persistent-thread-block configurations" },
    { "slicing", TL_PARAM_BOOL, offsetof(tally_state, slicing), 1, 0, 1,
      "consider sliced configurations" },
    { NULL },
};

/* ---- the chooser (pure) ---- */

int tl_tally_candidates(const tl_gpu_props *g, const tl_op *op, tl_tally_config *out, int max)
{
    if (op->kind != TL_OP_KERNEL || g->sms <= 0 || max <= 0)
        return 0;
    uint64_t blocks = (uint64_t)op->grid[0] * op->grid[1] * op->grid[2];
    uint64_t tpb = (uint64_t)op->block[0] * op->block[1] * op->block[2];
    if (blocks <= (uint64_t)g->sms || tpb == 0)
        return 0;
    tl_occ_limit lim;
    int occ = tl_occupancy(g, (int)tpb, (int)op->regs, (int)(op->static_smem + op->dynamic_smem),
                           &lim);
    uint64_t cap = (uint64_t)g->max_threads_per_sm * 3 / 4 / tpb;
    if (occ > 0 && (uint64_t)occ < cap)
        cap = (uint64_t)occ;
    int n = 0;
    for (uint64_t bps = 1; bps <= cap && n + 2 <= max; bps++) {
        uint64_t width = bps * (uint64_t)g->sms;
        out[n++] = (tl_tally_config){ .mode = TL_TALLY_PTB, .blocks_per_sm = (uint32_t)bps };
        out[n++] = (tl_tally_config){ .mode = TL_TALLY_SLICE, .blocks_per_sm = (uint32_t)bps,
                                      .slice_blocks = width,
                                      .n_slices = (blocks + width - 1) / width };
    }
    return n;
}

void tl_tally_estimate(tl_tally_config *c, const tl_gpu_props *g, const tl_op *op,
                       tl_ns original_ns)
{
    uint64_t blocks = (uint64_t)op->grid[0] * op->grid[1] * op->grid[2];
    c->speed = c->time_ns > 0 ? (double)original_ns / (double)c->time_ns : 0;
    if (c->mode == TL_TALLY_PTB) {
        uint64_t workers = (uint64_t)c->blocks_per_sm * (uint64_t)(g->sms > 0 ? g->sms : 1);
        uint64_t rounds = workers ? (blocks + workers - 1) / workers : 1;
        c->latency_ns = c->time_ns / (tl_ns)(rounds ? rounds : 1) / 2;
    } else if (c->mode == TL_TALLY_SLICE) {
        c->latency_ns = c->time_ns / (tl_ns)(c->n_slices ? c->n_slices : 1);
    } else {
        c->latency_ns = c->time_ns;
    }
}

int tl_tally_choose(const tl_tally_config *c, int n, tl_ns original_ns, tl_ns bound_ns)
{
    if (n <= 0 || original_ns <= bound_ns)
        return -1;
    for (int k = 10; k >= 1; k--) {
        double threshold = k / 10.0 - 1e-9;
        for (int i = 0; i < n; i++)
            if (c[i].time_ns > 0 && c[i].speed >= threshold && c[i].latency_ns <= bound_ns)
                return i;
    }
    /* The bound cannot be met: the least latency, and among candidates within
     * 10% of it (PTB estimates are all about half a block's time) the fastest. */
    tl_ns least = -1;
    for (int i = 0; i < n; i++)
        if (c[i].time_ns > 0 && (least < 0 || c[i].latency_ns < least))
            least = c[i].latency_ns;
    int best = -1;
    for (int i = 0; i < n; i++)
        if (c[i].time_ns > 0 && (double)c[i].latency_ns <= 1.1 * (double)least &&
            (best < 0 || c[i].speed > c[best].speed))
            best = i;
    return best;
}

/* ---- measured configurations, cached ---- */

static uint64_t cache_hash(const char *name, const tl_op *op)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const unsigned char *s = (const unsigned char *)name; *s; s++)
        h = (h ^ *s) * 1099511628211ULL;
    for (int i = 0; i < 3; i++)
        h = (h ^ op->grid[i]) * 1099511628211ULL, h = (h ^ op->block[i]) * 1099511628211ULL;
    return h;
}

static tally_cache_ent *cache_slot(tally_state *st, uint64_t h, const char *name, const tl_op *op)
{
    size_t i = (size_t)(h & (st->cache_cap - 1));
    for (;; i = (i + 1) & (st->cache_cap - 1)) {
        tally_cache_ent *e = &st->cache[i];
        if (!e->name || (e->hash == h && strcmp(e->name, name) == 0 &&
                         memcmp(e->grid, op->grid, sizeof e->grid) == 0 &&
                         memcmp(e->block, op->block, sizeof e->block) == 0))
            return e;
    }
}

static void cache_grow(tally_state *st)
{
    tally_cache_ent *old = st->cache;
    size_t old_cap = st->cache_cap;
    st->cache_cap = old_cap ? old_cap * 2 : 64;
    st->cache = tl_xcalloc(st->cache_cap, sizeof *st->cache);
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].name) {
            size_t j = (size_t)(old[i].hash & (st->cache_cap - 1));
            while (st->cache[j].name)
                j = (j + 1) & (st->cache_cap - 1);
            st->cache[j] = old[i];
        }
    free(old);
}

static tl_ns measure(tally_state *st, const tl_op *op, int job, const tl_tally_config *c,
                     uint64_t blocks, int *status)
{
    tl_kernel_desc k = { .op = op, .job = job, .block_end = blocks };
    tl_ns t = 0, last = 0;
    tl_err err;
    if (c && c->mode == TL_TALLY_PTB) {
        k.ptb_workers_per_sm = c->blocks_per_sm;
    } else if (c && c->mode == TL_TALLY_SLICE && c->n_slices > 1) {
        /* n - 1 full slices and the last one */
        k.block_end = c->slice_blocks;
        if ((*status = tl_dev_measure(st->p->dev, &k, &t, &err)) < 0)
            return 0;
        k.block_begin = (c->n_slices - 1) * c->slice_blocks;
        k.block_end = blocks;
        if ((*status = tl_dev_measure(st->p->dev, &k, &last, &err)) < 0)
            return 0;
        return t * (tl_ns)(c->n_slices - 1) + last;
    }
    *status = tl_dev_measure(st->p->dev, &k, &t, &err);
    return *status < 0 ? 0 : t;
}

/* TALLY_TALLY_LOG: the original and every candidate measured, the pick marked.
 * Kernel names are quoted (they hold commas), their quotes doubled. */
static void log_choice(FILE *f, const char *name, const tl_op *op, tl_ns orig,
                       const tl_tally_config *c, int n, int pick)
{
    for (int i = -1; i < n; i++) {
        const tl_tally_config *x = i >= 0 ? &c[i] : NULL;
        fputc('"', f);
        for (const char *s = name; *s; s++) {
            if (*s == '"')
                fputc('"', f);
            fputc(*s, f);
        }
        fprintf(f, "\",%ux%ux%u,%ux%ux%u,%s,%u,%lld,%.4f,%lld,%d\n", op->grid[0], op->grid[1],
                op->grid[2], op->block[0], op->block[1], op->block[2],
                !x ? "whole" : x->mode == TL_TALLY_PTB ? "ptb" : "slice", x ? x->blocks_per_sm : 0,
                (long long)(x ? x->time_ns : orig), x ? x->speed : 1.0,
                (long long)(x ? x->latency_ns : orig), x ? i == pick : pick < 0);
    }
}

static tl_tally_config choose_config(tally_state *st, const tl_task *task)
{
    const tl_op *op = task->op;
    const tl_trace *tr = task->job->trace;
    const char *name = tr && op->name < tr->n_strings ? tr->strings[op->name] : "";
    uint64_t h = cache_hash(name, op);
    if (st->cache_len * 2 >= st->cache_cap)
        cache_grow(st);
    tally_cache_ent *e = cache_slot(st, h, name, op);
    if (e->name)
        return e->cfg;

    const tl_gpu_props *g = &st->p->dev->gpu;
    uint64_t blocks = tl_op_blocks(op);
    tl_tally_config cand[TL_TALLY_MAX_CANDIDATES];
    int n = tl_tally_candidates(g, op, cand, TL_TALLY_MAX_CANDIDATES);
    int status;
    tl_ns orig = measure(st, op, task->job->id, NULL, blocks, &status);
    bool measured = status >= 0 && orig > 0;
    if (!measured)
        orig = op->dur_ns; /* no measurement here: the traced time for everything */
    int m = 0;
    for (int i = 0; i < n; i++) {
        /* PTB needs a device that can make workers retreat */
        if ((cand[i].mode == TL_TALLY_PTB && (!st->ptb || !st->p->dev->ops->retreat)) ||
            (cand[i].mode == TL_TALLY_SLICE && !st->slicing))
            continue;
        cand[i].time_ns = measured ? measure(st, op, task->job->id, &cand[i], blocks, &status)
                                   : orig;
        if (measured && status < 0)
            continue; /* the device cannot run this configuration */
        tl_tally_estimate(&cand[i], g, op, orig);
        cand[m++] = cand[i];
    }
    int pick = tl_tally_choose(cand, m, orig, st->bound_ns);
    tl_tally_config cfg = { .mode = TL_TALLY_WHOLE, .time_ns = orig, .speed = 1,
                            .latency_ns = orig };
    if (pick >= 0)
        cfg = cand[pick];
    if (st->log)
        log_choice(st->log, name, op, orig, cand, m, pick);
    e->hash = h;
    e->name = name;
    memcpy(e->grid, op->grid, sizeof e->grid);
    memcpy(e->block, op->block, sizeof e->block);
    e->cfg = cfg;
    st->cache_len++;
    return cfg;
}

/* ---- best-effort execution ---- */

static void be_pump(tally_be *b);

static void be_finish_task(tally_be *b)
{
    tl_task *t = b->cur;
    b->cur = NULL;
    b->have_cfg = false;
    tl_task_complete(b->p->rt, t, b->first_start, b->last_end);
}

static void be_piece_done(void *arg, const tl_launch_result *r)
{
    tally_be *b = arg;
    b->launched = false;
    b->retreat_sent = false;
    if (!b->started) {
        b->started = true;
        b->first_start = r->start_ns;
    }
    b->last_end = r->end_ns;
    uint64_t next = b->piece_end;
    if (b->piece_ptb && r->retreated && r->next_block < b->piece_end)
        next = r->next_block > b->next_block ? r->next_block : b->next_block;
    b->next_block = next;
    if (b->next_block >= b->total)
        be_finish_task(b);
    be_pump(b);
}

static void be_launch_piece(tally_be *b)
{
    tally_state *st = b->st;
    tl_policy *p = b->p;
    tl_task *t = b->cur;
    tl_stream_id s = tl_stream_map_get(&st->maps[t->job->id], t->op);
    int r;
    b->piece_ptb = false;
    if (t->op->kind != TL_OP_KERNEL) {
        b->piece_end = b->total;
        r = tl_dev_copy(p->dev, s, t->op, t->job->id, be_piece_done, b, &b->lid);
    } else {
        if (!b->have_cfg && !st->untransformed) {
            b->cfg = choose_config(st, t);
            b->have_cfg = true;
        }
        tl_kernel_desc k = { .op = t->op, .job = t->job->id, .block_begin = b->next_block,
                             .block_end = b->total, .tag = t->seq };
        if (!st->untransformed && b->have_cfg && b->cfg.mode == TL_TALLY_SLICE) {
            uint64_t end = b->next_block + b->cfg.slice_blocks;
            k.block_end = end < b->total ? end : b->total;
        } else if (!st->untransformed && b->have_cfg && b->cfg.mode == TL_TALLY_PTB) {
            k.ptb_workers_per_sm = b->cfg.blocks_per_sm;
            b->piece_ptb = true;
        }
        b->piece_end = k.block_end;
        r = tl_dev_launch(p->dev, s, &k, be_piece_done, b, &b->lid);
    }
    if (r < 0) {
        tl_policy_fail(p, r, "policy tally: job %s: the device refused op %u of iteration %u (%s)",
                       t->job->name ? t->job->name : "?", t->index, t->iter, tl_strerror(r));
        b->cur = NULL;
        b->have_cfg = false;
        tl_policy_complete_now(p, t);
        return;
    }
    b->launched = true;
}

static void be_pump(tally_be *b)
{
    for (;;) {
        if (!b->cur) {
            b->cur = tl_task_queue_pop(&b->q);
            if (!b->cur)
                return;
            b->total = b->cur->op->kind == TL_OP_KERNEL ? tl_op_blocks(b->cur->op) : 1;
            b->next_block = 0;
            b->started = false;
            b->have_cfg = false;
        }
        if (b->launched || !b->st->be_allowed)
            return;
        tl_task *t = b->cur;
        be_launch_piece(b);
        if (b->cur == t) /* launched; else it failed and was completed: next */
            return;
    }
}

static void be_pump_all(tally_state *st)
{
    for (int j = 0; j < st->p->n_jobs; j++)
        if (!st->high[j])
            be_pump(&st->be[j]);
}

/* ---- high-priority arrivals and idleness ---- */

static void preempt(tally_state *st)
{
    st->be_allowed = false;
    st->untransformed = false;
    for (int j = 0; j < st->p->n_jobs; j++) {
        tally_be *b = &st->be[j];
        if (!st->high[j] && b->launched && b->piece_ptb && !b->retreat_sent) {
            b->retreat_sent = true;
            tl_dev_retreat(st->p->dev, b->lid);
        }
    }
}

static void arm(tally_state *st, bool *armed, tl_ns at, tl_timer_cb cb)
{
    if (*armed)
        return;
    int r = tl_dev_timer(st->p->dev, at, cb, st);
    if (r < 0)
        tl_policy_fail(st->p, r, "policy tally: the device refused a timer (%s)", tl_strerror(r));
    else
        *armed = true;
}

static void resume_timer(void *arg, tl_ns now);
static void untrans_timer(void *arg, tl_ns now);

static void hp_idle(tally_state *st, tl_ns now)
{
    st->idle_since = now;
    arm(st, &st->resume_armed, now + st->idle_wait_ns, resume_timer);
    arm(st, &st->untrans_armed, now + st->untransformed_after_ns, untrans_timer);
}

/* One timer of each kind is pending at most: a stale one re-arms itself for
 * the current idle period instead of piling up timers. */
static void resume_timer(void *arg, tl_ns now)
{
    tally_state *st = arg;
    st->resume_armed = false;
    if (st->hp_outstanding > 0 || st->be_allowed)
        return;
    if (now < st->idle_since + st->idle_wait_ns) {
        arm(st, &st->resume_armed, st->idle_since + st->idle_wait_ns, resume_timer);
        return;
    }
    st->be_allowed = true;
    be_pump_all(st);
}

static void untrans_timer(void *arg, tl_ns now)
{
    tally_state *st = arg;
    st->untrans_armed = false;
    if (st->hp_outstanding > 0 || st->untransformed)
        return;
    if (now < st->idle_since + st->untransformed_after_ns) {
        arm(st, &st->untrans_armed, st->idle_since + st->untransformed_after_ns, untrans_timer);
        return;
    }
    st->untransformed = true;
    st->be_allowed = true;
    be_pump_all(st);
}

static void hp_done(tl_policy *p, tl_task *t, const tl_launch_result *r)
{
    tally_state *st = p->state;
    if (--st->hp_outstanding == 0)
        hp_idle(st, tl_dev_now(p->dev));
}

/* ---- ops ---- */

static int tally_setup(tl_policy *p, tl_err *err)
{
    tally_state *st = p->state;
    size_t n = (size_t)p->n_jobs + 1;
    st->p = p;
    st->maps = tl_xcalloc(n, sizeof *st->maps);
    st->be = tl_xcalloc(n, sizeof *st->be);
    st->high = tl_xcalloc(n, sizeof *st->high);
    int *prio = tl_xcalloc(n, sizeof *prio);
    for (int j = 0; j < p->n_jobs; j++) {
        st->high[j] = tl_policy_job_is_high(p, &p->jobs[j]);
        prio[j] = st->high[j] ? tl_policy_stream_priority(p, 0) : TL_STREAM_PRIO_LEAST;
        st->be[j].st = st;
        st->be[j].p = p;
        tl_task_queue_init(&st->be[j].q);
    }
    tl_job_ctx_plan plan = { .shared = true, .kind = TL_CTX_TIMESLICED, .stream_prio = prio };
    int r = tl_policy_setup_jobs(p, &plan, NULL, st->maps, err);
    free(prio);
    if (r < 0)
        return r;
    const char *log = getenv("TALLY_TALLY_LOG");
    if (log && *log) {
        st->log = fopen(log, "a");
        if (!st->log)
            return tl_errf(err, TL_EIO, "policy tally: TALLY_TALLY_LOG=%s: cannot open", log);
        fprintf(st->log, "# tally run: %d jobs, preempt_bound_ns %lld\n", p->n_jobs,
                (long long)st->bound_ns);
    }
    /* The high-priority jobs are idle at the start, time 0 (the run's clock
     * starts after the setup: tl_dev_begin). */
    hp_idle(st, 0);
    return 0;
}

static void tally_submit(tl_policy *p, tl_task *t)
{
    tally_state *st = p->state;
    int j = t->job->id;
    if (st->high[j]) {
        st->hp_outstanding++;
        preempt(st);
        if (tl_policy_run_plain_then(p, t, tl_stream_map_get(&st->maps[j], t->op), hp_done) < 0 &&
            --st->hp_outstanding == 0)
            hp_idle(st, tl_dev_now(p->dev));
        return;
    }
    tl_task_queue_push(&st->be[j].q, t);
    be_pump(&st->be[j]);
}

static void tally_request_arrived(tl_policy *p, tl_job *job)
{
    tally_state *st = p->state;
    if (!st->high[job->id])
        return;
    preempt(st);
    if (st->hp_outstanding == 0)
        hp_idle(st, tl_dev_now(p->dev));
}

static void tally_teardown(tl_policy *p)
{
    tally_state *st = p->state;
    for (int j = 0; st->be && j < p->n_jobs; j++)
        tl_task_queue_close(&st->be[j].q);
    free(st->be);
    free(st->maps);
    free(st->high);
    free(st->cache);
    if (st->log)
        fclose(st->log);
    st->log = NULL;
    st->be = NULL;
    st->maps = NULL;
    st->high = NULL;
    st->cache = NULL;
}

const tl_policy_ops tl_policy_tally = {
    .name = "tally",
    .summary = "block-level: sliced/PTB best-effort kernels, preempted on high-priority arrival",
    .state_size = sizeof(tally_state),
    .params = tally_params,
    .setup = tally_setup,
    .submit = tally_submit,
    .request_arrived = tally_request_arrived,
    .teardown = tally_teardown,
};
