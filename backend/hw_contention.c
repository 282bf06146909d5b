/* tally-run contention: how much co-resident kernels slow each other on the
 * real GPU, the data the simulator's contention model is fitted to
 * (contention_fit.c, sim/contention.c).
 *
 * Kernels are the synthetic ones of synth.h (compute: FMA chains; memory:
 * streaming loads through a buffer 5x the L2), one wave each: the victim has
 * v threads per SM and the other kernel o (blocks of 256 threads, 132 x v/256
 * and 132 x o/256 of them, v + o <= the SM's 2048 threads, 32 registers per
 * thread, no shared memory), so that every block of both is resident at once
 * and the block scheduler spreads each kernel evenly over the SMs. The other
 * kernel is launched first, on its own stream, and lasts ten times longer
 * than the victim alone; the victim, launched right after on a second stream,
 * therefore runs entirely beside it (checked: 'overlap' is the fraction of
 * the victim's run covered by the other's). The same again with the victim
 * launched first and the other right after (victim_order 'first'): warp
 * schedulers favour older warps, so the order matters. slowdown = victim's
 * co-run time / its solo time, medians of 5 runs after a warm-up; f = o / 2048
 * is the simulator's "share of the SM's thread slots held by other launches".
 * Every (victim kind, other kind, v, o, order) is measured, so each kernel is
 * also the other one's victim. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "tally/metrics.h"
#include "cuda_device.h"
#include "synth.h"

#define BLOCK_THREADS 256
#define REPS 5
#define VICTIM_NS (2 * TL_NS_PER_MS)
#define OTHER_NS (20 * TL_NS_PER_MS)

typedef struct cctx {
    tl_synth *s;
    cudaStream_t st[2];
    int sms, threads_per_sm;
    unsigned long long salt;
} cctx;

static int cuda_fail(tl_err *err, int e, const char *what)
{
    return tl_errf(err, TL_ENODEV, "contention: %s: %s", what, tl_synth_error_string(e));
}

static tl_synth_launch shape(const cctx *c, int kind, int threads_per_sm, uint32_t iters)
{
    tl_synth_launch l;
    memset(&l, 0, sizeof l);
    l.kind = kind == TL_KIND_COMPUTE ? TL_SYNTH_COMPUTE : TL_SYNTH_MEMORY;
    l.variant = 0;
    l.block[0] = BLOCK_THREADS;
    l.block[1] = l.block[2] = 1;
    l.end = (unsigned long long)c->sms * (unsigned long long)(threads_per_sm / BLOCK_THREADS);
    l.iters = iters;
    return l;
}

/* Run n launches (n 1 or 2) at once, l[i] on stream i, l[0] first; fills the
 * start and end (%globaltimer) of each. */
static int run_once(cctx *c, tl_synth_launch *l, int n, unsigned long long *start,
                    unsigned long long *end, tl_err *err)
{
    int slot[2] = {-1, -1}, e = 0;
    for (int i = 0; i < n && !e; i++) {
        if ((slot[i] = tl_synth_slot_acquire(c->s)) < 0)
            return tl_errf(err, TL_EINVAL, "contention: no free launch slot");
        l[i].slot = (unsigned)slot[i];
        l[i].salt = c->salt;
        c->salt += 0x9e3779b97f4a7c15ull >> 16; /* other kernels, other memory */
        e = tl_synth_enqueue(c->s, &l[i], c->st[i]);
    }
    int e2 = cudaDeviceSynchronize();
    for (int i = 0; i < n; i++) {
        if (slot[i] < 0)
            continue;
        const volatile tl_synth_rec *r = tl_synth_record(c->s, (unsigned)slot[i]);
        start[i] = r->start_gt;
        end[i] = r->end_gt;
        tl_synth_slot_release(c->s, (unsigned)slot[i]);
    }
    if (e)
        return cuda_fail(err, e, "launch");
    if (e2)
        return cuda_fail(err, e2, "run");
    return 0;
}

