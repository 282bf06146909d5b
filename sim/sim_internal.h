/* Internals of the simulated GPU (sim/README.md explains the model).
 *
 * Vocabulary:
 *  - unit: what the GPU time-slices between. Each TIMESLICED context is a
 *    unit; all MPS clients together are one unit (the MPS server); all
 *    PARTITION contexts together are one unit. Only the active unit has blocks
 *    running. Each unit keeps its own SM state, so pausing a unit is just
 *    "stop its clocks" and resuming restores the exact placement.
 *  - SM class: a set of SMs of one pool whose residents are identical (the
 *    same block groups, the same number of blocks of each). SMs are counted,
 *    not iterated: dispatch, end and contention cost grow with the number of
 *    classes (a handful), never with SMs or blocks.
 *  - block group: blocks of one launch placed in one dispatch step. They start
 *    together, run at one rate and end together: one event.
 *  - launch: a stream work item (kernel launch or copy).
 */
#ifndef TALLY_SIM_INTERNAL_H
#define TALLY_SIM_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/device.h"
#include "tally/engine.h"
#include "tally/sim.h"

#include "engine_inline.h"

#define SIM_MAX_LEVELS 64
/* Longest kernel or copy accepted (about 11.6 days): keeps every end time,
 * slowed down and paused included, far inside int64 nanoseconds. The trace
 * readers refuse longer ops with the same bound (TL_TRACE_MAX_OP_NS). */
#define SIM_MAX_DUR_NS ((tl_ns)TL_TRACE_MAX_OP_NS)
/* Cap on a scheduled delay (defensive against absurd slowdowns). */
#define SIM_MAX_DELAY_NS ((tl_ns)1000000000000000000LL)

typedef struct sim sim;
typedef struct launch launch;
typedef struct group group;
typedef struct smclass smclass;
typedef struct sctx sctx;
typedef struct sstream sstream;
typedef struct unit unit;

typedef enum { ITEM_KERNEL = 0, ITEM_COPY = 1 } item_kind;

struct launch {
    tl_launch_id id;
    uint32_t slot;
    item_kind kind;
    sstream *st;
    launch *next;           /* stream FIFO */
    launch *ee_next;        /* EE queue / copy lane queue */
    launch *ee_prev;        /* EE queue */
    bool in_ee;
    const tl_op *op;
    int job;
    uint64_t tag;
    tl_launch_cb cb;
    void *arg;
    tl_ns submitted_at;     /* the launch or copy call (tl_launch_result.submitted_ns) */
    tl_ns ready_at;         /* earliest GPU start (launch latency) */
    tl_event_id ready_ev;
    bool active;            /* moved from its stream to an EE queue / copy lane */
    bool gap_held;          /* a kernel on the GPU waiting out its stream's gap: counted
                               as its unit's work (time slicing) until it is active */
    bool done;
    bool dead;              /* slot free */
    /* kernels */
    uint64_t block_begin, block_end;
    uint64_t to_dispatch;   /* blocks (PTB: worker blocks) not yet started, including
                               those reserved for later waves of wave trains */
    uint64_t reserved;      /* blocks reserved by this launch's wave trains */
    uint32_t n_trains;      /* live wave trains of this launch */
    uint32_t groups_live;   /* groups running or paused */
    uint32_t groups_started;
    tl_ns blk_ns;           /* solo time of one block (PTB: one logical block) */
    tl_ns blk_rem;          /* dur % waves: the launch's first group takes it on top, so
                               that a kernel alone takes exactly its traced time */
    tl_block_cost cost;
    int occ;
    int max_per_sm;         /* PTB: workers per SM; else occ */
    uint64_t ee_seq;        /* order of entry into its EE queue */
    bool ptb, retreat;
    uint8_t work;           /* tl_work_kind of its op (contention model KINDS) */
    bool churns;            /* memory-bound with blocks shorter than
                               contention.churn_block_ns: slows compute blocks of
                               other launches on its SMs (sim/README.md, "Churn") */
    uint64_t claimed;       /* PTB: logical blocks handed out */
    uint64_t blocks_done;   /* logical blocks completed */
    tl_ns start_ns, end_ns;
    bool started;
    bool renews;            /* a kernel on its own, or a graph's first node: its start
                               renews its unit's slice that ran out (slice_overtime) */
    tl_ns last_place;       /* last time blocks of it were placed (coalescing) */
    int carve_need;         /* carveout 2: the shared memory its occupancy takes on an
                               SM, bytes (what an SM's carveout must hold for its
                               blocks to join); -1: carveout 1's exact match */
    int smem_sm;            /* the GPU's shared memory an SM, bytes (carveout 2) */
    int carveout;           /* the shared-memory carveout its launch configures, KB;
                               -1: the carveout rule is off (sim/README.md) */
    tl_ns first_try;        /* when it first sought room, -1 before (pack_foreign: a
                               launch placed later waited for room others' blocks freed) */
    tl_ns wake_at;          /* a coalescing wake-up is pending for then (0: none) */
    int sms_now;            /* SMs with one of its blocks resident (running) */
    tl_ns sms_last;
    double sms_integral;    /* SM-ns, for avg_sms */
    /* copies */
    int lane;
    tl_ns copy_ns;
};

