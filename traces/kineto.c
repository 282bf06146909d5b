/* PyTorch profiler (Kineto) Chrome-trace JSON reader.
 *
 * Times: Chrome-trace "ts" and "dur" are microseconds, as integers (older
 * Kineto, the A100 files) or floats with ns digits (newer Kineto, the H100
 * and V100 files). "displayTimeUnit": "ns" (the V100 file) only tells viewers
 * how to display; "baseTimeNanoseconds" is an offset we do not need. Either
 * way the numbers are µs, converted to integer ns by tl_us_to_ns.
 *
 * Shared memory: Kineto reports one "shared memory" number per kernel
 * (CUPTI's static + dynamic total); it goes to dynamic_smem, static_smem = 0,
 * which gives the occupancy calculator the same total. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Sanity limits: beyond these a value is corrupt, not a real launch. */
#define MAX_GRID_X 2147483647LL
#define MAX_GRID_YZ 65535LL
#define MAX_BLOCK_XY 1024LL
#define MAX_BLOCK_Z 64LL
#define MAX_THREADS 1024LL
#define MAX_REGS 255LL
#define MAX_SMEM (4LL << 20)
#define MAX_BYTES (1LL << 48)

typedef enum ev_kind {
    EV_SKIP = 0,
    EV_KERNEL,
    EV_MEMCPY,
    EV_MEMSET,
    EV_RUNTIME,
    EV_SYNC,
    EV_ANNOTATION,
} ev_kind;

static ev_kind classify_cat(const char *p, size_t n)
{
    static const struct {
        const char *cat;
        ev_kind kind;
    } cats[] = {
        {"kernel", EV_KERNEL},        {"Kernel", EV_KERNEL},
        {"gpu_memcpy", EV_MEMCPY},    {"Memcpy", EV_MEMCPY},
        {"gpu_memset", EV_MEMSET},    {"Memset", EV_MEMSET},
        {"cuda_runtime", EV_RUNTIME}, {"Runtime", EV_RUNTIME},
        {"cuda_driver", EV_RUNTIME},  {"Driver", EV_RUNTIME},
        {"cuda_sync", EV_SYNC},       {"user_annotation", EV_ANNOTATION},
    };
    for (size_t i = 0; i < sizeof cats / sizeof cats[0]; i++)
        if (strlen(cats[i].cat) == n && memcmp(cats[i].cat, p, n) == 0)
            return cats[i].kind;
    return EV_SKIP;
}

static const char *kind_word(ev_kind k)
{
    switch (k) {
    case EV_KERNEL: return "kernel";
    case EV_MEMCPY: return "memcpy";
    case EV_MEMSET: return "memset";
    case EV_RUNTIME: return "API call";
    case EV_SYNC: return "cuda_sync";
    case EV_ANNOTATION: return "annotation";
    default: return "event";
    }
}

/* An event worth parsing, found by the skimmer. */
typedef struct span {
    size_t start, end, index;
    ev_kind kind;
    bool nonfinite; /* holds a bare inf/nan: parse a sanitized copy */
} span;

/* Context for messages: "x.json: event 123 (kernel 'foo'): ..." */
typedef struct ev_ctx {
    const char *path;
    size_t index;
    ev_kind kind;
    const char *name;
    tl_err *err;
} ev_ctx;

static int ev_err(const ev_ctx *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int ev_err(const ev_ctx *c, int code, const char *fmt, ...)
{
    char what[320], nb[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (c->name)
        return tl_errf(c->err, code, "%s: event %zu (%s '%s'): %s", c->path, c->index,
                       kind_word(c->kind), tl_short_name(c->name, nb, sizeof nb), what);
    return tl_errf(c->err, code, "%s: event %zu (%s): %s", c->path, c->index, kind_word(c->kind),
                   what);
}

static int get_time(const ev_ctx *c, json_t *obj, const char *key, bool required, tl_ns *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (!required)
            return 1;
        return ev_err(c, TL_EMISSING, "missing '%s'", key);
    }
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i > 4000000000000000LL || i < -4000000000000000LL)
            return ev_err(c, TL_ERANGE, "'%s' out of range", key);
        *out = (tl_ns)i * 1000;
        return 0;
    }
    if (json_is_real(v)) {
        if (!tl_us_to_ns(json_real_value(v), out))
            return ev_err(c, TL_ERANGE, "'%s' out of range", key);
        return 0;
    }
    return ev_err(c, TL_ETYPE, "'%s' must be a number", key);
}

