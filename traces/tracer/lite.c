/* tally-trace: the "lite" host timeline (--host-timeline lite, the default).
 *
 * Recording every CUDA API call makes CUPTI intercept each of them (PyTorch
 * makes ~12,000 per ResNet-50 training step: +30% step time). LITE records
 * none and rebuilds, when the trace is written, the calls the loader needs
 * (traces/FORMAT.md: launches linked to their GPU work by correlation id,
 * synchronizations, event records, stream waits, blocking copies) from
 * records that cost the program's threads little or nothing:
 *
 * - A kernel launch starts at CUPTI's `queued` latency timestamp (the driver
 *   wrote the launch into the command buffer: the host part of the launch,
 *   done inside the call), moved back to the kernel's GPU start if clock skew
 *   put it later. It lasts `submitted - queued` (the rest of the call: handing
 *   the buffer to the GPU) when known and at most TT_LITE_MAX_CALL_NS, else
 *   TT_LITE_CALL_NS, and never past the start of the next call.
 * - With --latency-sample N, the launches of iterations traced without
 *   latency timestamps carry queued times copied from a sampled iteration
 *   (lite_sample.c, TT_RF_LEAD_COPIED): used the same way, counted apart.
 * - With --launch-times callback, the launch (and copy, memset) calls were
 *   timed by callbacks instead (TT_R_HOSTCALL records, hostcalls.c): the call
 *   of the GPU records with that correlation id takes the record's entry and
 *   exit (the entry moved back to the GPU start under clock skew), name, API
 *   and callback id, and is not estimated. A call made inside another has
 *   the outer call's times under its own id: whichever id the GPU records
 *   carry finds them; HOSTCALL records no GPU record claims are dropped.
 * - Synchronize and stream-wait calls: host start and end from our callbacks
 *   on those calls (--sync-records callback, the default) or CUPTI's
 *   SYNCHRONIZATION records (activity): exact. With --sync-records
 *   completion, CUPTI's synchronize-domain callbacks give only the end of
 *   each stream or device synchronize and no correlation id: the wait goes
 *   before the first call that started (queued time, recorded start) after
 *   its end, or whose GPU work (on its stream, for a stream synchronize)
 *   started after it; it takes the correlation id after the previous
 *   call's. CUPTI numbers only the calls it traces (GPU work, callbacks,
 *   API activity), so in this mode that id is the next call's: the ids
 *   from there on are moved up to make room (tt_lite_restore puts them
 *   back after the write). It starts where the previous call ended (the
 *   host went on to the wait), or just before its end when it returned
 *   more than TT_LITE_LATE_NS after the work it waited for (the host came
 *   late).
 * - Copies, memsets, event records and launches without a queued timestamp
 *   have no recorded host time. CUPTI hands out correlation ids as calls
 *   begin, so such a call goes where its id puts it, as late as it can:
 *   ending (after TT_LITE_CALL_NS) where the next call starts, not after its
 *   own GPU start, and not before the previous call's (estimated) end unless
 *   the next known call or its GPU start say so. A blocking copy (a
 *   synchronous one that is not device-to-device, or device-to-host into
 *   pageable memory: the loader's rule) holds the host until the copy ends.
 * - The host thread is unknown without API records: every call gets the one
 *   thread id the caller gives (the process id). The loader merges the calls
 *   of all threads into one host timeline anyway (FORMAT.md, "Host order").
 *
 * Every call made here but the timed ones carries TT_RF_ESTIMATED; the
 * writer marks them.
 * Nothing here depends on CUPTI's headers (tests build it without them).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tracer.h"

/* What a reconstructed call is; also its order among records of one
 * correlation id (GPU work first). */
enum { K_LAUNCH, K_GRAPH, K_MEMCPY, K_MEMSET, K_WAIT, K_EVENT };

