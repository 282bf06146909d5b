/* The pure decision logic of the policies, factored out of the policy files so that
 * it can be tested without a device: Tally's configuration chooser, TGS's rate
 * controller, Herald's light/heavy classifier and SLO guard, PipeSwitch's
 * switch-cost arithmetic, MPS's per-job cap. Each function is defined in its
 * policy's file. */
#ifndef TALLY_POLICY_UTIL_H
#define TALLY_POLICY_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "tally/gpu.h"
#include "tally/policy.h"
#include "tally/trace.h"

/* ---- mps, mps-priority (policies/mps.c) ---- */

typedef struct tl_mps_state {
    double sm_percent;         /* param: cap for jobs without their own */
    tl_param_list sm_percents; /* param: caps by job id */
    tl_stream_map *maps;
} tl_mps_state;
extern const tl_param_desc tl_mps_params[];
/* The job's cap: tl_job.sm_percent if set, else list[job id] if given, else def. */
double tl_mps_job_sm_percent(const tl_job *j, const tl_param_list *list, double def);
/* Setup shared by both: one MPS client per job; client priority 1 for
 * best-effort jobs when client_priority (mps-priority), else 0. */
int tl_mps_setup(tl_policy *p, bool client_priority, tl_err *err);
int tl_mps_check_jobs(const void *state, int n_jobs, tl_err *err);
void tl_mps_submit(tl_policy *p, tl_task *t);
void tl_mps_teardown(tl_policy *p);

/* ---- herald (policies/herald.c) ---- */

/* Fraction of the GPU's thread slots the kernel holds when it runs alone:
 * min(blocks, resident blocks/SM x SMs) x threads/block / (SMs x threads/SM),
 * i.e. occupancy x SM share. 0 for non-kernels. */
double tl_herald_footprint(const tl_gpu_props *g, const tl_op *op);
/* Heavy: a kernel whose footprint >= footprint_min and duration >= dur_min. */
bool tl_herald_is_heavy(const tl_gpu_props *g, const tl_op *op, double footprint_min,
                        tl_ns dur_min);
/* SLO at risk: elapsed + remaining >= guard x slo (never when slo <= 0). */
bool tl_herald_slo_at_risk(tl_ns elapsed, tl_ns remaining, tl_ns slo, double guard);

/* ---- tally (policies/tally.c) ---- */

typedef enum tl_tally_mode {
    TL_TALLY_WHOLE = 0, /* untransformed */
    TL_TALLY_SLICE = 1, /* grid slices of slice_blocks logical blocks */
    TL_TALLY_PTB = 2,   /* blocks_per_sm persistent workers per SM */
} tl_tally_mode;

typedef struct tl_tally_config {
    tl_tally_mode mode;
    uint32_t blocks_per_sm; /* PTB: workers per SM; SLICE: slice width per SM */
    uint64_t slice_blocks;  /* SLICE: blocks per slice (blocks_per_sm x SMs) */
    uint64_t n_slices;      /* SLICE: ceil(blocks / slice_blocks) */
    tl_ns time_ns;          /* measured time of the whole kernel so run */
    double speed;           /* original time / time_ns */
    tl_ns latency_ns;       /* estimated preemption latency */
} tl_tally_config;

#define TL_TALLY_MAX_CANDIDATES 128
/* Tally's candidates for a kernel shape, in scan order (blocks per SM 1, 2,
 * ... each PTB then SLICE): only when blocks > SMs, blocks per SM up to the
 * largest with bps x threads/block <= 3/4 of the SM's threads (1536 of 2048)
 * and <= the kernel's occupancy. time/speed/latency are left 0. Returns the
 * count (<= max). */
int tl_tally_candidates(const tl_gpu_props *g, const tl_op *op, tl_tally_config *out, int max);
/* Given c->time_ns and the original kernel's time: speed and estimated
 * preemption latency (PTB: time / ceil(blocks / workers) / 2; SLICE: time / slices). */
void tl_tally_estimate(tl_tally_config *c, const tl_gpu_props *g, const tl_op *op,
                       tl_ns original_ns);
/* Tally's choice: -1 (run untransformed) when original_ns <= bound or n == 0;
 * else the first candidate, sweeping a speed threshold from 1.0 down to 0.1 by
 * 0.1, with speed >= threshold and latency <= bound; if none ever qualifies
 * (the bound cannot be met), the fastest candidate whose latency is within
 * 10% of the least latency. */
int tl_tally_choose(const tl_tally_config *c, int n, tl_ns original_ns, tl_ns bound_ns);

/* ---- tgs (policies/tgs.c) ---- */

#define TL_TGS_HISTORY_MAX 64
typedef enum tl_tgs_event {
    TL_TGS_SLOW_START = 0, /* rate doubled (below the threshold) */
    TL_TGS_INCREASE = 1,   /* rate += increase (congestion avoidance) */
    TL_TGS_DECREASE = 2,   /* high-priority throughput dropped: rate *= decrease */
} tl_tgs_event;

typedef struct tl_tgs_ctl {
    double rate;          /* tgs: share of GPU time for best-effort kernels */
    double ssthresh;      /* slow start below, additive increase above */
    double increase, decrease, tolerance, min_rate, max_rate;
    double hist[TL_TGS_HISTORY_MAX]; /* recent observations, a ring */
    int hist_len, hist_n, hist_pos;
} tl_tgs_ctl;

void tl_tgs_ctl_init(tl_tgs_ctl *c, double initial_rate, double ssthresh, double increase,
                     double decrease, double tolerance, double min_rate, double max_rate,
                     int history);
/* Best of the recent observations (0 if none). */
double tl_tgs_ctl_best(const tl_tgs_ctl *c);
/* One window ended. have_obs: the high-priority job completed work, and obs is
 * its throughput (in tgs: solo time / time taken of its completed tasks). If obs < best x (1 - tolerance):
 * ssthresh = max(min, rate x decrease), rate = ssthresh. Else slow start
 * (rate x 2) below ssthresh, additive increase above; capped at max_rate. */
tl_tgs_event tl_tgs_ctl_update(tl_tgs_ctl *c, bool have_obs, double obs);

/* ---- pipeswitch (policies/pipeswitch.c) ---- */

typedef struct tl_pipeswitch_cost {
    tl_ns startup_ns;       /* fixed task start-up (standby worker activation) */
    uint64_t first_bytes;   /* first layer group: on the critical path */
    tl_ns first_ns;         /* its transfer time at pcie_gbps */
    uint64_t rest_bytes;    /* later groups: transferred while earlier ones compute */
    tl_ns rest_ns;
    tl_ns critical_ns;      /* startup + first transfer: the switch's charged delay */
} tl_pipeswitch_cost;
/* PCIe transfer time of bytes at gbps (GB/s = bytes/ns); 0 bytes -> 0. */
tl_ns tl_pcie_ns(uint64_t bytes, double gbps);
void tl_pipeswitch_switch_cost(uint64_t model_bytes, int groups, double pcie_gbps,
                               tl_ns startup_ns, tl_pipeswitch_cost *out);

#endif