/* An integer field in [lo, hi]; required or not. Returns 1 if absent. */
static int get_int(const ev_ctx *c, json_t *obj, const char *key, bool required, long long lo,
                   long long hi, long long *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        if (!required)
            return 1;
        return ev_err(c, TL_EMISSING, "missing '%s'", key);
    }
    if (!json_is_integer(v))
        return ev_err(c, TL_ETYPE, "'%s' must be an integer", key);
    json_int_t i = json_integer_value(v);
    if (i < lo || i > hi)
        return ev_err(c, TL_ERANGE, "'%s' is %lld (must be in %lld..%lld)", key, (long long)i,
                      lo, hi);
    *out = i;
    return 0;
}

static int get_dim3(const ev_ctx *c, json_t *args, const char *key, const long long max[3],
                    uint32_t out[3])
{
    json_t *v = json_object_get(args, key);
    if (!v)
        return ev_err(c, TL_EMISSING, "missing '%s'", key);
    if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > 3)
        return ev_err(c, TL_ETYPE, "'%s' must be an array of 1 to 3 integers", key);
    for (size_t i = 0; i < 3; i++) {
        json_t *x = json_array_get(v, i);
        if (!x) {
            out[i] = 1;
            continue;
        }
        if (!json_is_integer(x))
            return ev_err(c, TL_ETYPE, "'%s' must be an array of 1 to 3 integers", key);
        json_int_t n = json_integer_value(x);
        if (n < 1)
            return ev_err(c, TL_ERANGE, "%s[%zu] is %lld (must be >= 1)", key, i, (long long)n);
        if (n > max[i])
            return ev_err(c, TL_ERANGE, "%s[%zu] is %lld (at most %lld)", key, i, (long long)n,
                          max[i]);
        out[i] = (uint32_t)n;
    }
    return 0;
}

/* A raw id that Kineto writes as -1 when unknown. */
static int64_t opt_id(json_t *args, const char *key)
{
    json_t *v = json_object_get(args, key);
    if (!v || !json_is_integer(v))
        return TL_RAW_NONE;
    json_int_t i = json_integer_value(v);
    return i < 0 ? TL_RAW_NONE : (int64_t)i;
}

static int64_t tid_of(json_t *e)
{
    json_t *v = json_object_get(e, "tid");
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_string(v)) { /* some exporters name threads: hash the name */
        const char *s = json_string_value(v);
        uint64_t h = 1469598103934665603ULL; /* unsigned: the product wraps, not overflows */
        for (; *s; s++)
            h = (h ^ (unsigned char)*s) * 1099511628211ULL;
        return (int64_t)h;
    }
    return 0;
}

static tl_copy_kind copy_kind_of(const char *name, uint8_t *to_pageable)
{
    *to_pageable = 0;
    if (strstr(name, "HtoD"))
        return TL_COPY_H2D;
    if (strstr(name, "DtoH")) {
        *to_pageable = strstr(name, "-> Pageable") != NULL;
        return TL_COPY_D2H;
    }
    if (strstr(name, "DtoD"))
        return TL_COPY_D2D;
    return TL_COPY_OTHER;
}

typedef struct kin_state {
    tl_raw *raw;
    const char *path;
    tl_err *err;
    /* device chosen for deviceProperties: the one most kernels ran on */
    int64_t dev_ids[16];
    size_t dev_counts[16];
    int n_devs;
} kin_state;

static void count_device(kin_state *k, json_t *args)
{
    int64_t d = opt_id(args, "device");
    if (d == TL_RAW_NONE)
        return;
    for (int i = 0; i < k->n_devs; i++)
        if (k->dev_ids[i] == d) {
            k->dev_counts[i]++;
            return;
        }
    if (k->n_devs < 16) {
        k->dev_ids[k->n_devs] = d;
        k->dev_counts[k->n_devs++] = 1;
    }
}

/* An event's 'ts' and 'dur' (both required); a negative 'dur' is an error. */
static int get_ts_dur(const ev_ctx *c, json_t *e, tl_ns *ts, tl_ns *dur)
{
    int r;
    if ((r = get_time(c, e, "ts", true, ts)) < 0 || (r = get_time(c, e, "dur", true, dur)) < 0)
        return r;
    if (*dur < 0)
        return ev_err(c, TL_ERANGE, "'dur' is negative");
    return 0;
}

