/* tally-trace: write the recorded trace as JSON ("events" form, traces/FORMAT.md).
 *
 * JSON is written by hand: the library must not depend on jansson (it is built
 * and run on machines that only have the CUDA toolkit). gzip output uses zlib
 * loaded with dlopen for the same reason (libz.so.1 is on every system, its
 * headers are not). The file appears atomically: everything goes to a temp
 * file in the same folder, which is renamed over the target only when
 * complete, so a process killed while writing never leaves a corrupt trace.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tally/common.h" /* tl_mkdirs_for: core/common.c is linked in (cuda.mk) */
#include "tracer.h"

/* ---- output sink: plain fd or zlib gz stream ---- */

typedef void *tt_gzfile;
static struct {
    tt_gzfile (*gzdopen)(int, const char *);
    int (*gzwrite)(tt_gzfile, const void *, unsigned);
    int (*gzclose)(tt_gzfile);
} zl;

static int load_zlib(void)
{
    if (zl.gzdopen)
        return 0;
    void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return -1;
    *(void **)&zl.gzwrite = dlsym(h, "gzwrite");
    *(void **)&zl.gzclose = dlsym(h, "gzclose");
    *(void **)&zl.gzdopen = dlsym(h, "gzdopen");
    return zl.gzdopen && zl.gzwrite && zl.gzclose ? 0 : -1;
}

typedef struct sink {
    int fd;
    tt_gzfile gz;
    char *buf;
    size_t len, cap;
    int failed; /* errno of the first failure */
} sink;

static void sink_flush(sink *o)
{
    if (o->failed || o->len == 0) {
        o->len = 0;
        return;
    }
    if (o->gz) {
        if (zl.gzwrite(o->gz, o->buf, (unsigned)o->len) != (int)o->len)
            o->failed = EIO;
    } else {
        size_t off = 0;
        while (off < o->len) {
            ssize_t w = write(o->fd, o->buf + off, o->len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                o->failed = w < 0 ? errno : EIO;
                break;
            }
            off += (size_t)w;
        }
    }
    o->len = 0;
}

