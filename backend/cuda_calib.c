/* Calibration on the GPU: how many work units per block make a synthetic
 * kernel last its traced time (arithmetic in calib_math.c, cache in
 * calib_db.c). Each point is the median of the kernels' own %globaltimer
 * durations over a few back-to-back runs after a warm-up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

static void release_copies(tl_cuda *c, const tl_synth_launch *ls, int n)
{
    for (int i = 0; i < n; i++) tl_synth_slot_release(c->synth, ls[i].slot);
}

/* reps + 1 copies of tmpl into ls (the first a warm-up; reps within 1..32),
 * each with a slot of its own and the next salt: how many, or < 0 (err) with
 * no slot held. */
static int take_copies(tl_cuda *c, const tl_synth_launch *tmpl, int reps, tl_synth_launch ls[33], tl_err *err)
{
    if (reps < 1) reps = 1;
    if (reps > 32) reps = 32;
    int n = reps + 1;
    for (int i = 0; i < n; i++) {
        int sl = tl_synth_slot_acquire(c->synth);
        if (sl < 0) {
            release_copies(c, ls, i);
            return tl_errf(err, TL_EINVAL, "calibration: no free launch slot (too much work in flight)");
        }
        ls[i] = *tmpl;
        ls[i].slot = (unsigned)sl;
        ls[i].salt = c->salt;
        c->salt += 0x9e3779b97f4a7c15ull >> 20;
    }
    return n;
}

/* After the copies ran: the median of their own durations (the warm-up left
 * out); their slots released. */
static tl_ns median_of_copies(tl_cuda *c, const tl_synth_launch *ls, int n)
{
    tl_ns d[32];
    for (int i = 1; i < n; i++) {
        const volatile tl_synth_rec *r = tl_synth_record(c->synth, ls[i].slot);
        d[i - 1] = (tl_ns)(r->end_gt - r->start_gt);
    }
    release_copies(c, ls, n);
    return tl_median_ns(d, n - 1);
}

int tl_cuda_time_launch(tl_cuda *c, const tl_synth_launch *tmpl, int reps, cudaStream_t s, tl_ns *out,
                        tl_err *err)
{
    tl_synth_launch ls[33];
    int n = take_copies(c, tmpl, reps, ls, err);
    if (n < 0) return n;
    for (int i = 0; i < n; i++) {
        int e = tl_synth_enqueue(c->synth, &ls[i], s);
        if (e) {
            cudaStreamSynchronize(s); /* the launches before it hold their slots until they end */
            release_copies(c, ls, n);
            return tl_cuda_errf(err, e, "calibration launch");
        }
    }
    int e = cudaStreamSynchronize(s);
    tl_ns med = median_of_copies(c, ls, n);
    if (e) return tl_cuda_errf(err, e, "calibration run");
    *out = med;
    return 0;
}

/* The same, inside one CUDA graph of the copies as nodes back to back: how a
 * graph job's kernels run in the replay. Each node's time is its own first
 * block start to last block end. */
static int time_nodes(tl_cuda *c, const tl_synth_launch *tmpl, int reps, cudaStream_t s, tl_ns *out, tl_err *err)
{
    tl_synth_launch ls[33];
    int n = take_copies(c, tmpl, reps, ls, err);
    if (n < 0) return n;
    unsigned slots[33];
    for (int i = 0; i < n; i++) slots[i] = ls[i].slot;
    tl_synth_graph *g = NULL;
    int e = tl_synth_graph_new(c->synth, ls, (size_t)n, &g);
    if (!e) e = tl_synth_graph_launch(c->synth, g, slots, s);
    int se = (int)cudaStreamSynchronize(s);
    if (!e) e = se;
    tl_synth_graph_free(g);
    tl_ns med = median_of_copies(c, ls, n);
    if (e) return tl_cuda_errf(err, e, "calibration as graph nodes");
    *out = med;
    return 0;
}

static size_t mem_hash(const tl_calib_key *k, tl_ns target)
{
    uint64_t h = 1469598103934665603ull;
    uint64_t v[9] = {(uint64_t)k->kind, (uint64_t)k->variant, k->blocks, k->block[0], k->block[1], k->block[2],
                     k->smem, (uint64_t)target, (uint64_t)k->node};
    for (int i = 0; i < 9; i++) {
        h ^= v[i];
        h *= 1099511628211ull;
        h ^= h >> 29;
    }
    return (size_t)h;
}

