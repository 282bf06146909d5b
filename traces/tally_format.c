/* The project's own trace format, version 1 (specified in traces/FORMAT.md).
 *
 * Two forms share the header {"format":"tally-trace","version":1}:
 *  - "iterations": what tl_trace_write_json writes; loads back exactly;
 *  - "events": a flat list of host API calls, GPU records and markers with
 *    correlation ids (what the CUPTI tracer writes); it goes through the same
 *    builder as Kineto traces, so both obey the same definitions. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "internal.h"

#define MAX_GRID_X 2147483647LL
#define MAX_GRID_YZ 65535LL
#define MAX_REGS 255LL
#define MAX_SMEM (4LL << 20)
#define MAX_NS (INT64_MAX / 4)

static const char *const kind_names[] = {"kernel",       "memcpy",      "memset",  "sync",
                                         "event_record", "stream_wait", "untraced"};
#define N_KINDS 7
static const char *const sync_names[] = {"stream", "device", "event"};
static const char *const copy_names[] = {"h2d", "d2h", "d2d", "other"};

static int name_index(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

/* tl_gpu_props int fields, by their JSON names (the struct's own names). */
static const struct {
    const char *key;
    size_t off;
} gpu_ints[] = {
#define F(x) {#x, offsetof(tl_gpu_props, x)}
    F(sms), F(max_threads_per_sm), F(max_threads_per_block), F(max_warps_per_sm),
    F(max_blocks_per_sm), F(regs_per_sm), F(regs_per_block), F(max_regs_per_thread),
    F(reg_alloc_unit), F(smem_per_sm), F(smem_per_block), F(smem_per_block_optin),
    F(smem_alloc_unit), F(smem_reserved_per_block), F(warp_size), F(cc_major), F(cc_minor),
    F(stream_prio_greatest), F(reg_sub_partitions),
#undef F
};
#define N_GPU_INTS (sizeof gpu_ints / sizeof gpu_ints[0])

/* ---- writing ------------------------------------------------------------- */

/* JSON string; bytes that are not valid UTF-8 become '?' so that the file
 * always parses (names from SQLite exports are not checked for UTF-8). */
static void put_string(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    while (*p) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            p++;
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
            p++;
        } else if (c < 0x80) {
            fputc(c, f);
            p++;
        } else {
            int n = tl_utf8_len(p);
            if (n) {
                fwrite(p, 1, (size_t)n, f);
                p += n;
            } else {
                fputc('?', f);
                p++;
            }
        }
    }
    fputc('"', f);
}

static void put_gpu(FILE *f, const tl_gpu_props *g)
{
    fputs("{\"name\":", f);
    put_string(f, g->name);
    for (size_t i = 0; i < N_GPU_INTS; i++)
        fprintf(f, ",\"%s\":%d", gpu_ints[i].key, *(const int *)((const char *)g + gpu_ints[i].off));
    fprintf(f, ",\"pcie_gbps\":%.17g,\"timeslice_ns\":%" PRId64 ",\"ctx_switch_ns\":%" PRId64 "}",
            g->pcie_gbps, g->timeslice_ns, g->ctx_switch_ns);
}

static void put_op(FILE *f, const tl_op *op)
{
    int k = op->kind;
    bool gpu = k == TL_OP_KERNEL || k == TL_OP_MEMCPY || k == TL_OP_MEMSET;
    fprintf(f, "{\"kind\":\"%s\",\"name\":%u,\"stream\":%d", k < N_KINDS ? kind_names[k] : "?", op->name,
            op->stream);
    if (k == TL_OP_SYNC || op->sync_kind)
        fprintf(f, ",\"sync\":\"%s\"", op->sync_kind < 3 ? sync_names[op->sync_kind] : "?");
    if (k == TL_OP_MEMCPY || op->copy_kind)
        fprintf(f, ",\"copy\":\"%s\"", op->copy_kind < 4 ? copy_names[op->copy_kind] : "?");
    if (k == TL_OP_MEMCPY || k == TL_OP_MEMSET || op->blocking)
        fprintf(f, ",\"blocking\":%s", op->blocking ? "true" : "false");
    if (op->event != -1 || k == TL_OP_EVENT_RECORD || k == TL_OP_STREAM_WAIT)
        fprintf(f, ",\"event\":%d", op->event);
    fprintf(f, ",\"host_gap_ns\":%" PRId64 ",\"host_call_ns\":%" PRId64, op->host_gap_ns,
            op->host_call_ns);
    if (gpu || op->gpu_start_ns != -1 || op->dur_ns)
        fprintf(f, ",\"gpu_start_ns\":%" PRId64 ",\"dur_ns\":%" PRId64, op->gpu_start_ns,
                op->dur_ns);
    if (k == TL_OP_KERNEL || op->grid[0] || op->grid[1] || op->grid[2] || op->block[0] ||
        op->block[1] || op->block[2] || op->regs || op->static_smem || op->dynamic_smem)
        fprintf(f,
                ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"regs\":%u,\"static_smem\":%u,"
                "\"dynamic_smem\":%u",
                op->grid[0], op->grid[1], op->grid[2], op->block[0], op->block[1], op->block[2],
                op->regs, op->static_smem, op->dynamic_smem);
    if (k == TL_OP_MEMCPY || k == TL_OP_MEMSET || op->bytes)
        fprintf(f, ",\"bytes\":%" PRIu64, op->bytes);
    if (op->graph)
        fputs(",\"graph\":true", f);
    fputc('}', f);
}