struct group {
    uint64_t uid;           /* creation order, mixed: class hashes */
    launch *l;
    unit *u;
    group *prev, *next;     /* the unit's live groups */
    group *dirty_next;
    bool dirty, paused;
    int sms;                /* SMs the group occupies */
    uint64_t blocks;        /* blocks (PTB: workers), per wave */
    uint32_t waves;         /* a wave train: this many identical back-to-back waves
                               (1: an ordinary group) */
    tl_ns wave_ns;          /* solo time of one wave of a train */
    tl_ns extra;            /* extra solo time of the train's first wave (blk_rem) */
    int64_t foreign;        /* sum over its SMs of other launches' threads there */
    int64_t foreign_mem;    /* the same, memory-bound launches only */
    int64_t churn;          /* compute groups: sum over its SMs of the churning
                               launches' groups there (may count an SM twice) */
    int64_t mem_long;       /* compute groups: the same for memory-bound launches that
                               do not churn (contention.compute_share) */
    int64_t young;          /* compute groups: the same for other launches' YOUNGER
                               compute groups (contention.cc_share) */
    double starve_ns;       /* the same sum over the co-residents that starve it, each
                               counted as its launch's solo block time (mem_share_tau_ns,
                               cc_share) */
    int64_t starve;         /* sum over its SMs of the co-resident groups of other
                               launches that starve it (contention model KINDS) */
    uint64_t age;           /* placement order (a recycled wave is placed anew):
                               the warp schedulers favour older blocks */
    double slowdown;
    double gbps;            /* dram_share: its DRAM demand counted in its unit's mem_gbps
                               (0: not counted) */
    double crowd;           /* its blocks' time relative to the traced kernel's for how
                               many share its most crowded SM (crowding; 1: as traced) */
    double remaining;       /* solo ns of the work left (all waves of a train; PTB: the
                               current round) */
    tl_ns last_t;
    tl_event_id ev;
    tl_ns end_at;           /* time of ev */
    uint64_t round_blocks;  /* PTB: logical blocks in the current round */
    double lag;             /* contention.starved_tail: solo ns its starved blocks are
                               behind its free ones (0 otherwise) */
    bool tail_free;         /* contention.starved_tail: slowdown is the free blocks' rate
                               of a partly starved group (its lag grows) */
    double tail_rate;       /* contention.starved_tail: solo ns per ns its starved blocks
                               make while tail_free (starved_rate; with mem_share or
                               cc_share the shared SMs' rate) */
};

/* A group's presence in a class. Launch, context, job and threads are copied
 * in so that scans over a class never chase pointers. */
