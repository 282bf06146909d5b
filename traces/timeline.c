/* From a raw timeline (host API calls, GPU records, markers) to a tl_trace.
 *
 * 1. Link calls to GPU records by correlation id; GPU records with no call
 *    become synthetic calls issued at their own GPU start (n_unlinked).
 * 2. Merge every host thread into one timeline ordered by API start.
 * 3. Turn calls into ops: GPU work, syncs, event records and stream waits;
 *    every other call is host time and ends up inside the next op's gap.
 * 4. Work out what each sync / blocking copy waited for (awaited_end).
 * 5. Split into iterations (split.c), then compute the per-op host gap and
 *    call time and the per-iteration numbers exactly as FORMAT.md defines. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tally/gpu.h"

/* ---- small int64 -> int64 hash map (correlation / event id lookups) ------ */

typedef struct i64map {
    int64_t *keys, *vals;
    uint8_t *used;
    size_t cap, n;
} i64map;

static void map_init(i64map *m, size_t hint)
{
    m->cap = 64;
    while (m->cap < hint * 2)
        m->cap *= 2;
    m->keys = tl_xmalloc(m->cap * sizeof *m->keys);
    m->vals = tl_xmalloc(m->cap * sizeof *m->vals);
    m->used = tl_xcalloc(m->cap, 1);
    m->n = 0;
}

static void map_close(i64map *m)
{
    free(m->keys);
    free(m->vals);
    free(m->used);
}

static size_t map_slot(const i64map *m, int64_t key)
{
    uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ULL;
    return (size_t)(h >> 17) & (m->cap - 1);
}

static void map_put(i64map *m, int64_t key, int64_t val);

static void map_grow(i64map *m)
{
    i64map n;
    map_init(&n, m->cap);
    for (size_t i = 0; i < m->cap; i++)
        if (m->used[i])
            map_put(&n, m->keys[i], m->vals[i]);
    map_close(m);
    *m = n;
}

static void map_put(i64map *m, int64_t key, int64_t val)
{
    if ((m->n + 1) * 2 > m->cap)
        map_grow(m);
    size_t k = map_slot(m, key);
    while (m->used[k] && m->keys[k] != key)
        k = (k + 1) & (m->cap - 1);
    if (!m->used[k]) {
        m->used[k] = 1;
        m->keys[k] = key;
        m->n++;
    }
    m->vals[k] = val;
}

static bool map_get(const i64map *m, int64_t key, int64_t *val)
{
    size_t k = map_slot(m, key);
    while (m->used[k]) {
        if (m->keys[k] == key) {
            *val = m->vals[k];
            return true;
        }
        k = (k + 1) & (m->cap - 1);
    }
    return false;
}

/* ---- sorting ------------------------------------------------------------- */

static int cmp_call_time(const void *a, const void *b)
{
    const tl_raw_call *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    if (x->gpu_index != y->gpu_index) /* real calls before synthetic ones */
        return x->gpu_index < y->gpu_index ? -1 : 1;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return 0;
}

typedef struct gpu_ref {
    int64_t corr;
    tl_ns start;
    size_t i;
} gpu_ref;

static int cmp_gpu_ref(const void *a, const void *b)
{
    const gpu_ref *x = a, *y = b;
    if (x->corr != y->corr)
        return x->corr < y->corr ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->i < y->i ? -1 : (x->i > y->i);
}

static int cmp_syncinfo(const void *a, const void *b)
{
    const tl_raw_syncinfo *x = a, *y = b;
    return x->corr < y->corr ? -1 : (x->corr > y->corr);
}

/* ---- flat timeline ------------------------------------------------------- */

typedef struct flat_vec {
    tl_flat_op *v;
    size_t n, cap;
} flat_vec;

static tl_flat_op *flat_add(flat_vec *f)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 1024;
        f->v = tl_xrealloc(f->v, f->cap * sizeof *f->v);
    }
    tl_flat_op *o = &f->v[f->n++];
    memset(o, 0, sizeof *o);
    o->op.event = -1;
    o->op.gpu_start_ns = -1;
    o->gpu_start = o->gpu_end = -1;
    o->awaited_end = -1;
    o->record_end = -1;
    o->record = -1;
    o->gpu_index = -1;
    o->raw_stream = TL_RAW_NONE;
    return o;
}

