/* GPU properties, the built-in device table and the occupancy calculator.
 * Numbers follow the CUDA occupancy rules: registers are allocated per warp in
 * units of reg_alloc_unit, shared memory in units of smem_alloc_unit plus a
 * per-block reserve (1 KiB on Ampere and Hopper). */
#ifndef TALLY_GPU_H
#define TALLY_GPU_H

#include "tally/common.h"

typedef struct tl_gpu_props {
    char name[64];
    int sms;
    int max_threads_per_sm;
    int max_threads_per_block;
    int max_warps_per_sm;
    int max_blocks_per_sm;
    int regs_per_sm;
    int regs_per_block;
    int max_regs_per_thread;
    int reg_alloc_unit;       /* registers, per warp (256 on Volta..Hopper) */
    int smem_per_sm;          /* bytes usable by blocks on one SM */
    int smem_per_block;       /* default per-block limit, bytes */
    int smem_per_block_optin; /* opt-in per-block limit, bytes */
    int smem_alloc_unit;      /* bytes (128 on Volta..Hopper) */
    int smem_reserved_per_block; /* bytes the driver reserves per block (1024 on sm_80+) */
    int warp_size;
    int cc_major, cc_minor;
    int stream_prio_greatest; /* e.g. -5 on H100: six levels, 0 is the least */
    double pcie_gbps;         /* host<->device copy bandwidth, GB/s (copy engines) */
    tl_ns timeslice_ns;       /* time-slice length between contexts */
    tl_ns ctx_switch_ns;      /* gap when switching contexts */
} tl_gpu_props;

/* Look up a built-in GPU by short or marketing name ("H100", "NVIDIA H100 80GB
 * HBM3", "a100", "V100-SXM2-32GB", "H200"). TL_EUNKNOWN if not found. */
int tl_gpu_lookup(const char *name, tl_gpu_props *out, tl_err *err);
/* Names of the built-in GPUs, NULL-terminated. */
const char *const *tl_gpu_names(void);
/* Fill any zero field of p from the built-in entry that matches p->name (or
 * cc_major/minor), so that a trace's partial properties become complete. */
void tl_gpu_complete(tl_gpu_props *p);

typedef enum tl_occ_limit {
    TL_OCC_BLOCKS = 0, TL_OCC_THREADS, TL_OCC_REGS, TL_OCC_SMEM, TL_OCC_UNFIT
} tl_occ_limit;

/* Resident blocks per SM for a kernel shape; 0 if one block does not fit
 * (limit = TL_OCC_UNFIT). smem is static + dynamic bytes per block. */
int tl_occupancy(const tl_gpu_props *g, int threads_per_block, int regs_per_thread,
                 int smem_bytes, tl_occ_limit *limit);
const char *tl_occ_limit_name(tl_occ_limit l);

#endif