typedef struct cls_ent {
    group *g;
    launch *l;
    sctx *ctx;
    int job;
    int thr;                /* threads of one block (whole warps) */
    int bps;                /* blocks per SM */
    int work;               /* the launch's tl_work_kind */
} cls_ent;

struct smclass {
    int pool;
    int n;                  /* SMs in the class */
    /* free per SM (what sm_fit compares with a block's cost: kept free
     * rather than used, so that no GPU limit is read per class) */
    int free_thr, free_regs, free_smem, free_blocks;
    cls_ent *ents;
    int n_ents, cap_ents;
    uint64_t hash;          /* order-independent hash of ents */
    bool touched;           /* lost an entry in the current sm_remove (merge candidate) */
    smclass *next_free;     /* class free list (ents kept for reuse) */
};

typedef struct pool_info {
    int sms;
} pool_info;

struct unit {
    int index;
    tl_ctx_kind kind;
    smclass **cls;
    int n_cls, cap_cls;
    pool_info *pools;
    int n_pools;
    sctx **ctxs;
    int n_ctxs;
    int pending;            /* kernels in EE queues or running/paused */
    int n_trains;           /* live wave trains */
    group *groups;          /* live groups (running or paused) */
    /* A group placed on the idle unit (sm_place_idle) whose classes are not
     * built yet: its one class still holds every SM, empty. Most such groups
     * end before anything looks at the classes; sm_classes builds them
     * first where something does. NULL: the classes are as they are. */
    group *solo;
    int solo_m_hi, solo_bps_hi, solo_bps_lo;
    bool dirty;             /* dispatch needed */
    double mem_gbps;        /* dram_share: the running memory-bound groups' demand */
};

struct sctx {
    tl_ctx_id id;
    tl_ctx_config cfg;
    unit *u;
    int pool;
    int cap_sms;            /* MPS: SM cap; else the pool size */
    int sms_now;            /* SMs with one of its blocks resident */
    launch *ee_head[SIM_MAX_LEVELS], *ee_tail[SIM_MAX_LEVELS];
    uint64_t ee_mask;       /* bit per non-empty level */
    uint64_t placing_rounds; /* mps_order 1: dispatch rounds of its unit in which it
                               placed blocks */
};

struct sstream {
    tl_stream_id id;
    sctx *c;
    int level;              /* 0 = greatest priority */
    launch *head, *tail;
    tl_ns last_end;         /* when the head's predecessor ended (very early if none):
                               the head starts its gap after it */
    bool last_full_tail;    /* that predecessor was a kernel whose last wave filled
                               every SM with small blocks: a graph kernel behind it
                               waits graph_tail_ns more (full_tail) */
    uint64_t placing_rounds; /* stream_order 1: dispatch rounds in which its kernels
                               placed blocks */
};

typedef struct job_acct {
    int sms_now;
    tl_ns last;
    tl_ns busy;
    uint64_t kernels, blocks;
} job_acct;

typedef struct copy_lane {
    launch *head, *tail;    /* waiting */
    launch *busy;
} copy_lane;

/* Occupancy and block cost by kernel shape (a small direct-mapped cache:
 * traces repeat a few hundred shapes). */
#define SHAPE_CACHE 512
typedef struct shape_ent {
    int threads, regs, smem; /* key; threads 0 = empty */
    int occ;
    int carveout;            /* KB (carveout rule) */
    tl_block_cost cost;
} shape_ent;

/* contention.c: */
#define CONTENTION_MEMO_BITS 10
typedef struct contention_pow_ent {
    uint64_t key;           /* bits of x */
    double val;             /* pow(x, e) */
} contention_pow_ent;
/* pow() results of model KINDS' memory-memory formula, per simulated device
 * (parameters are fixed per device); allocated at first use. */
typedef struct contention_memo {
    contention_pow_ent fo[1 << CONTENTION_MEMO_BITS], fs[1 << CONTENTION_MEMO_BITS];
} contention_memo;

