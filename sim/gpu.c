/* The built-in GPU table and the occupancy calculator (see gpu.h and
 * sim/README.md for the sources of every figure). */
#include "tally/gpu.h"

#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Measured on H100 (FACTS.md); assumed equal on the other GPUs. */
#define TIMESLICE_NS 2090000
#define CTX_SWITCH_NS 300000

typedef struct gpu_entry {
    const char *aliases[5]; /* lower case; aliases[0] is the canonical name, lowered */
    tl_gpu_props p;
} gpu_entry;

/* Fields common to Volta, Ampere and Hopper data-centre GPUs. */
#define COMMON_FIELDS                                                      \
    .max_threads_per_sm = 2048, .max_threads_per_block = 1024,             \
    .max_warps_per_sm = 64, .max_blocks_per_sm = 32, .regs_per_sm = 65536, \
    .regs_per_block = 65536, .max_regs_per_thread = 255,                   \
    .reg_alloc_unit = 256, .smem_per_block = 49152, .warp_size = 32,       \
    .stream_prio_greatest = -5, .timeslice_ns = TIMESLICE_NS,              \
    .ctx_switch_ns = CTX_SWITCH_NS, .reg_sub_partitions = 4

#define VOLTA(nm, nsm)                                                     \
    { .name = nm, .sms = nsm, COMMON_FIELDS, .smem_per_sm = 98304,         \
      .smem_per_block_optin = 98304, .smem_alloc_unit = 256,               \
      .smem_reserved_per_block = 0, .cc_major = 7, .cc_minor = 0,          \
      .pcie_gbps = 12.0 }
#define AMPERE(nm, nsm)                                                    \
    { .name = nm, .sms = nsm, COMMON_FIELDS, .smem_per_sm = 167936,        \
      .smem_per_block_optin = 166912, .smem_alloc_unit = 128,              \
      .smem_reserved_per_block = 1024, .cc_major = 8, .cc_minor = 0,       \
      .pcie_gbps = 25.0 }
#define HOPPER(nm, nsm)                                                    \
    { .name = nm, .sms = nsm, COMMON_FIELDS, .smem_per_sm = 233472,        \
      .smem_per_block_optin = 232448, .smem_alloc_unit = 128,              \
      .smem_reserved_per_block = 1024, .cc_major = 9, .cc_minor = 0,       \
      .pcie_gbps = 50.0 }

static const gpu_entry table[] = {
    { { "h100 80gb hbm3", "h100-sxm5", "h100 sxm", "h100" }, HOPPER("H100 80GB HBM3", 132) },
    { { "h100 pcie", "h100-pcie" }, HOPPER("H100 PCIe", 114) },
    { { "h200" }, HOPPER("H200", 132) },
    { { "a100-sxm4-80gb", "a100 80gb", "a100-80gb" }, AMPERE("A100-SXM4-80GB", 108) },
    { { "a100-sxm4-40gb", "a100-sxm4", "a100" }, AMPERE("A100-SXM4-40GB", 108) },
    { { "v100-sxm2-32gb", "v100-sxm2", "v100" }, VOLTA("V100-SXM2-32GB", 80) },
    { { "v100-sxm2-16gb" }, VOLTA("V100-SXM2-16GB", 80) },
};
#define N_TABLE (sizeof table / sizeof table[0])

static const char *const names[] = {
    "H100 80GB HBM3", "H100 PCIe", "H200", "A100-SXM4-80GB", "A100-SXM4-40GB",
    "V100-SXM2-32GB", "V100-SXM2-16GB", NULL,
};

const char *const *tl_gpu_names(void)
{
    return names;
}

static const gpu_entry *find_by_name(const char *name)
{
    const gpu_entry *best = NULL;
    size_t best_len = 0;
    if (!name)
        return NULL;
    for (size_t i = 0; i < N_TABLE; i++)
        for (int a = 0; a < 5 && table[i].aliases[a]; a++) {
            size_t l = strlen(table[i].aliases[a]);
            if (l > best_len && tl_contains_ci(name, table[i].aliases[a])) {
                best = &table[i];
                best_len = l;
            }
        }
    return best;
}

int tl_gpu_lookup(const char *name, tl_gpu_props *out, tl_err *err)
{
    const gpu_entry *e = find_by_name(name);
    if (!e) {
        char known[256] = "";
        for (int i = 0; names[i]; i++) {
            strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
            strncat(known, names[i], sizeof known - strlen(known) - 1);
        }
        return tl_errf(err, TL_EUNKNOWN, "gpu: unknown GPU '%s' (known: %s)",
                       name ? name : "", known);
    }
    *out = e->p;
    return 0;
}

/* Architecture constants by compute capability, for GPUs not in the table
 * (CUDA C Programming Guide, "Technical Specifications per Compute Capability"). */