void tl_trace_write_json_stream(const tl_trace *t, FILE *f)
{
    fprintf(f, "{\"format\":\"tally-trace\",\"version\":%d,\n", TL_TRACE_FORMAT_VERSION);
    fputs("\"source\":", f);
    put_string(f, t->format ? t->format : "");
    fputs(",\n\"gpu\":", f);
    if (t->has_gpu_props)
        put_gpu(f, &t->gpu);
    else
        fputs("null", f);
    fprintf(f, ",\n\"truncated\":%s,\n\"split\":\"%s\",\n", t->truncated ? "true" : "false",
            tl_split_method_name(t->split));
    fprintf(f,
            "\"warnings\":{\"unlinked\":%u,\"precapture\":%u,\"zero_duration\":%u,"
            "\"unresolved\":%u,\"outside\":%u},\n",
            t->n_unlinked, t->n_precapture, t->n_zero_dur, t->n_unresolved, t->n_outside);
    fprintf(f, "\"inferred\":{\"dependencies\":%u,\"untraced\":%u},\n", t->n_inferred,
            t->n_untraced);
    fputs("\"streams\":[", f);
    for (int i = 0; i < t->n_streams; i++)
        fprintf(f, "%s%" PRId64, i ? "," : "", t->streams[i]);
    fputs("],\n\"strings\":[", f);
    for (uint32_t i = 0; i < t->n_strings; i++) {
        fputs(i ? ",\n" : "\n", f);
        put_string(f, t->strings[i]);
    }
    fputs("],\n\"iterations\":[", f);
    for (uint32_t i = 0; i < t->n_iters; i++) {
        const tl_iteration *it = &t->iters[i];
        fprintf(f,
                "%s\n{\"start_ns\":%" PRId64 ",\"tail_host_ns\":%" PRId64
                ",\"traced_ns\":%" PRId64 ",\"traced_busy_ns\":%" PRId64 ",\"ops\":[",
                i ? "," : "", it->start_ns, it->tail_host_ns, it->traced_ns, it->traced_busy_ns);
        for (uint32_t k = 0; k < it->n_ops; k++) {
            fputs(k ? ",\n " : "\n ", f);
            put_op(f, &it->ops[k]);
        }
        fputs("]}", f);
    }
    fputs("]}\n", f);
}

/* stdio over zlib's gzip writer, so that the JSON writer streams into it */
static ssize_t gz_cookie_write(void *gz, const char *buf, size_t n)
{
    /* stdio hands over at most its buffer, far below gzwrite's unsigned */
    return n && gzwrite(gz, buf, (unsigned)n) == 0 ? -1 : (ssize_t)n;
}

static int gz_cookie_close(void *gz)
{
    return gzclose(gz) == Z_OK ? 0 : EOF;
}

int tl_trace_write_json_gz_stream(const tl_trace *t, FILE *f, tl_err *err)
{
    /* its own descriptor: gzclose closes it, f stays the caller's */
    int fd = dup(fileno(f));
    gzFile gz = fd < 0 ? NULL : gzdopen(fd, "wb");
    if (!gz) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return tl_errf(err, TL_EIO, "gzip: cannot start the compressor: %s", strerror(e));
    }
    FILE *g = fopencookie(gz, "w", (cookie_io_functions_t){ .write = gz_cookie_write,
                                                           .close = gz_cookie_close });
    if (!g) {
        gzclose(gz);
        return tl_errf(err, TL_ENOMEM, "gzip: cannot start the compressor");
    }
    tl_trace_write_json_stream(t, g);
    bool bad = ferror(g) != 0;
    bad |= fclose(g) != 0;
    return bad ? tl_errf(err, TL_EIO, "gzip: write error") : 0;
}

