/* Cross-stream dependencies the trace does not state, read off the GPU timeline.
 *
 * Older Kineto traces record cudaStreamWaitEvent calls but neither the
 * cudaEventRecord calls nor the cuda_sync records that say which event and
 * stream a wait refers to. The builder cannot resolve such a wait, so a replay
 * would let work run that the GPU in fact held back. The GPU timeline still
 * shows the dependency, which is how critical-path tools such as
 * HolisticTraceAnalysis find them: an op X on stream S that starts later than
 * both its launch and the end of its predecessor on S (by more than
 * TL_INFER_HELD_NS), right after an op Y of another stream ended (within
 * TL_INFER_TOLERANCE_NS), waited for Y. We only believe it when the trace
 * itself says a wait happened there: an unresolved stream wait was called
 * after Y's launch, after the previous launch on S and not after X's launch.
 *
 * Each dependency becomes an EVENT_RECORD on Y's stream, placed as late as
 * the stream order allows (just before the next op launched on Y's stream, or
 * just before X), and a STREAM_WAIT on S just before X; both take no host
 * time. FORMAT.md, "Inferred dependencies", is the normative text. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct rec_ref {
    tl_ns key1, key2; /* sort keys */
    int64_t stream;
    size_t i;         /* index into r->gpu */
} rec_ref;

static int cmp_rec_ref(const void *a, const void *b)
{
    const rec_ref *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    if (x->key1 != y->key1)
        return x->key1 < y->key1 ? -1 : 1;
    if (x->key2 != y->key2)
        return x->key2 < y->key2 ? -1 : 1;
    return x->i < y->i ? -1 : (x->i > y->i);
}

/* By end time only (then stream, index: deterministic ties). */
static int cmp_by_end(const void *a, const void *b)
{
    const rec_ref *x = a, *y = b;
    if (x->key1 != y->key1)
        return x->key1 < y->key1 ? -1 : 1;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return x->i < y->i ? -1 : (x->i > y->i);
}

/* An op to insert before flat index 'pos'. */
typedef struct insertion {
    size_t pos;
    int kind;          /* TL_OP_EVENT_RECORD or TL_OP_STREAM_WAIT */
    int64_t stream;
    size_t record;     /* WAIT: index into the insertion list of its record */
    size_t seq;        /* creation order (stable sort) */
} insertion;

static int cmp_insertion(const void *a, const void *b)
{
    const insertion *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    if (x->kind != y->kind) /* records before waits at one position */
        return x->kind == TL_OP_EVENT_RECORD ? -1 : 1;
    return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : (x > y);
}

/* Number of waits with time in (lo, hi]. */
static size_t waits_in(const tl_ns *w, size_t n, tl_ns lo, tl_ns hi)
{
    size_t a = 0, b = n;
    while (a < b) { /* first > lo */
        size_t m = (a + b) / 2;
        if (w[m] <= lo)
            a = m + 1;
        else
            b = m;
    }
    size_t c = a, d = n;
    while (c < d) { /* first > hi */
        size_t m = (c + d) / 2;
        if (w[m] <= hi)
            c = m + 1;
        else
            d = m;
    }
    return c - a;
}

