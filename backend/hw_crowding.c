/* tally-run crowding: how a synthetic kernel's blocks slow down as more of
 * them share an SM, the data the simulator's crowding rule is fitted to
 * (crowding_fit.c; sim/README.md, "Crowding").
 *
 * On the H100 a kernel that waits for room beside another job's blocks is
 * placed SM by SM as the room frees, up to 32 of its blocks on one SM where
 * alone it spreads 3-4 an SM (experiments/results/hw/placement/); how much
 * slower its blocks then run decides its time. Here each kind of synthetic
 * kernel (synth.h; variant 0) with blocks of 64 and of 256 threads runs alone
 * as one wave of k blocks on every SM (grid k x SMs: the block scheduler
 * spreads an idle GPU's blocks evenly), k = 1, 2, 4, ... up to its occupancy,
 * with the same work per block; ratio = its time / its time at k = 1, medians
 * of 5 runs after a warm-up. The compute kernel's fit is the simulator's
 * crowding_warps; the memory kernel's times are printed but not used: with
 * every SM loaded, DRAM bandwidth sets them, not the crowded SM. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "tally/metrics.h"
#include "cuda_device.h"
#include "synth.h"

#define REPS 5
#define TARGET_NS (1 * TL_NS_PER_MS) /* a block's time at k = 1 */
#define MAX_POINTS 64

typedef struct crowd_ctx {
    tl_synth *s;
    cudaStream_t st;
    int sms;
    unsigned long long salt;
} crowd_ctx;

static int cuda_fail(tl_err *err, int e, const char *what)
{
    return tl_errf(err, TL_ENODEV, "crowding: %s: %s", what, tl_synth_error_string(e));
}

/* Median time of one wave of k blocks on every SM. */
static int time_wave(crowd_ctx *c, int kind, int threads, int k, uint32_t iters, double *out,
                     tl_err *err)
{
    double d[REPS];
    for (int i = -1; i < REPS; i++) { /* one warm-up */
        tl_synth_launch l;
        memset(&l, 0, sizeof l);
        l.kind = kind == TL_KIND_COMPUTE ? TL_SYNTH_COMPUTE : TL_SYNTH_MEMORY;
        l.block[0] = (unsigned)threads;
        l.block[1] = l.block[2] = 1;
        l.end = (unsigned long long)c->sms * (unsigned long long)k;
        l.iters = iters;
        int slot = tl_synth_slot_acquire(c->s);
        if (slot < 0)
            return tl_errf(err, TL_EINVAL, "crowding: no free launch slot");
        l.slot = (unsigned)slot;
        l.salt = c->salt;
        c->salt += 0x9e3779b97f4a7c15ull >> 16;
        int e = tl_synth_enqueue(c->s, &l, c->st);
        int e2 = cudaStreamSynchronize(c->st);
        const volatile tl_synth_rec *r = tl_synth_record(c->s, (unsigned)slot);
        double t = (double)(r->end_gt - r->start_gt);
        tl_synth_slot_release(c->s, (unsigned)slot);
        if (e)
            return cuda_fail(err, e, "launch");
        if (e2)
            return cuda_fail(err, e2, "run");
        if (i >= 0)
            d[i] = t;
    }
    *out = tl_median(d, REPS);
    return 0;
}

/* Work units that make a block alone on its SM (k = 1) last about TARGET_NS. */
typedef struct wave_probe {
    crowd_ctx *c;
    int kind, threads;
} wave_probe;

static int wave_probe_ns(void *arg, uint32_t iters, double *ns, tl_err *err)
{
    wave_probe *p = arg;
    return time_wave(p->c, p->kind, p->threads, 1, iters, ns, err);
}

static int calibrate(crowd_ctx *c, int kind, int threads, uint32_t *iters, double *got, tl_err *err)
{
    wave_probe p = {c, kind, threads};
    return tl_calib_proportional(wave_probe_ns, &p, TARGET_NS, iters, got, err);
}

