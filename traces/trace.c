/* tl_trace lifetime, format detection and small accessors. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void tl_trace_init(tl_trace *t)
{
    memset(t, 0, sizeof *t);
}

void tl_trace_close(tl_trace *t)
{
    if (!t)
        return;
    free(t->path);
    free(t->format);
    if (t->strings)
        for (uint32_t i = 0; i < t->n_strings; i++)
            free(t->strings[i]);
    free(t->strings);
    free(t->streams);
    if (t->iters)
        for (uint32_t i = 0; i < t->n_iters; i++)
            free(t->iters[i].ops);
    free(t->iters);
    tl_trace_init(t);
}

static bool is_sqlite(const char *buf, size_t len)
{
    return len >= 16 && memcmp(buf, "SQLite format 3", 16) == 0;
}

/* Our own format says so in its top-level "format" key. Only the top-level
 * keys are looked at, so a Kineto trace is skimmed once more at worst. */
static bool is_tally(const char *buf, size_t len)
{
    tl_jscan s = {buf, len, 0, NULL};
    tl_jscan_ws(&s);
    if (s.pos >= len || buf[s.pos] != '{')
        return false;
    s.pos++;
    for (;;) {
        const char *key, *val;
        size_t klen, vlen;
        tl_jscan_ws(&s);
        if (tl_jscan_string(&s, &key, &klen) < 0)
            return false;
        tl_jscan_ws(&s);
        if (s.pos >= len || buf[s.pos] != ':')
            return false;
        s.pos++;
        tl_jscan_ws(&s);
        if (klen == 6 && memcmp(key, "format", 6) == 0) {
            if (tl_jscan_string(&s, &val, &vlen) < 0)
                return false;
            return vlen == 11 && memcmp(val, "tally-trace", 11) == 0;
        }
        if (klen == 11 && memcmp(key, "traceEvents", 11) == 0)
            return false; /* Kineto: do not skim the whole array */
        if (tl_jscan_value(&s, 1) < 0)
            return false;
        tl_jscan_ws(&s);
        if (s.pos >= len || buf[s.pos] != ',')
            return false;
        s.pos++;
    }
}

/* Where an op is, for tl_trace_check's messages: "x.json: iteration 3 op 12 (kernel 'k')". */
static const char *op_where(const tl_trace *t, uint32_t i, int skip, uint32_t k, char *buf,
                            size_t n)
{
    static const char *const kinds[] = {"kernel",       "memcpy",      "memset",  "sync",
                                        "event_record", "stream_wait", "untraced"};
    const tl_op *op = &t->iters[i].ops[k];
    char nb[96], sk[48] = "";
    if (skip > 0)
        snprintf(sk, sizeof sk, " (%u after skipping %d)", i, skip);
    snprintf(buf, n, "%s: iteration %u%s op %u (%s '%s')", t->path ? t->path : "trace",
             i + (uint32_t)skip, sk, k, op->kind < 7 ? kinds[op->kind] : "op",
             tl_short_name(tl_trace_op_name(t, op), nb, sizeof nb));
    return buf;
}