/* Median solo time of a launch. */
static int solo_ns(cctx *c, const tl_synth_launch *tmpl, double *out, tl_err *err)
{
    double d[REPS];
    for (int i = -1; i < REPS; i++) { /* one warm-up */
        tl_synth_launch l = *tmpl;
        unsigned long long s, e;
        int r = run_once(c, &l, 1, &s, &e, err);
        if (r < 0)
            return r;
        if (i >= 0)
            d[i] = (double)(e - s);
    }
    *out = tl_median(d, REPS);
    return 0;
}

/* Work units per block that make the kernel alone last about target_ns. */
typedef struct solo_probe {
    cctx *c;
    int kind, tps;
} solo_probe;

static int solo_probe_ns(void *arg, uint32_t iters, double *ns, tl_err *err)
{
    solo_probe *p = arg;
    tl_synth_launch l = shape(p->c, p->kind, p->tps, iters);
    return solo_ns(p->c, &l, ns, err);
}

static int calibrate(cctx *c, int kind, int tps, tl_ns target, uint32_t *iters, double *got,
                     tl_err *err)
{
    solo_probe p = {c, kind, tps};
    return tl_calib_proportional(solo_probe_ns, &p, target, iters, got, err);
}

int tl_hw_contention(FILE *out, FILE *csv, int device, tl_contention_result *fit, tl_err *err)
{
    cctx c;
    memset(&c, 0, sizeof c);
    int e = cudaSetDevice(device);
    if (!e)
        e = cudaDeviceGetAttribute(&c.sms, cudaDevAttrMultiProcessorCount, device);
    if (!e)
        e = cudaDeviceGetAttribute(&c.threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device);
    if (e)
        return cuda_fail(err, e, "device");
    if ((e = tl_synth_open(&c.s, 8)))
        return cuda_fail(err, e, "synthetic kernels");
    int r = 0;
    for (int i = 0; i < 2 && !r; i++)
        if ((e = cudaStreamCreateWithFlags(&c.st[i], cudaStreamNonBlocking)))
            r = cuda_fail(err, e, "stream");
    const tl_synth_variant_info *vi = tl_synth_variant(c.s, 0);
    if (!r && vi->regs * c.threads_per_sm > 65536)
        r = tl_errf(err, TL_ERANGE, "contention: variant 0 uses %d registers per thread: %d threads "
                                    "per SM do not fit", vi->regs, c.threads_per_sm);
    char name[256] = "?";
    struct cudaDeviceProp prop;
    if (!r && cudaGetDeviceProperties(&prop, device) == 0)
        snprintf(name, sizeof name, "%s", prop.name);

    /* v: the victim's threads per SM; o: the other's. */
    static const int vs[] = {256, 512, 1024}, os[] = {256, 512, 1024, 1536};
    enum { NV = 3, NO = 4 };
    uint32_t it_v[2][NV] = {{0}}, it_o[2][NO] = {{0}};
    double solo_v[2][NV] = {{0}}, solo_o[2][NO] = {{0}};
    if (!r && out)
        fprintf(out, "contention: %s, %d SMs, %d threads per SM, variant 0 (%d registers); victim "
                     "%.0f ms alone, the other kernel %.0f ms\n",
                name, c.sms, c.threads_per_sm, vi->regs, VICTIM_NS / 1e6, OTHER_NS / 1e6);
    for (int k = 0; k < 2 && !r; k++) {
        for (int i = 0; i < NV && !r; i++)
            r = calibrate(&c, k, vs[i], VICTIM_NS, &it_v[k][i], &solo_v[k][i], err);
        for (int i = 0; i < NO && !r; i++)
            r = calibrate(&c, k, os[i], OTHER_NS, &it_o[k][i], &solo_o[k][i], err);
    }
    if (!r && csv)
        fprintf(csv, "# tally-run contention on %s (%d SMs): one-wave synthetic kernels, blocks of "
                     "%d threads, %d registers per thread; medians of %d runs\n"
                     "victim_kind,victim_threads_per_sm,f_self,other_kind,other_threads_per_sm,"
                     "f_other,victim_order,solo_ns,corun_ns,slowdown,other_solo_ns,"
                     "other_corun_ns,overlap,victim_iters,other_iters\n",
                name, c.sms, BLOCK_THREADS, vi->regs, REPS);
    tl_contention_point *pts = tl_xcalloc(2 * 2 * 2 * NV * NO, sizeof *pts);
    int np = 0;
    /* older 0: the other kernel first, the victim right after; 1: the reverse */
    for (int older = 0; older < 2 && !r; older++)
        for (int vk = 0; vk < 2 && !r; vk++)
            for (int ok = 0; ok < 2 && !r; ok++)
                for (int i = 0; i < NV && !r; i++)
                    for (int j = 0; j < NO && !r; j++) {
                        if (vs[i] + os[j] > c.threads_per_sm)
                            continue;
                        double sd[REPS], ov[REPS], co[REPS], oco[REPS];
                        int vi_ = older ? 0 : 1, oi = 1 - vi_;
                        for (int rep = -1; rep < REPS && !r; rep++) {
                            tl_synth_launch l[2];
                            l[oi] = shape(&c, ok, os[j], it_o[ok][j]);
                            l[vi_] = shape(&c, vk, vs[i], it_v[vk][i]);
                            unsigned long long s[2], en[2];
                            r = run_once(&c, l, 2, s, en, err);
                            if (r < 0 || rep < 0)
                                continue;
                            double vd = (double)(en[vi_] - s[vi_]);
                            double lo = s[vi_] > s[oi] ? (double)s[vi_] : (double)s[oi];
                            double hi = en[vi_] < en[oi] ? (double)en[vi_] : (double)en[oi];
                            co[rep] = vd;
                            oco[rep] = (double)(en[oi] - s[oi]);
                            sd[rep] = vd / solo_v[vk][i];
                            ov[rep] = vd > 0 && hi > lo ? (hi - lo) / vd : 0;
                        }
                        if (r < 0)
                            break;
                        double fs = (double)vs[i] / c.threads_per_sm;
                        double fo = (double)os[j] / c.threads_per_sm;
                        double msd = tl_median(sd, REPS), mco = tl_median(co, REPS);
                        double mov = tl_median(ov, REPS), moco = tl_median(oco, REPS);
                        bool ser = tl_contention_serialized(mco, solo_o[ok][j]);
                        pts[np++] = (tl_contention_point){vk, ok, fs, fo, msd, older == 1, ser, solo_v[vk][i],
                                                         mco, moco};
                        if (csv)
                            fprintf(csv, "%s,%d,%.4f,%s,%d,%.4f,%s,%.0f,%.0f,%.4f,%.0f,%.0f,%.3f,%u,%u\n",
                                    tl_kernel_kind_name(vk), vs[i], fs, tl_kernel_kind_name(ok), os[j],
                                    fo, older ? "first" : "second", solo_v[vk][i], mco, msd,
                                    solo_o[ok][j], moco, mov, it_v[vk][i], it_o[ok][j]);
                        if (out)
                            fprintf(out, "contention: %-7s %4d thr/SM %s beside %-7s %4d thr/SM: solo "
                                         "%8.0f ns co-run %8.0f ns slowdown %6.3f overlap %.2f; other "
                                         "%8.0f -> %8.0f ns%s\n",
                                    tl_kernel_kind_name(vk), vs[i], older ? "first " : "second",
                                    tl_kernel_kind_name(ok), os[j], solo_v[vk][i], mco, msd, mov,
                                    solo_o[ok][j], moco, ser ? " serialized" : "");
                    }
    if (!r && out)
        r = tl_contention_report(out, pts, np, fit, err);
    else if (!r)
        r = tl_contention_fit(pts, np, fit, err);
    free(pts);
    for (int i = 0; i < 2; i++)
        if (c.st[i])
            cudaStreamDestroy(c.st[i]);
    tl_synth_close(c.s);
    return r;
}