struct sim {
    tl_device *dev;
    shape_ent shapes[SHAPE_CACHE];
    tl_gpu_props gpu;
    tl_sim_params p;
    tl_engine eng;
    int levels;
    /* contexts, streams, units */
    sctx **ctxs;
    int n_ctxs;
    sstream **streams;
    int n_streams, cap_streams;
    unit **units;
    int n_units;
    unit *mps_unit, *part_unit;
    int part_sms_used;
    /* time slicing */
    unit *active;
    tl_ns active_since;     /* when the active unit got the GPU (its slices count from here) */
    bool switching;
    unit *switch_to;
    tl_event_id slice_ev, switch_ev, idle_ev;
    tl_ns idle_since;       /* when the active unit last ran out of kernel work (-1: it has work) */
    bool idle_contested;    /* another unit had work during the active unit's idle */
    /* launches: slot pool */
    launch **lslots;
    uint32_t n_lslots, cap_lslots;
    uint32_t *lfree;
    uint32_t n_lfree, cap_lfree;
    uint32_t *lgen;
    /* groups: free list */
    group *gfree;
    smclass *cfree;
    uint64_t next_group_uid;
    uint64_t next_age;      /* placement order of groups (contention model KINDS) */
    group *dirty_groups;
    uint64_t next_ee_seq;
    /* copies */
    copy_lane lanes[3];
    /* accounting */
    job_acct *jobs;
    int n_jobs;
    tl_sim_stats stats;
    tl_sim_activity_fn act_fn;
    void *act_arg;
    bool running;
    bool in_flush;
    bool in_callback;       /* inside a completion callback (callback_launch_latency_ns) */
    contention_memo *cmemo;
};

static inline sim *sim_of(tl_device *d) { return (sim *)d->impl; }
static inline tl_ns sim_now(sim *s) { return s->eng.now; }

/* sim_sm.c: SM classes */
smclass *sm_class_new(const sim *s, int pool, int n);
void sm_class_free(smclass *c);
void sm_class_release(sim *s, smclass *c);
void unit_add_pool(sim *s, unit *u, int pool, int sms);
int sm_launch_blocks_in(const smclass *c, const launch *l);

