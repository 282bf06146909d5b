/* Solo replay fidelity: replay a trace alone in the simulator, as it was
 * captured (closed loop, iteration after iteration), and compare per-iteration
 * GPU-busy time and iteration time with the trace's own. */
#ifndef TALLY_FIDELITY_H
#define TALLY_FIDELITY_H

#include "tally/gpu.h"
#include "tally/trace.h"

typedef struct tl_fidelity {
    uint32_t iterations;
    double traced_iter_ns, replay_iter_ns;  /* means over the trace's iterations */
    double traced_busy_ns, replay_busy_ns;
    double iter_err, busy_err;              /* replay / traced - 1 */
} tl_fidelity;

/* gpu: the GPU to simulate (NULL: the trace's own, else H100). */
int tl_fidelity_check(const tl_trace *t, const tl_gpu_props *gpu, tl_fidelity *out, tl_err *err);
/* The same with simulator parameters other than the GPU's defaults:
 * sim_params "KEY=VALUE;..." as tl_sim_params_apply takes (NULL: defaults). */
int tl_fidelity_check_params(const tl_trace *t, const tl_gpu_props *gpu, const char *sim_params,
                             tl_fidelity *out, tl_err *err);

#endif
