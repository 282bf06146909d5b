/* What-if transformations of a loaded trace. */
#ifndef TALLY_TRANSFORM_H
#define TALLY_TRANSFORM_H

#include "tally/trace.h"

/* How a graph job's iterations are launched (tl_sim_params' fields of the
 * same names, sim/README.md). */
typedef struct tl_graph_launch {
    tl_ns gap_ns;     /* GPU time between consecutive ops of a graph */
    tl_ns launch_ns;  /* host time before a graph's ops reach the GPU ... */
    tl_ns node_ns;    /* ... plus this per op in the graph */
} tl_graph_launch;

/* Replay each iteration as CUDA graph launches would: the host issues the
 * iteration's work at once. Host gaps and API-call times inside an iteration
 * become 0 and so does the tail; the GPU work, its order, streams and the host
 * waits stay; every op is marked graph (the GPU starts a graph's kernels
 * gap_ns apart). The iteration's graphs are its runs of consecutive kernels
 * and memsets on one stream (a copy, a wait, a synchronization or another
 * stream ends one): the first op of each waits launch_ns + node_ns x its ops
 * on the host (the launch call), the others none. Each iteration's traced_ns
 * becomes the GPU's time for it launched at once on an idle GPU: its traced
 * GPU-busy time plus gap_ns between consecutive ops of its busiest stream, so
 * that arrivals at a "load" are a fraction of the graph job's own solo
 * capacity (the host's launch time is not counted). */
void tl_trace_as_graph(tl_trace *t, const tl_graph_launch *g);

/* Multiply every kernel's grid (x) by factor, keeping its duration.
 * TL_ERANGE (naming the op) if a grid's x would exceed 2^31-1 or its blocks
 * TL_TRACE_MAX_BLOCKS; t is then unchanged. */
int tl_trace_scale_grid(tl_trace *t, uint32_t factor, tl_err *err);

#endif