static void put(sink *o, const char *s, size_t n)
{
    if (o->len + n > o->cap)
        sink_flush(o);
    if (n > o->cap) { /* a piece larger than the buffer: in buffer-sized steps */
        while (n) {
            size_t k = n < o->cap ? n : o->cap;
            memcpy(o->buf, s, k);
            o->len = k;
            sink_flush(o);
            s += k, n -= k;
        }
        return;
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static void puts_(sink *o, const char *s) { put(o, s, strlen(s)); }

static void putf(sink *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(sink *o, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        put(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* JSON string with escapes; bytes >= 0x80 pass through (names are UTF-8). */
static void put_str(sink *o, const char *s)
{
    put(o, "\"", 1);
    const char *run = s;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p >= 0x20 && *p != '"' && *p != '\\')
            continue;
        put(o, run, (size_t)((const char *)p - run));
        char esc[8];
        switch (*p) {
        case '"': puts_(o, "\\\""); break;
        case '\\': puts_(o, "\\\\"); break;
        case '\n': puts_(o, "\\n"); break;
        case '\t': puts_(o, "\\t"); break;
        case '\r': puts_(o, "\\r"); break;
        default:
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            puts_(o, esc);
        }
        run = (const char *)p + 1;
    }
    puts_(o, run);
    put(o, "\"", 1);
}

/* ---- names of CUPTI enums (tracer.h mirrors their values), as the format
 * spells them ---- */

static const char *copy_kind_name(unsigned k)
{
    switch (k) {
    case TT_COPY_HTOD: return "HtoD";
    case TT_COPY_DTOH: return "DtoH";
    case TT_COPY_HTOA: return "HtoA";
    case TT_COPY_ATOH: return "AtoH";
    case TT_COPY_ATOA: return "AtoA";
    case TT_COPY_ATOD: return "AtoD";
    case TT_COPY_DTOA: return "DtoA";
    case TT_COPY_DTOD: return "DtoD";
    case TT_COPY_HTOH: return "HtoH";
    case TT_COPY_PTOP: return "PtoP";
    default: return "unknown";
    }
}

/* The format's copy direction (h2d, d2h, d2d, other). */
static const char *copy_dir(unsigned k)
{
    switch (k) {
    case TT_COPY_HTOD:
    case TT_COPY_HTOA: return "h2d";
    case TT_COPY_DTOH:
    case TT_COPY_ATOH: return "d2h";
    case TT_COPY_DTOD:
    case TT_COPY_DTOA:
    case TT_COPY_ATOD:
    case TT_COPY_ATOA: return "d2d";
    default: return "other";
    }
}

static const char *mem_kind_name(unsigned k)
{
    switch (k) {
    case TT_MEM_PAGEABLE: return "pageable";
    case TT_MEM_PINNED: return "pinned";
    case TT_MEM_DEVICE: return "device";
    case TT_MEM_ARRAY: return "array";
    case TT_MEM_MANAGED: return "managed";
    case TT_MEM_DEVICE_STATIC: return "device_static";
    case TT_MEM_MANAGED_STATIC: return "managed_static";
    default: return "unknown";
    }
}

/* ---- the window, the order of events, joins by correlation id ---- */

static bool in_window(const tt_rec *r, const tt_trace_meta *m)
{
    if (r->type >= TT_R_DEAD) /* withdrawn; HOSTCALL: only lite.c reads them */
        return false;
    if (r->type == TT_R_STREAM)
        return true; /* stream properties hold for the whole run */
    if (r->type != TT_R_MARKER && r->type != TT_R_ITER && r->corr)
        return r->corr >= m->window_start_corr && r->corr < m->window_stop_corr;
    return r->start >= m->window_start_ts && r->start < m->window_stop_ts;
}

static const tt_store *sort_store;
static int by_start(const void *a, const void *b)
{
    size_t ia = *(const size_t *)a, ib = *(const size_t *)b;
    const tt_rec *ra = tt_store_at(sort_store, ia), *rb = tt_store_at(sort_store, ib);
    if (ra->start != rb->start)
        return ra->start < rb->start ? -1 : 1;
    return ia < ib ? -1 : ia > ib; /* ties keep arrival order: deterministic */
}

/* Correlation id -> index of the SYNC or EVENT record that says which stream
 * and CUDA event an API call acted on (open addressing, 0 = empty). */
typedef struct corr_map {
    uint32_t *keys;
    size_t *vals;
    size_t cap;
} corr_map;

static int corr_map_init(corr_map *c, size_t n)
{
    c->cap = 64;
    while (c->cap < 2 * n + 2)
        c->cap *= 2;
    c->keys = calloc(c->cap, sizeof *c->keys);
    c->vals = malloc(c->cap * sizeof *c->vals);
    return c->keys && c->vals ? 0 : -1;
}

static size_t *corr_map_slot(corr_map *c, uint32_t corr, bool add)
{
    size_t h = (corr * 2654435761u) & (c->cap - 1);
    while (c->keys[h] && c->keys[h] != corr)
        h = (h + 1) & (c->cap - 1);
    if (!c->keys[h] && !add)
        return NULL;
    c->keys[h] = corr;
    return &c->vals[h];
}

/* ---- the file ---- */

static void put_device(sink *o, const tt_device *d)
{
    puts_(o, "{\"ordinal\":");
    putf(o, "%d,\"name\":", d->ordinal);
    put_str(o, d->name);
    puts_(o, ",\"uuid\":");
    put_str(o, d->uuid);
    putf(o,
         ",\"cc_major\":%d,\"cc_minor\":%d,\"sms\":%d,\"max_threads_per_sm\":%d,"
         "\"max_threads_per_block\":%d,\"max_warps_per_sm\":%d,\"max_blocks_per_sm\":%d,",
         d->cc_major, d->cc_minor, d->sms, d->max_threads_per_sm, d->max_threads_per_block,
         d->warp_size ? d->max_threads_per_sm / d->warp_size : 0, d->max_blocks_per_sm);
    putf(o,
         "\"regs_per_sm\":%d,\"regs_per_block\":%d,\"smem_per_sm\":%d,\"smem_per_block\":%d,"
         "\"smem_per_block_optin\":%d,\"smem_reserved_per_block\":%d,\"warp_size\":%d,",
         d->regs_per_sm, d->regs_per_block, d->smem_per_sm, d->smem_per_block,
         d->smem_per_block_optin, d->smem_reserved_per_block, d->warp_size);
    putf(o,
         "\"stream_prio_greatest\":%d,\"stream_prio_least\":%d,\"l2_bytes\":%d,"
         "\"clock_khz\":%d,\"mem_clock_khz\":%d,\"mem_bus_bits\":%d,\"copy_engines\":%d,"
         "\"total_mem_bytes\":%" PRIu64 "}",
         d->stream_prio_greatest, d->stream_prio_least, d->l2_bytes, d->clock_khz,
         d->mem_clock_khz, d->mem_bus_bits, d->async_engines, d->total_mem);
}

static void put_options(sink *o, const tt_options *op)
{
    static const char *const sync_kinds[] = {"any", "device", "stream"};
    puts_(o, "{\"output\":");
    put_str(o, op->output);
    putf(o, ",\"start_after_iterations\":%" PRId64 ",\"stop_after_iterations\":%" PRId64,
         op->start_iters, op->stop_iters);
    putf(o, ",\"start_after_seconds\":%.9g,\"stop_after_seconds\":%.9g", op->start_seconds,
         op->stop_seconds);
    putf(o, ",\"buffer_size\":%zu,\"activities\":%u,\"iteration_marker\":", op->buffer_size,
         op->activities);
    put_str(o, op->iter_marker);
    puts_(o, ",\"iteration_kernel\":");
    put_str(o, op->iter_kernel);
    putf(o, ",\"iteration_sync\":%" PRId64 ",\"iteration_sync_kind\":\"%s\",\"gzip\":%s",
         op->iter_sync, sync_kinds[op->iter_sync_kind], op->gzip ? "true" : "false");
    /* (queued_times: what --launch-times queued was called before) */
    putf(o,
         ",\"host_timeline\":\"%s\",\"sync_records\":\"%s\",\"launch_times\":\"%s\","
         "\"queued_times\":%s,\"latency_sample\":%" PRId64 ",\"record_every\":%" PRId64 "}",
         tt_host_timeline_name(op->host_timeline), tt_sync_records_name(op->sync_records),
         tt_launch_times_name(op->launch_times),
         op->launch_times == TT_LAUNCH_QUEUED ? "true" : "false", op->latency_sample,
         op->record_every);
}

static const char *iteration_method(const tt_options *op)
{
    if (*op->iter_marker)
        return "marker";
    if (*op->iter_kernel)
        return "kernel";
    if (op->iter_sync > 0)
        return "sync";
    return "";
}

/* How the host side was obtained: readers of a lite trace must know that
 * the API calls, hence host_gap_ns / host_call_ns after loading, are
 * estimates (lite.c says how each is made). */
static void put_host_timeline(sink *o, const tt_trace_meta *m)
{
    int mode = m->opts->host_timeline;
    putf(o, ",\"host_timeline\":{\"mode\":\"%s\",\"reconstructed\":%s", tt_host_timeline_name(mode),
         mode == TT_HOST_LITE ? "true" : "false");
    if (mode == TT_HOST_FULL) {
        puts_(o, ",\"api_calls\":\"recorded by CUPTI (runtime and driver API activity)\"}");
        return;
    }
    if (mode == TT_HOST_NONE) {
        puts_(o, ",\"api_calls\":\"none: GPU records only\"}");
        return;
    }
    const tt_lite_stats *l = m->lite;
    /* (putf formats at most 511 bytes: the long texts go through puts_) */
    puts_(o, ",\"thread\":\"one host thread per process: every call has tid = pid\",");
    putf(o, "\"launch_times\":\"%s\",", tt_launch_times_name(m->opts->launch_times));
    if (m->opts->launch_times == TT_LAUNCH_CALLBACK) {
        /* Exact: these calls are not marked "estimated" (launches_timed,
         * copies_timed count them). */
        puts_(o, "\"launch_start\":\"exact: callbacks on the launch calls (runtime and "
                 "driver kernel and graph launches) give each call's host entry and exit, at "
                 "most its GPU start; a call made inside another takes the outer call's "
                 "times\",");
        puts_(o, "\"launch_duration_ns\":\"exact (exit - entry)\",");
    } else {
        if (m->latency_timestamps)
            puts_(o, "\"launch_start\":\"CUPTI queued timestamp of the kernel (host "
                     "enqueue), at most its GPU start\",");
        else
            puts_(o, "\"launch_start\":\"no queued timestamps: placed like other calls, in "
                     "correlation order as late as they can, at most their GPU start\",");
        putf(o, "\"launch_duration_ns\":\"submitted - queued when <= %d, else %d\",",
             TT_LITE_MAX_CALL_NS, TT_LITE_CALL_NS);
        if (m->latency_timestamps && m->opts->latency_sample > 1) {
            putf(o, "\"latency_sample\":%" PRId64 ",", m->opts->latency_sample);
            puts_(o, "\"launch_start_unsampled\":\"queued timestamps in one iteration of "
                     "every latency_sample only; the launches of the others have the host time "
                     "of the nearest sampled iteration that made the same calls, measured from "
                     "the last host-timed call before them (a wait) or the iteration boundary, at "
                     "most their GPU start (launches_copied); where none matches they are placed "
                     "like other calls\",");
        }
    }
    switch (m->opts->sync_records) {
    case TT_SYNCREC_CALLBACK:
        puts_(o, "\"waits_from\":\"callbacks on the synchronize, stream-wait and event-record "
                 "runtime calls: exact host start and end\",");
        break;
    case TT_SYNCREC_COMPLETION:
        /* Said plainly: these waits are partly inferred. */
        putf(o, "\"waits_from\":\"inferred: CUPTI synchronize-domain callbacks (a stream or "
                "device synchronize completed) give each wait's end; its start is the previous "
                "call's end, or its end when it returned more than %d ns after the work it "
                "waited for; its place among the calls is inferred from the times\",",
             TT_LITE_LATE_NS);
        puts_(o, "\"waits_not_seen\":\"event synchronizes, stream waits on events, event "
                 "records\",");
        /* CUPTI numbered only the calls that made GPU work: ids were made
         * free for the waits (corr_moved says how many calls moved). */
        puts_(o, "\"corr\":\"CUPTI's correlation ids, except that a call after an inferred "
                 "wait with no id free before it has its id and those of all later calls "
                 "raised to make room\",");
        break;
    default:
        puts_(o, "\"waits_from\":\"CUPTI synchronization records: exact host start and "
                 "end\",");
        break;
    }
    if (m->opts->launch_times == TT_LAUNCH_CALLBACK)
        puts_(o, "\"copies_from\":\"callbacks on cudaMemcpy, cudaMemcpyAsync, cudaMemset and "
                 "cudaMemsetAsync (and their per-thread forms): exact host entry and exit; other "
                 "copy and memset calls are placed as below\",");
    puts_(o, "\"other_calls\":\"copies, memsets, event records: placed in correlation order "
             "as late as they can, ending where the next call starts, not after their own GPU "
             "start nor before the previous call's estimated end; blocking copies end with the "
             "copy\",");
    putf(o, "\"other_call_ns\":%d,\"latency_timestamps\":%s", TT_LITE_CALL_NS,
         m->latency_timestamps ? "true" : "false");
    if (l)
        putf(o,
             ",\"calls\":%" PRIu64 ",\"launches\":%" PRIu64 ",\"launches_queued\":%" PRIu64
             ",\"launches_clamped\":%" PRIu64 ",\"interpolated\":%" PRIu64
             ",\"blocking_copies\":%" PRIu64 ",\"waits\":%" PRIu64 ",\"waits_inferred\":%" PRIu64
             ",\"waits_unplaced\":%" PRIu64 ",\"corr_moved\":%" PRIu64,
             l->calls, l->launches, l->launches_queued, l->launches_clamped, l->interpolated,
             l->blocking_copies, l->waits, l->waits_inferred, l->waits_unplaced, l->corr_moved);
    if (l)
        putf(o,
             ",\"launches_timed\":%" PRIu64 ",\"copies_timed\":%" PRIu64
             ",\"host_calls_unused\":%" PRIu64 ",\"host_calls_lost\":%" PRIu64
             ",\"launches_copied\":%" PRIu64,
             l->launches_timed, l->copies_timed, l->host_calls_unused, l->host_calls_lost,
             l->launches_copied);
    puts_(o, "}");
}

typedef struct emit {
    sink *o;
    const tt_store *s;
    uint64_t base;
    size_t n;           /* events written so far */
    uint64_t zero_dur;  /* GPU records stretched to 1 ns */
} emit;

static void sep(emit *e)
{
    puts_(e->o, e->n++ ? ",\n" : "\n");
}

static const char *str_of(const tt_store *s, uint32_t id)
{
    return id < s->n_strings ? s->strings[id] : "";
}

/* GPU records must last > 0 ns; CUPTI sometimes stamps tiny memsets with
 * start == end. */
static void put_gpu_times(emit *e, const tt_rec *r)
{
    int64_t st = (int64_t)(r->start - e->base), en = (int64_t)(r->end - e->base);
    if (en <= st) {
        en = st + 1;
        e->zero_dur++;
    }
    putf(e->o, ",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64, st, en);
}

/* An API call, with the stream and CUDA event it acted on when CUPTI said so
 * in a synchronization or CUDA-event record of the same correlation id. */
static void put_api(emit *e, const tt_rec *r, const tt_rec *info)
{
    sep(e);
    puts_(e->o, "{\"type\":\"api\",\"name\":");
    put_str(e->o, str_of(e->s, r->name));
    putf(e->o,
         ",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 ",\"tid\":%u,\"corr\":%u,\"api\":\"%s\"",
         (int64_t)(r->start - e->base), (int64_t)(r->end - e->base), r->tid, r->corr,
         r->sub ? "driver" : "runtime");
    if (!(r->flags & TT_RF_ESTIMATED)) /* a rebuilt call has no CUPTI callback id */
        putf(e->o, ",\"cbid\":%u", r->id);
    if (info) {
        bool device_sync = info->type == TT_R_SYNC &&
                           info->sub == TT_SYNCT_CONTEXT;
        if (info->stream != UINT32_MAX && !device_sync)
            putf(e->o, ",\"stream\":%u", info->stream);
        if (info->id != UINT32_MAX && (info->type == TT_R_EVENT ||
                                       info->sub == TT_SYNCT_EVENT ||
                                       info->sub == TT_SYNCT_STREAM_WAIT))
            putf(e->o, ",\"event\":%u", info->id);
    }
    if (r->flags & TT_RF_ESTIMATED) /* lite host timeline: rebuilt, times estimated */
        puts_(e->o, ",\"estimated\":true");
    puts_(e->o, "}");
}

static void put_gpu(emit *e, const tt_rec *r)
{
    sep(e);
    sink *o = e->o;
    switch (r->type) {
    case TT_R_KERNEL:
        puts_(o, "{\"type\":\"kernel\",\"name\":");
        put_str(o, str_of(e->s, r->name));
        put_gpu_times(e, r);
        putf(o,
             ",\"corr\":%u,\"stream\":%u,\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d],\"regs\":%u,"
             "\"static_smem\":%d,\"dynamic_smem\":%d,",
             r->corr, r->stream, r->grid[0], r->grid[1], r->grid[2], r->block[0], r->block[1],
             r->block[2], r->regs, r->static_smem, r->dynamic_smem);
        putf(o,
             "\"device\":%u,\"context\":%u,\"local_mem\":%u,\"cluster\":[%u,%u,%u],\"graph\":%u}",
             r->device, r->context, r->local_mem, r->cluster[0], r->cluster[1], r->cluster[2],
             r->graph);
        break;
    case TT_R_MEMCPY: {
        unsigned src = r->id & 0xff, dst = r->id >> 8;
        putf(o, "{\"type\":\"memcpy\",\"name\":\"Memcpy %s\"", copy_kind_name(r->sub));
        put_gpu_times(e, r);
        putf(o,
             ",\"corr\":%u,\"stream\":%u,\"bytes\":%" PRIu64 ",\"copy\":\"%s\",\"to_pageable\":%s,"
             "\"copy_kind\":\"%s\",\"src_kind\":\"%s\",\"dst_kind\":\"%s\",\"device\":%u,"
             "\"context\":%u,\"graph\":%u}",
             r->corr, r->stream, r->bytes, copy_dir(r->sub),
             dst == TT_MEM_PAGEABLE ? "true" : "false", copy_kind_name(r->sub),
             mem_kind_name(src), mem_kind_name(dst), r->device, r->context, r->graph);
        break;
    }
    case TT_R_MEMSET:
        puts_(o, "{\"type\":\"memset\",\"name\":\"Memset\"");
        put_gpu_times(e, r);
        putf(o,
             ",\"corr\":%u,\"stream\":%u,\"bytes\":%" PRIu64 ",\"device\":%u,\"context\":%u,"
             "\"graph\":%u}",
             r->corr, r->stream, r->bytes, r->device, r->context, r->graph);
        break;
    }
}

static void put_marker(emit *e, const char *name, const char *domain, uint64_t start,
                       uint64_t end, uint32_t tid)
{
    sep(e);
    puts_(e->o, "{\"type\":\"marker\",\"name\":");
    put_str(e->o, name);
    puts_(e->o, ",\"domain\":");
    put_str(e->o, domain);
    putf(e->o, ",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 ",\"tid\":%u}",
         (int64_t)(start - e->base), (int64_t)(end - e->base), tid);
}

int tt_write_trace(const tt_store *s, const tt_trace_meta *m, const char *path, char *msg,
                   size_t msg_len)
{
    /* Its folder, made if missing, as every output of the project: tally-trace
     * made what does not depend on the pid (-o runs/%p/t.json: runs), and the
     * library may be used without tally-trace. */
    tl_err derr = {0};
    if (tl_mkdirs_for(path, &derr) < 0) {
        snprintf(msg, msg_len, "%s", derr.msg);
        return -1;
    }
    /* Select and order the records; join syncs and event records to calls. */
    size_t *idx = malloc((s->n ? s->n : 1) * sizeof *idx);
    corr_map joins = {0};
    if (!idx || corr_map_init(&joins, s->n) < 0) {
        free(idx);
        free(joins.keys);
        free(joins.vals);
        snprintf(msg, msg_len, "%s: out of memory for %zu records", path, s->n);
        return -1;
    }
    size_t n = 0;
    uint64_t counts[9] = {0};
    uint64_t last_end = 0;
    for (size_t i = 0; i < s->n; i++) {
        const tt_rec *r = tt_store_at(s, i);
        if (!in_window(r, m))
            continue;
        idx[n++] = i;
        counts[r->type]++;
        if ((r->type == TT_R_SYNC || r->type == TT_R_EVENT) && r->corr)
            *corr_map_slot(&joins, r->corr, true) = i;
        if (r->type != TT_R_STREAM && r->end > last_end)
            last_end = r->end;
    }
    sort_store = s;
    qsort(idx, n, sizeof *idx, by_start);
    uint64_t base = 0;
    for (size_t i = 0; i < n && !base; i++) /* stream records carry no time */
        base = tt_store_at(s, idx[i])->start;

    char tmp[8600];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, m->pid);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(msg, msg_len, "%s: cannot create: %s", tmp, strerror(errno));
        free(idx);
        free(joins.keys);
        free(joins.vals);
        return -1;
    }
    sink o = {.fd = fd, .cap = 1 << 20};
    o.buf = malloc(o.cap);
    if (m->opts->gzip) {
        if (load_zlib() < 0 || !(o.gz = zl.gzdopen(dup(fd), "wb6")))
            o.failed = ENOSYS;
    }
    if (!o.buf)
        o.failed = ENOMEM;

    puts_(&o, "{\"format\":\"tally-trace\",\"version\":1,\"form\":\"events\",");
    puts_(&o, "\"tool\":\"tally-trace " TT_VERSION "\",");
    putf(&o, "\"pid\":%d,\"command\":", m->pid);
    put_str(&o, m->opts->command);
    putf(&o, ",\"time_base_ns\":%" PRIu64 ",\"time_base_unix_ns\":%" PRId64 ",", base,
         (int64_t)base + m->cupti_to_unix_ns);
    puts_(&o, "\"iteration_method\":");
    put_str(&o, iteration_method(m->opts));
    puts_(&o, ",\"options\":");
    put_options(&o, m->opts);
    put_host_timeline(&o, m);
    if (m->n_devices > 0) { /* what the loader reads: the first device */
        const tt_device *d = &m->devices[0];
        puts_(&o, ",\"gpu\":{\"name\":");
        put_str(&o, d->name);
        putf(&o,
             ",\"sms\":%d,\"max_threads_per_sm\":%d,\"max_threads_per_block\":%d,"
             "\"max_warps_per_sm\":%d,\"max_blocks_per_sm\":%d,\"regs_per_sm\":%d,"
             "\"regs_per_block\":%d,\"smem_per_sm\":%d,\"smem_per_block\":%d,"
             "\"smem_per_block_optin\":%d,\"smem_reserved_per_block\":%d,\"warp_size\":%d,"
             "\"cc_major\":%d,\"cc_minor\":%d,\"stream_prio_greatest\":%d}",
             d->sms, d->max_threads_per_sm, d->max_threads_per_block,
             d->warp_size ? d->max_threads_per_sm / d->warp_size : 0, d->max_blocks_per_sm,
             d->regs_per_sm, d->regs_per_block, d->smem_per_sm, d->smem_per_block,
             d->smem_per_block_optin, d->smem_reserved_per_block, d->warp_size, d->cc_major,
             d->cc_minor, d->stream_prio_greatest);
    }
    puts_(&o, ",\"devices\":[");
    for (int i = 0; i < m->n_devices; i++) {
        if (i)
            puts_(&o, ",");
        put_device(&o, &m->devices[i]);
    }
    puts_(&o, "],\"stream_info\":[");
    for (size_t i = 0, k = 0; i < n; i++) {
        const tt_rec *r = tt_store_at(s, idx[i]);
        if (r->type == TT_R_STREAM)
            putf(&o, "%s{\"stream\":%u,\"context\":%u,\"priority\":%d,\"flags\":%u}",
                 k++ ? "," : "", r->stream, r->context, r->static_smem, r->id);
    }
    puts_(&o, "],\"events\":[");

    emit e = {.o = &o, .s = s, .base = base};
    const tt_rec *prev_iter = NULL;
    uint64_t range_end = 0;
    for (size_t i = 0; i < n && !o.failed; i++) {
        const tt_rec *r = tt_store_at(s, idx[i]);
        switch (r->type) {
        case TT_R_API: {
            size_t *j = corr_map_slot(&joins, r->corr, false);
            put_api(&e, r, j ? tt_store_at(s, *j) : NULL);
            break;
        }
        case TT_R_KERNEL:
        case TT_R_MEMCPY:
        case TT_R_MEMSET:
            put_gpu(&e, r);
            break;
        case TT_R_MARKER:
            put_marker(&e, str_of(s, r->name), str_of(s, r->domain), r->start,
                       r->end >= r->start ? r->end : r->start, r->tid);
            if (prev_iter && !range_end && r->end > r->start && *m->opts->iter_marker &&
                strncmp(str_of(s, r->name), m->opts->iter_marker, strlen(m->opts->iter_marker)) == 0)
                range_end = r->end; /* the NVTX range that began the latest iteration */
            break;
        case TT_R_ITER:
            /* Boundaries become ranges "iteration#N" from one boundary to
             * the next, which the loader splits on. */
            if (prev_iter && prev_iter->sub != TT_ITER_SKIPPED) {
                char name[48];
                snprintf(name, sizeof name, "iteration#%u", prev_iter->id);
                put_marker(&e, name, "tally-trace", prev_iter->start, r->start, prev_iter->tid);
            }
            prev_iter = r;
            range_end = 0;
            break;
        default:
            break; /* SYNC, EVENT: joined to their calls; STREAM: in stream_info */
        }
    }
    /* The last iteration ends where the window was closed; else with its NVTX
     * range (marker method) or with the trace (kernel method: the step ran to
     * completion). With the sync method, what follows the last synchronize
     * is no iteration. */
    if (prev_iter && prev_iter->sub != TT_ITER_SKIPPED &&
        (m->window_stop_ts != UINT64_MAX || *m->opts->iter_kernel || range_end)) {
        char name[48];
        snprintf(name, sizeof name, "iteration#%u", prev_iter->id);
        uint64_t end = m->window_stop_ts != UINT64_MAX ? m->window_stop_ts
                       : range_end                     ? range_end
                                                       : last_end;
        if (end > prev_iter->start)
            put_marker(&e, name, "tally-trace", prev_iter->start, end, prev_iter->tid);
    }
    puts_(&o, "\n],");
    putf(&o,
         "\"counts\":{\"api\":%" PRIu64 ",\"kernel\":%" PRIu64 ",\"memcpy\":%" PRIu64
         ",\"memset\":%" PRIu64 ",\"sync\":%" PRIu64 ",\"marker\":%" PRIu64
         ",\"event_record\":%" PRIu64 ",\"stream\":%" PRIu64 ",\"iteration\":%" PRIu64 "},",
         counts[TT_R_API], counts[TT_R_KERNEL], counts[TT_R_MEMCPY], counts[TT_R_MEMSET],
         counts[TT_R_SYNC], counts[TT_R_MARKER], counts[TT_R_EVENT], counts[TT_R_STREAM],
         counts[TT_R_ITER]);
    putf(&o,
         "\"iterations_seen\":%" PRIu64 ",\"dropped_records\":%" PRIu64
         ",\"incomplete_records\":%" PRIu64 ",\"zero_duration_records\":%" PRIu64 ",\"end\":",
         m->iterations_seen, m->dropped_records, m->incomplete_records, e.zero_dur);
    put_str(&o, m->end_reason ? m->end_reason : "exit");
    putf(&o, ",\"truncated\":%s,\"truncation_reason\":", m->truncated ? "true" : "false");
    put_str(&o, m->truncated && m->truncation_reason ? m->truncation_reason : "");
    puts_(&o, "}\n");
    sink_flush(&o);
    free(idx);
    free(joins.keys);
    free(joins.vals);
    free(o.buf);
    if (o.gz && zl.gzclose(o.gz) != 0 && !o.failed)
        o.failed = EIO;
    if (close(fd) < 0 && !o.failed)
        o.failed = errno;
    if (o.failed) {
        snprintf(msg, msg_len, "%s: write failed: %s%s", tmp, strerror(o.failed),
                 o.failed == ENOSYS ? " (zlib: libz.so.1 not loadable)" : "");
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) < 0) {
        snprintf(msg, msg_len, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    snprintf(msg, msg_len, "%s: %zu events (%" PRIu64 " kernels)%s", path, e.n,
             counts[TT_R_KERNEL], m->truncated ? ", truncated" : "");
    return 0;
}