int tl_trace_check(const tl_trace *t, int skip, tl_err *err)
{
    if (skip < 0)
        skip = 0;
    char where[256];
    const char *path = t->path ? t->path : "trace";
    for (uint32_t i = 0; i < t->n_iters; i++) {
        const tl_iteration *it = &t->iters[i];
        tl_ns host = 0, gpu = 0;
        for (uint32_t k = 0; k < it->n_ops; k++) {
            const tl_op *op = &it->ops[k];
            if (op->stream < 0 || op->stream >= t->n_streams) {
                op_where(t, i, skip, k, where, sizeof where);
                if (t->n_streams == 0)
                    return tl_errf(err, TL_ERANGE,
                                   "%s: uses stream %d but the trace declares no streams", where,
                                   op->stream);
                return tl_errf(err, TL_ERANGE, "%s: stream %d is not one of the trace's %d streams",
                               where, op->stream, t->n_streams);
            }
            bool gpu_op = op->kind == TL_OP_KERNEL || op->kind == TL_OP_MEMCPY ||
                          op->kind == TL_OP_MEMSET;
            if (gpu_op && (op->gpu_start_ns < 0 || op->dur_ns <= 0))
                return tl_errf(err, TL_ERANGE, "%s: GPU work without GPU time (gpu_start_ns %lld, "
                               "dur_ns %lld)", op_where(t, i, skip, k, where, sizeof where),
                               (long long)op->gpu_start_ns, (long long)op->dur_ns);
            if (gpu_op && op->dur_ns > TL_TRACE_MAX_OP_NS)
                return tl_errf(err, TL_ERANGE, "%s: lasts %lld ns (at most %lld, 11.6 days)",
                               op_where(t, i, skip, k, where, sizeof where), (long long)op->dur_ns,
                               (long long)TL_TRACE_MAX_OP_NS);
            if (op->kind == TL_OP_KERNEL && tl_op_blocks(op) > TL_TRACE_MAX_BLOCKS)
                return tl_errf(err, TL_ERANGE, "%s: grid [%u,%u,%u] has %llu blocks (at most %llu)",
                               op_where(t, i, skip, k, where, sizeof where), op->grid[0],
                               op->grid[1], op->grid[2], (unsigned long long)tl_op_blocks(op),
                               (unsigned long long)TL_TRACE_MAX_BLOCKS);
            if (op->host_gap_ns < 0 || op->host_call_ns < 0 ||
                __builtin_add_overflow(host, op->host_gap_ns, &host) ||
                __builtin_add_overflow(host, op->host_call_ns, &host) || host > TL_TRACE_MAX_NS)
                return tl_errf(err, TL_ERANGE,
                               "%s: the iteration's host time (host_gap_ns + host_call_ns of "
                               "ops 0..%u) is over %lld ns",
                               op_where(t, i, skip, k, where, sizeof where), k,
                               (long long)TL_TRACE_MAX_NS);
            if (op->dur_ns < 0 || __builtin_add_overflow(gpu, op->dur_ns, &gpu) ||
                gpu > TL_TRACE_MAX_NS)
                return tl_errf(err, TL_ERANGE,
                               "%s: the iteration's GPU time (dur_ns of ops 0..%u) is over %lld ns",
                               op_where(t, i, skip, k, where, sizeof where), k,
                               (long long)TL_TRACE_MAX_NS);
        }
        if (it->tail_host_ns < 0 || __builtin_add_overflow(host, it->tail_host_ns, &host) ||
            host > TL_TRACE_MAX_NS) {
            char sk[48] = "";
            if (skip > 0)
                snprintf(sk, sizeof sk, " (%u after skipping %d)", i, skip);
            return tl_errf(err, TL_ERANGE,
                           "%s: iteration %u%s: host time (host_gap_ns + host_call_ns of its ops, "
                           "plus tail_host_ns %lld) is over %lld ns",
                           path, i + (uint32_t)skip, sk, (long long)it->tail_host_ns,
                           (long long)TL_TRACE_MAX_NS);
        }
    }
    return 0;
}

/* Every loader starts here: the file's bytes (gunzipped) and their digest,
 * taken before a reader can touch them. */
static int read_trace(const char *path, char **buf, size_t *len, tl_digest *d, tl_err *err)
{
    int r = tl_read_file(path, buf, len, err);
    if (r == 0) {
        tl_digest_init(d);
        tl_digest_add(d, *buf, *len);
    }
    return r;
}

/* Every loader ends here: the buffer freed, the digest kept, the common
 * checks, then the kernel kinds. */
static int finish_load(tl_trace *t, int r, char *buf, const tl_digest *d,
                       const tl_trace_options *opts, tl_err *err)
{
    free(buf);
    if (r == 0)
        t->digest = *d;
    if (r == 0 && (r = tl_trace_check(t, opts ? opts->skip_iterations : 0, err)) < 0)
        tl_trace_close(t);
    if (r == 0)
        tl_trace_classify(t);
    return r;
}

int tl_trace_load(tl_trace *t, const char *path, const tl_trace_options *opts, tl_err *err)
{
    char *buf;
    size_t len;
    tl_digest d;
    int r = read_trace(path, &buf, &len, &d, err);
    if (r < 0)
        return r;
    if (len == 0)
        r = tl_errf(err, TL_EFORMAT, "%s: empty file", path);
    else if (is_sqlite(buf, len))
        r = tl_nsys_from_buffer(t, path, buf, len, opts, err);
    else if (is_tally(buf, len))
        r = tl_tally_from_buffer(t, path, buf, len, opts, err);
    else
        r = tl_kineto_from_buffer(t, path, buf, len, opts, err);
    return finish_load(t, r, buf, &d, opts, err);
}

int tl_trace_load_kineto(tl_trace *t, const char *path, const tl_trace_options *opts, tl_err *err)
{
    char *buf;
    size_t len;
    tl_digest d;
    int r = read_trace(path, &buf, &len, &d, err);
    if (r < 0)
        return r;
    r = tl_kineto_from_buffer(t, path, buf, len, opts, err);
    return finish_load(t, r, buf, &d, opts, err);
}