static bool mem_match(const tl_calib_mem *m, const tl_calib_key *k, tl_ns target)
{
    const tl_calib_key *a = &m->key;
    return a->kind == k->kind && a->variant == k->variant && a->node == k->node && a->blocks == k->blocks &&
           a->block[0] == k->block[0] && a->block[1] == k->block[1] && a->block[2] == k->block[2] &&
           a->smem == k->smem && m->target == target;
}

static tl_calib_mem *mem_find(tl_cuda *c, const tl_calib_key *k, tl_ns target)
{
    if (!c->mem_cap) return NULL;
    for (size_t i = mem_hash(k, target) & (c->mem_cap - 1);; i = (i + 1) & (c->mem_cap - 1)) {
        if (!c->mem[i].used) return NULL;
        if (mem_match(&c->mem[i], k, target)) return &c->mem[i];
    }
}

static void mem_put(void *arg, const tl_calib_key *k, tl_ns target, uint32_t iters, tl_ns measured)
{
    tl_cuda *c = arg;
    if ((c->mem_n + 1) * 2 > c->mem_cap) {
        tl_calib_mem *old = c->mem;
        size_t ocap = c->mem_cap;
        c->mem_cap = ocap ? ocap * 2 : 4096;
        c->mem = tl_xcalloc(c->mem_cap, sizeof *c->mem);
        c->mem_n = 0;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].used)
                mem_put(c, &old[i].key, old[i].target, old[i].iters, old[i].measured);
        free(old);
    }
    size_t i = mem_hash(k, target) & (c->mem_cap - 1);
    while (c->mem[i].used && !mem_match(&c->mem[i], k, target)) i = (i + 1) & (c->mem_cap - 1);
    if (!c->mem[i].used) c->mem_n++;
    tl_calib_mem *m = &c->mem[i];
    m->used = true;
    m->key = *k;
    m->key.gpu = NULL; /* the caller's string is not ours to keep */
    m->target = target;
    m->iters = iters;
    m->measured = measured;
}

int tl_cuda_calib_load(tl_cuda *c, tl_err *err)
{
    return tl_calib_db_each(&c->calib, c->info.name, mem_put, c, err);
}

static int calibrate_kind(tl_cuda *c, const char *name, int kind, const tl_op *op, bool node, tl_kernel_plan *out,
                          bool only_cached, tl_err *err);

static void fill_launch(const tl_op *op, int kind, int variant, uint32_t iters, tl_synth_launch *l)
{
    memset(l, 0, sizeof *l);
    l->kind = kind == TL_KIND_COMPUTE ? TL_SYNTH_COMPUTE : TL_SYNTH_MEMORY;
    l->variant = variant;
    for (int i = 0; i < 3; i++) l->block[i] = op->block[i] ? op->block[i] : 1;
    l->smem = op->static_smem + op->dynamic_smem;
    l->begin = 0;
    l->end = (uint64_t)(op->grid[0] ? op->grid[0] : 1) * (op->grid[1] ? op->grid[1] : 1) *
             (op->grid[2] ? op->grid[2] : 1);
    l->iters = iters;
}

int tl_cuda_calibrate(tl_cuda *c, const char *name, const tl_op *op, bool node, tl_kernel_plan *out,
                      tl_err *err)
{
    memset(out, 0, sizeof *out);
    if (!name) {
        /* An op of a trace this device was not given (the sweep loads its own
         * copies): its shape and target were calibrated before the run under
         * one kind or the other. */
        for (int kd = 0; kd < 2; kd++) {
            tl_kernel_plan pl;
            if (calibrate_kind(c, "", kd, op, node, &pl, true, err) == 1) {
                *out = pl;
                return 0;
            }
        }
        /* A node whose shape was calibrated as a launch only: its kind is known. */
        for (int kd = 0; node && kd < 2; kd++) {
            tl_kernel_plan pl;
            if (calibrate_kind(c, "", kd, op, false, &pl, true, err) == 1)
                return calibrate_kind(c, "", kd, op, true, out, false, err);
        }
        if (!c->warned_unnamed) {
            fprintf(stderr, "tally-run: warning: kernel shapes not calibrated before the run; calibrating "
                            "now as memory-bound (this stalls the run)\n");
            c->warned_unnamed = true;
        }
        name = "";
    }
    return calibrate_kind(c, name, tl_kernel_kind_for_name(name), op, node, out, false, err);
}