/* Index of a raw stream id in the sorted distinct list. */
static size_t stream_slot(const int64_t *ids, size_t n, int64_t id)
{
    size_t a = 0, b = n;
    while (a < b) {
        size_t m = (a + b) / 2;
        if (ids[m] < id)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

uint32_t tl_infer_deps(const tl_raw *r, tl_flat_op **ops_io, size_t *n_io, const tl_ns *waits,
                       size_t n_waits)
{
    tl_flat_op *ops = *ops_io;
    size_t n = *n_io;
    if (n_waits == 0 || r->n_gpu == 0)
        return 0;

    /* Per GPU record: when its stream was free (end of every earlier record
     * on it, pre-capture backlog included: it occupied the stream too). */
    size_t ng = r->n_gpu;
    rec_ref *refs = tl_xmalloc(ng * sizeof *refs);
    for (size_t i = 0; i < ng; i++)
        refs[i] = (rec_ref){r->gpu[i].start, r->gpu[i].end, r->gpu[i].stream, i};
    qsort(refs, ng, sizeof *refs, cmp_rec_ref);
    tl_ns *stream_free = tl_xmalloc(ng * sizeof *stream_free);
    for (size_t k = 0; k < ng; k++) {
        bool first = k == 0 || refs[k - 1].stream != refs[k].stream;
        tl_ns prev = first ? INT64_MIN : stream_free[refs[k - 1].i];
        if (!first && r->gpu[refs[k - 1].i].end > prev)
            prev = r->gpu[refs[k - 1].i].end;
        stream_free[refs[k].i] = prev;
    }
    /* Records by end time, for "what ended just before X started". */
    for (size_t i = 0; i < ng; i++)
        refs[i] = (rec_ref){r->gpu[i].end, 0, r->gpu[i].stream, i};
    qsort(refs, ng, sizeof *refs, cmp_by_end);

    /* Flat op of each GPU record; distinct streams. */
    int64_t *flat_of = tl_xmalloc(ng * sizeof *flat_of);
    for (size_t i = 0; i < ng; i++)
        flat_of[i] = -1;
    int64_t *ids = tl_xmalloc(ng * sizeof *ids);
    size_t n_ids = 0;
    for (size_t f = 0; f < n; f++)
        if (!ops[f].removed && ops[f].gpu_index >= 0) {
            flat_of[ops[f].gpu_index] = (int64_t)f;
            ids[n_ids++] = ops[f].raw_stream;
        }
    qsort(ids, n_ids, sizeof *ids, cmp_i64);
    size_t u = 0;
    for (size_t a = 0; a < n_ids; a++)
        if (u == 0 || ids[u - 1] != ids[a])
            ids[u++] = ids[a];
    n_ids = u;

    /* next_on_stream[f]: next flat op (host order) with GPU work on f's stream. */
    size_t *next_on_stream = tl_xmalloc((n ? n : 1) * sizeof *next_on_stream);
    size_t *last = tl_xmalloc((n_ids ? n_ids : 1) * sizeof *last);
    for (size_t s = 0; s < n_ids; s++)
        last[s] = n;
    for (size_t f = n; f-- > 0;) {
        next_on_stream[f] = n;
        if (ops[f].removed || ops[f].gpu_index < 0)
            continue;
        size_t s = stream_slot(ids, n_ids, ops[f].raw_stream);
        next_on_stream[f] = last[s];
        last[s] = f;
    }
    /* prev_launch[s]: API start of the latest earlier launch on stream s. */
    tl_ns *prev_launch = tl_xmalloc((n_ids ? n_ids : 1) * sizeof *prev_launch);
    for (size_t s = 0; s < n_ids; s++)
        prev_launch[s] = INT64_MIN;

    insertion *ins = NULL;
    size_t n_ins = 0, cap_ins = 0;
    uint32_t deps = 0;
    for (size_t f = 0; f < n; f++) {
        const tl_flat_op *x = &ops[f];
        if (x->removed || x->gpu_index < 0)
            continue;
        size_t s = stream_slot(ids, n_ids, x->raw_stream);
        tl_ns lo = prev_launch[s];
        prev_launch[s] = x->api_start;
        tl_ns ready = stream_free[x->gpu_index];
        if (x->api_start > ready)
            ready = x->api_start;
        if (x->gpu_start - ready <= TL_INFER_HELD_NS)
            continue;
        /* The latest op of another stream, issued before X, that ended
         * within the tolerance before X started, with a wait call between. */
        size_t a = 0, b = ng;
        while (a < b) { /* first with end > X's start */
            size_t m = (a + b) / 2;
            if (refs[m].key1 <= x->gpu_start)
                a = m + 1;
            else
                b = m;
        }
        int64_t y = -1;
        for (size_t k = a; k-- > 0 && refs[k].key1 >= x->gpu_start - TL_INFER_TOLERANCE_NS;) {
            int64_t fy = flat_of[refs[k].i];
            if (refs[k].stream == x->raw_stream || fy < 0 || (size_t)fy >= f)
                continue;
            tl_ns after = ops[fy].api_start > lo ? ops[fy].api_start : lo;
            if (waits_in(waits, n_waits, after, x->api_start) == 0)
                continue;
            y = fy;
            break;
        }
        if (y < 0)
            continue;
        size_t pos = next_on_stream[y] < f ? next_on_stream[y] : f;
        if (n_ins + 2 > cap_ins) {
            cap_ins = cap_ins ? cap_ins * 2 : 64;
            ins = tl_xrealloc(ins, cap_ins * sizeof *ins);
        }
        /* One record per (position, stream) serves every waiter. */
        size_t rec = n_ins;
        for (size_t k = 0; k < n_ins && rec == n_ins; k++)
            if (ins[k].kind == TL_OP_EVENT_RECORD && ins[k].pos == pos &&
                ins[k].stream == ops[y].raw_stream)
                rec = k;
        if (rec == n_ins) {
            ins[n_ins] = (insertion){pos, TL_OP_EVENT_RECORD, ops[y].raw_stream, 0, n_ins};
            n_ins++;
        }
        ins[n_ins] = (insertion){f, TL_OP_STREAM_WAIT, x->raw_stream, rec, n_ins};
        n_ins++;
        deps++;
    }
    free(prev_launch);
    free(last);
    free(next_on_stream);
    free(ids);
    free(flat_of);
    free(refs);
    free(stream_free);
    if (n_ins == 0) {
        free(ins);
        return 0;
    }

    /* Merge: inserted ops go before their position; old indices remapped. */
    size_t *order = tl_xmalloc(n_ins * sizeof *order); /* sorted slot -> ins index */
    insertion *sorted = tl_xmalloc(n_ins * sizeof *sorted);
    memcpy(sorted, ins, n_ins * sizeof *ins);
    qsort(sorted, n_ins, sizeof *sorted, cmp_insertion);
    for (size_t k = 0; k < n_ins; k++)
        order[k] = sorted[k].seq;
    size_t *new_of_ins = tl_xmalloc(n_ins * sizeof *new_of_ins);
    size_t *new_of_old = tl_xmalloc(n * sizeof *new_of_old);
    tl_flat_op *out = tl_xmalloc((n + n_ins) * sizeof *out);
    size_t o = 0, k = 0;
    for (size_t f = 0; f <= n; f++) {
        for (; k < n_ins && sorted[k].pos == f; k++) {
            const insertion *in = &sorted[k];
            tl_flat_op *op = &out[o];
            memset(op, 0, sizeof *op);
            op->op.kind = (uint8_t)in->kind;
            op->op.event = -1;
            op->op.gpu_start_ns = -1;
            op->raw_stream = in->stream;
            op->api_start = op->api_end = ops[f].api_start;
            op->gpu_start = op->gpu_end = -1;
            op->awaited_end = op->record_end = -1;
            op->record = -1;
            op->gpu_index = -1;
            op->inferred = true;
            new_of_ins[order[k]] = o++;
        }
        if (f < n) {
            out[o] = ops[f];
            new_of_old[f] = o++;
        }
    }
    for (size_t q = 0; q < o; q++) {
        if (out[q].inferred && out[q].op.kind == TL_OP_STREAM_WAIT)
            continue;
        if (out[q].record >= 0)
            out[q].record = (int64_t)new_of_old[out[q].record];
    }
    for (size_t q = 0; q < n_ins; q++)
        if (ins[q].kind == TL_OP_STREAM_WAIT)
            out[new_of_ins[q]].record = (int64_t)new_of_ins[ins[q].record];
    free(new_of_old);
    free(new_of_ins);
    free(sorted);
    free(order);
    free(ins);
    free(ops);
    *ops_io = out;
    *n_io = o;
    return deps;
}
