/* CUDA-graph launches of synthetic kernels (backend-private).
 *
 * A job marked "graph" in the spec launches each iteration as one CUDA graph
 * (tl_trace_as_graph marks its ops). The device collects the whole-grid
 * launches a policy issues to one stream in one turn of the event loop and
 * hands them here as one batch, which runs as one graph launch: the GPU then
 * starts the kernels back to back the way a graph does, with no host launch
 * call between them.
 *
 * Instantiating a graph costs far more than launching it (0.1-30 ms on the
 * H100 against a few us), so graphs are cached by stream and shape (kernel,
 * block shape, block range of every launch). The work units per block differ
 * a little from one trace iteration to the next (their traced durations do):
 * a batch whose work differs from an idle cached graph of its shape by at
 * most TL_GCACHE_REUSE_PCT in all relaunches that graph as it is, as a
 * framework relaunches its captured graph with the same kernels every time
 * (updating the nodes would cost the host ~0.1-0.2 us each before the launch,
 * measured on the H100, which no real replay pays). Batches of the same shape
 * with more different work get graphs of their own, up to TL_GCACHE_PER_SHAPE;
 * past that, the least recently used idle one is updated to the batch's work
 * units (cudaGraphExecKernelNodeSetParams) and launched.
 *
 * The graph's kernels are synth "nodes" (synth.h): their blocks only stamp
 * times, and publish kernels at the graph's end write every node's record.
 * So the host learns of a graph's kernels all at once when it ends, as it does
 * of a real graph's (their start and end times are still each kernel's own),
 * and the GPU starts each next kernel without the per-launch completion work.
 *
 * A cached graph's nodes each own a synth slot for as long as the graph is
 * cached (the slot's generation, and so the value its record will carry, stays
 * fixed) and their memory salts are fixed when it is built. A graph is
 * relaunched only once every node of its previous launch was reported done
 * (tl_gcache_done); a batch whose graph still runs gets a second one. When
 * slots run short, idle graphs are dropped, least recently used first.
 *
 * Lookup is a linear scan over cached graphs comparing a 64-bit hash first: a
 * run holds a few hundred graphs (one per distinct trace iteration segment).
 */
#ifndef TALLY_BACKEND_GRAPH_CACHE_H
#define TALLY_BACKEND_GRAPH_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "synth.h"
#include "tally/common.h"

/* Synth slots a replaying process opens: cached graphs hold one per node
 * (a few hundred thousand nodes x ~0.8 KB of device counters each at most). */
#define TL_GCACHE_PROCESS_SLOTS (1u << 17)
/* Graphs kept per stream and shape for batches of different work. */
#define TL_GCACHE_PER_SHAPE 16u
/* Work difference (percent of the batch's) within which a cached graph is
 * relaunched as it is. */
#define TL_GCACHE_REUSE_PCT 2.0
/* Slots eviction leaves free for ordinary launches. */
#define TL_GCACHE_RESERVE 4096u

typedef struct tl_gcache tl_gcache;

typedef struct tl_gcache_stats {
    uint64_t launches;        /* graph launches */
    uint64_t nodes;           /* kernels launched inside them */
    uint64_t instantiations;  /* graphs built and instantiated */
    uint64_t reuses;          /* launches of a graph built for work within TL_GCACHE_REUSE_PCT */
    uint64_t updates;         /* launches of a graph updated to other work units */
    uint64_t node_updates;    /* ... nodes updated in them */
    tl_ns update_ns;          /* host time updating, in all */
    uint64_t evictions;       /* idle graphs dropped for their slots */
    uint64_t no_room;         /* batches refused: not enough slots (launched one by one) */
    tl_ns instantiate_ns;     /* host time building and instantiating, in all */
    tl_ns instantiate_max_ns; /* ... the longest one */
    tl_ns launch_call_ns;     /* host time in cudaGraphLaunch, in all */
    size_t cached;            /* graphs held now */
} tl_gcache_stats;

tl_gcache *tl_gcache_new(tl_synth *s);
/* Destroys the graphs and gives their slots back: call with the GPU idle. */
void tl_gcache_free(tl_gcache *g);

/* Launch ls[0..n) (whole-grid synthetic launches: workers 0; slot and salt
 * are ignored) as one CUDA graph on stream (a cudaStream_t). On success
 * (*slots)[i] is the slot node i reports through (the cache's array, valid
 * until the next call) and *graph the handle to pass to tl_gcache_done once per
 * node. Returns 0, a cudaError_t (> 0), or TL_ENOMEM when the slots cannot be
 * found (nothing launched: launch them one by one). */
int tl_gcache_launch(tl_gcache *g, const tl_synth_launch *ls, size_t n, void *stream,
                     const unsigned int **slots, int *graph);
/* One node of graph's latest launch is done and its record was read. */
void tl_gcache_done(tl_gcache *g, int graph);
void tl_gcache_get_stats(const tl_gcache *g, tl_gcache_stats *out);

#endif