int tl_trace_write_json(const tl_trace *t, const char *path, tl_err *err)
{
    bool to_stdout = strcmp(path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(path, "w");
    if (!f)
        return tl_errf(err, TL_EIO, "%s: cannot create: %s", path, strerror(errno));
    tl_trace_write_json_stream(t, f);
    int bad = ferror(f);
    if (!to_stdout)
        bad |= fclose(f) != 0;
    else
        bad |= fflush(f) != 0;
    if (bad)
        return tl_errf(err, TL_EIO, "%s: write error", path);
    return 0;
}

/* ---- reading: helpers ----------------------------------------------------- */

typedef struct rd {
    const char *path;
    tl_err *err;
    char where[160]; /* "iterations[2].ops[15] (kernel 'foo')" */
} rd;

static int rd_err(rd *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int rd_err(rd *c, int code, const char *fmt, ...)
{
    char what[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (c->where[0])
        return tl_errf(c->err, code, "%s: %s: %s", c->path, c->where, what);
    return tl_errf(c->err, code, "%s: %s", c->path, what);
}

/* Integer member in [lo, hi]; *out keeps its default when absent and !required. */
static int rd_int(rd *c, json_t *o, const char *key, bool required, int64_t lo, int64_t hi,
                  int64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!v) {
        if (required)
            return rd_err(c, TL_EMISSING, "missing '%s'", key);
        return 0;
    }
    if (!json_is_integer(v))
        return rd_err(c, TL_ETYPE, "'%s' must be an integer", key);
    json_int_t i = json_integer_value(v);
    if (i < lo || i > hi)
        return rd_err(c, TL_ERANGE, "'%s' is %lld (must be in %lld..%lld)", key, (long long)i,
                      (long long)lo, (long long)hi);
    *out = i;
    return 0;
}

static int rd_u32(rd *c, json_t *o, const char *key, bool required, int64_t hi, uint32_t *out)
{
    int64_t v = *out;
    int r = rd_int(c, o, key, required, 0, hi, &v);
    *out = (uint32_t)v;
    return r;
}

static int rd_bool(rd *c, json_t *o, const char *key, bool *out)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return rd_err(c, TL_ETYPE, "'%s' must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

static int rd_enum(rd *c, json_t *o, const char *key, bool required, const char *const *names,
                   int n, int *out)
{
    json_t *v = json_object_get(o, key);
    if (!v) {
        if (required)
            return rd_err(c, TL_EMISSING, "missing '%s'", key);
        return 0;
    }
    if (!json_is_string(v))
        return rd_err(c, TL_ETYPE, "'%s' must be a string", key);
    int i = name_index(names, n, json_string_value(v));
    if (i < 0)
        return rd_err(c, TL_ERANGE, "unknown %s '%s'", key, json_string_value(v)); /* data, not usage */
    *out = i;
    return 0;
}

static int rd_dim3(rd *c, json_t *o, const char *key, bool kernel, const int64_t max[3],
                   uint32_t out[3])
{
    json_t *v = json_object_get(o, key);
    if (!v) {
        if (kernel)
            return rd_err(c, TL_EMISSING, "missing '%s'", key);
        return 0;
    }
    if (!json_is_array(v) || json_array_size(v) != 3)
        return rd_err(c, TL_ETYPE, "'%s' must be an array of 3 integers", key);
    for (size_t i = 0; i < 3; i++) {
        json_t *x = json_array_get(v, i);
        if (!json_is_integer(x))
            return rd_err(c, TL_ETYPE, "'%s' must be an array of 3 integers", key);
        json_int_t n = json_integer_value(x);
        if (n < (kernel ? 1 : 0))
            return rd_err(c, TL_ERANGE, "%s[%zu] is %lld (must be >= 1)", key, i, (long long)n);
        if (n > max[i])
            return rd_err(c, TL_ERANGE, "%s[%zu] is %lld (at most %lld)", key, i, (long long)n,
                          (long long)max[i]);
        out[i] = (uint32_t)n;
    }
    return 0;
}

static const int64_t grid_max[3] = {MAX_GRID_X, MAX_GRID_YZ, MAX_GRID_YZ};
static const int64_t block_max[3] = {1024, 1024, 64};

static int check_threads(rd *c, const uint32_t block[3])
{
    uint64_t n = (uint64_t)block[0] * block[1] * block[2];
    if (n > 1024)
        return rd_err(c, TL_ERANGE, "block has %llu threads (at most 1024)", (unsigned long long)n);
    return 0;
}

static int check_blocks(rd *c, const uint32_t grid[3])
{
    uint64_t n = tl_grid_blocks(grid);
    if (n > TL_TRACE_MAX_BLOCKS)
        return rd_err(c, TL_ERANGE, "grid [%u,%u,%u] has %llu blocks (at most %llu)", grid[0],
                      grid[1], grid[2], (unsigned long long)n,
                      (unsigned long long)TL_TRACE_MAX_BLOCKS);
    return 0;
}

/* The "gpu" object. Properties it leaves out (or, with fill_zeros, gives as 0:
 * the events form's rule) come from the device table (tl_gpu_complete); what
 * is still unusable then is refused here, naming the file. */
static int rd_gpu(rd *c, json_t *g, tl_gpu_props *p, bool fill_zeros)
{
    memset(p, 0, sizeof *p);
    bool given = true; /* every property present */
    snprintf(c->where, sizeof c->where, "gpu");
    if (!json_is_object(g))
        return rd_err(c, TL_ETYPE, "must be an object or null");
    json_t *name = json_object_get(g, "name");
    if (name && !json_is_string(name))
        return rd_err(c, TL_ETYPE, "'name' must be a string");
    if (name)
        snprintf(p->name, sizeof p->name, "%s", json_string_value(name));
    else
        given = false;
    for (size_t i = 0; i < N_GPU_INTS; i++) {
        int64_t v = 0;
        if (!json_object_get(g, gpu_ints[i].key))
            given = false;
        int r = rd_int(c, g, gpu_ints[i].key, false, -(1LL << 20), 1LL << 30, &v);
        if (r < 0)
            return r;
        *(int *)((char *)p + gpu_ints[i].off) = (int)v;
    }
    int64_t v = 0;
    int r;
    if (!json_object_get(g, "timeslice_ns") || !json_object_get(g, "ctx_switch_ns") ||
        !json_object_get(g, "pcie_gbps"))
        given = false;
    if ((r = rd_int(c, g, "timeslice_ns", false, 0, MAX_NS, &v)) < 0)
        return r;
    p->timeslice_ns = v;
    v = 0;
    if ((r = rd_int(c, g, "ctx_switch_ns", false, 0, MAX_NS, &v)) < 0)
        return r;
    p->ctx_switch_ns = v;
    json_t *bw = json_object_get(g, "pcie_gbps");
    if (bw && !json_is_number(bw))
        return rd_err(c, TL_ETYPE, "'pcie_gbps' must be a number");
    if (bw)
        p->pcie_gbps = json_number_value(bw);
    if (fill_zeros || !given) /* hand-written: fill the gaps from the device table */
        tl_gpu_complete(p);
    /* Refuse here, naming the file, what the simulator would refuse later
     * without it: a GPU neither named (to be looked up) nor described. */
    tl_err gerr = {0};
    if (tl_gpu_validate(p, &gerr) < 0)
        return rd_err(c, TL_ERANGE, "%.250s%s", gerr.msg, p->name[0] ? "" : " (no 'name' to look the GPU up by)");
    c->where[0] = '\0';
    return 0;
}

static int rd_header(rd *c, json_t *root)
{
    if (!json_is_object(root))
        return rd_err(c, TL_ETYPE, "top level must be an object");
    json_t *fmt = json_object_get(root, "format");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "tally-trace") != 0)
        return rd_err(c, TL_EFORMAT, "not a tally trace (\"format\" is not \"tally-trace\")");
    json_t *ver = json_object_get(root, "version");
    if (!ver)
        return rd_err(c, TL_EMISSING, "missing 'version'");
    if (!json_is_integer(ver))
        return rd_err(c, TL_ETYPE, "'version' must be an integer");
    if (json_integer_value(ver) != TL_TRACE_FORMAT_VERSION)
        return rd_err(c, TL_EFORMAT, "tally-trace version %lld is not supported (this build reads "
                      "version %d)", (long long)json_integer_value(ver), TL_TRACE_FORMAT_VERSION);
    return 0;
}

/* ---- reading: the iterations form ------------------------------------------ */

/* max_event: the largest event id allowed (the file's op count - 1: see rd_iterations). */
static int rd_op(rd *c, json_t *o, const tl_trace *t, int64_t max_event, tl_op *op)
{
    memset(op, 0, sizeof *op);
    op->event = -1;
    op->gpu_start_ns = -1;
    if (!json_is_object(o))
        return rd_err(c, TL_ETYPE, "must be an object");
    int kind = 0, r;
    if ((r = rd_enum(c, o, "kind", true, kind_names, N_KINDS, &kind)) < 0)
        return r;
    op->kind = (uint8_t)kind;
    int64_t v;
    v = 0;
    if ((r = rd_int(c, o, "name", false, 0, (int64_t)t->n_strings - 1, &v)) < 0)
        return r;
    op->name = (uint32_t)v;
    size_t base = strlen(c->where);
    snprintf(c->where + base, sizeof c->where - base, " (%s '%.60s')", kind_names[kind],
             t->strings[op->name]);
    bool gpu = kind == TL_OP_KERNEL || kind == TL_OP_MEMCPY || kind == TL_OP_MEMSET;
    v = 0;
    if (t->n_streams == 0) { /* every op has a stream (0 when absent): none can be valid */
        json_t *js = json_object_get(o, "stream");
        long long sv = json_is_integer(js) ? (long long)json_integer_value(js) : 0;
        return rd_err(c, TL_ERANGE,
                      "uses stream %lld but the trace declares no streams ('streams' is empty)", sv);
    }
    if ((r = rd_int(c, o, "stream", false, 0, t->n_streams - 1, &v)) < 0)
        return r;
    op->stream = (int32_t)v;
    int sk = 0, ck = 0;
    if ((r = rd_enum(c, o, "sync", kind == TL_OP_SYNC, sync_names, 3, &sk)) < 0 ||
        (r = rd_enum(c, o, "copy", false, copy_names, 4, &ck)) < 0)
        return r;
    op->sync_kind = (uint8_t)sk;
    op->copy_kind = (uint8_t)ck;
    bool blocking = false;
    if ((r = rd_bool(c, o, "blocking", &blocking)) < 0)
        return r;
    op->blocking = blocking;
    bool in_graph = false;
    if ((r = rd_bool(c, o, "graph", &in_graph)) < 0)
        return r;
    op->graph = in_graph;
    bool needs_event = kind == TL_OP_EVENT_RECORD || kind == TL_OP_STREAM_WAIT ||
                       (kind == TL_OP_SYNC && sk == TL_SYNC_EVENT);
    v = -1;
    if ((r = rd_int(c, o, "event", needs_event, needs_event ? 0 : -1, INT32_MAX, &v)) < 0)
        return r;
    if (v > max_event)
        return rd_err(c, TL_ERANGE, "'event' is %lld: event ids must be below the number of ops "
                      "in the trace (%lld)", (long long)v, (long long)max_event + 1);
    op->event = (int32_t)v;
    v = 0;
    if ((r = rd_int(c, o, "host_gap_ns", true, 0, MAX_NS, &v)) < 0)
        return r;
    op->host_gap_ns = v;
    v = 0;
    if ((r = rd_int(c, o, "host_call_ns", true, 0, MAX_NS, &v)) < 0)
        return r;
    op->host_call_ns = v;
    v = -1;
    if ((r = rd_int(c, o, "gpu_start_ns", gpu, gpu ? 0 : -1, MAX_NS, &v)) < 0)
        return r;
    op->gpu_start_ns = v;
    v = 0;
    bool untraced = kind == TL_OP_UNTRACED; /* held stream time: a duration, no start */
    if ((r = rd_int(c, o, "dur_ns", gpu || untraced, gpu || untraced ? 1 : 0, MAX_NS, &v)) < 0)
        return r;
    op->dur_ns = v;
    bool kernel = kind == TL_OP_KERNEL;
    if ((r = rd_dim3(c, o, "grid", kernel, grid_max, op->grid)) < 0 ||
        (r = check_blocks(c, op->grid)) < 0 ||
        (r = rd_dim3(c, o, "block", kernel, block_max, op->block)) < 0 ||
        (r = check_threads(c, op->block)) < 0 ||
        (r = rd_u32(c, o, "regs", false, MAX_REGS, &op->regs)) < 0 ||
        (r = rd_u32(c, o, "static_smem", false, MAX_SMEM, &op->static_smem)) < 0 ||
        (r = rd_u32(c, o, "dynamic_smem", false, MAX_SMEM, &op->dynamic_smem)) < 0)
        return r;
    if ((uint64_t)op->static_smem + op->dynamic_smem > MAX_SMEM)
        return rd_err(c, TL_ERANGE, "shared memory over %lld bytes", MAX_SMEM);
    v = 0;
    if ((r = rd_int(c, o, "bytes", false, 0, 1LL << 48, &v)) < 0)
        return r;
    op->bytes = (uint64_t)v;
    return 0;
}

static int rd_iterations(rd *c, json_t *root, tl_trace *t, const tl_trace_options *opts)
{
    json_t *v;
    int r;
    /* strings */
    v = json_object_get(root, "strings");
    if (!v)
        return rd_err(c, TL_EMISSING, "missing 'strings'");
    if (!json_is_array(v) || json_array_size(v) == 0)
        return rd_err(c, TL_ETYPE, "'strings' must be an array starting with \"\"");
    size_t ns = json_array_size(v);
    if (ns > UINT32_MAX / 2)
        return rd_err(c, TL_ERANGE, "too many strings");
    t->strings = tl_xcalloc(ns, sizeof *t->strings);
    for (size_t i = 0; i < ns; i++) {
        json_t *s = json_array_get(v, i);
        if (!json_is_string(s))
            return rd_err(c, TL_ETYPE, "strings[%zu] must be a string", i);
        t->strings[i] = tl_xstrdup(json_string_value(s));
        t->n_strings = (uint32_t)i + 1;
    }
    if (t->strings[0][0] != '\0')
        return rd_err(c, TL_ERANGE, "strings[0] must be \"\"");
    /* streams */
    v = json_object_get(root, "streams");
    if (!v)
        return rd_err(c, TL_EMISSING, "missing 'streams'");
    if (!json_is_array(v))
        return rd_err(c, TL_ETYPE, "'streams' must be an array of integers");
    if (json_array_size(v) > TL_TRACE_MAX_STREAMS)
        return rd_err(c, TL_ERANGE, "more than %d streams", TL_TRACE_MAX_STREAMS);
    t->streams = tl_xcalloc(json_array_size(v) + 1, sizeof *t->streams);
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *s = json_array_get(v, i);
        if (!json_is_integer(s))
            return rd_err(c, TL_ETYPE, "streams[%zu] must be an integer", i);
        t->streams[i] = json_integer_value(s);
        t->n_streams = (int32_t)i + 1;
    }
    /* split, warnings */
    v = json_object_get(root, "split");
    if (v) {
        static const char *const splits[] = {"markers", "period", "start-kernel", "whole"};
        int m = 0;
        if ((r = rd_enum(c, root, "split", false, splits, 4, &m)) < 0)
            return r;
        t->split = (tl_split_method)m;
    }
    json_t *w = json_object_get(root, "warnings");
    if (w) {
        if (!json_is_object(w))
            return rd_err(c, TL_ETYPE, "'warnings' must be an object");
        if ((r = rd_u32(c, w, "unlinked", false, UINT32_MAX, &t->n_unlinked)) < 0 ||
            (r = rd_u32(c, w, "precapture", false, UINT32_MAX, &t->n_precapture)) < 0 ||
            (r = rd_u32(c, w, "zero_duration", false, UINT32_MAX, &t->n_zero_dur)) < 0 ||
            (r = rd_u32(c, w, "unresolved", false, UINT32_MAX, &t->n_unresolved)) < 0 ||
            (r = rd_u32(c, w, "outside", false, UINT32_MAX, &t->n_outside)) < 0)
            return r;
    }
    json_t *inf = json_object_get(root, "inferred");
    if (inf) {
        if (!json_is_object(inf))
            return rd_err(c, TL_ETYPE, "'inferred' must be an object");
        if ((r = rd_u32(c, inf, "dependencies", false, UINT32_MAX, &t->n_inferred)) < 0 ||
            (r = rd_u32(c, inf, "untraced", false, UINT32_MAX, &t->n_untraced)) < 0)
            return r;
    }
    /* iterations */
    v = json_object_get(root, "iterations");
    if (!json_is_array(v))
        return rd_err(c, TL_ETYPE, "'iterations' must be an array");
    size_t n = json_array_size(v);
    if (n == 0)
        return rd_err(c, TL_EMISSING, "no iterations");
    size_t skip = opts && opts->skip_iterations > 0 ? (size_t)opts->skip_iterations : 0;
    if (opts && opts->skip_iterations < 0)
        return rd_err(c, TL_EINVAL, "skip_iterations is negative (%d)", opts->skip_iterations);
    if (skip >= n)
        return rd_err(c, TL_ERANGE, "skip_iterations %zu leaves no iteration (the trace has %zu)",
                      skip, n);
    /* Event ids index per-trace tables (here and in the runner), so they are
     * bounded by the file's size: below its number of ops (what
     * tl_trace_write_json writes: 0, 1, ... in record order), not up to
     * INT32_MAX from a file of a few bytes. */
    size_t total_ops = 0;
    for (size_t i = 0; i < n; i++)
        total_ops += json_array_size(json_object_get(json_array_get(v, i), "ops"));
    int64_t max_event = total_ops > INT32_MAX ? INT32_MAX : (int64_t)total_ops - 1;
    t->iters = tl_xcalloc(n - skip, sizeof *t->iters);
    /* recorded[e] == i + 1: event e was recorded in iteration i (no clearing
     * between iterations) */
    size_t *recorded = tl_xcalloc(total_ops ? total_ops : 1, sizeof *recorded);
    size_t kernels = 0;
    for (size_t i = skip; i < n; i++) {
        json_t *jo = json_array_get(v, i);
        snprintf(c->where, sizeof c->where, "iterations[%zu]", i);
        if (!json_is_object(jo)) {
            r = rd_err(c, TL_ETYPE, "must be an object");
            goto out;
        }
        tl_iteration *it = &t->iters[t->n_iters++];
        int64_t x = 0;
        if ((r = rd_int(c, jo, "start_ns", true, 0, MAX_NS, &x)) < 0)
            goto out;
        it->start_ns = x;
        if ((r = rd_int(c, jo, "tail_host_ns", true, 0, MAX_NS, &x)) < 0)
            goto out;
        it->tail_host_ns = x;
        if ((r = rd_int(c, jo, "traced_ns", true, 0, MAX_NS, &x)) < 0)
            goto out;
        it->traced_ns = x;
        if ((r = rd_int(c, jo, "traced_busy_ns", true, 0, MAX_NS, &x)) < 0)
            goto out;
        it->traced_busy_ns = x;
        json_t *ops = json_object_get(jo, "ops");
        if (!json_is_array(ops)) {
            r = rd_err(c, ops ? TL_ETYPE : TL_EMISSING, ops ? "'ops' must be an array"
                                                            : "missing 'ops'");
            goto out;
        }
        size_t no = json_array_size(ops);
        it->ops = tl_xcalloc(no ? no : 1, sizeof *it->ops);
        for (size_t k = 0; k < no; k++) {
            snprintf(c->where, sizeof c->where, "iterations[%zu].ops[%zu]", i, k);
            tl_op *op = &it->ops[k];
            if ((r = rd_op(c, json_array_get(ops, k), t, max_event, op)) < 0)
                goto out;
            it->n_ops = (uint32_t)k + 1;
            kernels += op->kind == TL_OP_KERNEL;
            /* A wait must follow its record in the same iteration. */
            if (op->kind == TL_OP_EVENT_RECORD) {
                recorded[op->event] = i + 1;
            } else if (op->event >= 0 && (op->kind == TL_OP_STREAM_WAIT ||
                                          (op->kind == TL_OP_SYNC &&
                                           op->sync_kind == TL_SYNC_EVENT))) {
                if (recorded[op->event] != i + 1) {
                    r = rd_err(c, TL_ERANGE, "event %d is not recorded earlier in this iteration",
                               op->event);
                    goto out;
                }
            }
        }
    }
    c->where[0] = '\0';
    for (size_t i = 0; i < skip; i++) {
        json_t *ops = json_object_get(json_array_get(v, i), "ops");
        t->n_outside += (uint32_t)json_array_size(ops);
    }
    if (kernels == 0)
        r = rd_err(c, TL_EMISSING, "no GPU kernels in the trace");
out:
    free(recorded);
    return r;
}

