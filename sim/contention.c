/* The model's tunable parameters and the contention formula, in one place.
 *
 * Contention between co-resident blocks of DIFFERENT launches on an SM:
 *
 *     slowdown = min(max_slowdown, 1 + alpha * f)
 *
 * f is the fraction of the SM's thread slots (max_threads_per_sm, counted in
 * whole warps) held by blocks of other launches, averaged over the SMs the
 * block group occupies. Blocks of the same launch never count: a kernel's
 * traced duration already includes its own blocks sharing the SM. A block
 * group's rate is re-evaluated whenever a group starts or ends on one of its
 * SMs (batched once per instant), and its remaining work is carried over.
 *
 * Defaults: on the H100 (SXM, 132 SMs) FITTED to co-run measurements of the
 * backend's synthetic kernels (tally-run contention; data and procedure in
 * experiments/results/hw/contention.csv and sim/README.md): alpha = 2.165,
 * max_slowdown = 3.165 (1 + alpha: no cap for f <= 1), the least-squares fit
 * over the 55 co-runs that a rate of slowdown describes. On every other GPU
 * still PROVISIONAL (not measured there): alpha = 0.5 (a block whose SM is
 * half full of another kernel's threads runs 1.25x slower), capped at 2.0. */
#include <stdbool.h>
#include <string.h>

#include "sim_internal.h"

double contention_slowdown(const tl_contention_params *p, double f)
{
    if (f <= 0)
        return 1.0;
    double sd = 1.0 + p->alpha * f;
    return sd > p->max_slowdown ? p->max_slowdown : sd;
}

void tl_sim_params_default(tl_sim_params *p, const tl_gpu_props *gpu)
{
    /* Fitted on the H100 SXM (experiments/results/hw/contention.csv); a
     * guess elsewhere. */
    bool h100 = gpu && strstr(gpu->name, "H100") && gpu->sms == 132;
    p->contention.alpha = h100 ? 2.165 : 0.5;
    p->contention.max_slowdown = h100 ? 3.165 : 2.0;
    /* The trace's host_call_ns already contains the launch call itself; the
     * runner waits it out before issuing, so no extra latency by default. */
    p->launch_latency_ns = 0;
    /* PTB loop overhead per logical block (atomic counter + flag check):
     * a guess, to be fitted. */
    p->ptb_block_overhead_ns = 200;
    /* A further slice launch: one more launch on the GPU side (a guess). */
    p->slice_launch_ns = 1000;
    p->copy_engines = 2;
    /* Coalescing only bites when a launch is split into many groups (its
     * blocks desynchronised by interference): placements 1/16 of a block
     * time apart at most, i.e. <= 16 start phases per wave. */
    p->coalesce_groups = 8;
    p->coalesce_fraction = 1.0 / 16;
    /* Device-side copies without a traced duration: about half the HBM
     * bandwidth (read + write); a guess by generation. */
    double hbm = 2000.0;
    if (gpu) {
        if (gpu->cc_major == 7)
            hbm = 900.0;
        else if (gpu->cc_major == 8)
            hbm = 1600.0;
        else if (gpu->cc_major >= 9)
            hbm = 3350.0;
    }
    p->device_copy_gbps = hbm / 2;
}

int tl_sim_params_validate(const tl_sim_params *p, tl_err *err)
{
    if (!(p->contention.alpha >= 0 && p->contention.alpha < 1e6))
        return tl_errf(err, TL_ERANGE, "sim params: contention.alpha must be >= 0");
    if (!(p->contention.max_slowdown >= 1 && p->contention.max_slowdown < 1e6))
        return tl_errf(err, TL_ERANGE, "sim params: contention.max_slowdown must be >= 1");
    if (p->launch_latency_ns < 0)
        return tl_errf(err, TL_ERANGE, "sim params: launch_latency_ns must be >= 0");
    if (p->ptb_block_overhead_ns < 0)
        return tl_errf(err, TL_ERANGE, "sim params: ptb_block_overhead_ns must be >= 0");
    if (p->slice_launch_ns < 0)
        return tl_errf(err, TL_ERANGE, "sim params: slice_launch_ns must be >= 0");
    if (p->copy_engines != 1 && p->copy_engines != 2)
        return tl_errf(err, TL_ERANGE, "sim params: copy_engines must be 1 or 2");
    if (!(p->device_copy_gbps > 0))
        return tl_errf(err, TL_ERANGE, "sim params: device_copy_gbps must be > 0");
    if (p->coalesce_groups < 0)
        return tl_errf(err, TL_ERANGE, "sim params: coalesce_groups must be >= 0");
    if (!(p->coalesce_fraction >= 0 && p->coalesce_fraction <= 1))
        return tl_errf(err, TL_ERANGE, "sim params: coalesce_fraction must be in [0, 1]");
    return 0;
}