static int gpu_times(const ev_ctx *c, kin_state *k, json_t *e, tl_raw_gpu *g)
{
    tl_ns ts, dur;
    int r;
    if ((r = get_ts_dur(c, e, &ts, &dur)) < 0)
        return r;
    if (dur == 0) { /* below the clock's resolution (integer-µs traces): 1 ns */
        dur = 1;
        k->raw->n_zero_dur++;
    }
    g->start = ts;
    g->end = ts + dur;
    return 0;
}

static int read_gpu(kin_state *k, const ev_ctx *c, json_t *e, ev_kind kind)
{
    static const long long grid_max[3] = {MAX_GRID_X, MAX_GRID_YZ, MAX_GRID_YZ};
    static const long long block_max[3] = {MAX_BLOCK_XY, MAX_BLOCK_XY, MAX_BLOCK_Z};
    json_t *args = json_object_get(e, "args");
    if (!args)
        return ev_err(c, TL_EMISSING, "missing 'args'");
    if (!json_is_object(args))
        return ev_err(c, TL_ETYPE, "'args' must be an object");
    tl_raw_gpu g;
    memset(&g, 0, sizeof g);
    int r = gpu_times(c, k, e, &g);
    if (r < 0)
        return r;
    long long v;
    if ((r = get_int(c, args, "stream", true, 0, INT64_MAX, &v)) < 0)
        return r;
    g.stream = v;
    g.corr = TL_RAW_NONE;
    if ((r = get_int(c, args, "correlation", false, 0, INT64_MAX, &v)) < 0)
        return r;
    if (r == 0)
        g.corr = tl_corr_id(v);
    g.name = tl_strtab_intern(&k->raw->strings, c->name, strlen(c->name));
    if (kind == EV_KERNEL) {
        g.kind = TL_OP_KERNEL;
        if ((r = get_dim3(c, args, "grid", grid_max, g.grid)) < 0 ||
            (r = get_dim3(c, args, "block", block_max, g.block)) < 0)
            return r;
        if (tl_grid_blocks(g.grid) > TL_TRACE_MAX_BLOCKS)
            return ev_err(c, TL_ERANGE, "grid [%u,%u,%u] has %llu blocks (at most %llu)",
                          g.grid[0], g.grid[1], g.grid[2],
                          (unsigned long long)tl_grid_blocks(g.grid),
                          (unsigned long long)TL_TRACE_MAX_BLOCKS);
        uint64_t threads = (uint64_t)g.block[0] * g.block[1] * g.block[2];
        if (threads > MAX_THREADS)
            return ev_err(c, TL_ERANGE, "block has %llu threads (at most %lld)",
                          (unsigned long long)threads, MAX_THREADS);
        if ((r = get_int(c, args, "registers per thread", true, 0, MAX_REGS, &v)) < 0)
            return r;
        g.regs = (uint32_t)v;
        if ((r = get_int(c, args, "shared memory", true, 0, MAX_SMEM, &v)) < 0)
            return r;
        g.dynamic_smem = (uint32_t)v; /* static + dynamic total: see the top comment */
        count_device(k, args);
    } else {
        g.kind = kind == EV_MEMCPY ? TL_OP_MEMCPY : TL_OP_MEMSET;
        if ((r = get_int(c, args, "bytes", true, 0, MAX_BYTES, &v)) < 0)
            return r;
        g.bytes = (uint64_t)v;
        if (kind == EV_MEMCPY)
            g.copy_kind = (uint8_t)copy_kind_of(c->name, &g.to_pageable);
    }
    *tl_raw_add_gpu(k->raw) = g;
    return 0;
}

static int read_runtime(kin_state *k, const ev_ctx *c, json_t *e, size_t index)
{
    tl_ns ts, dur;
    int r;
    if ((r = get_ts_dur(c, e, &ts, &dur)) < 0)
        return r;
    tl_raw_call *call = tl_raw_add_call(k->raw);
    call->start = ts;
    call->end = ts + dur;
    call->tid = tid_of(e);
    call->name = tl_strtab_intern(&k->raw->strings, c->name, strlen(c->name));
    call->api = (uint8_t)tl_api_classify(c->name);
    call->index = (uint32_t)index;
    json_t *args = json_object_get(e, "args");
    if (json_is_object(args)) {
        /* Optional (a negative one is none), but an integer: a string or a
         * fraction would silently unlink the call from its GPU record. */
        long long v = -1;
        if ((r = get_int(c, args, "correlation", false, INT64_MIN, INT64_MAX, &v)) < 0)
            return r;
        call->corr = tl_corr_id(v < 0 ? TL_RAW_NONE : (int64_t)v);
    }
    return 0;
}

