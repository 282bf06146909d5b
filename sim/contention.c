/* The model's tunable parameters and the contention formulas, in one place.
 *
 * Contention between co-resident blocks of DIFFERENT launches on an SM
 * (blocks of the same launch never count: a kernel's traced duration already
 * includes its own blocks sharing the SM). A block group's rate is
 * re-evaluated whenever a group starts or ends on one of its SMs (batched
 * once per instant), and its remaining work is carried over. Two models
 * (include/tally/sim.h):
 *
 * THREADS: slowdown = min(max_slowdown, 1 + alpha * f), f the fraction of
 *   the SM's thread slots held by other launches' blocks, averaged over the
 *   group's SMs.
 *
 * KINDS (the H100 default): by kernel kind and age. Fitted to the 88 co-runs
 * of the backend's synthetic kernels (tally-run contention;
 * experiments/results/hw/contention.csv, procedure in sim/README.md):
 *   - a memory-bound block beside compute-bound blocks of another launch, and
 *     a compute-bound block beside OLDER compute-bound blocks, are starved:
 *     the co-runs show them making 0.4-2% of their solo progress until the
 *     others leave (33 of 88 co-runs; the warp schedulers favour the oldest
 *     warps, and arithmetic-bound warps always have an instruction ready).
 *     starved_rate = 0.01;
 *   - compute beside memory: no measurable slowdown either way (22 co-runs,
 *     0.997-1.010); the older compute block beside a starved younger one
 *     loses < 2% (ignored);
 *   - memory beside memory share the bandwidth, the smaller share losing
 *     more: 1 + 2.03 fo^1.4 / fs^0.7 (22 co-runs, rmse 0.21 against 0.80 for
 *     the THREADS fit on the same points), capped at 8 (the largest
 *     measured slowdown is 7.0; no extrapolation past it).
 * THREADS on the H100 (alpha 2.165, no cap) is the least-squares fit over
 * the 55 co-runs that were not starved; on every other GPU THREADS with
 * alpha = 0.5, capped at 2.0, is still a guess (not measured there). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "sim_internal.h"

double contention_slowdown(const tl_contention_params *p, double f)
{
    if (f <= 0)
        return 1.0;
    double sd = 1.0 + p->alpha * f;
    return sd > p->max_slowdown ? p->max_slowdown : sd;
}

/* pow(x, e) remembered by x (e is fixed per table): the same value, bit for
 * bit, without the call when x comes again (shares of SMs repeat). x > 0,
 * so the zeroed table's key (+0.0) never matches. */
static double pow_memo(contention_pow_ent *t, double x, double e)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    contention_pow_ent *m = &t[(b * 0x9E3779B97F4A7C15ull) >> (64 - CONTENTION_MEMO_BITS)];
    if (m->key == b)
        return m->val;
    double y = pow(x, e);
    m->key = b;
    m->val = y;
    return y;
}

double contention_kinds_slowdown(const tl_contention_params *p, bool starved, int work, double fo,
                                 double fs)
{
    return contention_kinds_slowdown_memo(p, NULL, starved, work, fo, fs);
}

double contention_kinds_slowdown_memo(const tl_contention_params *p, contention_memo *m,
                                      bool starved, int work, double fo, double fs)
{
    if (starved)
        return 1.0 / p->starved_rate;
    if (work != TL_WORK_MEMORY || fo <= 0)
        return 1.0;
    if (fs < 1.0 / 64)
        fs = 1.0 / 64; /* one warp's share of a 2048-thread SM at least */
    double po = m ? pow_memo(m->fo, fo, p->mem_p) : pow(fo, p->mem_p);
    double ps = m ? pow_memo(m->fs, fs, p->mem_q) : pow(fs, p->mem_q);
    double sd = 1.0 + p->mem_alpha * po / ps;
    return sd > p->mem_max_slowdown ? p->mem_max_slowdown : sd;
}

double contention_dram_gbps(int sms)
{
    /* A streaming kernel's DRAM bandwidth on n SMs of the H100, GB/s, linear
     * between: experiments/results/hw/bandwidth2/ (session 14; medians of 6
     * after a 300 ms warm-up: 1423-1426, 1830-1833, 2947-3014, 4051-4394 GB/s;
     * the lower of its two runs). The first probe's 1295/1790/2665/3524
     * (bandwidth/disjoint.txt) were measured without a warm-up. */
    static const double n[] = {0, 16, 33, 66, 132}, gbps[] = {0, 1423, 1830, 2947, 4051};
    for (int i = 1; i < 5; i++)
        if (sms <= n[i])
            return gbps[i - 1] + (gbps[i] - gbps[i - 1]) * (sms - n[i - 1]) / (n[i] - n[i - 1]);
    return gbps[4];
}

