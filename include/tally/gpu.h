/* GPU properties, the built-in device table and the occupancy calculator.
 *
 * Occupancy follows NVIDIA's occupancy calculator (cuda_occupancy.h):
 *  - threads: a block takes ceil(threads / 32) warps; warps per SM are limited;
 *  - registers: allocated per warp, regs x 32 rounded up to reg_alloc_unit
 *    (256); the register file is split among reg_sub_partitions (4) and a warp
 *    lives in one, so warps per SM = floor(regs_per_sm / 4 / regs_per_warp) x 4;
 *    a kernel above max_regs_per_thread or regs_per_block does not launch;
 *  - shared memory: static + dynamic + smem_reserved_per_block (1 KiB on
 *    sm_80 and later), rounded up to smem_alloc_unit (256 on Volta, 128 on
 *    Ampere/Hopper); a block above smem_per_block_optin does not launch;
 *  - block slots: max_blocks_per_sm.
 * The built-in figures are in sim/gpu.c with their sources (sim/README.md).
 */
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
    int smem_alloc_unit;      /* bytes (256 on Volta, 128 on Ampere and Hopper) */
    int smem_reserved_per_block; /* bytes the driver reserves per block (1024 on sm_80+) */
    int warp_size;
    int cc_major, cc_minor;
    int stream_prio_greatest; /* e.g. -5 on H100: six levels, 0 is the least */
    double pcie_gbps;         /* host<->device copy bandwidth, GB/s (copy engines) */
    tl_ns timeslice_ns;       /* time-slice length between contexts */
    tl_ns ctx_switch_ns;      /* gap when switching contexts */
    int reg_sub_partitions;   /* SM sub-partitions sharing the register file (4) */
} tl_gpu_props;

/* Look up a built-in GPU by short or marketing name ("H100", "NVIDIA H100 80GB
 * HBM3", "a100", "A100-SXM4-80GB", "V100-SXM2-32GB", "H200"), case-insensitive;
 * the longest built-in alias contained in 'name' wins. TL_EUNKNOWN if none. */
int tl_gpu_lookup(const char *name, tl_gpu_props *out, tl_err *err);
/* Names of the built-in GPUs, NULL-terminated. */
const char *const *tl_gpu_names(void);
/* Fill any zero field of p from the built-in entry that matches p->name (or,
 * failing that, cc_major/minor), so that a trace's partial properties become
 * complete. Fields the trace gave (e.g. sms) are kept. Returns 0, or
 * TL_EUNKNOWN if nothing matched (p is then left as it was). */
int tl_gpu_complete(tl_gpu_props *p);
/* Check that every field the model needs is set and sane; the message names
 * the field ("gpu 'X': sms must be > 0"). */
int tl_gpu_validate(const tl_gpu_props *p, tl_err *err);

typedef enum tl_occ_limit {
    TL_OCC_BLOCKS = 0, TL_OCC_THREADS, TL_OCC_REGS, TL_OCC_SMEM, TL_OCC_UNFIT
} tl_occ_limit;

/* Resident blocks per SM for a kernel shape; 0 if one block does not fit
 * (limit = TL_OCC_UNFIT). smem is static + dynamic bytes per block. When
 * several resources give the same minimum, the first of blocks, threads,
 * registers, shared memory is reported. limit may be NULL. */
int tl_occupancy(const tl_gpu_props *g, int threads_per_block, int regs_per_thread,
                 int smem_bytes, tl_occ_limit *limit);
const char *tl_occ_limit_name(tl_occ_limit l);

/* Per-SM cost of one block of a shape, in the units the occupancy rules use,
 * such that a kernel alone fits exactly tl_occupancy() blocks per SM:
 * threads rounded up to whole warps; registers as regs_per_sm / (register-
 * limited blocks per SM); shared memory with reserve and granularity. */
typedef struct tl_block_cost {
    int threads;
    int regs;
    int smem;
} tl_block_cost;
/* Returns the occupancy, as tl_occupancy. */
int tl_block_cost_of(const tl_gpu_props *g, int threads_per_block, int regs_per_thread,
                     int smem_bytes, tl_block_cost *out, tl_occ_limit *limit);

#endif