static void read_sync(kin_state *k, json_t *e)
{
    json_t *args = json_object_get(e, "args");
    if (!json_is_object(args))
        return;
    tl_raw_syncinfo *s = tl_raw_add_sync(k->raw);
    s->corr = tl_corr_id(opt_id(args, "correlation"));
    s->stream = opt_id(args, "stream");
    s->wait_stream = opt_id(args, "wait_on_stream");
    s->record_corr = tl_corr_id(opt_id(args, "wait_on_cuda_event_record_corr_id"));
    s->event = opt_id(args, "wait_on_cuda_event_id");
}

static int read_annotation(kin_state *k, const ev_ctx *c, json_t *e)
{
    json_t *ph = json_object_get(e, "ph");
    if (!json_is_string(ph) || strcmp(json_string_value(ph), "X") != 0)
        return 0;
    tl_ns ts, dur;
    int r;
    if ((r = get_ts_dur(c, e, &ts, &dur)) < 0)
        return r;
    tl_raw_marker *m = tl_raw_add_marker(k->raw);
    m->start = ts;
    m->end = ts + dur;
    m->name = tl_strtab_intern(&k->raw->strings, c->name, strlen(c->name));
    return 0;
}

/* Old Kineto writes a bare inf for the bandwidth of a zero-duration copy
 * (pytorch/kineto#105): a copy of the event with such values as null. */
static char *sanitize(const char *p, size_t n, size_t *out_n)
{
    char *o = tl_xmalloc(n * 2 + 1);
    size_t j = 0;
    bool in_str = false;
    for (size_t i = 0; i < n;) {
        char c = p[i];
        if (in_str) {
            o[j++] = c;
            if (c == '\\' && i + 1 < n)
                o[j++] = p[++i];
            else if (c == '"')
                in_str = false;
            i++;
            continue;
        }
        size_t k;
        if (c == '"') {
            in_str = true;
        } else if ((k = tl_json_nonfinite_len(p + i, n - i)) > 0) {
            memcpy(o + j, "null", 4);
            j += 4;
            i += k;
            continue;
        }
        o[j++] = c;
        i++;
    }
    *out_n = j;
    return o;
}

static int parse_event(kin_state *k, const char *buf, size_t len, const span *sp)
{
    size_t start = sp->start, index = sp->index;
    ev_kind kind = sp->kind;
    json_error_t je;
    json_t *e;
    /* a key given twice inside an event is damage, not a choice: jansson's
     * default keeps the last one silently (a kernel's 'dur' or 'grid' read
     * from whichever came second) */
    if (sp->nonfinite) {
        size_t n;
        char *copy = sanitize(buf + start, sp->end - start, &n);
        e = json_loadb(copy, n, JSON_REJECT_DUPLICATES, &je);
        free(copy);
    } else {
        e = json_loadb(buf + start, sp->end - start, JSON_REJECT_DUPLICATES, &je);
    }
    if (!e) {
        int line, col;
        size_t off = start + (size_t)(je.position > 0 ? je.position : 0);
        tl_jscan_linecol(buf, off < len ? off : len, &line, &col);
        return tl_errf(k->err, TL_EFORMAT, "%s: malformed JSON at line %d, column %d: %s",
                       k->path, line, col, je.text);
    }
    ev_ctx c = {k->path, index, kind, NULL, k->err};
    json_t *name = json_object_get(e, "name");
    int r = 0;
    if (name && !json_is_string(name)) {
        r = ev_err(&c, TL_ETYPE, "'name' must be a string");
        goto out;
    }
    c.name = name ? json_string_value(name) : NULL;
    if (!c.name && (kind == EV_KERNEL || kind == EV_RUNTIME)) {
        r = ev_err(&c, TL_EMISSING, "missing 'name'");
        goto out;
    }
    if (!c.name)
        c.name = "";
    switch (kind) {
    case EV_KERNEL:
    case EV_MEMCPY:
    case EV_MEMSET:
        r = read_gpu(k, &c, e, kind);
        break;
    case EV_RUNTIME:
        r = read_runtime(k, &c, e, index);
        break;
    case EV_SYNC:
        read_sync(k, e);
        break;
    case EV_ANNOTATION:
        r = read_annotation(k, &c, e);
        break;
    default:
        break;
    }
out:
    json_decref(e);
    return r;
}