double tl_sim_crowding(double ws, int warps_per_block, int k_ref, int k)
{
    if (ws <= 0 || warps_per_block <= 0)
        return 1.0;
    double w = warps_per_block, now = k * w, ref = k_ref * w;
    return (now > ws ? now : ws) / (ref > ws ? ref : ws);
}

/* Partly starved (KINDS, contention.partial_starve): a group starved on a
 * share f of its SMs (its count of starving co-residents over its SMs, at
 * most 1) progresses at starved_rate there and at free_sd's rate elsewhere:
 * rate (1 - f) / free_sd + f x starved_rate. Off (0), the whole group is
 * starved (its end waits for its slowest block), which also keeps the SMs of
 * its unstarved blocks from the launch's next blocks: a training kernel of
 * many waves stalls on all 132 SMs while a few inference blocks hold some.
 * On (the default since revision 11), the tail (blocks already on a starved
 * SM wait) is given up for the flow; sim/README.md has what it does to the
 * H100 validation. */
double contention_partly_starved(const tl_contention_params *p, double f, double free_sd)
{
    if (f > 1)
        f = 1;
    return 1.0 / ((1 - f) / free_sd + f * p->starved_rate);
}

/* A group slowed m times on a share f of its SMs (at most 1) and free_sd on the
 * rest: rate (1 - f) / free_sd + f / (free_sd x m). */
static double share_slowed(double f, double m, double free_sd)
{
    if (f > 1)
        f = 1;
    return free_sd / ((1 - f) + f / m);
}

/* mem_share (KINDS, experimental): a memory group sharing a share f of its SMs
 * with other launches' compute blocks runs m times slower there instead of
 * starving, rate (1 - f) / free_sd + f / (free_sd x m), with m = 1 + (mem_share - 1)
 * x min(1, pressure) (mem_share_short for a churning launch), pressure being the
 * compute warps on such an SM over the warps that fill its issue slots
 * (crowding_warps; an SM full where that is 0). With mem_share_tau_ns, compute
 * warps past those (pressure over 1, counted up to 1 more) also hold it back in
 * proportion to their blocks' length: m += min(1, pressure - 1) x block time / tau,
 * up to 1 / starved_rate (sim/README.md, "The sharing grid"). */
double contention_mem_share_slowdown(const tl_contention_params *p, bool churns, double f,
                                     double pressure, double block_ns, double free_sd)
{
    if (pressure != pressure) /* NaN: crowding_warps 0 */
        pressure = 2;
    double m = churns && p->mem_share_short > 0 ? p->mem_share_short : p->mem_share;
    m = 1 + (m - 1) * (pressure < 1 ? pressure : 1);
    if (p->mem_share_tau_ns > 0 && pressure > 1) { /* longer compute blocks leave it less */
        double over = pressure - 1 < 1 ? pressure - 1 : 1;
        m += over * block_ns / (double)p->mem_share_tau_ns;
        if (m > 1 / p->starved_rate)
            m = 1 / p->starved_rate;
    }
    return share_slowed(f, m, free_sd);
}

/* A compute group sharing a share fc of its SMs with churning memory blocks and fl
 * with other memory blocks (compute_share > 0): rate (1 - fc - fl) + fc /
 * churn_slowdown + fl / c, the shares cut to 1 in all; c = compute_share, or with
 * compute_share_tau_ns, 1 + (compute_share - 1) x tau / (tau + its own block time):
 * long compute blocks lose less.
 * Churn (KINDS; the H100's default since model revision 17): blocks of another
 * launch's memory-bound kernel whose blocks are shorter than churn_block_ns slow a
 * compute group churn_slowdown times on the SMs they share, as the H100 ran an
 * inference-GEMM-shaped kernel's blocks 2x slower beside 6272-block streaming
 * kernels of ~3 us blocks and at their own speed beside ~15 us blocks
 * (experiments/results/hw/contention_shapes/). The values (4 us, 1.6) were fitted on
 * the graph headline's H100 validation. */
double contention_compute_beside_memory(const tl_contention_params *p, double fc, double fl,
                                        double block_ns)
{
    if (p->compute_share <= 0 || fl < 0)
        fl = 0;
    if (fc > 1)
        fc = 1;
    if (fc + fl > 1)
        fl = 1 - fc;
    double r = (1 - fc - fl) + fc / p->churn_slowdown;
    if (fl > 0) {
        double c = p->compute_share;
        if (p->compute_share_tau_ns > 0) {
            double tau = (double)p->compute_share_tau_ns;
            c = 1 + (c - 1) * tau / (tau + block_ns);
        }
        r += fl / c;
    }
    return 1.0 / r;
}