typedef struct cc_limits {
    int major, minor, threads_per_sm, blocks_per_sm, smem_unit, reserve;
} cc_limits;
static const cc_limits cc_table[] = {
    { 7, 0, 2048, 32, 256, 0 }, { 7, 2, 2048, 32, 256, 0 }, { 7, 5, 1024, 16, 256, 0 },
    { 8, 0, 2048, 32, 128, 1024 }, { 8, 6, 1536, 16, 128, 1024 },
    { 8, 7, 2048, 16, 128, 1024 }, { 8, 9, 1536, 24, 128, 1024 },
    { 9, 0, 2048, 32, 128, 1024 },
};

#define FILL(f) do { if (!p->f) p->f = src->f; } while (0)

int tl_gpu_complete(tl_gpu_props *p)
{
    const gpu_entry *e = find_by_name(p->name);
    if (!e)
        for (size_t i = 0; i < N_TABLE; i++)
            if (p->cc_major && table[i].p.cc_major == p->cc_major &&
                table[i].p.cc_minor == p->cc_minor) {
                e = &table[i];
                break;
            }
    if (e) {
        const tl_gpu_props *src = &e->p;
        if (!p->name[0])
            snprintf(p->name, sizeof p->name, "%s", src->name);
        FILL(sms); FILL(max_threads_per_sm); FILL(max_threads_per_block);
        FILL(max_warps_per_sm); FILL(max_blocks_per_sm); FILL(regs_per_sm);
        FILL(regs_per_block); FILL(max_regs_per_thread); FILL(reg_alloc_unit);
        FILL(smem_per_sm); FILL(smem_per_block); FILL(smem_per_block_optin);
        FILL(smem_alloc_unit); FILL(smem_reserved_per_block); FILL(warp_size);
        FILL(cc_major); FILL(cc_minor); FILL(stream_prio_greatest); FILL(pcie_gbps);
        FILL(timeslice_ns); FILL(ctx_switch_ns); FILL(reg_sub_partitions);
        if (!p->max_warps_per_sm && p->warp_size)
            p->max_warps_per_sm = p->max_threads_per_sm / p->warp_size;
        return 0;
    }
    /* Unknown GPU of a known architecture: architecture constants only; the
     * trace must give the rest (sms, memory sizes), tl_gpu_validate checks. */
    for (size_t i = 0; i < sizeof cc_table / sizeof cc_table[0]; i++) {
        const cc_limits *c = &cc_table[i];
        if (c->major != p->cc_major || c->minor != p->cc_minor)
            continue;
        if (!p->max_threads_per_sm) p->max_threads_per_sm = c->threads_per_sm;
        if (!p->max_blocks_per_sm) p->max_blocks_per_sm = c->blocks_per_sm;
        if (!p->smem_alloc_unit) p->smem_alloc_unit = c->smem_unit;
        if (!p->smem_reserved_per_block) p->smem_reserved_per_block = c->reserve;
        if (!p->warp_size) p->warp_size = 32;
        if (!p->max_warps_per_sm) p->max_warps_per_sm = p->max_threads_per_sm / p->warp_size;
        if (!p->max_threads_per_block) p->max_threads_per_block = 1024;
        if (!p->regs_per_sm) p->regs_per_sm = 65536;
        if (!p->regs_per_block) p->regs_per_block = 65536;
        if (!p->max_regs_per_thread) p->max_regs_per_thread = 255;
        if (!p->reg_alloc_unit) p->reg_alloc_unit = 256;
        if (!p->reg_sub_partitions) p->reg_sub_partitions = 4;
        if (!p->smem_per_block) p->smem_per_block = 49152;
        if (!p->smem_per_block_optin) p->smem_per_block_optin = p->smem_per_sm - c->reserve;
        if (!p->stream_prio_greatest) p->stream_prio_greatest = -5;
        if (!p->timeslice_ns) p->timeslice_ns = TIMESLICE_NS;
        if (!p->ctx_switch_ns) p->ctx_switch_ns = CTX_SWITCH_NS;
        return 0;
    }
    return TL_EUNKNOWN;
}