/* ---- reading: the flat events form ----------------------------------------- */

static int rd_ns_pair(rd *c, json_t *e, bool gpu, tl_ns *start, tl_ns *end)
{
    int64_t a = 0, b = 0;
    int r;
    if ((r = rd_int(c, e, "start_ns", true, -MAX_NS, MAX_NS, &a)) < 0 ||
        (r = rd_int(c, e, "end_ns", true, -MAX_NS, MAX_NS, &b)) < 0)
        return r;
    if (gpu && b <= a)
        return rd_err(c, TL_ERANGE, "duration is %lld ns (must be > 0)", (long long)(b - a));
    if (b < a)
        return rd_err(c, TL_ERANGE, "end_ns before start_ns");
    *start = a;
    *end = b;
    return 0;
}

static int rd_opt_id(rd *c, json_t *e, const char *key, int64_t *out)
{
    json_t *v = json_object_get(e, key);
    *out = TL_RAW_NONE;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        return rd_err(c, TL_ETYPE, "'%s' must be an integer", key);
    *out = json_integer_value(v);
    if (*out == TL_RAW_NONE)
        return rd_err(c, TL_ERANGE, "'%s' out of range", key);
    return 0;
}

static int rd_flat_event(rd *c, json_t *e, tl_raw *raw)
{
    static const char *const types[] = {"api", "kernel", "memcpy", "memset", "marker"};
    if (!json_is_object(e))
        return rd_err(c, TL_ETYPE, "must be an object");
    int type = 0, r;
    if ((r = rd_enum(c, e, "type", true, types, 5, &type)) < 0)
        return r;
    json_t *jn = json_object_get(e, "name");
    if (jn && !json_is_string(jn))
        return rd_err(c, TL_ETYPE, "'name' must be a string");
    const char *name = jn ? json_string_value(jn) : "";
    if (!jn && (type == 0 || type == 1 || type == 4))
        return rd_err(c, TL_EMISSING, "missing 'name'");
    size_t base = strlen(c->where);
    snprintf(c->where + base, sizeof c->where - base, " (%s '%.60s')", types[type], name);
    uint32_t name_id = tl_strtab_intern(&raw->strings, name, strlen(name));
    tl_ns start = 0, end = 0;
    if ((r = rd_ns_pair(c, e, type >= 1 && type <= 3, &start, &end)) < 0)
        return r;
    if (type == 0) {
        int64_t tid = 0, corr, stream, event;
        if ((r = rd_int(c, e, "tid", false, INT64_MIN + 1, INT64_MAX, &tid)) < 0 ||
            (r = rd_opt_id(c, e, "corr", &corr)) < 0 ||
            (r = rd_opt_id(c, e, "stream", &stream)) < 0 ||
            (r = rd_opt_id(c, e, "event", &event)) < 0)
            return r;
        tl_raw_call *call = tl_raw_add_call(raw);
        call->start = start;
        call->end = end;
        call->tid = tid;
        call->name = name_id;
        call->api = (uint8_t)tl_api_classify(name);
        call->corr = tl_corr_id(corr);
        call->stream = stream;
        call->event = event;
        return 0;
    }
    if (type == 4) {
        tl_raw_marker *m = tl_raw_add_marker(raw);
        m->start = start;
        m->end = end;
        m->name = name_id;
        m->nvtx = 1;
        return 0;
    }
    tl_raw_gpu g;
    memset(&g, 0, sizeof g);
    g.start = start;
    g.end = end;
    g.name = name_id;
    int64_t stream = 0;
    if ((r = rd_opt_id(c, e, "corr", &g.corr)) < 0 ||
        (r = rd_int(c, e, "stream", true, INT64_MIN + 1, INT64_MAX, &stream)) < 0)
        return r;
    g.corr = tl_corr_id(g.corr);
    g.stream = stream;
    if (type == 1) {
        g.kind = TL_OP_KERNEL;
        if ((r = rd_dim3(c, e, "grid", true, grid_max, g.grid)) < 0 ||
            (r = check_blocks(c, g.grid)) < 0 ||
            (r = rd_dim3(c, e, "block", true, block_max, g.block)) < 0 ||
            (r = check_threads(c, g.block)) < 0 ||
            (r = rd_u32(c, e, "regs", true, MAX_REGS, &g.regs)) < 0 ||
            (r = rd_u32(c, e, "static_smem", false, MAX_SMEM, &g.static_smem)) < 0 ||
            (r = rd_u32(c, e, "dynamic_smem", false, MAX_SMEM, &g.dynamic_smem)) < 0)
            return r;
    } else {
        g.kind = type == 2 ? TL_OP_MEMCPY : TL_OP_MEMSET;
        int64_t bytes = 0;
        if ((r = rd_int(c, e, "bytes", true, 0, 1LL << 48, &bytes)) < 0)
            return r;
        g.bytes = (uint64_t)bytes;
        if (type == 2) {
            int ck = TL_COPY_OTHER;
            bool pageable = false;
            if ((r = rd_enum(c, e, "copy", true, copy_names, 4, &ck)) < 0 ||
                (r = rd_bool(c, e, "to_pageable", &pageable)) < 0)
                return r;
            g.copy_kind = (uint8_t)ck;
            g.to_pageable = pageable && ck == TL_COPY_D2H;
        }
    }
    *tl_raw_add_gpu(raw) = g;
    return 0;
}