/* cc_share (KINDS, experimental): a compute group sharing a share f of its SMs with
 * OLDER compute blocks of other launches runs M times slower there instead of
 * starving, M = cc_share x (T / 50 us)^cc_share_exp within [1, 1 / starved_rate], T
 * their solo block time (50 us: the sharing grid's blocks, where the H100 ran ViT's
 * GEMM shape 2.0x beside them; 3.5x beside 0.5 ms blocks, 5.8x beside 5 ms). */
double contention_cc_share_slowdown(const tl_contention_params *p, double f, double block_ns,
                                    double free_sd)
{
    double m = p->cc_share * pow(block_ns / 50000.0, p->cc_share_exp);
    if (!(m >= 1))
        m = 1;
    if (m > 1 / p->starved_rate)
        m = 1 / p->starved_rate;
    return share_slowed(f, m, free_sd);
}

tl_graph_launch tl_sim_params_graph_launch(const tl_sim_params *p)
{
    return (tl_graph_launch){.gap_ns = p->graph_gap_ns, .launch_ns = p->graph_launch_ns,
                             .node_ns = p->graph_node_ns};
}

void tl_sim_params_default(tl_sim_params *p, const tl_gpu_props *gpu)
{
    /* Fitted on the H100 SXM (experiments/results/hw/contention.csv); a
     * guess elsewhere. */
    bool h100 = gpu && strstr(gpu->name, "H100") && gpu->sms == 132;
    p->contention.alpha = h100 ? 2.165 : 0.5;
    p->contention.max_slowdown = h100 ? 3.165 : 2.0;
    p->contention.model = h100 ? TL_CONTENTION_KINDS : TL_CONTENTION_THREADS;
    p->contention.starved_rate = 0.017;
    p->contention.mem_alpha = 2.03;
    p->contention.mem_p = 1.4;
    p->contention.mem_q = 0.7;
    p->contention.mem_max_slowdown = 8.0;
    /* On since model revision 11: two independent H100 repetitions of both
     * headline specs validate better with it (sim/README.md, "Partly starved"). */
    p->contention.partial_starve = 1;
    /* Churn, on for the H100 since model revision 17: chosen on six node-calibrated
     * graph runs (a grid of 4/8/16 us x 1.3/1.6/2.0) and adopted after a held-out
     * seed-6 run met the criterion written before it (more training rows within 5%,
     * no fewer p99 rows within 10%; experiments/results/hw/session17/). */
    p->contention.churn_block_ns = h100 ? 4000 : 0;
    p->contention.churn_slowdown = 1.6;
    p->contention.starved_tail = 0; /* experimental, off */
    p->contention.mem_age = 0;      /* experimental, off */
    p->contention.mem_share = 0; /* experimental, off */
    p->contention.mem_share_short = 0;
    p->contention.compute_share = 0;
    p->contention.mem_share_tau_ns = 0;
    p->contention.compute_share_tau_ns = 0;
    p->contention.cc_share = 0;
    p->contention.cc_share_exp = 0.24;
    /* The trace's host_call_ns already contains the launch call itself; the
     * runner waits it out before issuing, so no extra latency by default. */
    p->launch_latency_ns = 0;
    /* Work released from a completion callback reaches the GPU 13.6 us after
     * the work it waited for ended: the mean per held-back op of the H100
     * replay, measured in place (experiments/results/hw/README.md, "The round
     * trip in place"): ResNet-50 training iterations run entirely while
     * pipeswitch gives training the GPU (254 in headline_eager.db) take 29.43 ms
     * for 750 held-back ops against 28.50 ms with 12.4 us, i.e. 1.2 us more
     * per op. 12.4 us is the bare loop's (tally-run selftest, "host round
     * trip": 2000 tiny kernels each launched from the completion callback of
     * the one before, 17.33 us apiece against 4.90 us of kernel;
     * experiments/results/hw/selftest.txt); the replay's loop also plays the
     * jobs' host timelines and runs the runner and the policy per completion. */
    p->callback_launch_latency_ns = h100 ? 13600 : 0;
    /* Back-to-back ops on one stream: the GPU starts the next ~1.15 us after
     * the previous one ends (H100, untraced: median of 11,399 pairs in a
     * tally-trace capture without latency timestamps; the bundled Kineto
     * traces' medians are 0.99-1.28 us). A100 and V100: medians of the
     * bundled external traces (2 us at their 1 us resolution; 0.75 us). */
    p->stream_gap_ns = h100 ? 1150 : gpu && gpu->cc_major == 8 ? 2000
                     : gpu && gpu->cc_major == 7 ? 750 : 0;
    /* Inside one CUDA graph the H100 starts the next kernel 1.0-1.1 us sooner
     * than launched one by one (experiments/results/hw/graph_gap: 0.83 us
     * against 1.82-1.92 us, the same spin kernels, 2000 back to back; real
     * kernels leave 1.15 us launched one by one, so ~0.1 us in a graph is
     * likely, 0.83 us the safe reading). Elsewhere not measured: the stream's. */
    p->graph_gap_ns = h100 ? 830 : p->stream_gap_ns;
    /* A graph kernel waiting back to back starts later while other work is on
     * the GPU: on the H100 +0.22-0.35 us (median gap) beside another MPS
     * client's kernels whatever their launch rate, +0.06-0.09 us beside another
     * stream of its own context (experiments/results/hw/session21/, the gap
     * probe; the headline's per-kernel records agree). Elsewhere not measured. */
    p->gap_beside_stream_ns = h100 ? 60 : 0;
    p->gap_beside_ctx_ns = h100 ? 300 : 0;
    /* A graph kernel behind a kernel whose last wave filled every SM with
     * blocks of <= 64 threads starts 1.1-2.2 us later on the H100 (ResNet-50
     * b8's batch norms in every alone replay, and a synthetic probe of their
     * shapes: experiments/results/hw/session24/; sim/README.md, "The tail
     * after full SMs"). 1.6 us over the probed gap: the medians' middle.
     * Elsewhere not measured. */
    p->graph_tail_ns = h100 ? 1600 : 0;
    /* The host's cudaGraphLaunch call, which the runner waits out before a
     * graph's ops are issued: on the H100, 4.8-6.4 us for MobileNetV3's graphs
     * of 204 ops, 8.5-12 us for 162 and 234 (ViT, ResNet-50 b8; tally-run's
     * "CUDA graphs" lines, experiments/results/hw/graph_launch/README.md);
     * ~2.5 us plus 30 ns a node. Elsewhere not measured: the same. */
    p->graph_launch_ns = 2500;
    p->graph_node_ns = 30;
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
    /* Time slicing: the active context hands the GPU over once it has been
     * without kernel work for 7.5 us, not at once. Bracketed by two H100
     * measurements (experiments/results/hw/README.md, "Revision 6"): the
     * replay's ViT/ResNet-50 time slicing (6 hand-overs per request, 2.37 ms
     * before a request's first kernel) needs at least 7 us; a context whose
     * GPU idles 8-10 us between its kernels (the shortest a host can make)
     * beside a busy one loses the GPU every time (timeslice/idle_sweep.txt),
     * so less than 8.1 us. (Revision 6 had 10 us, from a looser bound.)
     * Other GPUs: not measured, at once as before. */
    p->idle_handover_ns = h100 ? 7500 : 0;
    /* ... and the context that gets it starts its first kernel 75 us later
     * than it would on a GPU its own context left idle: the H100 replay under
     * TGS (experiments/results/hw/diag_tgs/README.md), a request's first
     * kernel after an idle of 1 ms or more comes 66-88 us (median per pair
     * and idle range; 73 and 78 us after more than 3 ms) later when the GPU's
     * last kernel was the other context's; the simulator showed no difference
     * at all. Far below the 0.30 ms of a preempting switch (nothing to
     * save), but not free. (Standalone processes disagree both ways:
     * timeslice/idle_gap.txt implies ~20 us for a busy one taking over,
     * timeslice/switch_in.txt measures ~140 us for one starting on a GPU the
     * other left idle 2 ms; the replay's value is kept, it is the one
     * measured on the workloads.) Other GPUs: not measured, 0. */
    p->idle_switch_ns = h100 ? 75 * TL_NS_PER_US : 0;
    /* ... and a context that idled, alone, at least that long starts a new
     * slice with its next work (revision 15): on the H100 under tgs the
     * training cuts into an inference request 2.26-2.28 ms after the
     * request's first kernel in every pair, 218 of 223 cuts within 25 us for
     * ResNet-50 b8 (experiments/results/hw/session16/README.md, calls 3 and
     * 5), where slices counted from the switch-in cut anywhere from 0.5 to
     * 2.6 ms. Other GPUs: not measured. */
    p->slice_restart = h100 ? 1 : 0;
    /* ... and a slice that runs out while nobody waits renews only at the
     * context's next launch of its own; a lone long kernel or a CUDA graph's
     * nodes run on and give way as soon as another context has work
     * (revision 16; experiments/results/hw/timeslice/slice_after_idle*.txt:
     * queued 30 us kernels renew, the same in one graph do not). */
    p->slice_overtime = h100 ? 1 : 0;
    /* MPS client priority (CUDA_MPS_CLIENT_PRIORITY, "a hint"): on the H100
     * mps-priority and mps runs are indistinguishable in all 21 pairs (42 job rows) of
     * session 12's graph and eager runs (experiments/results/hw/session12/
     * README.md), so it is ignored there. Elsewhere: not measured, the strict
     * reading of earlier revisions. */
    p->mps_client_priority = h100 ? 0 : 1;
    p->residency_speedup = 0; /* experimental, off (sim/README.md, "Residency") */
    /* Placement into freed room and crowding (revision 13): measured on the
     * H100 (experiments/results/hw/placement/, tally-run crowding); off
     * elsewhere (not measured). */
    p->crowding_warps = h100 ? 4.74 : 0;
    p->pack_foreign = h100 ? 1 : 0;
    /* The H100's co-residency rule and MPS clients' turns (revision 14):
     * an SM keeps the carveout its first blocks configured and takes a kernel
     * whose occupancy's shared memory fits it (72 measured pairs,
     * experiments/results/hw/carveout_matrix/); MPS clients whose head
     * kernels wait are served fewest placing rounds first, not in arrival
     * order (placement_mps; MPS = priority streams in every H100 graph pair).
     * Together they validate better than revision 13 on all five H100 graph
     * runs (experiments/results/hw/session15/). Off elsewhere (not measured). */
    p->carveout = h100 ? 2 : 0;
    p->dram_share = 0; /* experimental, off */
    p->mps_order = h100 ? 1 : 0;
    /* Streams of one priority level (revision 18): on the H100 two streams of
     * one context at one priority share room as two MPS clients do
     * (placement_mps: the victim interleaved at 45% of the other kernel, in
     * both; the sharing probe: the memory job ran 560 iterations a second
     * beside the GEMM job on two such streams, 545 under MPS). Off elsewhere
     * (not measured). */
    p->stream_order = h100 ? 1 : 0;
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
        return tl_errf(err, TL_ERANGE, "sim params: contention.alpha must be in [0, 1e6)");
    if (!(p->contention.max_slowdown >= 1 && p->contention.max_slowdown < 1e6))
        return tl_errf(err, TL_ERANGE, "sim params: contention.max_slowdown must be in [1, 1e6)");
    if (p->contention.model != TL_CONTENTION_THREADS && p->contention.model != TL_CONTENTION_KINDS)
        return tl_errf(err, TL_ERANGE, "sim params: contention.model must be threads (0) or kinds (1)");
    if (!(p->contention.starved_rate > 0 && p->contention.starved_rate <= 1))
        return tl_errf(err, TL_ERANGE, "sim params: contention.starved_rate must be in (0, 1]");
    if (!(p->contention.mem_share == 0 || (p->contention.mem_share >= 1 && p->contention.mem_share < 1e6)))
        return tl_errf(err, TL_ERANGE, "sim params: contention.mem_share must be 0 or in [1, 1e6)");
    if (!(p->contention.mem_share_short == 0 ||
          (p->contention.mem_share_short >= 1 && p->contention.mem_share_short < 1e6)))
        return tl_errf(err, TL_ERANGE, "sim params: contention.mem_share_short must be 0 or in [1, 1e6)");
    if (!(p->contention.compute_share == 0 ||
          (p->contention.compute_share >= 1 && p->contention.compute_share < 1e6)))
        return tl_errf(err, TL_ERANGE, "sim params: contention.compute_share must be 0 or in [1, 1e6)");
    if (!(p->contention.cc_share == 0 || (p->contention.cc_share >= 1 && p->contention.cc_share < 1e6)))
        return tl_errf(err, TL_ERANGE, "sim params: contention.cc_share must be 0 or in [1, 1e6)");
    if (!(p->contention.cc_share_exp >= 0 && p->contention.cc_share_exp <= 4))
        return tl_errf(err, TL_ERANGE, "sim params: contention.cc_share_exp must be in [0, 4]");
    if (p->contention.compute_share_tau_ns < 0 || p->contention.compute_share_tau_ns > TL_NS_PER_S)
        return tl_errf(err, TL_ERANGE, "sim params: contention.compute_share_tau_ns must be in [0, 1 s]");
    if (p->contention.mem_share_tau_ns < 0 || p->contention.mem_share_tau_ns > TL_NS_PER_S)
        return tl_errf(err, TL_ERANGE, "sim params: contention.mem_share_tau_ns must be in [0, 1 s]");
    if (p->contention.partial_starve != 0 && p->contention.partial_starve != 1)
        return tl_errf(err, TL_ERANGE, "sim params: contention.partial_starve must be 0 or 1");
    if (p->contention.starved_tail != 0 && p->contention.starved_tail != 1)
        return tl_errf(err, TL_ERANGE, "sim params: contention.starved_tail must be 0 or 1");
    if (p->contention.mem_age != 0 && p->contention.mem_age != 1)
        return tl_errf(err, TL_ERANGE, "sim params: contention.mem_age must be 0 or 1");
    if (p->contention.churn_block_ns < 0 || p->contention.churn_block_ns > TL_NS_PER_S)
        return tl_errf(err, TL_ERANGE, "sim params: contention.churn_block_ns must be in [0, 1e9] ns");
    if (!(p->contention.churn_slowdown >= 1 && p->contention.churn_slowdown <= 100))
        return tl_errf(err, TL_ERANGE, "sim params: contention.churn_slowdown must be in [1, 100]");
    if (!(p->contention.mem_alpha >= 0 && p->contention.mem_alpha < 1e6))
        return tl_errf(err, TL_ERANGE, "sim params: contention.mem_alpha must be in [0, 1e6)");
    if (!(p->contention.mem_p >= 0 && p->contention.mem_p < 100) ||
        !(p->contention.mem_q >= 0 && p->contention.mem_q < 100))
        return tl_errf(err, TL_ERANGE, "sim params: contention.mem_p and mem_q must be in [0, 100)");
    if (!(p->contention.mem_max_slowdown >= 1 && p->contention.mem_max_slowdown < 1e6))
        return tl_errf(err, TL_ERANGE, "sim params: contention.mem_max_slowdown must be in [1, 1e6)");
    if (p->launch_latency_ns < 0 || p->launch_latency_ns > 10 * TL_NS_PER_MS)
        return tl_errf(err, TL_ERANGE, "sim params: launch_latency_ns must be in [0, 10 ms]");
    if (p->callback_launch_latency_ns < 0 || p->callback_launch_latency_ns > 10 * TL_NS_PER_MS)
        return tl_errf(err, TL_ERANGE, "sim params: callback_launch_latency_ns must be in [0, 10 ms]");
    if (p->stream_gap_ns < 0 || p->stream_gap_ns > TL_NS_PER_MS)
        return tl_errf(err, TL_ERANGE, "sim params: stream_gap_ns must be in [0, 1 ms]");
    if (p->graph_gap_ns < 0 || p->graph_gap_ns > TL_NS_PER_MS)
        return tl_errf(err, TL_ERANGE, "sim params: graph_gap_ns must be in [0, 1 ms]");
    if (p->gap_beside_stream_ns < 0 || p->gap_beside_stream_ns > TL_NS_PER_MS)
        return tl_errf(err, TL_ERANGE, "sim params: gap_beside_stream_ns must be in [0, 1 ms]");
    if (p->gap_beside_ctx_ns < 0 || p->gap_beside_ctx_ns > TL_NS_PER_MS)
        return tl_errf(err, TL_ERANGE, "sim params: gap_beside_ctx_ns must be in [0, 1 ms]");
    if (p->graph_tail_ns < 0 || p->graph_tail_ns > TL_NS_PER_MS)
        return tl_errf(err, TL_ERANGE, "sim params: graph_tail_ns must be in [0, 1 ms]");
    if (p->graph_launch_ns < 0 || p->graph_launch_ns > 10 * TL_NS_PER_MS)
        return tl_errf(err, TL_ERANGE, "sim params: graph_launch_ns must be in [0, 10 ms]");
    if (p->graph_node_ns < 0 || p->graph_node_ns > 100 * TL_NS_PER_US)
        return tl_errf(err, TL_ERANGE, "sim params: graph_node_ns must be in [0, 100 us]");
    if (p->ptb_block_overhead_ns < 0 || p->ptb_block_overhead_ns > TL_NS_PER_MS)
        return tl_errf(err, TL_ERANGE, "sim params: ptb_block_overhead_ns must be in [0, 1 ms]");
    if (p->slice_launch_ns < 0 || p->slice_launch_ns > 10 * TL_NS_PER_MS)
        return tl_errf(err, TL_ERANGE, "sim params: slice_launch_ns must be in [0, 10 ms]");
    if (p->copy_engines != 1 && p->copy_engines != 2)
        return tl_errf(err, TL_ERANGE, "sim params: copy_engines must be 1 or 2");
    /* 1e5 GB/s is 30x an H100's HBM3: more is a typo, and it would make copies free */
    if (!(p->device_copy_gbps > 0 && p->device_copy_gbps <= 1e5))
        return tl_errf(err, TL_ERANGE, "sim params: device_copy_gbps must be in (0, 1e5]");
    if (p->coalesce_groups < 0 || p->coalesce_groups > 1000000)
        return tl_errf(err, TL_ERANGE, "sim params: coalesce_groups must be in [0, 1e6]");
    if (p->idle_handover_ns < 0 || p->idle_handover_ns > 100 * TL_NS_PER_MS)
        return tl_errf(err, TL_ERANGE, "sim params: idle_handover_ns must be in [0, 100 ms]");
    if (p->idle_switch_ns < 0 || p->idle_switch_ns > 100 * TL_NS_PER_MS)
        return tl_errf(err, TL_ERANGE, "sim params: idle_switch_ns must be in [0, 100 ms]");
    if (p->slice_restart != 0 && p->slice_restart != 1)
        return tl_errf(err, TL_ERANGE, "sim params: slice_restart must be 0 or 1");
    if (p->slice_overtime != 0 && p->slice_overtime != 1)
        return tl_errf(err, TL_ERANGE, "sim params: slice_overtime must be 0 or 1");
    if (p->mps_client_priority != 0 && p->mps_client_priority != 1)
        return tl_errf(err, TL_ERANGE, "sim params: mps_client_priority must be 0 or 1");
    if (!(p->residency_speedup >= 0 && p->residency_speedup < 1))
        return tl_errf(err, TL_ERANGE, "sim params: residency_speedup must be in [0, 1)");
    if (!(p->crowding_warps >= 0 && p->crowding_warps <= 64))
        return tl_errf(err, TL_ERANGE, "sim params: crowding_warps must be in [0, 64]");
    if (p->dram_share != 0 && p->dram_share != 1)
        return tl_errf(err, TL_ERANGE, "sim params: dram_share must be 0 or 1");
    if (p->carveout < 0 || p->carveout > 2)
        return tl_errf(err, TL_ERANGE, "sim params: carveout must be 0, 1 or 2");
    if (p->mps_order != 0 && p->mps_order != 1)
        return tl_errf(err, TL_ERANGE, "sim params: mps_order must be 0 or 1");
    if (p->stream_order != 0 && p->stream_order != 1)
        return tl_errf(err, TL_ERANGE, "sim params: stream_order must be 0 or 1");
    if (p->pack_foreign < 0 || p->pack_foreign > 2)
        return tl_errf(err, TL_ERANGE, "sim params: pack_foreign must be 0, 1 or 2");
    if (!(p->coalesce_fraction >= 0 && p->coalesce_fraction <= 1))
        return tl_errf(err, TL_ERANGE, "sim params: coalesce_fraction must be in [0, 1]");
    return 0;
}