int tl_gpu_validate(const tl_gpu_props *p, tl_err *err)
{
    const char *n = p->name[0] ? p->name : "?";
#define NEED(f, cond)                                                          \
    do {                                                                       \
        if (!(cond))                                                           \
            return tl_errf(err, TL_ERANGE, "gpu '%s': %s out of range (%lld)", \
                           n, #f, (long long)p->f);                            \
    } while (0)
    NEED(sms, p->sms > 0 && p->sms <= 4096);
    NEED(warp_size, p->warp_size > 0 && p->warp_size <= 1024);
    NEED(max_threads_per_sm, p->max_threads_per_sm >= p->warp_size);
    NEED(max_threads_per_block, p->max_threads_per_block > 0);
    NEED(max_warps_per_sm, p->max_warps_per_sm > 0);
    /* the warps an SM holds are threads it holds (occupancy counts both) */
    if ((int64_t)p->max_warps_per_sm * p->warp_size > p->max_threads_per_sm)
        return tl_errf(err, TL_ERANGE, "gpu '%s': max_warps_per_sm %d warps of %d threads are more "
                       "than max_threads_per_sm %d", n, p->max_warps_per_sm, p->warp_size,
                       p->max_threads_per_sm);
    NEED(max_blocks_per_sm, p->max_blocks_per_sm > 0);
    NEED(regs_per_sm, p->regs_per_sm > 0);
    NEED(regs_per_block, p->regs_per_block > 0);
    NEED(max_regs_per_thread, p->max_regs_per_thread > 0);
    NEED(reg_alloc_unit, p->reg_alloc_unit > 0);
    NEED(reg_sub_partitions, p->reg_sub_partitions > 0);
    NEED(smem_per_sm, p->smem_per_sm >= 0);
    NEED(smem_per_block_optin, p->smem_per_block_optin >= 0);
    NEED(smem_alloc_unit, p->smem_alloc_unit > 0);
    NEED(smem_reserved_per_block, p->smem_reserved_per_block >= 0);
    NEED(stream_prio_greatest, p->stream_prio_greatest <= 0 && p->stream_prio_greatest >= -63);
    NEED(timeslice_ns, p->timeslice_ns > 0);
    NEED(ctx_switch_ns, p->ctx_switch_ns >= 0);
    if (!(p->pcie_gbps > 0))
        return tl_errf(err, TL_ERANGE, "gpu '%s': pcie_gbps must be > 0", n);
#undef NEED
    return 0;
}

static inline long long round_up(long long x, long long unit)
{
    return unit > 0 ? (x + unit - 1) / unit * unit : x;
}

/* Register-limited blocks per SM (cuda_occupancy.h's rule), INT_MAX when
 * registers do not limit, 0 when the block cannot launch. */
static int regs_limit(const tl_gpu_props *g, int warps, int regs)
{
    if (regs > g->max_regs_per_thread)
        return 0;
    long long per_warp = round_up((long long)regs * g->warp_size, g->reg_alloc_unit);
    if (per_warp == 0)
        return INT_MAX;
    int parts = g->reg_sub_partitions > 0 ? g->reg_sub_partitions : 1;
    long long assumed = per_warp * round_up(warps, parts);
    if (assumed > g->regs_per_block || per_warp * warps > g->regs_per_block)
        return 0;
    long long warps_per_part = (g->regs_per_sm / parts) / per_warp;
    return (int)(warps_per_part * parts / warps);
}

int tl_block_cost_of(const tl_gpu_props *g, int threads, int regs, int smem,
                     tl_block_cost *out, tl_occ_limit *limit)
{
    tl_occ_limit lim = TL_OCC_UNFIT;
    int occ = 0;
    tl_block_cost c = { g->max_threads_per_sm, g->regs_per_sm, g->smem_per_sm };
    if (threads > 0 && threads <= g->max_threads_per_block && regs >= 0 && smem >= 0 &&
        g->warp_size > 0 && smem <= g->smem_per_block_optin) {
        int warps = (threads + g->warp_size - 1) / g->warp_size;
        int by_blocks = g->max_blocks_per_sm;
        int by_warps = g->max_warps_per_sm / warps;
        int by_regs = regs_limit(g, warps, regs);
        long long smem_alloc =
            round_up((long long)smem + g->smem_reserved_per_block, g->smem_alloc_unit);
        int by_smem = smem_alloc > 0 ? (int)(g->smem_per_sm / smem_alloc) : INT_MAX;
        occ = by_blocks, lim = TL_OCC_BLOCKS;
        if (by_warps < occ) occ = by_warps, lim = TL_OCC_THREADS;
        if (by_regs < occ) occ = by_regs, lim = TL_OCC_REGS;
        if (by_smem < occ) occ = by_smem, lim = TL_OCC_SMEM;
        if (occ <= 0) {
            occ = 0;
            lim = TL_OCC_UNFIT;
        } else {
            c.threads = warps * g->warp_size;
            c.regs = by_regs == INT_MAX ? 0 : g->regs_per_sm / by_regs;
            c.smem = (int)smem_alloc;
        }
    }
    if (out)
        *out = c;
    if (limit)
        *limit = lim;
    return occ;
}

int tl_occupancy(const tl_gpu_props *g, int threads, int regs, int smem, tl_occ_limit *limit)
{
    return tl_block_cost_of(g, threads, regs, smem, NULL, limit);
}

const char *tl_occ_limit_name(tl_occ_limit l)
{
    switch (l) {
    case TL_OCC_BLOCKS: return "blocks";
    case TL_OCC_THREADS: return "threads";
    case TL_OCC_REGS: return "registers";
    case TL_OCC_SMEM: return "shared memory";
    case TL_OCC_UNFIT: return "does not fit";
    }
    return "?";
}