static int rd_events(rd *c, json_t *root, tl_trace *t, const tl_trace_options *opts)
{
    tl_raw raw;
    tl_raw_init(&raw);
    int r = 0;
    json_t *g = json_object_get(root, "gpu");
    if (g && !json_is_null(g)) {
        if ((r = rd_gpu(c, g, &raw.gpu_props, true)) < 0)
            goto out;
        raw.has_gpu_props = true;
    }
    bool trunc = false;
    if ((r = rd_bool(c, root, "truncated", &trunc)) < 0)
        goto out;
    raw.truncated = trunc;
    json_t *ev = json_object_get(root, "events");
    if (!json_is_array(ev)) {
        r = rd_err(c, TL_ETYPE, "'events' must be an array");
        goto out;
    }
    for (size_t i = 0; i < json_array_size(ev); i++) {
        snprintf(c->where, sizeof c->where, "events[%zu]", i);
        size_t calls_before = raw.n_calls;
        if ((r = rd_flat_event(c, json_array_get(ev, i), &raw)) < 0)
            goto out;
        if (raw.n_calls > calls_before) /* input position: the last tie-break of host order */
            raw.calls[raw.n_calls - 1].index = (uint32_t)i;
    }
    c->where[0] = '\0';
    r = tl_raw_build(&raw, t, c->path, "tally", opts, c->err);
out:
    tl_raw_close(&raw);
    return r;
}