/* Blocks of l that still fit on each SM of class c. */
static inline int sm_fit(const smclass *c, const launch *l)
{
    /* no residents (every entry holds at least one block per SM): an empty
     * SM, the occupancy (no divisions) */
    if (c->n_ents == 0)
        return l->max_per_sm < l->occ ? l->max_per_sm : l->occ;
    int free_smem = c->free_smem;
    if (l->carveout >= 0) {
        if (l->carve_need < 0) {
            /* carveout 1: an SM holds blocks of one carveout at a time (its
             * residents all have the first one's) */
            if (c->ents[0].l->carveout != l->carveout)
                return 0;
        } else {
            /* carveout 2: the SM keeps the largest carveout of its residents;
             * blocks whose occupancy fits in it join, within it */
            int cv = 0;
            for (int i = 0; i < c->n_ents; i++)
                if (c->ents[i].l->carveout > cv)
                    cv = c->ents[i].l->carveout;
            if (l->carve_need > cv * 1024)
                return 0;
            free_smem = cv * 1024 - (l->smem_sm - c->free_smem);
        }
    }
    /* full on any resource: nothing fits (the common case on a busy GPU) */
    if (l->cost.threads > c->free_thr || l->cost.regs > c->free_regs ||
        l->cost.smem > free_smem || c->free_blocks <= 0)
        return 0;
    int f = c->free_blocks;
    if (l->cost.threads > 0) {
        int x = c->free_thr / l->cost.threads;
        if (x < f)
            f = x;
    }
    if (l->cost.regs > 0) {
        int x = c->free_regs / l->cost.regs;
        if (x < f)
            f = x;
    }
    if (l->cost.smem > 0) {
        int x = free_smem / l->cost.smem;
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
/* A part of a placement: bps blocks per SM on m SMs of class index ci. */
typedef struct sm_piece {
    int ci, m, bps;
} sm_piece;
void sm_solo_build(sim *s, unit *u);
/* The unit's classes as placement left them: built now for a lone group
 * placed on the idle unit (unit.solo). Every reader of a unit's classes
 * outside sm_place_idle and sm_remove's lone-group case calls this first. */
static inline void sm_classes(sim *s, unit *u)
{
    if (u->solo)
        sm_solo_build(s, u);
}
/* Place group g (its launch's blocks) on the pieces, in order. */
void sm_place(sim *s, unit *u, group *g, const sm_piece *pieces, int np);
/* The same on an idle unit of one pool (its one class empty): bps_hi blocks
 * on the first m_hi SMs, bps_lo on the others. The classes are built later
 * (unit.solo, sm_classes), if anything needs them before g leaves. */
void sm_place_idle(sim *s, unit *u, group *g, int m_hi, int bps_hi, int bps_lo);
/* Remove group g from every class of its unit, merge classes. */
void sm_remove(sim *s, group *g);
/* contention.starved_tail: g leaves the SMs where nothing starves it; returns
 * the blocks it keeps (sim_sm.c). */
uint64_t sm_keep_starved(sim *s, group *g);
/* Running-SM accounting of a whole unit on pause (-1) / resume (+1). */
void sm_presence_all(sim *s, unit *u, int sign);
bool sm_ctx_present(const smclass *c, const sctx *ctx);

/* accounting */
job_acct *acct_job_grow(sim *s, int job);
/* The accounting record of a job (grown on demand); NULL for job < 0. */
static inline job_acct *acct_job(sim *s, int job)
{
    if ((unsigned)job < (unsigned)s->n_jobs)
        return &s->jobs[job];
    return acct_job_grow(s, job);
}

/* A launch's SMs holding its running blocks changed by delta (avg_sms). */
static inline void acct_launch_sms(sim *s, launch *l, int delta)
{
    tl_ns now = sim_now(s);
    l->sms_integral += (double)l->sms_now * (double)(now - l->sms_last);
    l->sms_last = now;
    l->sms_now += delta;
}

/* A job's SMs holding its running blocks changed by delta (sm_busy_ns). */
static inline void acct_job_sms(sim *s, int job, int delta)
{
    job_acct *j = acct_job(s, job);
    if (!j)
        return;
    tl_ns now = sim_now(s);
    j->busy += (tl_ns)j->sms_now * (now - j->last);
    j->last = now;
    j->sms_now += delta;
}

/* sim_dispatch.c */
int dispatch_ctx(sim *s, sctx *c);
/* A unit of several contexts (MPS clients, partitions): they dispatch in
 * order of (MPS client priority, arrival of their head kernel). */
void dispatch_unit_multi(sim *s, unit *u);
/* Dispatch the unit's queued kernels (once per instant, from the flush). One
 * context (most units) goes straight to its queues: this runs at nearly
 * every instant, and the several-context path's frame is not free. */
static inline void dispatch_unit(sim *s, unit *u)
{
    if (u->n_ctxs != 1)
        dispatch_unit_multi(s, u);
    else if (u->ctxs[0]->ee_mask)
        dispatch_ctx(s, u->ctxs[0]);
}
/* g's SMs changed neighbours: re-evaluate its rate at the end of the instant. */
static inline void group_rate_dirty(sim *s, group *g)
{
    if (!g->dirty) {
        g->dirty = true;
        g->dirty_next = s->dirty_groups;
        s->dirty_groups = g;
    }
}
void groups_reevaluate(sim *s);
void group_pause(sim *s, group *g);
void group_resume(sim *s, group *g);
void emit_activity_now(sim *s, group *g, tl_sim_activity_kind kind, bool paused);
/* An activity record, when a hook wants them (rarely: a test or a timeline):
 * the check is inline, the record is built out of line. */
static inline void emit_activity(sim *s, group *g, tl_sim_activity_kind kind, bool paused)
{
    if (s->act_fn)
        emit_activity_now(s, g, kind, paused);
}
void trains_break_unit(sim *s, unit *u);

/* sim_group.c: a launch's timing, prepared when it enters the hardware, and the
 * groups its placed blocks run as (what sim_dispatch.c's placement starts) */
void launch_kernel_prepare(sim *s, launch *l);
uint64_t kernel_bps(const sim *s, uint64_t grid, int occ); /* blocks an SM when spread */
group *group_new(sim *s, launch *l, unit *u);
void group_start(sim *s, group *g);
bool alone_in_unit(const unit *u, const launch *l);
bool trains_break_launch(sim *s, launch *l);

/* sim_stream.c */
void stream_advance(sim *s, sstream *st);
void launch_complete(sim *s, launch *l);
void launch_complete_later(sim *s, launch *l);
void ee_push(sim *s, launch *l);
void ee_pop(sim *s, sctx *c, int level);
void ee_unlink(sim *s, launch *l);
void copy_lane_start(sim *s, int lane);
launch *launch_alloc(sim *s);
void launch_free(sim *s, launch *l);
launch *launch_find(sim *s, tl_launch_id id);

/* sim_slice.c */
/* The unit needs a dispatch at the end of the instant. */
static inline void unit_dirty(sim *s, unit *u)
{
    u->dirty = true;
    s->eng.flush_pending = true; /* tl_engine_request_flush */
}
void slice_update_slow(sim *s);
/* A launch's first blocks started: with slice_overtime, it may renew its unit's
 * slice (sim_slice.c). */
void slice_launch_started(sim *s, const launch *l);
/* Time-slicing decisions at the end of an instant. A device of one unit
 * (one context, or MPS, or partitions only) has nothing to slice once that
 * unit is active: the check is inline, as it runs at every instant. */
static inline void slice_update(sim *s)
{
    if (s->n_units == 1 && s->active)
        return;
    slice_update_slow(s);
}
void unit_work_added(sim *s, unit *u);
void unit_work_removed(sim *s, unit *u);

/* contention.c */
double contention_slowdown(const tl_contention_params *p, double foreign_frac);
/* Model KINDS: the slowdown of a group that is (or is not) starved, of kind
 * work, beside other launches' memory threads (share fo of the SM's thread
 * slots) with its own share fs. */
/* dram_share: a streaming kernel's DRAM bandwidth on sms SMs (H100), GB/s. */
double contention_dram_gbps(int sms);
double contention_kinds_slowdown(const tl_contention_params *p, bool starved, int work, double fo,
                                 double fs);
/* The same, with pow() results remembered in m (the same values). */
double contention_kinds_slowdown_memo(const tl_contention_params *p, contention_memo *m,
                                      bool starved, int work, double fo, double fs);
/* Model KINDS with partial_starve: the slowdown of a group starved on a share
 * f of its SMs, free_sd on the rest. */
double contention_partly_starved(const tl_contention_params *p, double f, double free_sd);
double contention_mem_share_slowdown(const tl_contention_params *p, bool churns, double f,
                                     double pressure, double block_ns, double free_sd);
double contention_compute_beside_memory(const tl_contention_params *p, double fc, double fl,
                                        double block_ns);
double contention_cc_share_slowdown(const tl_contention_params *p, double f, double block_ns,
                                    double free_sd);
/* Does a group of kind wa (placed at age_a) starve beside one of kind wb
 * (placed at age_b), of another launch? */
static inline bool contention_starves(const sim *s, int wa, uint64_t age_a, int wb, uint64_t age_b)
{
    /* contention.mem_age: memory blocks too only beside older compute blocks */
    return wb == TL_WORK_COMPUTE && ((wa == TL_WORK_MEMORY && !s->p.contention.mem_age) || age_b < age_a);
}
/* sim_sm.c: g's blocks were placed anew (a recycled wave): it is now the
 * youngest on its SMs. */
void sm_renew_age(sim *s, group *g, uint64_t age);

/* sim_device.c */
void sim_flush(void *ctx);

#endif