/* Returns 1 when only_cached and a cached answer was found, 0 when planned,
 * <0 on error. */
static int calibrate_kind(tl_cuda *c, const char *name, int kind, const tl_op *op, bool node, tl_kernel_plan *out,
                          bool only_cached, tl_err *err)
{
    memset(out, 0, sizeof *out);
    int regs[TL_SYNTH_NVARIANTS], maxthr[TL_SYNTH_NVARIANTS];
    for (int v = 0; v < TL_SYNTH_NVARIANTS; v++) {
        const tl_synth_variant_info *vi = tl_synth_variant(c->synth, v);
        regs[v] = vi->regs;
        maxthr[v] = vi->max_threads;
    }
    int threads = (int)((op->block[0] ? op->block[0] : 1) * (op->block[1] ? op->block[1] : 1) *
                        (op->block[2] ? op->block[2] : 1));
    int variant = tl_pick_variant(regs, maxthr, TL_SYNTH_NVARIANTS, (int)op->regs, threads, 65536, 256);
    if (variant < 0)
        return tl_errf(err, TL_ERANGE, "kernel '%s': block of %d threads fits no synthetic variant", name,
                       threads);
    tl_synth_launch l;
    fill_launch(op, kind, variant, 0, &l);
    tl_calib_key key = {c->info.name, kind, variant, l.end, {l.block[0], l.block[1], l.block[2]}, l.smem, node};
    out->kind = kind;
    out->variant = variant;
    if (!only_cached) c->cstats.kernels++;
    tl_ns target = op->dur_ns > 0 ? op->dur_ns : 1000;

    uint32_t iters = 0;
    tl_ns measured = 0;
    bool found = false;
    const tl_calib_mem *m = mem_find(c, &key, target);
    if (m) {
        c->cstats.cache_hits++;
        if (only_cached) c->cstats.kernels++;
        out->iters = m->iters;
        out->expected_ns = m->measured;
        return only_cached ? 1 : 0;
    }
    if (only_cached) return 0;
    int r = tl_calib_db_get(&c->calib, &key, target, &iters, &measured, &found, err);
    if (r) return r;
    if (found) {
        c->cstats.cache_hits++;
        out->iters = iters;
        out->expected_ns = measured;
        return 0;
    }
    tl_calib_curve curve;
    if ((r = tl_calib_db_load_curve(&c->calib, &key, &curve, err))) return r;
    double tol = c->opt.calib_tol > 0 ? c->opt.calib_tol : 0.02;
    int reps = c->opt.calib_reps > 0 ? c->opt.calib_reps : 5;
    bool done = false, measured_any = false;
    for (int step = 0; step < 12; step++) {
        uint32_t next = tl_calib_next(&curve, target, tol, &done);
        if (done) {
            iters = next;
            break;
        }
        l.iters = next;
        tl_ns t;
        r = node ? time_nodes(c, &l, reps, c->calib_stream, &t, err)
                 : tl_cuda_time_launch(c, &l, reps, c->calib_stream, &t, err);
        if (r) return r;
        c->cstats.measurements++;
        measured_any = true;
        if (t > 20 * target && t > 10 * TL_NS_PER_MS) { /* runaway guess: keep what we have */
            tl_calib_curve_add(&curve, next, t, target);
            break;
        }
        tl_calib_curve_add(&curve, next, t, target);
        if ((r = tl_calib_db_add_point(&c->calib, &key, next, t, err))) return r;
    }
    const tl_calib_point *best = tl_calib_closest(&curve, target);
    if (!done && best) iters = best->iters;
    for (int i = 0; i < curve.n; i++)
        if (curve.p[i].iters == iters) measured = curve.p[i].ns;
    if (!measured_any) c->cstats.curve_hits++;
    if (iters == 0 && measured > target) c->cstats.below_floor++;
    else if (!tl_calib_within(measured, target, tol)) c->cstats.outside_tol++;
    if (c->opt.verbose)
        fprintf(stderr, "calib: %-40.40s %s%s v%d grid %llu block %u smem %u target %lld ns -> iters %u (%lld ns)\n",
                name, tl_kernel_kind_name(kind), node ? " node" : "", variant, (unsigned long long)l.end, threads, l.smem,
                (long long)target, iters, (long long)measured);
    out->iters = iters;
    out->expected_ns = measured;
    mem_put(c, &key, target, iters, measured);
    return tl_calib_db_put(&c->calib, &key, target, iters, measured, err);
}