/* Skim one event object; find its "cat" (a top-level key of the event). */
static int skim_event(tl_jscan *s, const char **cat, size_t *cat_len)
{
    *cat = NULL;
    *cat_len = 0;
    tl_jscan_ws(s);
    if (s->pos >= s->len || s->buf[s->pos] != '{')
        return tl_jscan_value(s, 1); /* not an object: skip it */
    s->pos++;
    tl_jscan_ws(s);
    if (s->pos < s->len && s->buf[s->pos] == '}') {
        s->pos++;
        return 0;
    }
    for (;;) {
        const char *key;
        size_t klen;
        tl_jscan_ws(s);
        if (tl_jscan_string(s, &key, &klen) < 0)
            return -1;
        tl_jscan_ws(s);
        if (s->pos >= s->len || s->buf[s->pos] != ':') {
            s->err = "expected ':'";
            return -1;
        }
        s->pos++;
        tl_jscan_ws(s);
        if (klen == 3 && memcmp(key, "cat", 3) == 0 && s->pos < s->len && s->buf[s->pos] == '"') {
            if (tl_jscan_string(s, cat, cat_len) < 0)
                return -1;
        } else if (tl_jscan_value(s, 2) < 0) {
            return -1;
        }
        tl_jscan_ws(s);
        if (s->pos >= s->len) {
            s->err = "unexpected end of input in an object";
            return -1;
        }
        if (s->buf[s->pos] == ',') {
            s->pos++;
            continue;
        }
        if (s->buf[s->pos] == '}') {
            s->pos++;
            return 0;
        }
        s->err = "expected ',' or '}'";
        return -1;
    }
}

/* The skimmer finds the events worth parsing: the whole file is checked for
 * syntax before any event is interpreted, so a malformed file is reported
 * as such rather than by its first odd event. */
typedef struct span_vec {
    span *v;
    size_t n, cap;
} span_vec;

static int skim_events(tl_jscan *s, span_vec *out)
{
    /* at '[' */
    s->pos++;
    tl_jscan_ws(s);
    if (s->pos < s->len && s->buf[s->pos] == ']') {
        s->pos++;
        return 0;
    }
    for (size_t index = 0;; index++) {
        tl_jscan_ws(s);
        size_t start = s->pos;
        const char *cat;
        size_t cat_len;
        s->saw_nonfinite = false;
        if (skim_event(s, &cat, &cat_len) < 0)
            return -1;
        ev_kind kind = cat ? classify_cat(cat, cat_len) : EV_SKIP;
        if (kind != EV_SKIP) {
            if (out->n == out->cap) {
                out->cap = out->cap ? out->cap * 2 : 4096;
                out->v = tl_xrealloc(out->v, out->cap * sizeof *out->v);
            }
            out->v[out->n++] = (span){start, s->pos, index, kind, s->saw_nonfinite};
        }
        tl_jscan_ws(s);
        if (s->pos < s->len && s->buf[s->pos] == ',') {
            s->pos++;
            continue;
        }
        if (s->pos < s->len && s->buf[s->pos] == ']') {
            s->pos++;
            return 0;
        }
        s->err = s->pos < s->len ? "expected ',' or ']'" : "unexpected end of input in an array";
        return -1;
    }
}

static int prop_int(json_t *d, const char *key)
{
    json_t *v = json_object_get(d, key);
    if (!json_is_integer(v))
        return 0;
    json_int_t i = json_integer_value(v);
    return i > 0 && i < (1LL << 31) ? (int)i : 0;
}

static void read_device_props(kin_state *k, json_t *props)
{
    if (!json_is_array(props) || json_array_size(props) == 0)
        return;
    int64_t want = 0;
    size_t best = 0;
    for (int i = 0; i < k->n_devs; i++)
        if (k->dev_counts[i] > best) {
            best = k->dev_counts[i];
            want = k->dev_ids[i];
        }
    json_t *d = json_array_get(props, 0);
    size_t i;
    json_t *x;
    json_array_foreach(props, i, x) {
        json_t *id = json_object_get(x, "id");
        if (json_is_integer(id) && json_integer_value(id) == want) {
            d = x;
            break;
        }
    }
    if (!json_is_object(d))
        return;
    tl_gpu_props *g = &k->raw->gpu_props;
    memset(g, 0, sizeof *g);
    json_t *name = json_object_get(d, "name");
    if (json_is_string(name))
        snprintf(g->name, sizeof g->name, "%s", json_string_value(name));
    g->sms = prop_int(d, "numSms");
    g->max_threads_per_sm = prop_int(d, "maxThreadsPerMultiprocessor");
    g->max_threads_per_block = prop_int(d, "maxThreadsPerBlock");
    g->regs_per_sm = prop_int(d, "regsPerMultiprocessor");
    g->regs_per_block = prop_int(d, "regsPerBlock");
    g->warp_size = prop_int(d, "warpSize");
    g->smem_per_block = prop_int(d, "sharedMemPerBlock");
    g->smem_per_sm = prop_int(d, "sharedMemPerMultiprocessor");
    g->smem_per_block_optin = prop_int(d, "sharedMemPerBlockOptin");
    g->cc_major = prop_int(d, "computeMajor");
    g->cc_minor = prop_int(d, "computeMinor");
    if (g->warp_size && g->max_threads_per_sm)
        g->max_warps_per_sm = g->max_threads_per_sm / g->warp_size;
    tl_gpu_complete(g);
    k->raw->has_gpu_props = true;
}

