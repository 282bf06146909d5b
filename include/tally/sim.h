/* The simulated GPU: a tl_device backed by the discrete-event engine.
 * The model (block scheduler rules, time slices, MPS, copy engines, contention)
 * is documented in sim/README.md; its tunable parameters all live here. */
#ifndef TALLY_SIM_H
#define TALLY_SIM_H

#include "tally/device.h"

/* Contention between co-resident blocks of different kernels on one SM.
 * See sim/contention.c for the formula; fitted per GPU from backend runs. */
typedef struct tl_contention_params {
    double alpha;          /* slowdown per unit of foreign occupancy on the SM */
    double max_slowdown;   /* cap on the slowdown factor (>= 1) */
} tl_contention_params;

typedef struct tl_sim_params {
    tl_contention_params contention;
    tl_ns launch_latency_ns;   /* API call to earliest GPU start of a launch */
    tl_ns ptb_block_overhead_ns; /* extra time per logical block under PTB */
    tl_ns slice_launch_ns;     /* extra cost per slice launch beyond the first */
    int copy_engines;          /* concurrent H2D/D2H transfers (one per direction) */
} tl_sim_params;

typedef struct tl_sim_stats {
    uint64_t events;           /* events processed by the engine */
    uint64_t kernels;          /* kernel launches completed */
    uint64_t block_groups;     /* block-group (one event per group of blocks) starts */
    size_t peak_queue;         /* largest event-queue length */
} tl_sim_stats;

/* Defaults for a GPU (fitted values where we have them, documented guesses else). */
void tl_sim_params_default(tl_sim_params *p, const tl_gpu_props *gpu);
int tl_sim_open(tl_device *d, const tl_gpu_props *gpu, const tl_sim_params *p, tl_err *err);
void tl_sim_get_stats(tl_device *d, tl_sim_stats *out);

#endif
