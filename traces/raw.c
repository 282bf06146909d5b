/* The raw timeline every reader produces, and small helpers they share. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void tl_raw_init(tl_raw *r)
{
    memset(r, 0, sizeof *r);
    tl_strtab_init(&r->strings);
}

void tl_raw_close(tl_raw *r)
{
    tl_strtab_close(&r->strings);
    free(r->calls);
    free(r->gpu);
    free(r->syncs);
    free(r->markers);
    memset(r, 0, sizeof *r);
}

#define GROW(arr, n, cap)                                              \
    do {                                                               \
        if ((n) == (cap)) {                                            \
            (cap) = (cap) ? (cap) * 2 : 256;                           \
            (arr) = tl_xrealloc((arr), (cap) * sizeof *(arr));         \
        }                                                              \
    } while (0)

tl_raw_call *tl_raw_add_call(tl_raw *r)
{
    GROW(r->calls, r->n_calls, r->cap_calls);
    tl_raw_call *c = &r->calls[r->n_calls++];
    memset(c, 0, sizeof *c);
    c->corr = c->stream = c->event = c->record_corr = c->wait_stream = TL_RAW_NONE;
    c->gpu_index = -1;
    return c;
}

tl_raw_gpu *tl_raw_add_gpu(tl_raw *r)
{
    GROW(r->gpu, r->n_gpu, r->cap_gpu);
    tl_raw_gpu *g = &r->gpu[r->n_gpu++];
    memset(g, 0, sizeof *g);
    g->corr = TL_RAW_NONE;
    return g;
}

tl_raw_syncinfo *tl_raw_add_sync(tl_raw *r)
{
    GROW(r->syncs, r->n_syncs, r->cap_syncs);
    tl_raw_syncinfo *s = &r->syncs[r->n_syncs++];
    s->corr = s->stream = s->wait_stream = s->record_corr = s->event = TL_RAW_NONE;
    return s;
}

tl_raw_marker *tl_raw_add_marker(tl_raw *r)
{
    GROW(r->markers, r->n_markers, r->cap_markers);
    tl_raw_marker *m = &r->markers[r->n_markers++];
    memset(m, 0, sizeof *m);
    return m;
}

/* API names come as "cudaStreamSynchronize", "cuStreamSynchronize",
 * "cudaLaunchKernel_v7000" (nsys), "cuMemcpyDtoH_v2", "..._ptsz": compare the
 * base name, without the version/per-thread suffix. */
static size_t base_len(const char *name)
{
    const char *u = strchr(name, '_');
    return u ? (size_t)(u - name) : strlen(name);
}

static bool base_is(const char *name, size_t n, const char *want)
{
    return strlen(want) == n && strncmp(name, want, n) == 0;
}

tl_api_class tl_api_classify(const char *name)
{
    static const struct {
        const char *name;
        tl_api_class cls;
    } table[] = {
        {"cudaStreamSynchronize", TL_API_SYNC_STREAM},
        {"cuStreamSynchronize", TL_API_SYNC_STREAM},
        {"cudaDeviceSynchronize", TL_API_SYNC_DEVICE},
        {"cudaThreadSynchronize", TL_API_SYNC_DEVICE},
        {"cuCtxSynchronize", TL_API_SYNC_DEVICE},
        {"cudaEventSynchronize", TL_API_SYNC_EVENT},
        {"cuEventSynchronize", TL_API_SYNC_EVENT},
        {"cudaEventRecord", TL_API_EVENT_RECORD},
        {"cudaEventRecordWithFlags", TL_API_EVENT_RECORD},
        {"cuEventRecord", TL_API_EVENT_RECORD},
        {"cuEventRecordWithFlags", TL_API_EVENT_RECORD},
        {"cudaStreamWaitEvent", TL_API_STREAM_WAIT},
        {"cuStreamWaitEvent", TL_API_STREAM_WAIT},
        {"cudaGraphLaunch", TL_API_GRAPH_LAUNCH},
        {"cuGraphLaunch", TL_API_GRAPH_LAUNCH},
    };
    if (!name)
        return TL_API_OTHER;
    size_t n = base_len(name);
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (base_is(name, n, table[i].name))
            return table[i].cls;
    /* Synchronous copies: cudaMemcpy, cudaMemcpy2D, cudaMemcpyToSymbol,
     * cuMemcpyDtoH...; the *Async variants return at once (except D2H into
     * pageable memory, decided from the copy record). Peer/D2D synchronous
     * copies do not block the host either: the builder checks the copy kind. */
    if ((strncmp(name, "cudaMemcpy", 10) == 0 || strncmp(name, "cuMemcpy", 8) == 0) &&
        !strstr(name, "Async"))
        return TL_API_MEMCPY_SYNC;
    return TL_API_OTHER;
}

/* Largest |µs| we accept: ns must fit int64 with room for sums. */
#define TL_MAX_US 4.0e15

bool tl_us_to_ns(double us, tl_ns *out)
{
    if (!isfinite(us) || us > TL_MAX_US || us < -TL_MAX_US)
        return false;
    /* Split into integral µs (exact in a double below 2^53) and the fraction. */
    double ip = floor(us);
    double frac = us - ip;
    tl_ns ns = (tl_ns)ip * 1000 + (tl_ns)llround(frac * 1000.0);
    *out = ns;
    return true;
}

const char *tl_short_name(const char *s, char *buf, size_t n)
{
    if (!s)
        return "";
    size_t len = strlen(s);
    if (len < n)
        return s;
    snprintf(buf, n, "%.*s...", (int)(n - 4), s);
    return buf;
}