int tl_trace_load_nsys(tl_trace *t, const char *path, const tl_trace_options *opts, tl_err *err)
{
    char *buf;
    size_t len;
    tl_digest d;
    int r = read_trace(path, &buf, &len, &d, err);
    if (r < 0)
        return r;
    if (!is_sqlite(buf, len))
        r = tl_errf(err, TL_EFORMAT, "%s: not an SQLite database (Nsight Systems export)", path);
    else
        r = tl_nsys_from_buffer(t, path, buf, len, opts, err);
    return finish_load(t, r, buf, &d, opts, err);
}

int tl_trace_load_tally(tl_trace *t, const char *path, tl_err *err)
{
    char *buf;
    size_t len;
    tl_digest d;
    int r = read_trace(path, &buf, &len, &d, err);
    if (r < 0)
        return r;
    r = tl_tally_from_buffer(t, path, buf, len, NULL, err);
    return finish_load(t, r, buf, &d, NULL, err);
}

const char *tl_trace_op_name(const tl_trace *t, const tl_op *op)
{
    if (!t->strings || op->name >= t->n_strings)
        return "";
    return t->strings[op->name];
}

const char *tl_split_method_name(tl_split_method m)
{
    switch (m) {
    case TL_SPLIT_MARKERS: return "markers";
    case TL_SPLIT_PERIOD: return "period";
    case TL_SPLIT_USER: return "start-kernel";
    case TL_SPLIT_WHOLE: return "whole";
    }
    return "?";
}

uint64_t tl_op_blocks(const tl_op *op)
{
    return (uint64_t)op->grid[0] * op->grid[1] * op->grid[2];
}

uint32_t tl_op_threads(const tl_op *op)
{
    return op->block[0] * op->block[1] * op->block[2];
}

static int cmp_ns(const void *a, const void *b)
{
    tl_ns x = *(const tl_ns *)a, y = *(const tl_ns *)b;
    return x < y ? -1 : x > y;
}

tl_ns tl_trace_back_to_back_gap(const tl_trace *t, uint64_t *pairs)
{
    enum { NEAR_NS = 10000 }; /* "back to back": less than 10 us apart */
    size_t n = 0, cap = 0;
    tl_ns *gaps = NULL;
    tl_ns *last_end = tl_xcalloc(t->n_streams > 0 ? (size_t)t->n_streams : 1, sizeof *last_end);
    for (uint32_t i = 0; i < t->n_iters; i++) {
        const tl_iteration *it = &t->iters[i];
        for (int s = 0; s < t->n_streams; s++)
            last_end[s] = -1;
        for (uint32_t k = 0; k < it->n_ops; k++) {
            const tl_op *op = &it->ops[k];
            bool gpu = op->kind == TL_OP_KERNEL || op->kind == TL_OP_MEMCPY || op->kind == TL_OP_MEMSET;
            if (!gpu || op->gpu_start_ns < 0 || op->stream < 0 || op->stream >= t->n_streams)
                continue;
            tl_ns prev = last_end[op->stream], g = op->gpu_start_ns - prev;
            if (prev >= 0 && g >= 0 && g < NEAR_NS) {
                if (n == cap) {
                    cap = cap ? 2 * cap : 1024;
                    gaps = tl_xrealloc(gaps, cap * sizeof *gaps);
                }
                gaps[n++] = g;
            }
            last_end[op->stream] = op->gpu_start_ns + op->dur_ns;
        }
    }
    free(last_end);
    tl_ns med = 0;
    if (n) {
        qsort(gaps, n, sizeof *gaps, cmp_ns);
        med = gaps[n / 2];
    }
    free(gaps);
    if (pairs)
        *pairs = n;
    return med;
}

int tl_trace_gpu(const tl_trace *t, tl_gpu_props *out, tl_err *err)
{
    if (!t->has_gpu_props)
        return tl_gpu_lookup("H100", out, err);
    *out = t->gpu;
    tl_gpu_complete(out);
    return 0;
}

void tl_iteration_stats(const tl_iteration *it, tl_iter_stats *st)
{
    memset(st, 0, sizeof *st);
    for (uint32_t i = 0; i < it->n_ops; i++) {
        const tl_op *op = &it->ops[i];
        switch (op->kind) {
        case TL_OP_KERNEL: st->kernels++; break;
        case TL_OP_MEMCPY: st->copies++; break;
        case TL_OP_MEMSET: st->memsets++; break;
        case TL_OP_SYNC: st->syncs++; break;
        default: break;
        }
        st->host_ns += op->host_gap_ns + op->host_call_ns;
    }
    st->host_ns += it->tail_host_ns;
    st->gpu_busy_ns = it->traced_busy_ns;
    st->traced_ns = it->traced_ns;
}
