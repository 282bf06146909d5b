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
    int kind;          /* TL_OP_EVENT_RECORD, TL_OP_STREAM_WAIT or TL_OP_UNTRACED */
    int64_t stream;
    size_t record;     /* WAIT: index into the insertion list of its record */
    tl_ns dur;         /* UNTRACED: how long the stream is held */
    size_t seq;        /* creation order (stable sort) */
} insertion;

static int cmp_insertion(const void *a, const void *b)
{
    const insertion *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    if (x->kind != y->kind) /* records, then waits, then untraced time */
        return x->kind < y->kind ? -1 : 1;
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

/* The recorded GPU timeline as merged busy intervals, with prefix sums, to
 * ask how much of [a, b) some record covered. */
typedef struct busy_map {
    tl_ns *a, *b, *before; /* interval k = [a[k], b[k]); before[k] = length of 0..k-1 */
    size_t n;
} busy_map;

static int cmp_start(const void *x, const void *y)
{
    const rec_ref *p = x, *q = y;
    if (p->key1 != q->key1)
        return p->key1 < q->key1 ? -1 : 1;
    return p->key2 < q->key2 ? -1 : (p->key2 > q->key2);
}

static void busy_map_build(busy_map *m, const tl_raw *r)
{
    size_t ng = r->n_gpu;
    rec_ref *v = tl_xmalloc(ng * sizeof *v);
    for (size_t i = 0; i < ng; i++)
        v[i] = (rec_ref){r->gpu[i].start, r->gpu[i].end, 0, i};
    qsort(v, ng, sizeof *v, cmp_start);
    m->a = tl_xmalloc(ng * sizeof *m->a);
    m->b = tl_xmalloc(ng * sizeof *m->b);
    m->before = tl_xmalloc(ng * sizeof *m->before);
    m->n = 0;
    tl_ns total = 0;
    for (size_t i = 0; i < ng; i++) {
        if (m->n && v[i].key1 <= m->b[m->n - 1]) {
            if (v[i].key2 > m->b[m->n - 1])
                m->b[m->n - 1] = v[i].key2;
            continue;
        }
        if (m->n)
            total += m->b[m->n - 1] - m->a[m->n - 1];
        m->a[m->n] = v[i].key1;
        m->b[m->n] = v[i].key2;
        m->before[m->n] = total;
        m->n++;
    }
    free(v);
}

static void busy_map_close(busy_map *m)
{
    free(m->a);
    free(m->b);
    free(m->before);
}

/* Covered length up to time t. */
static tl_ns busy_upto(const busy_map *m, tl_ns t)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) { /* first interval starting at or after t */
        size_t mid = (lo + hi) / 2;
        if (m->a[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    size_t k = lo - 1;
    tl_ns in = (t < m->b[k] ? t : m->b[k]) - m->a[k];
    return m->before[k] + in;
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

void tl_infer_deps(const tl_raw *r, tl_flat_op **ops_io, size_t *n_io, const tl_ns *waits,
                   size_t n_waits, uint32_t *n_deps, uint32_t *n_untraced)
{
    tl_flat_op *ops = *ops_io;
    size_t n = *n_io;
    *n_deps = *n_untraced = 0;
    if (r->n_gpu == 0)
        return;

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
    /* now last[s] = the first op launched on stream s (n if none) */
    /* prev_launch[s]: API start of the latest earlier launch on stream s. */
    tl_ns *prev_launch = tl_xmalloc((n_ids ? n_ids : 1) * sizeof *prev_launch);
    for (size_t s = 0; s < n_ids; s++)
        prev_launch[s] = INT64_MIN;

    busy_map busy;
    busy_map_build(&busy, r);
    insertion *ins = NULL;
    size_t n_ins = 0, cap_ins = 0;
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
        tl_ns held = x->gpu_start - ready;
        if (held <= TL_INFER_HELD_NS)
            continue;
        if (n_ins + 2 > cap_ins) {
            cap_ins = cap_ins ? cap_ins * 2 : 64;
            ins = tl_xrealloc(ins, cap_ins * sizeof *ins);
        }
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
        /* Y: a record launched before the capture (no flat op) or an op
         * issued before X in host order. */
        size_t pos = n;
        int64_t y_stream = 0;
        for (size_t k = a; k-- > 0 && refs[k].key1 >= x->gpu_start - TL_INFER_TOLERANCE_NS;) {
            if (refs[k].stream == x->raw_stream)
                continue;
            int64_t fy = flat_of[refs[k].i];
            if (fy >= 0 && (size_t)fy >= f)
                continue;
            tl_ns after = fy >= 0 && ops[fy].api_start > lo ? ops[fy].api_start : lo;
            if (waits_in(waits, n_waits, after, x->api_start) == 0)
                continue;
            /* The record goes as late as the stream order allows: before the
             * next launch on Y's stream, or before X. */
            size_t next = fy >= 0 ? next_on_stream[fy]
                                  : last[stream_slot(ids, n_ids, refs[k].stream)];
            pos = next < f ? next : f;
            y_stream = refs[k].stream;
            break;
        }
        if (pos == n) {
            /* No visible cause. A node of a CUDA graph: the graph ran work
             * before it that the trace did not record. Another op that the
             * trace says waited (a wait call in its window) while the
             * recorded GPU was mostly idle (so no recorded work kept it off
             * the SMs): it waited for something the trace did not record. */
            bool idle = 2 * (busy_upto(&busy, x->gpu_start) - busy_upto(&busy, ready)) < held;
            if (x->graph || (idle && waits_in(waits, n_waits, lo, x->api_start) > 0)) {
                ins[n_ins] = (insertion){f, TL_OP_UNTRACED, x->raw_stream, 0, held, n_ins};
                n_ins++;
                (*n_untraced)++;
            }
            continue;
        }
        /* One record per (position, stream) serves every waiter. */
        size_t rec = n_ins;
        for (size_t k = 0; k < n_ins && rec == n_ins; k++)
            if (ins[k].kind == TL_OP_EVENT_RECORD && ins[k].pos == pos && ins[k].stream == y_stream)
                rec = k;
        if (rec == n_ins) {
            ins[n_ins] = (insertion){pos, TL_OP_EVENT_RECORD, y_stream, 0, 0, n_ins};
            n_ins++;
        }
        ins[n_ins] = (insertion){f, TL_OP_STREAM_WAIT, x->raw_stream, rec, 0, n_ins};
        n_ins++;
        (*n_deps)++;
    }
    busy_map_close(&busy);
    free(prev_launch);
    free(last);
    free(next_on_stream);
    free(ids);
    free(flat_of);
    free(refs);
    free(stream_free);
    if (n_ins == 0) {
        free(ins);
        return;
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
            op->op.dur_ns = in->dur;
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
}
