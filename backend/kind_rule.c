/* The kernel-kind rule and the register-variant choice (see backend.h). */
#include <ctype.h>
#include <stddef.h>
#include <string.h>

#include "backend.h"

/* Case-insensitive substring search over ASCII. */
static bool has_word(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] && tolower((unsigned char)p[i]) == needle[i]) i++;
        if (i == n) return true;
    }
    return false;
}

/* Bandwidth-bound helpers that live inside GEMM libraries: their names carry
 * "gemm" but they only move or reduce data. Checked first. */
static const char *const memory_first[] = {
    "splitkreduce", "reducesplitk", "split_k_reduce", "gemv", "epilogue::impl::globalkernel",
    "init_device_workspace", NULL,
};
static const char *const compute_words[] = {
    "gemm", "conv", "mma", "fmha", "attention", "attn", "flash", "xmma", "cutlass", "cublas",
    "dgrad", "wgrad", "fprop", "implicit", "winograd", "matmul", NULL,
};

int tl_kernel_kind_for_name(const char *name)
{
    if (!name) return TL_KIND_MEMORY;
    for (int i = 0; memory_first[i]; i++)
        if (has_word(name, memory_first[i])) return TL_KIND_MEMORY;
    for (int i = 0; compute_words[i]; i++)
        if (has_word(name, compute_words[i])) return TL_KIND_COMPUTE;
    return TL_KIND_MEMORY;
}

const char *tl_kernel_kind_name(int kind) { return kind == TL_KIND_COMPUTE ? "compute" : "memory"; }

int tl_pick_variant(const int *regs, const int *max_threads, int n, int traced_regs,
                    int threads, int regs_per_block, int reg_alloc_unit)
{
    if (threads <= 0 || n <= 0) return -1;
    if (reg_alloc_unit <= 0) reg_alloc_unit = 256;
    int warps = (threads + 31) / 32;
    int best = -1, best_d = 0;
    for (int i = 0; i < n; i++) {
        if (regs[i] <= 0 || threads > max_threads[i]) continue;
        long per_warp = ((long)regs[i] * 32 + reg_alloc_unit - 1) / reg_alloc_unit * reg_alloc_unit;
        if (regs_per_block > 0 && per_warp * warps > regs_per_block) continue;
        int d = regs[i] > traced_regs ? regs[i] - traced_regs : traced_regs - regs[i];
        if (best < 0 || d < best_d || (d == best_d && regs[i] < regs[best])) {
            best = i;
            best_d = d;
        }
    }
    return best;
}