int tl_kineto_from_buffer(tl_trace *t, const char *path, const char *buf, size_t len,
                          const tl_trace_options *opts, tl_err *err)
{
    tl_raw raw;
    tl_raw_init(&raw);
    kin_state k = {.raw = &raw, .path = path, .err = err};
    tl_jscan s = {buf, len, 0, NULL, true, false};
    size_t props_start = 0, props_end = 0;
    bool have_events = false;
    span_vec spans = {NULL, 0, 0};
    int r = 0;

    tl_jscan_ws(&s);
    if (s.pos >= len) {
        r = tl_errf(err, TL_EFORMAT, "%s: empty file", path);
        goto out;
    }
    if (buf[s.pos] == '[') { /* bare array of events (Chrome trace "array format") */
        have_events = true;
        if (skim_events(&s, &spans) < 0)
            goto syntax;
    } else if (buf[s.pos] == '{') {
        s.pos++;
        tl_jscan_ws(&s);
        if (s.pos < len && buf[s.pos] == '}') {
            s.pos++;
        } else {
            for (;;) {
                const char *key;
                size_t klen;
                tl_jscan_ws(&s);
                if (tl_jscan_string(&s, &key, &klen) < 0)
                    goto syntax;
                tl_jscan_ws(&s);
                if (s.pos >= len || buf[s.pos] != ':') {
                    s.err = "expected ':'";
                    goto syntax;
                }
                s.pos++;
                tl_jscan_ws(&s);
                if (klen == 11 && memcmp(key, "traceEvents", 11) == 0 && s.pos < len &&
                    buf[s.pos] == '[') {
                    if (have_events) { /* which one is meant? JSON leaves it open */
                        r = tl_errf(err, TL_EFORMAT, "%s: two 'traceEvents' arrays", path);
                        goto out;
                    }
                    have_events = true;
                    if (skim_events(&s, &spans) < 0)
                        goto syntax;
                } else {
                    size_t vstart = s.pos;
                    if (tl_jscan_value(&s, 1) < 0)
                        goto syntax;
                    if (klen == 16 && memcmp(key, "deviceProperties", 16) == 0) {
                        props_start = vstart;
                        props_end = s.pos;
                    }
                }
                tl_jscan_ws(&s);
                if (s.pos < len && buf[s.pos] == ',') {
                    s.pos++;
                    continue;
                }
                if (s.pos < len && buf[s.pos] == '}') {
                    s.pos++;
                    break;
                }
                s.err = s.pos < len ? "expected ',' or '}'" : "unexpected end of input";
                goto syntax;
            }
        }
    } else {
        s.err = "expected '{' or '['";
        goto syntax;
    }
    tl_jscan_ws(&s);
    if (s.pos != len) {
        s.err = "end of file expected";
        goto syntax;
    }
    if (!have_events) {
        r = tl_errf(err, TL_EMISSING, "%s: no 'traceEvents' array: not a Kineto trace", path);
        goto out;
    }
    for (size_t i = 0; i < spans.n; i++) {
        const span *sp = &spans.v[i];
        if ((r = parse_event(&k, buf, len, sp)) < 0)
            goto out;
    }
    if (k.n_devs > 1) {
        r = tl_trace_one_device(path, k.n_devs, k.dev_ids, err);
        goto out;
    }
    if (props_end > props_start) {
        json_t *props = json_loadb(buf + props_start, props_end - props_start, 0, NULL);
        read_device_props(&k, props);
        json_decref(props);
    }
    r = tl_raw_build(&raw, t, path, "kineto", opts, err);
    goto out;
syntax:
    r = tl_json_syntax_error(path, buf, len, &s, err);
out:
    free(spans.v);
    tl_raw_close(&raw);
    return r;
}