int tl_hw_crowding(FILE *out, FILE *csv, int device, tl_crowding_result *fit, tl_err *err)
{
    crowd_ctx c;
    memset(&c, 0, sizeof c);
    int e = cudaSetDevice(device);
    if (!e)
        e = cudaDeviceGetAttribute(&c.sms, cudaDevAttrMultiProcessorCount, device);
    if (e)
        return cuda_fail(err, e, "device");
    tl_gpu_props gpu;
    tl_cuda_props(device, &gpu);
    if ((e = tl_synth_open(&c.s, 4)))
        return cuda_fail(err, e, "synthetic kernels");
    int r = 0;
    if ((e = cudaStreamCreateWithFlags(&c.st, cudaStreamNonBlocking)))
        r = cuda_fail(err, e, "stream");
    const tl_synth_variant_info *vi = tl_synth_variant(c.s, 0);
    char name[256] = "?";
    struct cudaDeviceProp prop;
    if (!r && cudaGetDeviceProperties(&prop, device) == 0)
        snprintf(name, sizeof name, "%s", prop.name);
    if (!r && out)
        fprintf(out, "crowding: %s, %d SMs, variant 0 (%d registers); blocks of %.1f ms at one "
                     "an SM\n", name, c.sms, vi->regs, TARGET_NS / 1e6);
    if (!r && csv)
        fprintf(csv, "# tally-run crowding on %s (%d SMs): one-wave synthetic kernels, variant 0 "
                     "(%d registers per thread); medians of %d runs\n"
                     "kind,threads,occupancy,k_ref,k,ref_ns,time_ns,ratio,iters\n",
                name, c.sms, vi->regs, REPS);
    static const int block_threads[] = {64, 256};
    tl_crowding_point pts[MAX_POINTS];
    int np = 0;
    for (int kind = 0; kind < 2 && !r; kind++)
        for (int b = 0; b < 2 && !r; b++) {
            int threads = block_threads[b];
            /* blocks an SM holds: variant 0's registers, no shared memory */
            int occ = tl_occupancy(&gpu, threads, vi->regs, 0, NULL);
            uint32_t iters = 0;
            double ref = 0;
            r = calibrate(&c, kind, threads, &iters, &ref, err);
            for (int k = 1; k <= occ && !r && np < MAX_POINTS; k *= 2) {
                double t = ref;
                if (k > 1 && (r = time_wave(&c, kind, threads, k, iters, &t, err)) < 0)
                    break;
                pts[np++] = (tl_crowding_point){kind, threads / 32, occ, 1, k, t / ref};
                if (csv)
                    fprintf(csv, "%s,%d,%d,1,%d,%.0f,%.0f,%.4f,%u\n", tl_kernel_kind_name(kind),
                            threads, occ, k, ref, t, t / ref, iters);
                if (out)
                    fprintf(out, "crowding: %-7s %3d threads, %2d of %2d blocks an SM: %9.0f ns, "
                                 "x%.3f of one an SM\n",
                            tl_kernel_kind_name(kind), threads, k, occ, t, t / ref);
            }
        }
    if (!r)
        r = tl_crowding_fit(pts, np, fit, err);
    if (!r && out) {
        fprintf(out, "crowding: fit compute ws = %.2f warps (rmse %.3f over %d points): the "
                     "simulator's crowding_warps\n", fit->ws[TL_KIND_COMPUTE],
                fit->rmse[TL_KIND_COMPUTE], fit->n[TL_KIND_COMPUTE]);
        fprintf(out, "crowding: fit memory  ws = %.2f warps (rmse %.3f over %d points): not used "
                     "(every SM loaded: DRAM bandwidth, not the SM, sets these times)\n",
                fit->ws[TL_KIND_MEMORY], fit->rmse[TL_KIND_MEMORY], fit->n[TL_KIND_MEMORY]);
    }
    if (c.st)
        cudaStreamDestroy(c.st);
    tl_synth_close(c.s);
    return r;
}
