/* Cached CUDA graphs of synthetic launches (design in graph_cache.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "backend.h"
#include "graph_cache.h"

typedef struct cached_graph {
    uint64_t shape_hash;      /* of the launches without their work units */
    uint64_t exact_hash;      /* ... and with them, as set now */
    void *stream;
    tl_synth_launch *key;     /* n launches as set now (slot and salt zeroed) */
    size_t n;
    unsigned int *slots;      /* owned while cached */
    tl_synth_graph *graph;    /* NULL: free entry */
    size_t outstanding;       /* nodes of its latest launch not yet done */
    uint64_t last_use;
} cached_graph;

struct tl_gcache {
    tl_synth *synth;
    cached_graph *g;
    size_t n_g, cap_g;
    tl_synth_launch *scratch;
    size_t cap_scratch;
    uint64_t tick;
    unsigned long long salt;
    tl_gcache_stats st;
};

tl_gcache *tl_gcache_new(tl_synth *s)
{
    tl_gcache *g = tl_xcalloc(1, sizeof *g);
    g->synth = s;
    g->salt = 0x5bd1e995ull << 20;
    return g;
}

static void drop(tl_gcache *g, cached_graph *c)
{
    tl_synth_graph_free(c->graph);
    for (size_t i = 0; i < c->n; i++) tl_synth_slot_release(g->synth, c->slots[i]);
    free(c->key);
    free(c->slots);
    memset(c, 0, sizeof *c);
    g->st.cached--;
}

void tl_gcache_free(tl_gcache *g)
{
    if (!g) return;
    for (size_t i = 0; i < g->n_g; i++)
        if (g->g[i].graph) drop(g, &g->g[i]);
    free(g->g);
    free(g->scratch);
    free(g);
}

/* The launch with what varies per launch (slot, salt) and padding zeroed, so
 * that equal batches compare equal byte for byte. */
static tl_synth_launch normalized(const tl_synth_launch *l)
{
    tl_synth_launch k;
    memset(&k, 0, sizeof k);
    k.kind = l->kind;
    k.variant = l->variant;
    memcpy(k.block, l->block, sizeof k.block);
    k.smem = l->smem;
    k.begin = l->begin;
    k.end = l->end;
    k.workers = l->workers;
    k.iters = l->iters;
    return k;
}

#define FNV_BASIS 0xcbf29ce484222325ull

static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Both hashes of a normalized batch: with and without the work units. */
static void hashes(const tl_synth_launch *k, size_t n, void *stream, uint64_t *shape, uint64_t *exact)
{
    uint64_t hs = fnv1a(&stream, sizeof stream, FNV_BASIS), he = hs;
    for (size_t i = 0; i < n; i++) {
        tl_synth_launch s = k[i];
        he = fnv1a(&s, sizeof s, he);
        s.iters = 0;
        hs = fnv1a(&s, sizeof s, hs);
    }
    *shape = hs;
    *exact = he;
}

static bool same_shape(const tl_synth_launch *a, const tl_synth_launch *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tl_synth_launch x = a[i], y = b[i];
        x.iters = y.iters = 0;
        if (memcmp(&x, &y, sizeof x)) return false;
    }
    return true;
}

/* Free slots until n more are available beside the reserve, dropping idle
 * graphs least recently used first. */
static int make_room(tl_gcache *g, size_t n)
{
    while (tl_synth_slots_free(g->synth) < n + TL_GCACHE_RESERVE) {
        cached_graph *lru = NULL;
        for (size_t i = 0; i < g->n_g; i++) {
            cached_graph *c = &g->g[i];
            if (c->graph && !c->outstanding && (!lru || c->last_use < lru->last_use)) lru = c;
        }
        if (!lru) return TL_ENOMEM;
        drop(g, lru);
        g->st.evictions++;
    }
    return 0;
}

static cached_graph *new_entry(tl_gcache *g)
{
    for (size_t i = 0; i < g->n_g; i++)
        if (!g->g[i].graph) return &g->g[i];
    if (g->n_g == g->cap_g) {
        g->cap_g = g->cap_g ? 2 * g->cap_g : 64;
        g->g = tl_xrealloc(g->g, g->cap_g * sizeof *g->g);
    }
    cached_graph *c = &g->g[g->n_g++];
    memset(c, 0, sizeof *c);
    return c;
}

/* A batch's work: its blocks' work units, summed. */
static double total_work(const tl_synth_launch *k, size_t n)
{
    double w = 0;
    for (size_t i = 0; i < n; i++) w += (double)k[i].iters * (double)(k[i].end - k[i].begin);
    return w;
}

/* Build and instantiate a graph for the batch; its nodes keep the slots
 * taken here. */
