/* What-if transformations of a loaded trace. */
#ifndef TALLY_TRANSFORM_H
#define TALLY_TRANSFORM_H

#include "tally/trace.h"

/* Replay each iteration as a CUDA graph launch would: the host issues the
 * iteration's work at once. Host gaps and API-call times inside an iteration
 * become 0 (the first op's gap too) and so does the tail; the GPU work, its
 * order, streams and the host waits stay; every op is marked graph (the GPU
 * starts a graph's kernels graph_gap_ns apart, sim/README.md). Each iteration's
 * traced_ns becomes the time it takes launched at once on an idle GPU: its traced
 * GPU-busy time plus graph_gap_ns between consecutive ops of its busiest stream,
 * so that arrivals at a "load" are a fraction of the graph job's own solo
 * capacity. */
void tl_trace_as_graph(tl_trace *t, tl_ns graph_gap_ns);

/* Multiply every kernel's grid (x) by factor, keeping its duration.
 * TL_ERANGE (naming the op) if a grid would exceed 2^31-1; t is then unchanged. */
int tl_trace_scale_grid(tl_trace *t, uint32_t factor, tl_err *err);

#endif