/* ---------- parameters by name (--sim-param, spec "sim_params") ---------- */

typedef enum { P_DOUBLE, P_NS, P_INT, P_MODEL } ptype;
typedef struct pdesc {
    const char *name;
    ptype type;
    size_t off;
} pdesc;

#define PD(n, t, f) { n, t, offsetof(tl_sim_params, f) }
static const pdesc pdescs[] = {
    PD("contention.model", P_MODEL, contention.model),
    PD("contention.alpha", P_DOUBLE, contention.alpha),
    PD("contention.max_slowdown", P_DOUBLE, contention.max_slowdown),
    PD("contention.starved_rate", P_DOUBLE, contention.starved_rate),
    PD("contention.mem_alpha", P_DOUBLE, contention.mem_alpha),
    PD("contention.mem_p", P_DOUBLE, contention.mem_p),
    PD("contention.mem_q", P_DOUBLE, contention.mem_q),
    PD("contention.mem_max_slowdown", P_DOUBLE, contention.mem_max_slowdown),
    PD("contention.partial_starve", P_INT, contention.partial_starve),
    PD("contention.starved_tail", P_INT, contention.starved_tail),
    PD("contention.mem_age", P_INT, contention.mem_age),
    PD("contention.churn_block_ns", P_NS, contention.churn_block_ns),
    PD("contention.mem_share", P_DOUBLE, contention.mem_share),
    PD("contention.mem_share_short", P_DOUBLE, contention.mem_share_short),
    PD("contention.compute_share", P_DOUBLE, contention.compute_share),
    PD("contention.mem_share_tau_ns", P_NS, contention.mem_share_tau_ns),
    PD("contention.compute_share_tau_ns", P_NS, contention.compute_share_tau_ns),
    PD("contention.cc_share", P_DOUBLE, contention.cc_share),
    PD("contention.cc_share_exp", P_DOUBLE, contention.cc_share_exp),
    PD("contention.churn_slowdown", P_DOUBLE, contention.churn_slowdown),
    PD("launch_latency_ns", P_NS, launch_latency_ns),
    PD("callback_launch_latency_ns", P_NS, callback_launch_latency_ns),
    PD("stream_gap_ns", P_NS, stream_gap_ns),
    PD("graph_gap_ns", P_NS, graph_gap_ns),
    PD("gap_beside_stream_ns", P_NS, gap_beside_stream_ns),
    PD("gap_beside_ctx_ns", P_NS, gap_beside_ctx_ns),
    PD("graph_tail_ns", P_NS, graph_tail_ns),
    PD("graph_launch_ns", P_NS, graph_launch_ns),
    PD("graph_node_ns", P_NS, graph_node_ns),
    PD("ptb_block_overhead_ns", P_NS, ptb_block_overhead_ns),
    PD("slice_launch_ns", P_NS, slice_launch_ns),
    PD("copy_engines", P_INT, copy_engines),
    PD("device_copy_gbps", P_DOUBLE, device_copy_gbps),
    PD("coalesce_groups", P_INT, coalesce_groups),
    PD("coalesce_fraction", P_DOUBLE, coalesce_fraction),
    PD("idle_handover_ns", P_NS, idle_handover_ns),
    PD("idle_switch_ns", P_NS, idle_switch_ns),
    PD("slice_restart", P_INT, slice_restart),
    PD("slice_overtime", P_INT, slice_overtime),
    PD("mps_client_priority", P_INT, mps_client_priority),
    PD("residency_speedup", P_DOUBLE, residency_speedup),
    PD("crowding_warps", P_DOUBLE, crowding_warps),
    PD("pack_foreign", P_INT, pack_foreign),
    PD("mps_order", P_INT, mps_order),
    PD("stream_order", P_INT, stream_order),
    PD("carveout", P_INT, carveout),
    PD("dram_share", P_INT, dram_share),
};
#define N_PDESC (sizeof pdescs / sizeof pdescs[0])