int tl_tally_from_buffer(tl_trace *t, const char *path, const char *buf, size_t len,
                         const tl_trace_options *opts, tl_err *err)
{
    rd c = {.path = path, .err = err};
    json_error_t je;
    if (len == 0)
        return tl_errf(err, TL_EFORMAT, "%s: empty file", path);
    /* A key given twice is malformed (our writers never do it); jansson's
     * default kept the last one, so '"dur_ns": 5, "dur_ns": 9' read as 9. */
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return tl_errf(err, TL_EFORMAT, "%s: malformed JSON at line %d, column %d: %s", path,
                       je.line, je.column, je.text);
    int r = rd_header(&c, root);
    if (r < 0)
        goto out;
    json_t *iters = json_object_get(root, "iterations");
    json_t *events = json_object_get(root, "events");
    if (iters && events) {
        r = rd_err(&c, TL_EFORMAT, "has both 'iterations' and 'events' (use one form)");
        goto out;
    }
    if (!iters && !events) {
        r = rd_err(&c, TL_EMISSING, "missing 'iterations' (or the flat 'events' form)");
        goto out;
    }
    tl_trace_close(t);
    if (events) {
        r = rd_events(&c, root, t, opts);
        goto out;
    }
    t->path = tl_xstrdup(path);
    t->format = tl_xstrdup("tally");
    t->split = TL_SPLIT_MARKERS;
    json_t *g = json_object_get(root, "gpu");
    if (g && !json_is_null(g)) {
        if ((r = rd_gpu(&c, g, &t->gpu, false)) < 0)
            goto fail;
        t->has_gpu_props = true;
    }
    bool trunc = false;
    if ((r = rd_bool(&c, root, "truncated", &trunc)) < 0)
        goto fail;
    t->truncated = trunc;
    if ((r = rd_iterations(&c, root, t, opts)) < 0)
        goto fail;
    goto out;
fail:
    tl_trace_close(t);
out:
    json_decref(root);
    return r;
}