static int build(tl_gcache *g, cached_graph *c, const tl_synth_launch *key, size_t n, void *stream,
                 uint64_t shape, uint64_t exact)
{
    tl_ns t0 = tl_mono_ns();
    int r = make_room(g, n);
    if (r) return r;
    unsigned int *slots = tl_xcalloc(n, sizeof *slots);
    tl_synth_launch *ls = tl_xmalloc(n * sizeof *ls);
    for (size_t i = 0; i < n; i++) {
        slots[i] = (unsigned int)tl_synth_slot_acquire(g->synth);
        ls[i] = key[i];
        ls[i].slot = slots[i];
        ls[i].salt = g->salt;
        g->salt += 0x9e3779b97f4a7c15ull >> 20;
    }
    tl_synth_graph *graph = NULL;
    int e = tl_synth_graph_new(g->synth, ls, n, &graph);
    free(ls);
    if (e) {
        for (size_t i = 0; i < n; i++) tl_synth_slot_release(g->synth, slots[i]);
        free(slots);
        return e;
    }
    c->shape_hash = shape;
    c->exact_hash = exact;
    c->stream = stream;
    c->key = tl_xmalloc(n * sizeof *key);
    memcpy(c->key, key, n * sizeof *key);
    c->n = n;
    c->slots = slots;
    c->graph = graph;
    g->st.cached++;
    g->st.instantiations++;
    tl_ns dt = tl_mono_ns() - t0;
    g->st.instantiate_ns += dt;
    if (dt > g->st.instantiate_max_ns) g->st.instantiate_max_ns = dt;
    return 0;
}

/* An idle graph of the batch's shape takes the batch's work units. */
static int update(tl_gcache *g, cached_graph *c, const tl_synth_launch *key, uint64_t exact)
{
    tl_ns t0 = tl_mono_ns();
    for (size_t i = 0; i < c->n; i++) {
        if (c->key[i].iters == key[i].iters) continue;
        int e = tl_synth_graph_set_iters(c->graph, i, key[i].iters);
        if (e) return e;
        c->key[i].iters = key[i].iters;
        g->st.node_updates++;
    }
    c->exact_hash = exact;
    g->st.updates++;
    g->st.update_ns += tl_mono_ns() - t0;
    return 0;
}

int tl_gcache_launch(tl_gcache *g, const tl_synth_launch *ls, size_t n, void *stream,
                     const unsigned int **slots, int *graph)
{
    if (n == 0) return (int)cudaErrorInvalidValue;
    if (n > g->cap_scratch) {
        g->cap_scratch = n;
        g->scratch = tl_xrealloc(g->scratch, n * sizeof *g->scratch);
    }
    for (size_t i = 0; i < n; i++) g->scratch[i] = normalized(&ls[i]);
    uint64_t shape, exact;
    hashes(g->scratch, n, stream, &shape, &exact);
    /* An idle graph of exactly this batch; else an idle one of its shape whose
     * work differs by at most TL_GCACHE_REUSE_PCT in all, launched as it is;
     * else a new one, while fewer than TL_GCACHE_PER_SHAPE of its shape exist;
     * else the least recently used idle one of its shape, updated. */
    cached_graph *hit = NULL, *like = NULL, *close = NULL;
    size_t same_shape_graphs = 0;
    double work = total_work(g->scratch, n);
    for (size_t i = 0; i < g->n_g && !hit; i++) {
        cached_graph *c = &g->g[i];
        if (!c->graph || c->shape_hash != shape || c->n != n || c->stream != stream) continue;
        same_shape_graphs++;
        if (c->outstanding || !same_shape(c->key, g->scratch, n)) continue;
        if (c->exact_hash == exact && !memcmp(c->key, g->scratch, n * sizeof *g->scratch)) hit = c;
        else if (!close && fabs(total_work(c->key, n) - work) <= work * TL_GCACHE_REUSE_PCT / 100.0) close = c;
        else if (!like || c->last_use < like->last_use) like = c;
    }
    int e = 0;
    if (!hit && close) {
        hit = close;
        g->st.reuses++;
    } else if (!hit && like && same_shape_graphs >= TL_GCACHE_PER_SHAPE) {
        hit = like;
        e = update(g, hit, g->scratch, exact);
    } else if (!hit) {
        hit = new_entry(g);
        e = build(g, hit, g->scratch, n, stream, shape, exact);
        if (e == TL_ENOMEM) g->st.no_room++;
    }
    if (e) return e;
    tl_ns t0 = tl_mono_ns();
    e = tl_synth_graph_launch(g->synth, hit->graph, hit->slots, stream);
    g->st.launch_call_ns += tl_mono_ns() - t0;
    if (e) return e;
    hit->outstanding = n;
    hit->last_use = ++g->tick;
    *slots = hit->slots;
    *graph = (int)(hit - g->g);
    g->st.launches++;
    g->st.nodes += n;
    return 0;
}

void tl_gcache_done(tl_gcache *g, int graph)
{
    if (graph < 0 || (size_t)graph >= g->n_g) return;
    cached_graph *c = &g->g[graph];
    if (c->outstanding) c->outstanding--;
}

void tl_gcache_get_stats(const tl_gcache *g, tl_gcache_stats *out) { *out = g->st; }