const char *tl_sim_param_name(int i)
{
    return i >= 0 && (size_t)i < N_PDESC ? pdescs[i].name : NULL;
}

int tl_sim_params_set(tl_sim_params *p, const char *key, const char *value, tl_err *err)
{
    const pdesc *d = NULL;
    for (size_t i = 0; i < N_PDESC && !d; i++)
        if (strcmp(pdescs[i].name, key) == 0)
            d = &pdescs[i];
    if (!d)
        return tl_errf(err, TL_EUNKNOWN, "sim params: unknown parameter '%s' (tally-sim --help lists them)",
                       key);
    char *at = (char *)p + d->off;
    if (d->type == P_MODEL) {
        if (strcmp(value, "threads") == 0)
            *(int *)at = TL_CONTENTION_THREADS;
        else if (strcmp(value, "kinds") == 0)
            *(int *)at = TL_CONTENTION_KINDS;
        else
            return tl_errf(err, TL_ERANGE, "sim params: %s must be threads or kinds, not '%s'", key,
                           value);
        return 0;
    }
    double v;
    int r = tl_parse_decimal(value, &v);
    if (r < 0)
        return tl_errf(err, r, "sim params: %s: '%s' is %s", key, value, tl_parse_decimal_what(r));
    if (d->type == P_DOUBLE) {
        *(double *)at = v;
    } else {
        if (v != floor(v))
            return tl_errf(err, TL_ERANGE, "sim params: %s: '%s' must be a whole number", key, value);
        if (v < -1e15 || v > 1e15)
            return tl_errf(err, TL_ERANGE, "sim params: %s: '%s' is out of range (-1e15 to 1e15)",
                           key, value);
        if (d->type == P_NS)
            *(tl_ns *)at = (tl_ns)v;
        else if (v < -1e9 || v > 1e9)
            return tl_errf(err, TL_ERANGE, "sim params: %s: '%s' is out of range", key, value);
        else
            *(int *)at = (int)v;
    }
    return 0;
}

int tl_sim_params_apply(tl_sim_params *p, const char *list, tl_err *err)
{
    if (!list || !*list)
        return 0;
    /* a copy of any length: a spec's "sim_params" (every parameter, values up
     * to 63 characters) makes lists over 4 KiB, and a fixed buffer refused
     * them at the first run, after the spec had loaded */
    char *buf = tl_xstrdup(list);
    int r = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ";", &save); tok && r == 0;
         tok = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            r = tl_errf(err, TL_EUNKNOWN, "sim params: '%s' is not KEY=VALUE", tok);
            break;
        }
        *eq = 0;
        r = tl_sim_params_set(p, tok, eq + 1, err);
    }
    free(buf);
    return r < 0 ? r : tl_sim_params_validate(p, err);
}
