/* What-if transformations of a loaded trace (see include/tally/transform.h). */
#include "tally/transform.h"

#include <stdbool.h>
#include <stdlib.h>

/* Kernels and memsets are what a captured graph's nodes are here. */
static bool graph_node(const tl_op *op)
{
    return op->kind == TL_OP_KERNEL || op->kind == TL_OP_MEMSET;
}

void tl_trace_as_graph(tl_trace *t, const tl_graph_launch *g)
{
    uint32_t *per_stream = tl_xcalloc(t->n_streams > 0 ? (size_t)t->n_streams : 1, sizeof *per_stream);
    for (uint32_t i = 0; i < t->n_iters; i++) {
        tl_iteration *it = &t->iters[i];
        uint32_t busiest = 0;
        for (int s = 0; s < t->n_streams; s++)
            per_stream[s] = 0;
        tl_op *first = NULL; /* first op of the graph being gathered */
        uint32_t nodes = 0;
        for (uint32_t k = 0; k < it->n_ops; k++) {
            tl_op *op = &it->ops[k];
            op->host_gap_ns = 0;
            op->host_call_ns = 0;
            op->graph = 1;
            bool gpu = op->kind == TL_OP_KERNEL || op->kind == TL_OP_MEMCPY || op->kind == TL_OP_MEMSET;
            if (gpu && op->stream >= 0 && op->stream < t->n_streams &&
                ++per_stream[op->stream] > busiest)
                busiest = per_stream[op->stream];
            if (op->kind == TL_OP_EVENT_RECORD)
                continue; /* host bookkeeping: the graph goes on */
            if (first && graph_node(op) && op->stream == first->stream) {
                nodes++;
                continue;
            }
            if (first)
                first->host_gap_ns = g->launch_ns + (tl_ns)nodes * g->node_ns;
            first = graph_node(op) ? op : NULL;
            nodes = first ? 1 : 0;
        }
        if (first)
            first->host_gap_ns = g->launch_ns + (tl_ns)nodes * g->node_ns;
        it->tail_host_ns = 0;
        /* Launched at once, the iteration takes its GPU work's time on an idle
         * GPU, plus the gaps the GPU leaves between a graph's consecutive ops:
         * what Poisson "load" arrivals must be a fraction of. */
        it->traced_ns = it->traced_busy_ns + (busiest > 1 ? (tl_ns)(busiest - 1) * g->gap_ns : 0);
    }
    free(per_stream);
}

int tl_trace_scale_grid(tl_trace *t, uint32_t factor, tl_err *err)
{
    for (uint32_t i = 0; i < t->n_iters; i++)
        for (uint32_t k = 0; k < t->iters[i].n_ops; k++) {
            const tl_op *op = &t->iters[i].ops[k];
            if (op->kind == TL_OP_KERNEL && (uint64_t)op->grid[0] * factor > 0x7fffffffULL)
                return tl_errf(err, TL_ERANGE, "%s: iteration %u op %u: grid.x %u x %u exceeds 2^31-1",
                               t->path ? t->path : "trace", i, k, op->grid[0], factor);
            /* grid.x x factor <= 2^31 and y, z <= 65535: no overflow */
            if (op->kind == TL_OP_KERNEL &&
                (uint64_t)op->grid[0] * factor * op->grid[1] * op->grid[2] > TL_TRACE_MAX_BLOCKS)
                return tl_errf(err, TL_ERANGE,
                               "%s: iteration %u op %u: grid [%u,%u,%u] with x times %u has more "
                               "than %llu blocks (TL_TRACE_MAX_BLOCKS)",
                               t->path ? t->path : "trace", i, k, op->grid[0], op->grid[1],
                               op->grid[2], factor, (unsigned long long)TL_TRACE_MAX_BLOCKS);
        }
    for (uint32_t i = 0; i < t->n_iters; i++)
        for (uint32_t k = 0; k < t->iters[i].n_ops; k++)
            if (t->iters[i].ops[k].kind == TL_OP_KERNEL)
                t->iters[i].ops[k].grid[0] *= factor;
    return 0;
}