typedef struct item {
    uint32_t corr;
    uint8_t kind;
    uint8_t sync_type;    /* K_WAIT: TT_SYNCT_* */
    bool async;           /* K_MEMCPY, K_MEMSET: an *Async call */
    bool blocking;        /* the host waited for the copy */
    bool known_start, known_end, dropped;
    bool completion;      /* K_WAIT from a completion: end known, start inferred */
    bool timed;           /* GPU items: start and end are the call's own, from
                             callbacks (the HOSTCALL record hc) */
    bool copied;          /* a launch whose queued time was copied from a
                             sampled iteration (lite_sample.c) */
    size_t hc;
    uint32_t stream;      /* GPU items; stream synchronizes */
    uint64_t start, end;  /* host times, known or estimated */
    uint64_t gpu_start;   /* earliest GPU start of the call's records; 0 none */
    uint64_t gpu_end;     /* latest GPU end */
    uint64_t call_ns;     /* estimated duration when the end is not known */
    size_t rec;           /* index of its first record: the last tie-break */
} item;

static bool is_completion(const tt_rec *r)
{
    return r->type == TT_R_SYNC && (r->flags & TT_RF_END_ONLY) && r->end &&
           (r->sub == TT_SYNCT_STREAM || r->sub == TT_SYNCT_CONTEXT);
}

static int rank_of(const tt_rec *r)
{
    if (r->type == TT_R_SYNC && (r->flags & TT_RF_END_ONLY))
        return -1; /* completions are placed by time (place_completions) */
    switch (r->type) {
    case TT_R_KERNEL: return r->graph ? K_GRAPH : K_LAUNCH;
    case TT_R_MEMCPY: return K_MEMCPY;
    case TT_R_MEMSET: return K_MEMSET;
    case TT_R_SYNC:
        return r->sub >= TT_SYNCT_EVENT && r->sub <= TT_SYNCT_CONTEXT && r->start &&
                       r->end >= r->start
                   ? K_WAIT
                   : -1; /* queries and unknown types: not a call the loader needs */
    case TT_R_EVENT: return K_EVENT;
    default: return -1;
    }
}

static bool is_gpu(int kind)
{
    return kind <= K_MEMSET;
}