static void flat_from_gpu(tl_flat_op *o, const tl_raw_gpu *g, size_t gi, const tl_raw_call *c)
{
    o->gpu_index = (int64_t)gi;
    o->op.kind = g->kind;
    o->op.name = g->name;
    o->raw_stream = g->stream;
    o->gpu_start = g->start;
    o->gpu_end = g->end;
    memcpy(o->op.grid, g->grid, sizeof g->grid);
    memcpy(o->op.block, g->block, sizeof g->block);
    o->op.regs = g->regs;
    o->op.static_smem = g->static_smem;
    o->op.dynamic_smem = g->dynamic_smem;
    o->op.bytes = g->bytes;
    if (g->kind == TL_OP_MEMCPY) {
        o->op.copy_kind = g->copy_kind;
        bool sync_api = c && c->api == TL_API_MEMCPY_SYNC && g->copy_kind != TL_COPY_D2D;
        o->op.blocking = sync_api || g->to_pageable;
    }
}

typedef struct builder {
    tl_raw *raw;
    const char *path;
    tl_err *err;
    flat_vec flat;
    uint32_t n_unlinked, n_unresolved, n_precapture, n_untraced;
    tl_ns *lost_waits;    /* API starts of the stream waits that could not be resolved */
    size_t n_lost_waits, cap_lost_waits;
} builder;

static void lost_wait(builder *b, tl_ns at)
{
    if (b->n_lost_waits == b->cap_lost_waits) {
        b->cap_lost_waits = b->cap_lost_waits ? b->cap_lost_waits * 2 : 64;
        b->lost_waits = tl_xrealloc(b->lost_waits, b->cap_lost_waits * sizeof *b->lost_waits);
    }
    b->lost_waits[b->n_lost_waits++] = at;
}

static int cmp_ns(const void *a, const void *b)
{
    tl_ns x = *(const tl_ns *)a, y = *(const tl_ns *)b;
    return x < y ? -1 : (x > y);
}

