/* The kernel-kind rule and the register-variant choice (see backend.h). */
#include <stddef.h>
#include <string.h>

#include "backend.h"
#include "tally/trace.h"

/* The rule itself lives with the traces (tl_work_for_name, traces/work_kind.c)
 * so that the simulator reads the same answer; the backend keeps its own
 * numbering, which keys the calibration cache. */
int tl_kernel_kind_for_name(const char *name)
{
    return tl_work_for_name(name) == TL_WORK_COMPUTE ? TL_KIND_COMPUTE : TL_KIND_MEMORY;
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