static int by_corr(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    bool gx = is_gpu(x->kind), gy = is_gpu(y->kind);
    if (gx != gy) /* GPU records of one call stay together, whatever their kind */
        return gx ? -1 : 1;
    if (!gx && x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return x->rec < y->rec ? -1 : x->rec > y->rec;
}

static int cmp_corr(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The loader's rule (traces/timeline.c): a synchronous copy blocks unless it
 * is device-to-device; a copy into pageable host memory always does. */
static bool copy_blocks(const tt_rec *r)
{
    unsigned kind = r->sub, dst = r->id >> 8;
    bool d2d = kind == TT_COPY_DTOD || kind == TT_COPY_DTOA || kind == TT_COPY_ATOD ||
               kind == TT_COPY_ATOA;
    bool d2h = kind == TT_COPY_DTOH || kind == TT_COPY_ATOH;
    return (!(r->flags & TT_RF_ASYNC) && !d2d) || (d2h && dst == TT_MEM_PAGEABLE);
}

static const char *call_name(const item *it)
{
    switch (it->kind) {
    case K_LAUNCH: return "cudaLaunchKernel";
    case K_GRAPH: return "cudaGraphLaunch";
    case K_MEMCPY: return it->async ? "cudaMemcpyAsync" : "cudaMemcpy";
    case K_MEMSET: return it->async ? "cudaMemsetAsync" : "cudaMemset";
    case K_EVENT: return "cudaEventRecord";
    default:
        switch (it->sync_type) {
        case TT_SYNCT_EVENT: return "cudaEventSynchronize";
        case TT_SYNCT_STREAM_WAIT: return "cudaStreamWaitEvent";
        case TT_SYNCT_STREAM: return "cudaStreamSynchronize";
        default: return "cudaDeviceSynchronize";
        }
    }
}

/* HOSTCALL records by correlation id; of two with one id (not expected),
 * the outermost call's own first. */
typedef struct hostcall {
    uint32_t corr;
    bool nested;
    bool used;
    size_t rec;
} hostcall;

static int by_hostcall(const void *a, const void *b)
{
    const hostcall *x = a, *y = b;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    if (x->nested != y->nested)
        return x->nested ? 1 : -1;
    return x->rec < y->rec ? -1 : x->rec > y->rec;
}

static hostcall *find_hostcall(hostcall *h, size_t n, uint32_t corr)
{
    size_t lo = 0, hi = n; /* the first with corr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h[mid].corr < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && h[lo].corr == corr ? &h[lo] : NULL;
}

/* Items from the records: one per record, then the GPU records of one
 * correlation id (a graph launch, a copy split in pieces) merged into one
 * call. A GPU item whose call was timed by callbacks (a HOSTCALL record of
 * its id) takes those times. Returns the number of items, or -1 when out of
 * memory; *unused: HOSTCALL records no GPU record claimed. */
static long collect(const tt_store *s, item **out, uint64_t *unused)
{
    size_t n_api = 0, n = 0, n_hc = 0;
    for (size_t i = 0; i < s->n; i++) {
        const tt_rec *r = tt_store_at(s, i);
        n_api += r->type == TT_R_API;
        n_hc += r->type == TT_R_HOSTCALL;
        n += r->corr && rank_of(r) >= 0;
    }
    uint32_t *api = malloc((n_api ? n_api : 1) * sizeof *api);
    item *v = malloc((n ? n : 1) * sizeof *v);
    hostcall *hc = malloc((n_hc ? n_hc : 1) * sizeof *hc);
    if (!api || !v || !hc) {
        free(api);
        free(v);
        free(hc);
        return -1;
    }
    n_hc = 0;
    for (size_t i = 0; i < s->n; i++) {
        const tt_rec *r = tt_store_at(s, i);
        if (r->type == TT_R_HOSTCALL && r->corr)
            hc[n_hc++] = (hostcall){.corr = r->corr, .nested = (r->flags & TT_RF_NESTED) != 0,
                                    .rec = i};
    }
    qsort(hc, n_hc, sizeof *hc, by_hostcall);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        const tt_rec *r = tt_store_at(s, i);
        if (r->type == TT_R_API)
            api[k++] = r->corr;
    }
    qsort(api, k, sizeof *api, cmp_corr);
    size_t m = 0;
    for (size_t i = 0; i < s->n; i++) {
        const tt_rec *r = tt_store_at(s, i);
        int kind = r->corr ? rank_of(r) : -1;
        if (kind < 0 || (k && bsearch(&r->corr, api, k, sizeof *api, cmp_corr)))
            continue;
        item *it = &v[m++];
        memset(it, 0, sizeof *it);
        it->corr = r->corr;
        it->kind = (uint8_t)kind;
        it->rec = i;
        it->call_ns = TT_LITE_CALL_NS;
        it->stream = r->stream;
        if (is_gpu(kind)) {
            it->gpu_start = r->start;
            it->gpu_end = r->end;
            it->async = (r->flags & TT_RF_ASYNC) != 0;
            it->blocking = r->type == TT_R_MEMCPY && copy_blocks(r);
            hostcall *h = n_hc ? find_hostcall(hc, n_hc, r->corr) : NULL;
            if (h) { /* the call's own entry and exit */
                const tt_rec *c = tt_store_at(s, h->rec);
                h->used = true;
                it->timed = it->known_start = it->known_end = true;
                it->hc = h->rec;
                it->start = c->start;
                it->end = c->end >= c->start ? c->end : c->start;
            } else if (r->type == TT_R_KERNEL && r->queued) {
                it->known_start = true;
                it->copied = (r->flags & TT_RF_LEAD_COPIED) != 0;
                it->start = r->queued;
                if (r->submitted >= r->queued && r->submitted - r->queued <= TT_LITE_MAX_CALL_NS)
                    it->call_ns = r->submitted - r->queued;
            }
        } else if (kind == K_WAIT) {
            it->sync_type = r->sub;
            it->known_start = it->known_end = true;
            it->start = r->start;
            it->end = r->end;
        } else if (r->flags & TT_RF_HOST_TIME) { /* an event record seen by a callback */
            it->known_start = it->known_end = true;
            it->start = r->start;
            it->end = r->end >= r->start ? r->end : r->start;
        }
    }
    free(api);
    *unused = 0;
    for (size_t i = 0; i < n_hc; i++)
        *unused += !hc[i].used;
    free(hc);
    qsort(v, m, sizeof *v, by_corr);

    /* merge the GPU records of one call */
    size_t w = 0;
    for (size_t i = 0; i < m; i++) {
        item *it = &v[i], *last = w ? &v[w - 1] : NULL;
        if (last && is_gpu(it->kind) && is_gpu(last->kind) && last->corr == it->corr) {
            if (it->kind == K_GRAPH || (it->kind == K_LAUNCH && last->kind != K_GRAPH))
                last->kind = it->kind;
            if (it->gpu_start < last->gpu_start)
                last->gpu_start = it->gpu_start;
            if (it->gpu_end > last->gpu_end)
                last->gpu_end = it->gpu_end;
            last->blocking = last->blocking || it->blocking;
            if (last->timed || it->timed) { /* one call, one HOSTCALL record */
                if (!last->timed) {
                    last->timed = last->known_start = last->known_end = true;
                    last->hc = it->hc;
                    last->start = it->start;
                    last->end = it->end;
                }
            } else if (it->known_start && (!last->known_start || it->start < last->start)) {
                last->known_start = true;
                last->copied = it->copied;
                last->start = it->start;
                last->call_ns = it->call_ns;
            }
            continue;
        }
        v[w++] = *it;
    }
    *out = v;
    return (long)w;
}

/* Completions ordered by end. */
typedef struct completion {
    uint64_t end;
    size_t rec;
} completion;

static int by_end(const void *a, const void *b)
{
    const completion *x = a, *y = b;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->rec < y->rec ? -1 : x->rec > y->rec;
}

/* Does item `it` come after a synchronize that completed at `end` (on
 * `stream`, or the whole device)? Its call started after the return, or its
 * GPU work (on that stream) started after it. */
static bool after_sync(const item *it, uint64_t end, bool device, uint32_t stream)
{
    if (it->known_start && it->start >= end)
        return true;
    return is_gpu(it->kind) && it->gpu_start >= end && (device || it->stream == stream);
}

/* Scan positions, one per stream synchronized (and one for the device):
 * completions come in order of their end, so each only moves forward. */
typedef struct cursor {
    bool device;
    uint32_t stream;
    size_t at;
} cursor;

/* Insert the completions of s among the items v[0..*n) (sorted by
 * correlation id) as waits with a free correlation id before the first item
 * that follows them; their start is set later. Returns 0, or -1 when out of
 * memory. */
static int place_completions(tt_store *s, item **pv, size_t *pn, tt_lite_stats *st)
{
    size_t m = 0;
    for (size_t i = 0; i < s->n; i++)
        m += is_completion(tt_store_at(s, i));
    if (!m)
        return 0;
    item *v = *pv;
    size_t n = *pn;
    completion *d = malloc(m * sizeof *d);
    size_t *pos = malloc(m * sizeof *pos);
    cursor *cur = malloc((m + 1) * sizeof *cur);
    item *out = malloc((n + m) * sizeof *out);
    if (!d || !pos || !cur || !out) {
        free(d), free(pos), free(cur), free(out);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        tt_rec *r = tt_store_at(s, i);
        if (!is_completion(r))
            continue;
        r->corr = 0, r->start = 0; /* placed afresh at every write */
        d[k].end = r->end;
        d[k++].rec = i;
    }
    qsort(d, m, sizeof *d, by_end);
    size_t n_cur = 0;
    for (size_t c = 0; c < m; c++) {
        const tt_rec *r = tt_store_at(s, d[c].rec);
        bool device = r->sub == TT_SYNCT_CONTEXT;
        size_t j = 0;
        while (j < n_cur && !(cur[j].device == device && (device || cur[j].stream == r->stream)))
            j++;
        if (j == n_cur)
            cur[n_cur++] = (cursor){.device = device, .stream = r->stream, .at = 0};
        while (cur[j].at < n && !after_sync(&v[cur[j].at], r->end, device, r->stream))
            cur[j].at++;
        pos[c] = cur[j].at;
    }
    /* One host thread: a wait that ended later was called later. A stream
     * cursor sees other streams' work only by its call times, so it may run
     * past what a later device synchronize knows: the earlier position wins. */
    for (size_t c = m - 1; c-- > 0;)
        if (pos[c] > pos[c + 1])
            pos[c] = pos[c + 1];
    /* Ids. A wait takes ids right after the call before it. CUPTI numbers
     * only the calls it traces: with callbacks on the synchronizes (or an
     * API activity kind) the real call left its id free there; with
     * completions only, the calls around it have consecutive ids. Where
     * fewer are free than waits go there, the ids from the next call on are
     * moved up by the difference (the room a wait needs depends only on the
     * CUPTI ids of the two calls around it, not on earlier moves). */
    uint32_t *room_at = malloc((n + 1) * sizeof *room_at), *room_by = malloc((n + 1) * sizeof *room_by);
    if (!room_at || !room_by) {
        free(d), free(pos), free(cur), free(out), free(room_at), free(room_by);
        return -1;
    }
    size_t n_moves = 0;
    uint64_t shift = 0;
    for (size_t i = 0, c = 0; i < n; i++) {
        size_t need = 0;
        while (c < m && pos[c] == i)
            c++, need++;
        uint64_t room = v[i].corr - (i ? (uint64_t)v[i - 1].corr : 0) - 1;
        if (need > room) {
            shift += need - room;
            room_at[n_moves] = v[i].corr;
            room_by[n_moves++] = (uint32_t)(shift <= UINT32_MAX ? shift : UINT32_MAX);
        }
    }
    if (n && (uint64_t)v[n - 1].corr + shift >= UINT32_MAX) /* (UINT32_MAX: "open" window) */
        n_moves = 0, shift = 0; /* no room above: waits without a free id stay out */
    st->n_moves = n_moves;
    st->move_at = room_at;
    st->move_by = room_by;

    /* merge: completions before the item at their position (ties: by end) */
    size_t w = 0, c = 0;
    for (size_t i = 0; i <= n; i++) {
        size_t first = c;
        while (c < m && pos[c] == i)
            c++;
        uint32_t lo = w ? out[w - 1].corr : 0; /* the previous call, as moved */
        uint32_t hi = i < n ? tt_lite_corr(st, v[i].corr) : UINT32_MAX;
        size_t room = hi > lo ? hi - lo - 1 : 0;
        if (i == n) /* after the last call: up to UINT32_MAX - 1 */
            room = lo < UINT32_MAX - 1 ? UINT32_MAX - 1 - lo : 0;
        for (size_t q = first; q < c; q++) {
            tt_rec *r = tt_store_at(s, d[q].rec);
            size_t rank = q - first; /* 0 = earliest end */
            if (rank >= room) { /* no id can be made free here */
                st->waits_unplaced++;
                continue;
            }
            item *it = &out[w++];
            memset(it, 0, sizeof *it);
            it->corr = lo + 1 + (uint32_t)rank;
            it->kind = K_WAIT;
            it->sync_type = r->sub;
            it->completion = it->known_end = true;
            it->end = r->end;
            it->stream = r->stream;
            it->call_ns = TT_LITE_CALL_NS;
            it->rec = d[q].rec;
            r->corr = it->corr;
        }
        if (i < n) {
            out[w] = v[i];
            out[w].corr = hi;
            st->corr_moved += hi != v[i].corr;
            w++;
        }
    }
    /* every other record follows its call (GPU records, boundaries known
     * by their launch) */
    if (st->n_moves)
        for (size_t i = 0; i < s->n; i++) {
            tt_rec *r = tt_store_at(s, i);
            if (r->corr && !is_completion(r))
                r->corr = tt_lite_corr(st, r->corr);
        }
    free(d), free(pos), free(cur);
    free(v);
    *pv = out;
    *pn = w;
    return 0;
}

/* The last move at or below id (by the CUPTI id, or by the moved one). */
static size_t move_of(const tt_lite_stats *st, uint32_t id, bool moved)
{
    size_t lo = 0, hi = st->n_moves; /* moves [0, lo) apply */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint64_t at = st->move_at[mid] + (moved ? (uint64_t)st->move_by[mid] : 0);
        if (at <= id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

uint32_t tt_lite_corr(const tt_lite_stats *st, uint32_t corr)
{
    size_t k = corr ? move_of(st, corr, false) : 0;
    return k ? corr + st->move_by[k - 1] : corr;
}

void tt_lite_restore(tt_store *s, tt_lite_stats *st)
{
    for (size_t i = 0; i < s->n; i++) {
        tt_rec *r = tt_store_at(s, i);
        if (is_completion(r)) {
            r->corr = 0, r->start = 0;
        } else if (r->corr && st->n_moves) {
            size_t k = move_of(st, r->corr, true);
            if (k)
                r->corr -= st->move_by[k - 1];
        }
    }
    free(st->move_at);
    free(st->move_by);
    st->move_at = st->move_by = NULL;
    st->n_moves = 0;
}

/* Latest GPU end so far, overall and per stream (a few streams). */
typedef struct ends {
    uint64_t all;
    uint32_t stream[64];
    uint64_t end[64];
    int n;
} ends;

static void ends_add(ends *e, uint32_t stream, uint64_t end)
{
    if (end > e->all)
        e->all = end;
    int i = 0;
    while (i < e->n && e->stream[i] != stream)
        i++;
    if (i == e->n) {
        if (e->n == 64)
            return; /* too many streams: waits on the rest use the overall end */
        e->stream[e->n] = stream, e->end[e->n++] = 0;
    }
    if (end > e->end[i])
        e->end[i] = end;
}

static uint64_t ends_of(const ends *e, bool device, uint32_t stream)
{
    if (device)
        return e->all;
    for (int i = 0; i < e->n; i++)
        if (e->stream[i] == stream)
            return e->end[i];
    return e->n == 64 ? e->all : 0;
}

int tt_lite_reconstruct(tt_store *s, uint32_t tid, tt_lite_stats *st)
{
    memset(st, 0, sizeof *st);
    item *v = NULL;
    long nl = collect(s, &v, &st->host_calls_unused);
    if (nl < 0)
        return -1;
    size_t n = (size_t)nl;
    if (place_completions(s, &v, &n, st) < 0) {
        free(v);
        return -1;
    }

    /* Known starts: launches queued or timed by callbacks, copies and
     * memsets timed by callbacks (moved back to their GPU start if clock
     * skew put them after it), waits, event records seen by a callback. */
    for (size_t i = 0; i < n; i++) {
        item *it = &v[i];
        bool launch = it->kind == K_LAUNCH || it->kind == K_GRAPH;
        st->launches += launch;
        st->launches_timed += launch && it->timed;
        st->launches_queued += launch && it->known_start && !it->timed && !it->copied;
        st->launches_copied += launch && it->copied;
        st->copies_timed += !launch && it->timed;
        if (is_gpu(it->kind) && it->known_start && it->start > it->gpu_start) {
            it->start = it->gpu_start;
            if (it->known_end && it->end < it->start)
                it->end = it->start;
            st->launches_clamped += launch;
        }
    }
    /* Calls without a known start go as late as they can: just before the
     * next call (ending by its start), and not after their own GPU start.
     * Late, because what separates calls is mostly the host work that
     * prepares the next one, and because it keeps a call after an
     * iteration boundary (a marker, a synchronize) that came before it. */
    uint64_t *latest = malloc(2 * (n ? n : 1) * sizeof *latest);
    if (!latest) {
        free(v);
        return -1;
    }
    uint64_t *hard = latest + n; /* min(next known start, own GPU start) */
    uint64_t bound = UINT64_MAX, known = UINT64_MAX; /* next call's start, next known one */
    for (size_t i = n; i-- > 0;) {
        item *it = &v[i];
        if (it->known_start || it->completion) { /* a completion started by its end */
            uint64_t t = it->known_start ? it->start : it->end;
            latest[i] = hard[i] = t;
            bound = known = t;
            continue;
        }
        hard[i] = it->gpu_start && it->gpu_start < known ? it->gpu_start : known;
        uint64_t t = bound;
        if (!it->blocking && t != UINT64_MAX) /* a blocking copy ends with its copy */
            t = t > it->call_ns ? t - it->call_ns : 0;
        if (it->gpu_start && it->gpu_start < t)
            t = it->gpu_start;
        latest[i] = t;
        bound = t;
    }
    /* ... and not before the previous call ended (estimated), in
     * correlation (= call) order, unless their GPU start says otherwise. */
    uint64_t prev_end = 0;
    ends done_by = {0};
    for (size_t i = 0; i < n; i++) {
        item *it = &v[i];
        if (it->completion) {
            /* the host went on to the wait after its previous call, unless
             * the wait returned long after what it waited for */
            uint64_t awaited = ends_of(&done_by, it->sync_type == TT_SYNCT_CONTEXT, it->stream);
            uint64_t t = prev_end ? prev_end : it->end;
            if (awaited && it->end > awaited + TT_LITE_LATE_NS && it->end - TT_LITE_CALL_NS > t)
                t = it->end - TT_LITE_CALL_NS;
            it->start = t < it->end ? t : it->end;
            tt_store_at(s, it->rec)->start = it->start;
            st->waits_inferred++;
        } else if (!it->known_start) {
            uint64_t t = latest[i];
            if (t == UINT64_MAX || t < prev_end)
                t = prev_end < hard[i] ? prev_end : hard[i];
            if (t == 0 || t == UINT64_MAX) { /* nothing before or after it has a time */
                it->dropped = true;
                continue;
            }
            it->start = t;
            st->interpolated++;
        }
        uint64_t end = it->known_end  ? it->end
                       : it->blocking ? (it->gpu_end > it->start ? it->gpu_end : it->start)
                                      : it->start + it->call_ns;
        if (end > prev_end)
            prev_end = end;
        if (is_gpu(it->kind) && it->gpu_end)
            ends_add(&done_by, it->stream, it->gpu_end);
    }
    free(latest);

    /* Ends, and the records. */
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        item *it = &v[i];
        if (it->dropped)
            continue;
        if (!it->known_end) {
            if (it->blocking) {
                it->end = it->gpu_end > it->start ? it->gpu_end : it->start;
            } else {
                it->end = it->start + it->call_ns;
                for (size_t j = i + 1; j < n; j++) { /* not past the next call's start */
                    if (v[j].dropped)
                        continue;
                    if (v[j].start >= it->start && v[j].start < it->end)
                        it->end = v[j].start;
                    break;
                }
            }
        }
        /* a call timed by callbacks is the real one: its name, API and
         * callback id, not estimated */
        const tt_rec *c = it->timed ? tt_store_at(s, it->hc) : NULL;
        uint32_t name = c && c->name ? c->name : tt_intern(s, call_name(it));
        uint8_t sub = c ? c->sub : 0;
        uint32_t cbid = c ? c->id : 0;
        tt_rec *r = tt_store_add(s);
        if (!r) {
            rc = -1;
            break;
        }
        r->type = TT_R_API;
        r->flags = it->timed ? 0 : TT_RF_ESTIMATED;
        r->sub = sub;
        r->id = cbid;
        r->corr = it->corr;
        r->start = it->start;
        r->end = it->end;
        r->tid = tid;
        r->name = name;
        st->calls++;
        st->blocking_copies += it->blocking;
        st->waits += it->kind == K_WAIT;
    }
    free(v);
    return rc;
}