/* Steps 1-3: the ordered op list. */
static int build_flat(builder *b)
{
    tl_raw *r = b->raw;

    /* Join Kineto cuda_sync / nsys SYNCHRONIZATION facts to their calls. */
    if (r->n_syncs) {
        qsort(r->syncs, r->n_syncs, sizeof *r->syncs, cmp_syncinfo);
        for (size_t i = 0; i < r->n_calls; i++) {
            tl_raw_call *c = &r->calls[i];
            if (c->corr == TL_RAW_NONE)
                continue;
            tl_raw_syncinfo key = {.corr = c->corr};
            tl_raw_syncinfo *s = bsearch(&key, r->syncs, r->n_syncs, sizeof *s, cmp_syncinfo);
            if (!s)
                continue;
            if (c->stream == TL_RAW_NONE)
                c->stream = s->stream;
            if (c->wait_stream == TL_RAW_NONE)
                c->wait_stream = s->wait_stream;
            if (c->record_corr == TL_RAW_NONE)
                c->record_corr = s->record_corr;
            if (c->event == TL_RAW_NONE)
                c->event = s->event;
        }
    }

    /* GPU records grouped by correlation id. */
    gpu_ref *refs = tl_xmalloc((r->n_gpu ? r->n_gpu : 1) * sizeof *refs);
    for (size_t i = 0; i < r->n_gpu; i++)
        refs[i] = (gpu_ref){r->gpu[i].corr, r->gpu[i].start, i};
    qsort(refs, r->n_gpu, sizeof *refs, cmp_gpu_ref);

    /* Which correlation ids have a call. */
    i64map call_corrs;
    map_init(&call_corrs, r->n_calls);
    for (size_t i = 0; i < r->n_calls; i++)
        if (r->calls[i].corr != TL_RAW_NONE)
            map_put(&call_corrs, r->calls[i].corr, 1);
    /* CUPTI correlation ids grow monotonically: GPU work whose id is below
     * every call's was launched before the capture began. It is backlog of
     * earlier, untraced iterations, not part of any traced one: drop it. */
    int64_t min_corr = INT64_MAX;
    for (size_t i = 0; i < r->n_calls; i++)
        if (r->calls[i].corr != TL_RAW_NONE && r->calls[i].corr < min_corr)
            min_corr = r->calls[i].corr;
    /* GPU work without a call: a synthetic call at its GPU start. */
    for (size_t i = 0; i < r->n_gpu; i++) {
        int64_t dummy;
        const tl_raw_gpu *g = &r->gpu[i];
        if (g->corr != TL_RAW_NONE && map_get(&call_corrs, g->corr, &dummy))
            continue;
        if (g->corr != TL_RAW_NONE && g->corr < min_corr) {
            b->n_precapture++;
            continue;
        }
        tl_raw_call *c = tl_raw_add_call(r);
        g = &r->gpu[i];
        c->start = c->end = g->start;
        c->gpu_index = (int64_t)i;
        c->index = UINT32_MAX;
        b->n_unlinked++;
    }
    map_close(&call_corrs);

    /* One host timeline: every thread, ordered by API start. */
    if (r->n_calls > 1) /* qsort of no array (NULL) is undefined */
        qsort(r->calls, r->n_calls, sizeof *r->calls, cmp_call_time);

    i64map claimed, rec_by_corr, rec_by_event;
    map_init(&claimed, 1024);
    map_init(&rec_by_corr, 256);
    map_init(&rec_by_event, 256);
    int64_t last_gpu_stream = TL_RAW_NONE;

    for (size_t ci = 0; ci < r->n_calls; ci++) {
        const tl_raw_call *c = &r->calls[ci];
        if (c->gpu_index >= 0) {
            tl_flat_op *o = flat_add(&b->flat);
            flat_from_gpu(o, &r->gpu[c->gpu_index], (size_t)c->gpu_index, NULL);
            o->api_start = o->api_end = c->start;
            last_gpu_stream = o->raw_stream;
            continue;
        }
        int64_t dummy;
        if (c->corr != TL_RAW_NONE && !map_get(&claimed, c->corr, &dummy)) {
            gpu_ref key = {c->corr, INT64_MIN, 0};
            size_t lo = 0, hi = r->n_gpu;
            while (lo < hi) { /* first ref with corr >= c->corr */
                size_t mid = (lo + hi) / 2;
                if (cmp_gpu_ref(&refs[mid], &key) < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            size_t end = lo;
            while (end < r->n_gpu && refs[end].corr == c->corr)
                end++;
            if (end > lo) {
                map_put(&claimed, c->corr, 1);
                /* One call, k GPU records (graph launch): all are issued at
                 * the call's start; the last one carries the call's time. */
                for (size_t k = lo; k < end; k++) {
                    tl_flat_op *o = flat_add(&b->flat);
                    flat_from_gpu(o, &r->gpu[refs[k].i], refs[k].i, c);
                    o->graph = c->api == TL_API_GRAPH_LAUNCH;
                    o->api_start = c->start;
                    o->api_end = k + 1 == end ? c->end : c->start;
                    last_gpu_stream = o->raw_stream;
                }
                continue;
            }
        }
        switch (c->api) {
        case TL_API_SYNC_STREAM:
        case TL_API_SYNC_DEVICE:
        case TL_API_SYNC_EVENT: {
            tl_flat_op *o = flat_add(&b->flat);
            o->op.kind = TL_OP_SYNC;
            o->op.name = c->name;
            o->api_start = c->start;
            o->api_end = c->end;
            if (c->api == TL_API_SYNC_STREAM) {
                /* Stream unknown (no cuda_sync record): the stream of the
                 * latest GPU work, i.e. PyTorch's current stream. */
                int64_t s = c->stream != TL_RAW_NONE ? c->stream : last_gpu_stream;
                if (s == TL_RAW_NONE) {
                    o->op.sync_kind = TL_SYNC_DEVICE;
                } else {
                    o->op.sync_kind = TL_SYNC_STREAM;
                    o->raw_stream = s;
                }
            } else if (c->api == TL_API_SYNC_DEVICE) {
                o->op.sync_kind = TL_SYNC_DEVICE;
            } else {
                int64_t rec = -1;
                if (!(c->record_corr != TL_RAW_NONE && map_get(&rec_by_corr, c->record_corr, &rec)) &&
                    !(c->event != TL_RAW_NONE && map_get(&rec_by_event, c->event, &rec)))
                    rec = -1;
                if (rec >= 0) {
                    o->op.sync_kind = TL_SYNC_EVENT;
                    o->record = rec;
                    tl_flat_op *ro = &b->flat.v[rec];
                    if (ro->raw_stream == TL_RAW_NONE)
                        ro->raw_stream = c->wait_stream;
                } else if (c->wait_stream != TL_RAW_NONE) {
                    o->op.sync_kind = TL_SYNC_STREAM;
                    o->raw_stream = c->wait_stream;
                    b->n_unresolved++;
                } else {
                    o->op.sync_kind = TL_SYNC_DEVICE;
                    b->n_unresolved++;
                }
            }
            break;
        }
        case TL_API_EVENT_RECORD: {
            tl_flat_op *o = flat_add(&b->flat);
            o->op.kind = TL_OP_EVENT_RECORD;
            o->op.name = c->name;
            o->api_start = c->start;
            o->api_end = c->end;
            o->raw_stream = c->stream;
            o->removed = true; /* until something waits for it */
            int64_t idx = (int64_t)(b->flat.n - 1);
            if (c->corr != TL_RAW_NONE)
                map_put(&rec_by_corr, c->corr, idx);
            if (c->event != TL_RAW_NONE)
                map_put(&rec_by_event, c->event, idx);
            break;
        }
        case TL_API_STREAM_WAIT: {
            int64_t rec = -1;
            if (!(c->record_corr != TL_RAW_NONE && map_get(&rec_by_corr, c->record_corr, &rec)) &&
                !(c->event != TL_RAW_NONE && map_get(&rec_by_event, c->event, &rec)))
                rec = -1;
            if (rec < 0 || c->stream == TL_RAW_NONE) {
                b->n_unresolved++;
                lost_wait(b, c->start);
                break;
            }
            tl_flat_op *ro = &b->flat.v[rec];
            if (ro->raw_stream == TL_RAW_NONE)
                ro->raw_stream = c->wait_stream;
            tl_flat_op *o = flat_add(&b->flat);
            o->op.kind = TL_OP_STREAM_WAIT;
            o->op.name = c->name;
            o->api_start = c->start;
            o->api_end = c->end;
            o->raw_stream = c->stream;
            o->record = rec;
            break;
        }
        default:
            break; /* host time only */
        }
    }
    map_close(&claimed);
    map_close(&rec_by_corr);
    map_close(&rec_by_event);
    free(refs);

    /* Records something refers to are kept, if their stream is known. */
    for (size_t i = 0; i < b->flat.n; i++) {
        tl_flat_op *o = &b->flat.v[i];
        if (o->record < 0)
            continue;
        tl_flat_op *ro = &b->flat.v[o->record];
        if (ro->raw_stream != TL_RAW_NONE) {
            ro->removed = false;
            if (o->op.kind == TL_OP_SYNC) /* event sync: op.stream = the record's stream */
                o->raw_stream = ro->raw_stream;
            continue;
        }
        b->n_unresolved++;
        if (o->op.kind == TL_OP_STREAM_WAIT) {
            o->removed = true;
            lost_wait(b, o->api_start);
        } else { /* event sync on a record of unknown stream: wait for the device */
            o->op.sync_kind = TL_SYNC_DEVICE;
        }
        o->record = -1;
    }
    return 0;
}

/* Step 4: what every wait waited for, in host order over the whole trace. */
static void compute_awaited(builder *b)
{
    i64map stream_end;
    map_init(&stream_end, 64);
    tl_ns device_end = -1;
    for (size_t i = 0; i < b->flat.n; i++) {
        tl_flat_op *o = &b->flat.v[i];
        if (o->removed)
            continue;
        int64_t se = -1;
        switch (o->op.kind) {
        case TL_OP_KERNEL:
        case TL_OP_MEMCPY:
        case TL_OP_MEMSET:
            if (!map_get(&stream_end, o->raw_stream, &se) || se < o->gpu_end)
                map_put(&stream_end, o->raw_stream, o->gpu_end);
            if (o->gpu_end > device_end)
                device_end = o->gpu_end;
            if (o->op.blocking)
                o->awaited_end = o->gpu_end;
            break;
        case TL_OP_EVENT_RECORD:
            o->record_end = map_get(&stream_end, o->raw_stream, &se) ? se : -1;
            break;
        case TL_OP_SYNC:
            if (o->op.sync_kind == TL_SYNC_STREAM)
                o->awaited_end = map_get(&stream_end, o->raw_stream, &se) ? se : -1;
            else if (o->op.sync_kind == TL_SYNC_DEVICE)
                o->awaited_end = device_end;
            else
                o->awaited_end = b->flat.v[o->record].record_end;
            break;
        default:
            break;
        }
    }
    map_close(&stream_end);
}

/* ---- step 5: iterations -------------------------------------------------- */

typedef struct interval {
    tl_ns a, b;
} interval;

static int cmp_interval(const void *x, const void *y)
{
    const interval *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : (p->b > q->b);
}

static tl_ns union_length(interval *iv, size_t n)
{
    if (n == 0)
        return 0;
    qsort(iv, n, sizeof *iv, cmp_interval);
    tl_ns total = 0, a = iv[0].a, e = iv[0].b;
    for (size_t i = 1; i < n; i++) {
        if (iv[i].a > e) {
            total += e - a;
            a = iv[i].a;
            e = iv[i].b;
        } else if (iv[i].b > e) {
            e = iv[i].b;
        }
    }
    return total + (e - a);
}

static bool waits_on_host(const tl_op *op)
{
    return op->kind == TL_OP_SYNC ||
           ((op->kind == TL_OP_MEMCPY || op->kind == TL_OP_MEMSET) && op->blocking);
}

/* Within one iteration a wait must follow its record; otherwise the wait
 * cannot be replayed iteration by iteration. */
static void fix_cross_iteration_events(builder *b, size_t begin, size_t end)
{
    for (size_t i = begin; i < end; i++) {
        tl_flat_op *o = &b->flat.v[i];
        if (o->removed || o->record < 0)
            continue;
        if ((size_t)o->record >= begin && (size_t)o->record < i)
            continue;
        if (o->inferred) { /* its record lies in an earlier iteration: not replayable */
            o->removed = true;
            o->record = -1;
            continue;
        }
        const tl_flat_op *ro = &b->flat.v[o->record];
        if (o->op.kind == TL_OP_STREAM_WAIT) {
            o->removed = true; /* ordering already enforced by the earlier iteration */
        } else {
            o->op.sync_kind = TL_SYNC_STREAM; /* waits for the record's stream instead */
            o->raw_stream = ro->raw_stream;
        }
        o->record = -1;
        b->n_unresolved++;
    }
}

typedef struct stream_tab {
    int64_t ids[TL_TRACE_MAX_STREAMS];
    int n;
} stream_tab;

static int stream_index(builder *b, stream_tab *st, int64_t raw, int32_t *out)
{
    for (int i = 0; i < st->n; i++)
        if (st->ids[i] == raw) {
            *out = i;
            return 0;
        }
    if (st->n == TL_TRACE_MAX_STREAMS)
        return tl_errf(b->err, TL_ERANGE, "%s: the trace uses more than %d CUDA streams", b->path,
                       TL_TRACE_MAX_STREAMS);
    st->ids[st->n] = raw;
    *out = st->n++;
    return 0;
}

static int emit_iterations(builder *b, tl_trace *t, const tl_split *sp, uint32_t skip)
{
    tl_flat_op *v = b->flat.v;
    stream_tab st = {.n = 0};
    /* Trace origin: the earliest time of any op or marker. */
    tl_ns t0 = INT64_MAX;
    for (size_t i = 0; i < b->flat.n; i++) {
        if (v[i].removed)
            continue;
        if (v[i].api_start < t0)
            t0 = v[i].api_start;
        if (v[i].gpu_start >= 0 && v[i].gpu_start < t0)
            t0 = v[i].gpu_start;
    }
    for (uint32_t k = 0; k < sp->n; k++)
        if (sp->mark_start[k] >= 0 && sp->mark_start[k] < t0)
            t0 = sp->mark_start[k];

    i64map event_ids;
    map_init(&event_ids, 256);
    int32_t next_event = 0;
    size_t kept_ops = 0;
    uint32_t n_iters = sp->n - skip;
    t->iters = tl_xcalloc(n_iters, sizeof *t->iters);
    interval *iv = NULL;
    size_t iv_cap = 0;
    int r = 0;

    for (uint32_t k = skip; k < sp->n; k++) {
        size_t begin = sp->begin[k], end = sp->end[k];
        fix_cross_iteration_events(b, begin, end);
        tl_iteration *it = &t->iters[t->n_iters++];
        size_t n = 0;
        for (size_t i = begin; i < end; i++)
            n += !v[i].removed;
        it->ops = tl_xcalloc(n ? n : 1, sizeof *it->ops);
        if (iv_cap < n + 1) {
            iv_cap = n + 1;
            iv = tl_xrealloc(iv, iv_cap * sizeof *iv);
        }
        bool marker = sp->mark_start[k] >= 0;
        tl_ns start = marker ? sp->mark_start[k] : -1;
        for (size_t i = begin; i < end && start < 0; i++)
            if (!v[i].removed)
                start = v[i].api_start;
        tl_ns prev_end = start, gpu_last = start;
        size_t n_iv = 0;
        for (size_t i = begin; i < end; i++) {
            tl_flat_op *o = &v[i];
            if (o->removed)
                continue;
            tl_op *op = &it->ops[it->n_ops++];
            *op = o->op;
            op->stream = 0;
            if (o->raw_stream != TL_RAW_NONE &&
                (r = stream_index(b, &st, o->raw_stream, &op->stream)) < 0)
                goto out;
            /* Overlapping calls (other host threads) count once: a call
             * starts, for the replay, when the latest earlier call ended. */
            tl_ns eff = o->api_start > prev_end ? o->api_start : prev_end;
            op->host_gap_ns = eff - prev_end;
            tl_ns call = o->api_end > eff ? o->api_end - eff : 0;
            if (waits_on_host(op) && o->awaited_end > eff) {
                tl_ns after = o->api_end - o->awaited_end;
                op->host_call_ns = after < 0 ? 0 : (after > call ? call : after);
            } else {
                op->host_call_ns = call;
            }
            if (o->api_end > prev_end)
                prev_end = o->api_end;
            if (o->gpu_start >= 0) {
                op->gpu_start_ns = o->gpu_start > start ? o->gpu_start - start : 0;
                op->dur_ns = o->gpu_end - o->gpu_start;
                iv[n_iv++] = (interval){o->gpu_start, o->gpu_end};
                if (o->gpu_end > gpu_last)
                    gpu_last = o->gpu_end;
            } else {
                op->gpu_start_ns = -1;
                op->dur_ns = op->kind == TL_OP_UNTRACED ? o->op.dur_ns : 0;
            }
            op->event = -1;
            if (op->kind == TL_OP_STREAM_WAIT && o->inferred)
                t->n_inferred++;
            t->n_untraced += op->kind == TL_OP_UNTRACED;
            if (op->kind == TL_OP_EVENT_RECORD) {
                op->event = next_event;
                map_put(&event_ids, (int64_t)i, next_event++);
            } else if (o->record >= 0) {
                int64_t id;
                op->event = map_get(&event_ids, o->record, &id) ? (int32_t)id : -1;
            }
        }
        kept_ops += it->n_ops;
        it->start_ns = start - t0;
        it->tail_host_ns = marker && sp->mark_end[k] > prev_end ? sp->mark_end[k] - prev_end : 0;
        tl_ns host_end = prev_end + it->tail_host_ns;
        it->traced_ns = (host_end > gpu_last ? host_end : gpu_last) - start;
        it->traced_busy_ns = union_length(iv, n_iv);
    }
    size_t total = 0;
    for (size_t i = 0; i < b->flat.n; i++)
        total += !v[i].removed;
    t->n_outside = (uint32_t)(total - kept_ops);

    t->n_streams = st.n;
    t->streams = tl_xmalloc((st.n ? st.n : 1) * sizeof *t->streams);
    memcpy(t->streams, st.ids, st.n * sizeof *t->streams);
out:
    free(iv);
    map_close(&event_ids);
    return r;
}

/* Keep only the names ops use (API and marker names are not needed). */
static void compact_strings(tl_trace *t, tl_strtab *st)
{
    uint32_t n_all;
    char **all = tl_strtab_take(st, &n_all);
    uint32_t *map = tl_xcalloc(n_all, sizeof *map);
    for (uint32_t i = 0; i < t->n_iters; i++)
        for (uint32_t k = 0; k < t->iters[i].n_ops; k++)
            map[t->iters[i].ops[k].name] = 1;
    map[0] = 1;
    t->strings = tl_xmalloc(n_all * sizeof *t->strings);
    t->n_strings = 0;
    for (uint32_t i = 0; i < n_all; i++) {
        if (map[i]) {
            map[i] = t->n_strings;
            t->strings[t->n_strings++] = all[i];
        } else {
            free(all[i]);
        }
    }
    free(all);
    for (uint32_t i = 0; i < t->n_iters; i++)
        for (uint32_t k = 0; k < t->iters[i].n_ops; k++)
            t->iters[i].ops[k].name = map[t->iters[i].ops[k].name];
    free(map);
}

/* A stream runs its work in launch order, so GPU records of one stream, taken
 * in correlation (launch) order, start in that order too. Host threads racing
 * to launch on one stream can swap two neighbours by a kernel's length; a
 * record that starts more than STREAM_ORDER_SLACK after one launched after it
 * carries a broken timestamp (a mutation fuzz moved one kernel 71 minutes
 * on: read as it was, the iteration lasted 71 minutes and fidelity replayed
 * it for minutes to report -100%). A trace of several processes (their stream
 * and correlation ids overlap) can trip it too; the readers take one process
 * and would have merged their streams anyway, so the message names both. */
#define STREAM_ORDER_SLACK (1 * TL_NS_PER_S)

static int cmp_stream_corr(const void *a, const void *b, void *arg)
{
    const tl_raw_gpu *g = arg, *x = &g[*(const size_t *)a], *y = &g[*(const size_t *)b];
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

static int check_stream_order(const tl_raw *r, const char *path, tl_err *err)
{
    size_t *ix = tl_xmalloc((r->n_gpu + 1) * sizeof *ix), n = 0;
    for (size_t i = 0; i < r->n_gpu; i++)
        if (r->gpu[i].corr != TL_RAW_NONE && r->gpu[i].stream != TL_RAW_NONE)
            ix[n++] = i;
    qsort_r(ix, n, sizeof *ix, cmp_stream_corr, r->gpu);
    int rc = 0;
    size_t late = 0; /* the latest-starting record so far on this stream */
    for (size_t k = 0; k < n && rc == 0; k++) {
        const tl_raw_gpu *g = &r->gpu[ix[k]];
        if (k == 0 || g->stream != r->gpu[ix[k - 1]].stream) {
            late = ix[k];
            continue;
        }
        const tl_raw_gpu *l = &r->gpu[late];
        if (l->start - g->start > STREAM_ORDER_SLACK)
            rc = tl_errf(err, TL_EFORMAT,
                         "%s: on stream %lld, '%s' (correlation %lld) starts %.3f s after '%s' (correlation "
                         "%lld), which was launched after it: a stream runs its work in launch order, so "
                         "a timestamp is broken (or the trace holds several processes, whose streams and "
                         "correlation ids the readers do not tell apart)",
                         path, (long long)g->stream, r->strings.strs[l->name], (long long)l->corr,
                         (double)(l->start - g->start) / 1e9, r->strings.strs[g->name], (long long)g->corr);
        if (g->start > l->start)
            late = ix[k];
    }
    free(ix);
    return rc;
}

/* The builder takes negative times for "none" (-1: no GPU work, no marker),
 * so times are moved to start at 0 when some are negative (Kineto's and the
 * flat form's timestamps may be: a kernel at a negative time lost its GPU
 * work), and a trace spanning more than TL_TRACE_MAX_NS is refused (the
 * builder adds and subtracts times: they must stay far from overflow). Only
 * differences of times reach the trace, so moving them changes nothing else. */
static int rebase_times(tl_raw *r, const char *path, tl_err *err)
{
    tl_ns lo = INT64_MAX, hi = INT64_MIN;
#define SEEN(a, b) do { if ((a) < lo) lo = (a); if ((b) > hi) hi = (b); } while (0)
    for (size_t i = 0; i < r->n_calls; i++)
        SEEN(r->calls[i].start, r->calls[i].end);
    for (size_t i = 0; i < r->n_gpu; i++)
        SEEN(r->gpu[i].start, r->gpu[i].end);
    for (size_t i = 0; i < r->n_markers; i++)
        SEEN(r->markers[i].start, r->markers[i].end);
#undef SEEN
    if (lo > hi)
        return 0;
    tl_ns span;
    if (__builtin_sub_overflow(hi, lo, &span) || span > TL_TRACE_MAX_NS)
        return tl_errf(err, TL_ERANGE, "%s: timestamps span more than %lld ns (from %lld to %lld ns)",
                       path, (long long)TL_TRACE_MAX_NS, (long long)lo, (long long)hi);
    if (lo >= 0)
        return 0;
    for (size_t i = 0; i < r->n_calls; i++) {
        r->calls[i].start -= lo;
        r->calls[i].end -= lo;
    }
    for (size_t i = 0; i < r->n_gpu; i++) {
        r->gpu[i].start -= lo;
        r->gpu[i].end -= lo;
    }
    for (size_t i = 0; i < r->n_markers; i++) {
        r->markers[i].start -= lo;
        r->markers[i].end -= lo;
    }
    return 0;
}

/* Kineto and nsys files record a device per kernel. Kernels of several GPUs
 * were replayed together on one, their streams of one id merged: the work of
 * a multi-GPU process on a single GPU, without a word. */
int tl_trace_one_device(const char *path, int n, const int64_t *ids, tl_err *err)
{
    return tl_errf(err, TL_EFORMAT, "%s: kernels ran on %d%s devices (%lld, %lld%s): Tally "
                   "replays one GPU's work; trace one device per file", path, n,
                   n >= 8 ? " or more" : "", (long long)ids[0], (long long)ids[1],
                   n > 2 ? ", ..." : "");
}

int tl_raw_build(tl_raw *r, tl_trace *t, const char *path, const char *format,
                 const tl_trace_options *opts, tl_err *err)
{
    size_t kernels = 0;
    for (size_t i = 0; i < r->n_gpu; i++)
        kernels += r->gpu[i].kind == TL_OP_KERNEL;
    if (kernels == 0)
        return tl_errf(err, TL_EMISSING, "%s: no GPU kernels in the trace", path);
    /* Device properties the reader found (Kineto deviceProperties, nsys
     * TARGET_INFO_GPU) and the device table could not complete: refused here,
     * naming the file, as the tally format's "gpu" is, not later by the
     * simulator without it. */
    tl_err gerr = {0};
    if (r->has_gpu_props && tl_gpu_validate(&r->gpu_props, &gerr) < 0)
        return tl_errf(err, TL_ERANGE, "%s: device properties: %.250s%s", path, gerr.msg,
                       r->gpu_props.name[0] ? "" : " (no GPU name to look it up by)");
    int skip = opts ? opts->skip_iterations : 0;
    if (skip < 0)
        return tl_errf(err, TL_EINVAL, "%s: skip_iterations is negative (%d)", path, skip);
    int order = rebase_times(r, path, err);
    if (order < 0)
        return order;
    order = check_stream_order(r, path, err);
    if (order < 0)
        return order;

    builder b = {.raw = r, .path = path, .err = err};
    int rc = build_flat(&b);
    if (rc < 0)
        goto out;
    /* Every kernel may have been backlog from before the capture (dropped). */
    size_t kept = 0;
    for (size_t i = 0; i < b.flat.n; i++)
        kept += b.flat.v[i].op.kind == TL_OP_KERNEL && !b.flat.v[i].removed;
    if (kept == 0) {
        rc = tl_errf(err, TL_EMISSING, "%s: no GPU kernels in the trace once the %u launched "
                     "before the capture are dropped", path, b.n_precapture);
        goto out;
    }
    if (!(opts && opts->no_inferred_deps)) {
        if (b.n_lost_waits)
            qsort(b.lost_waits, b.n_lost_waits, sizeof *b.lost_waits, cmp_ns);
        uint32_t n_deps;
        tl_infer_deps(r, &b.flat.v, &b.flat.n, b.lost_waits, b.n_lost_waits, &n_deps, &b.n_untraced);
        b.flat.cap = b.flat.n;
    }
    compute_awaited(&b);

    tl_split sp;
    memset(&sp, 0, sizeof sp);
    if ((rc = tl_split_flat(r, b.flat.v, b.flat.n, opts, path, &sp, err)) < 0)
        goto out;
    if ((uint32_t)skip >= sp.n) {
        rc = tl_errf(err, TL_ERANGE,
                     "%s: skip_iterations %d leaves no iteration (the trace has %u, split by %s)",
                     path, skip, sp.n, tl_split_method_name(sp.method));
        tl_split_close(&sp);
        goto out;
    }
    tl_trace_close(t);
    t->path = tl_xstrdup(path);
    t->format = tl_xstrdup(format);
    t->split = sp.method;
    t->truncated = r->truncated;
    t->has_gpu_props = r->has_gpu_props;
    if (r->has_gpu_props)
        t->gpu = r->gpu_props;
    t->n_unlinked = b.n_unlinked;
    t->n_precapture = b.n_precapture;
    t->n_zero_dur = r->n_zero_dur;
    rc = emit_iterations(&b, t, &sp, (uint32_t)skip);
    t->n_unresolved = b.n_unresolved;
    tl_split_close(&sp);
    if (rc < 0) {
        tl_trace_close(t);
        goto out;
    }
    compact_strings(t, &r->strings);
    /* Kernels outside every marker (or in skipped iterations) are dropped:
     * iterations of copies alone loaded and replayed here, and convert wrote
     * them to a file that the iterations form refuses ("no GPU kernels"). */
    size_t in_iters = 0;
    for (uint32_t i = 0; i < t->n_iters; i++)
        for (uint32_t k = 0; k < t->iters[i].n_ops; k++)
            in_iters += t->iters[i].ops[k].kind == TL_OP_KERNEL;
    if (in_iters == 0) {
        rc = tl_errf(err, TL_EMISSING, "%s: no GPU kernels in the trace's iterations (split by "
                     "%s; its %zu kernels lie outside them or in skipped iterations)", path,
                     tl_split_method_name(t->split), kept);
        tl_trace_close(t);
    }
out:
    free(b.flat.v);
    free(b.lost_waits);
    return rc;
}
