/* Nsight Systems SQLite export reader (`nsys export --type sqlite`).
 *
 * Required: CUPTI_ACTIVITY_KIND_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME, StringIds.
 * Optional: CUPTI_ACTIVITY_KIND_MEMCPY, _MEMSET, _SYNCHRONIZATION (which
 * stream/event a sync or wait is about), _CUDA_EVENT (stream/event of each
 * cudaEventRecord), NVTX_EVENTS (iteration markers), TARGET_INFO_GPU (device
 * properties). nsys times are integer ns already. The database is opened
 * from memory (sqlite3_deserialize), so a gzipped export works too. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define T_KERNEL "CUPTI_ACTIVITY_KIND_KERNEL"
#define T_RUNTIME "CUPTI_ACTIVITY_KIND_RUNTIME"
#define T_MEMCPY "CUPTI_ACTIVITY_KIND_MEMCPY"
#define T_MEMSET "CUPTI_ACTIVITY_KIND_MEMSET"
#define T_SYNC "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
#define T_EVENT "CUPTI_ACTIVITY_KIND_CUDA_EVENT"

#define MAX_GRID_X 2147483647LL
#define MAX_GRID_YZ 65535LL
#define MAX_SMEM (4LL << 20)

typedef struct ns_ctx {
    sqlite3 *db;
    tl_raw *raw;
    const char *path;
    tl_err *err;
} ns_ctx;

/* SQLite failing on the read-only in-memory copy of the input means the input
 * is malformed (truncated, corrupt, not a database): a data error, not one of
 * writing a database (TL_EDB); only running out of memory is ours. */
static int db_err(ns_ctx *c, const char *what)
{
    int ec = sqlite3_errcode(c->db);
    return tl_errf(c->err, ec == SQLITE_NOMEM ? TL_ENOMEM : TL_EFORMAT, "%s: %s: %s", c->path,
                   what, sqlite3_errmsg(c->db));
}

/* Whether the export has a table (type "table") or a view ("view") of that
 * name; compared as SQLite compares names, without case. */
static bool has_object(ns_ctx *c, const char *type, const char *name)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, "SELECT 1 FROM sqlite_master WHERE type = ?1 "
                                  "AND name = ?2 COLLATE NOCASE", -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(st, 1, type, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    bool found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

/* Views of the tables read here are refused first (nsys_load), so a table. */
static bool has_table(ns_ctx *c, const char *name)
{
    return has_object(c, "table", name);
}

static bool has_column(ns_ctx *c, const char *table, const char *col)
{
    char sql[160];
    snprintf(sql, sizeof sql, "PRAGMA table_info(%s)", table);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK)
        return false;
    bool found = false;
    while (!found && sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 1);
        found = name && strcmp(name, col) == 0;
    }
    sqlite3_finalize(st);
    return found;
}

static int need_columns(ns_ctx *c, const char *table, const char *const *cols)
{
    for (; *cols; cols++)
        if (!has_column(c, table, *cols))
            return tl_errf(c->err, TL_EMISSING, "%s: table %s has no column '%s'", c->path, table,
                           *cols);
    return 0;
}

/* A row being read, for messages: "x.sqlite: CUPTI_ACTIVITY_KIND_KERNEL row 12 (kernel 'foo')". */
typedef struct row_ctx {
    ns_ctx *c;
    const char *table;
    sqlite3_stmt *st;
    int64_t rowid;
    const char *name;
} row_ctx;

static int row_err(row_ctx *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int row_err(row_ctx *r, int code, const char *fmt, ...)
{
    char what[256], nb[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (r->name)
        return tl_errf(r->c->err, code, "%s: %s row %lld ('%s'): %s", r->c->path, r->table,
                       (long long)r->rowid, tl_short_name(r->name, nb, sizeof nb), what);
    return tl_errf(r->c->err, code, "%s: %s row %lld: %s", r->c->path, r->table,
                   (long long)r->rowid, what);
}

/* A string id (column i) that StringIds does not hold: the export is corrupt,
 * and the name it leaves out would decide what the row is (an API call's kind,
 * an iteration marker), so it is refused rather than read as "". */
static int unknown_string(row_ctx *r, int i)
{
    const char *id = (const char *)sqlite3_column_text(r->st, i);
    r->name = NULL;
    return row_err(r, TL_EFORMAT, "%s %s names no string in StringIds", sqlite3_column_name(r->st, i),
                   id ? id : "NULL");
}

/* Integer column i in [lo, hi]; NULL is an error when required, else *out = dflt. */
static int col_int(row_ctx *r, int i, bool required, int64_t lo, int64_t hi, int64_t dflt,
                   int64_t *out)
{
    int type = sqlite3_column_type(r->st, i);
    const char *name = sqlite3_column_name(r->st, i);
    if (type == SQLITE_NULL) {
        if (required)
            return row_err(r, TL_EMISSING, "%s is NULL", name);
        *out = dflt;
        return 0;
    }
    if (type != SQLITE_INTEGER)
        return row_err(r, TL_ETYPE, "%s must be an integer", name);
    int64_t v = sqlite3_column_int64(r->st, i);
    if (v < lo || v > hi)
        return row_err(r, TL_ERANGE, "%s is %lld (must be in %lld..%lld)", name, (long long)v,
                       (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

static int gpu_span(row_ctx *r, int i_start, tl_raw_gpu *g)
{
    int64_t a, b;
    int rc;
    if ((rc = col_int(r, i_start, true, 0, INT64_MAX / 4, 0, &a)) < 0 ||
        (rc = col_int(r, i_start + 1, true, 0, INT64_MAX / 4, 0, &b)) < 0)
        return rc;
    if (b < a)
        return row_err(r, TL_ERANGE, "end is before start");
    if (b == a) {
        b = a + 1;
        r->c->raw->n_zero_dur++;
    }
    g->start = a;
    g->end = b;
    return 0;
}

/* Columns 1-4, the same in kernel, copy and memset rows: start and end,
 * streamId (required), correlationId (optional). */
static int gpu_head(row_ctx *r, tl_raw_gpu *g)
{
    int rc;
    int64_t v;
    if ((rc = gpu_span(r, 1, g)) < 0)
        return rc;
    if ((rc = col_int(r, 3, true, INT64_MIN + 1, INT64_MAX, 0, &v)) < 0)
        return rc;
    g->stream = v;
    if ((rc = col_int(r, 4, false, INT64_MIN + 1, INT64_MAX, TL_RAW_NONE, &v)) < 0)
        return rc;
    g->corr = tl_corr_id(v);
    return 0;
}

/* Run sql; for each row call fn. */
static int each_row(ns_ctx *c, const char *table, const char *sql,
                    int (*fn)(row_ctx *r, void *arg), void *arg)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_err(c, table);
    row_ctx r = {c, table, st, 0, NULL};
    int rc, s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        r.rowid = sqlite3_column_int64(st, 0);
        r.name = NULL;
        if ((rc = fn(&r, arg)) < 0) {
            sqlite3_finalize(st);
            return rc;
        }
    }
    rc = s == SQLITE_DONE ? 0 : db_err(c, table);
    sqlite3_finalize(st);
    return rc;
}

/* StringIds maps each id to one string: the tables join it by id, so an id
 * given twice would read every row that names it twice. */
static int check_strings(ns_ctx *c)
{
    static const char *const need[] = {"id", "value", NULL};
    int rc = need_columns(c, "StringIds", need);
    if (rc < 0)
        return rc;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, "SELECT id FROM StringIds GROUP BY id HAVING count(*) > 1 "
                                  "LIMIT 1", -1, &st, NULL) != SQLITE_OK)
        return db_err(c, "StringIds");
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        rc = tl_errf(c->err, TL_EFORMAT, "%s: StringIds has id %s more than once", c->path,
                     id ? id : "NULL");
    } else if (s != SQLITE_DONE) {
        rc = db_err(c, "StringIds");
    }
    sqlite3_finalize(st);
    return rc;
}

/* ---- kernels ---------------------------------------------------------------- */

typedef struct dev_count {
    int64_t id[8];
    size_t n[8];
    int k;
} dev_count;

static int kernel_row(row_ctx *r, void *arg)
{
    dev_count *dc = arg;
    /* 0 rowid, 1 start, 2 end, 3 streamId, 4 correlationId, 5-7 grid, 8-10 block,
     * 11 registersPerThread, 12 static, 13 dynamic, 14 name, 15 deviceId, 16 the
     * name's string id (demangledName, else shortName) */
    const char *name = (const char *)sqlite3_column_text(r->st, 14);
    if (!name)
        return unknown_string(r, 16);
    r->name = name;
    tl_raw_gpu g;
    memset(&g, 0, sizeof g);
    g.kind = TL_OP_KERNEL;
    int rc;
    if ((rc = gpu_head(r, &g)) < 0)
        return rc;
    int64_t v;
    static const int64_t gmax[3] = {MAX_GRID_X, MAX_GRID_YZ, MAX_GRID_YZ};
    static const int64_t bmax[3] = {1024, 1024, 64};
    for (int i = 0; i < 3; i++) {
        if ((rc = col_int(r, 5 + i, true, 1, gmax[i], 0, &v)) < 0)
            return rc;
        g.grid[i] = (uint32_t)v;
        if ((rc = col_int(r, 8 + i, true, 1, bmax[i], 0, &v)) < 0)
            return rc;
        g.block[i] = (uint32_t)v;
    }
    if (tl_grid_blocks(g.grid) > TL_TRACE_MAX_BLOCKS)
        return row_err(r, TL_ERANGE, "grid %ux%ux%u has %llu blocks (at most %llu)", g.grid[0],
                       g.grid[1], g.grid[2], (unsigned long long)tl_grid_blocks(g.grid),
                       (unsigned long long)TL_TRACE_MAX_BLOCKS);
    uint64_t threads = (uint64_t)g.block[0] * g.block[1] * g.block[2];
    if (threads > 1024)
        return row_err(r, TL_ERANGE, "block has %llu threads (at most 1024)",
                       (unsigned long long)threads);
    if ((rc = col_int(r, 11, true, 0, 255, 0, &v)) < 0)
        return rc;
    g.regs = (uint32_t)v;
    if ((rc = col_int(r, 12, true, 0, MAX_SMEM, 0, &v)) < 0)
        return rc;
    g.static_smem = (uint32_t)v;
    if ((rc = col_int(r, 13, true, 0, MAX_SMEM, 0, &v)) < 0)
        return rc;
    g.dynamic_smem = (uint32_t)v;
    g.name = tl_strtab_intern(&r->c->raw->strings, r->name, strlen(r->name));
    if (sqlite3_column_type(r->st, 15) == SQLITE_INTEGER) {
        int64_t d = sqlite3_column_int64(r->st, 15);
        int i = 0;
        while (i < dc->k && dc->id[i] != d)
            i++;
        if (i < dc->k)
            dc->n[i]++;
        else if (dc->k < 8) {
            dc->id[dc->k] = d;
            dc->n[dc->k++] = 1;
        }
    }
    *tl_raw_add_gpu(r->c->raw) = g;
    return 0;
}

static int read_kernels(ns_ctx *c, dev_count *dc)
{
    static const char *const need[] = {"start", "end", "streamId", "correlationId", "gridX",
                                       "gridY", "gridZ", "blockX", "blockY", "blockZ",
                                       "registersPerThread", "staticSharedMemory",
                                       "dynamicSharedMemory", NULL};
    int rc = need_columns(c, T_KERNEL, need);
    if (rc < 0)
        return rc;
    bool dem = has_column(c, T_KERNEL, "demangledName");
    bool shrt = has_column(c, T_KERNEL, "shortName");
    if (!dem && !shrt)
        return tl_errf(c->err, TL_EMISSING, "%s: table %s has no column 'demangledName' or "
                       "'shortName'", c->path, T_KERNEL);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT k.rowid, k.start, k.end, k.streamId, k.correlationId, k.gridX, k.gridY, "
             "k.gridZ, k.blockX, k.blockY, k.blockZ, k.registersPerThread, "
             "k.staticSharedMemory, k.dynamicSharedMemory, %s, %s, %s "
             "FROM " T_KERNEL " k %s %s ORDER BY k.start, k.rowid",
             dem && shrt ? "COALESCE(d.value, s.value)" : dem ? "d.value" : "s.value",
             has_column(c, T_KERNEL, "deviceId") ? "k.deviceId" : "NULL",
             dem ? "k.demangledName AS demangledName" : "k.shortName AS shortName",
             dem ? "LEFT JOIN StringIds d ON d.id = k.demangledName" : "",
             shrt ? "LEFT JOIN StringIds s ON s.id = k.shortName" : "");
    return each_row(c, T_KERNEL, sql, kernel_row, dc);
}

/* ---- copies and memsets -------------------------------------------------------- */

static int copy_row(row_ctx *r, void *arg)
{
    bool is_copy = *(bool *)arg;
    /* 0 rowid, 1 start, 2 end, 3 streamId, 4 correlationId, 5 bytes, 6 copyKind, 7 dstKind */
    tl_raw_gpu g;
    memset(&g, 0, sizeof g);
    g.kind = is_copy ? TL_OP_MEMCPY : TL_OP_MEMSET;
    int rc;
    if ((rc = gpu_head(r, &g)) < 0)
        return rc;
    int64_t v;
    if ((rc = col_int(r, 5, true, 0, 1LL << 48, 0, &v)) < 0)
        return rc;
    g.bytes = (uint64_t)v;
    const char *name = "Memset";
    if (is_copy) {
        /* CUpti_ActivityMemcpyKind: 1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP. */
        int64_t kind, dst;
        if ((rc = col_int(r, 6, false, 0, 1 << 20, 0, &kind)) < 0 ||
            (rc = col_int(r, 7, false, 0, 1 << 20, 0, &dst)) < 0)
            return rc;
        g.copy_kind = kind == 1 ? TL_COPY_H2D : kind == 2 ? TL_COPY_D2H
                                              : kind == 8 || kind == 10 ? TL_COPY_D2D
                                                                        : TL_COPY_OTHER;
        g.to_pageable = g.copy_kind == TL_COPY_D2H && dst == 1; /* CUPTI memory kind 1: pageable */
        name = g.copy_kind == TL_COPY_H2D ? "Memcpy HtoD" : g.copy_kind == TL_COPY_D2H ? "Memcpy DtoH"
             : g.copy_kind == TL_COPY_D2D ? "Memcpy DtoD" : "Memcpy";
    }
    g.name = tl_strtab_intern(&r->c->raw->strings, name, strlen(name));
    *tl_raw_add_gpu(r->c->raw) = g;
    return 0;
}

static int read_copies(ns_ctx *c, const char *table, bool is_copy)
{
    static const char *const need[] = {"start", "end", "streamId", "correlationId", "bytes", NULL};
    if (!has_table(c, table))
        return 0;
    int rc = need_columns(c, table, need);
    if (rc < 0)
        return rc;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT rowid, start, end, streamId, correlationId, bytes, %s, %s FROM %s "
             "ORDER BY start, rowid",
             is_copy && has_column(c, table, "copyKind") ? "copyKind" : "NULL",
             is_copy && has_column(c, table, "dstKind") ? "dstKind" : "NULL", table);
    return each_row(c, table, sql, copy_row, &is_copy);
}

/* ---- host API calls ----------------------------------------------------------- */

static int runtime_row(row_ctx *r, void *arg)
{
    (void)arg;
    /* 0 rowid, 1 start, 2 end, 3 correlationId, 4 globalTid, 5 name, 6 nameId */
    const char *name = (const char *)sqlite3_column_text(r->st, 5);
    if (!name)
        return unknown_string(r, 6);
    r->name = name;
    int64_t a, b, corr, tid;
    int rc;
    if ((rc = col_int(r, 1, true, 0, INT64_MAX / 4, 0, &a)) < 0 ||
        (rc = col_int(r, 2, true, 0, INT64_MAX / 4, 0, &b)) < 0 ||
        (rc = col_int(r, 3, false, INT64_MIN + 1, INT64_MAX, TL_RAW_NONE, &corr)) < 0 ||
        (rc = col_int(r, 4, false, INT64_MIN, INT64_MAX, 0, &tid)) < 0)
        return rc;
    if (b < a)
        return row_err(r, TL_ERANGE, "end is before start");
    tl_raw_call *call = tl_raw_add_call(r->c->raw);
    call->start = a;
    call->end = b;
    call->corr = tl_corr_id(corr);
    call->tid = tid;
    call->name = tl_strtab_intern(&r->c->raw->strings, r->name, strlen(r->name));
    call->api = (uint8_t)tl_api_classify(r->name);
    call->index = (uint32_t)r->rowid;
    return 0;
}

static int read_runtime(ns_ctx *c)
{
    static const char *const need[] = {"start", "end", "correlationId", "nameId", NULL};
    int rc = need_columns(c, T_RUNTIME, need);
    if (rc < 0)
        return rc;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT r.rowid, r.start, r.end, r.correlationId, %s, s.value, r.nameId AS nameId FROM " T_RUNTIME
             " r LEFT JOIN StringIds s ON s.id = r.nameId ORDER BY r.start, r.rowid",
             has_column(c, T_RUNTIME, "globalTid") ? "r.globalTid" : "NULL");
    return each_row(c, T_RUNTIME, sql, runtime_row, NULL);
}

/* SYNCHRONIZATION rows: CUpti_ActivitySynchronizationType 1 event sync,
 * 2 stream wait event, 3 stream sync, 4 context sync. CUDA_EVENT rows: the
 * stream and event of each cudaEventRecord. Both join calls by correlation. */
static int syncinfo_row(row_ctx *r, void *arg)
{
    bool is_event_table = *(bool *)arg;
    /* 0 rowid, 1 correlationId, 2 streamId, 3 eventId, 4 syncType */
    int64_t corr, stream, event, type;
    int rc;
    if ((rc = col_int(r, 1, false, INT64_MIN + 1, INT64_MAX, TL_RAW_NONE, &corr)) < 0 ||
        (rc = col_int(r, 2, false, INT64_MIN + 1, INT64_MAX, TL_RAW_NONE, &stream)) < 0 ||
        (rc = col_int(r, 3, false, INT64_MIN + 1, INT64_MAX, TL_RAW_NONE, &event)) < 0 ||
        (rc = col_int(r, 4, false, INT64_MIN + 1, INT64_MAX, 0, &type)) < 0)
        return rc;
    corr = tl_corr_id(corr);
    if (corr == TL_RAW_NONE)
        return 0;
    tl_raw_syncinfo *s = tl_raw_add_sync(r->c->raw);
    s->corr = corr;
    if (stream < 0)
        stream = TL_RAW_NONE;
    if (event < 0)
        event = TL_RAW_NONE;
    if (is_event_table || type == 2 || type == 3)
        s->stream = stream;
    if (is_event_table || type == 1 || type == 2)
        s->event = event;
    return 0;
}

static int read_syncinfo(ns_ctx *c, const char *table, bool is_event_table)
{
    if (!has_table(c, table))
        return 0;
    static const char *const need[] = {"correlationId", NULL};
    int rc = need_columns(c, table, need);
    if (rc < 0)
        return rc;
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT rowid, correlationId, %s, %s, %s FROM %s ORDER BY rowid",
             has_column(c, table, "streamId") ? "streamId" : "NULL",
             has_column(c, table, "eventId") ? "eventId" : "NULL",
             has_column(c, table, "syncType") ? "syncType" : "NULL", table);
    return each_row(c, table, sql, syncinfo_row, &is_event_table);
}

/* ---- NVTX ranges --------------------------------------------------------------- */

static int nvtx_row(row_ctx *r, void *arg)
{
    (void)arg;
    /* 0 rowid, 1 start, 2 end, 3 name, 4 textId (NULL: none) */
    if (sqlite3_column_type(r->st, 2) == SQLITE_NULL)
        return 0; /* an instant mark, or a range never closed */
    const char *name = (const char *)sqlite3_column_text(r->st, 3);
    if (!name && sqlite3_column_type(r->st, 4) != SQLITE_NULL)
        return unknown_string(r, 4);
    if (!name)
        return 0; /* a range without a message */
    int64_t a, b;
    int rc;
    if ((rc = col_int(r, 1, true, 0, INT64_MAX / 4, 0, &a)) < 0 ||
        (rc = col_int(r, 2, true, 0, INT64_MAX / 4, 0, &b)) < 0)
        return rc;
    if (b < a) { /* Kineto's negative dur and our flat form's end_ns are refused too */
        r->name = name;
        return row_err(r, TL_ERANGE, "range ends before it starts (end %lld < start %lld)",
                       (long long)b, (long long)a);
    }
    tl_raw_marker *m = tl_raw_add_marker(r->c->raw);
    m->start = a;
    m->end = b;
    m->name = tl_strtab_intern(&r->c->raw->strings, name, strlen(name));
    m->nvtx = 1;
    return 0;
}

static int read_nvtx(ns_ctx *c)
{
    if (!has_table(c, "NVTX_EVENTS"))
        return 0;
    static const char *const need[] = {"start", "end", NULL};
    int rc = need_columns(c, "NVTX_EVENTS", need);
    if (rc < 0)
        return rc;
    bool text = has_column(c, "NVTX_EVENTS", "text");
    bool text_id = has_column(c, "NVTX_EVENTS", "textId");
    if (!text && !text_id)
        return 0;
    char sql[768];
    /* eventType 59: push/pop range, 60: start/end range. */
    snprintf(sql, sizeof sql,
             "SELECT n.rowid, n.start, n.end, %s, %s FROM NVTX_EVENTS n %s %s "
             "ORDER BY n.start, n.rowid",
             text && text_id ? "COALESCE(n.text, s.value)" : text ? "n.text" : "s.value",
             text && text_id ? "CASE WHEN n.text IS NULL THEN n.textId END AS textId"
             : text_id ? "n.textId AS textId" : "NULL",
             text_id ? "LEFT JOIN StringIds s ON s.id = n.textId" : "",
             has_column(c, "NVTX_EVENTS", "eventType") ? "WHERE n.eventType IN (59, 60)" : "");
    return each_row(c, "NVTX_EVENTS", sql, nvtx_row, NULL);
}

/* ---- device properties ----------------------------------------------------------- */

static void read_gpu_info(ns_ctx *c, const dev_count *dc)
{
    if (!has_table(c, "TARGET_INFO_GPU"))
        return;
    static const struct {
        const char *col;
        size_t off;
    } cols[] = {
        {"smCount", offsetof(tl_gpu_props, sms)},
        {"threadsPerWarp", offsetof(tl_gpu_props, warp_size)},
        {"maxWarpsPerSm", offsetof(tl_gpu_props, max_warps_per_sm)},
        {"maxBlocksPerSm", offsetof(tl_gpu_props, max_blocks_per_sm)},
        {"maxThreadsPerBlock", offsetof(tl_gpu_props, max_threads_per_block)},
        {"maxRegistersPerBlock", offsetof(tl_gpu_props, regs_per_block)},
        {"maxRegistersPerSm", offsetof(tl_gpu_props, regs_per_sm)},
        {"maxShmemPerBlock", offsetof(tl_gpu_props, smem_per_block)},
        {"maxShmemPerBlockOptin", offsetof(tl_gpu_props, smem_per_block_optin)},
        {"maxShmemPerSm", offsetof(tl_gpu_props, smem_per_sm)},
        {"computeMajor", offsetof(tl_gpu_props, cc_major)},
        {"computeMinor", offsetof(tl_gpu_props, cc_minor)},
    };
    int64_t want = 0;
    size_t best = 0;
    for (int i = 0; i < dc->k; i++)
        if (dc->n[i] > best) {
            best = dc->n[i];
            want = dc->id[i];
        }
    bool has_id = has_column(c, "TARGET_INFO_GPU", "id");
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT * FROM TARGET_INFO_GPU ORDER BY %s LIMIT 1",
             has_id ? "(id != ?) , id" : "rowid");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK)
        return;
    if (has_id)
        sqlite3_bind_int64(st, 1, want);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_finalize(st);
        return;
    }
    tl_gpu_props *g = &c->raw->gpu_props;
    memset(g, 0, sizeof *g);
    int n = sqlite3_column_count(st);
    for (int i = 0; i < n; i++) {
        const char *col = sqlite3_column_name(st, i);
        if (strcmp(col, "name") == 0 && sqlite3_column_type(st, i) == SQLITE_TEXT) {
            snprintf(g->name, sizeof g->name, "%s", (const char *)sqlite3_column_text(st, i));
            continue;
        }
        if (sqlite3_column_type(st, i) != SQLITE_INTEGER)
            continue;
        int64_t v = sqlite3_column_int64(st, i);
        if (v <= 0 || v >= (1LL << 31))
            continue;
        for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
            if (strcmp(col, cols[k].col) == 0)
                *(int *)((char *)g + cols[k].off) = (int)v;
    }
    sqlite3_finalize(st);
    /* Both are below 2^31 but their product need not be: a product that an
     * int cannot hold is left out (0), and tl_gpu_validate refuses the GPU
     * unless its table entry fills it in. */
    int64_t threads = (int64_t)g->max_warps_per_sm * g->warp_size;
    if (threads > 0 && threads <= INT32_MAX)
        g->max_threads_per_sm = (int)threads;
    tl_gpu_complete(g);
    c->raw->has_gpu_props = true;
}

int tl_nsys_from_buffer(tl_trace *t, const char *path, char *buf, size_t len,
                        const tl_trace_options *opts, tl_err *err)
{
    tl_raw raw;
    tl_raw_init(&raw);
    ns_ctx c = {NULL, &raw, path, err};
    int rc = 0;
    if (sqlite3_open_v2(":memory:", &c.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, NULL) !=
        SQLITE_OK) {
        rc = tl_errf(err, TL_EDB, "%s: cannot open an in-memory database", path);
        goto out;
    }
    /* A database in WAL mode (header bytes 18-19 are 2; a Tally results
     * database is one) cannot be opened from memory ("unable to open database
     * file"): read the file as a rollback-journal database, which it is
     * without its -wal file (never read here). buf is the caller's copy. */
    if (len >= 100 && buf[18] == 2 && buf[19] == 2)
        buf[18] = buf[19] = 1;
    if (sqlite3_deserialize(c.db, "main", (unsigned char *)buf, (sqlite3_int64)len,
                            (sqlite3_int64)len, SQLITE_DESERIALIZE_READONLY) != SQLITE_OK) {
        rc = db_err(&c, "cannot read the database");
        goto out;
    }
    /* A corrupt file fails here with "file is not a database" / "malformed". */
    sqlite3_stmt *probe = NULL;
    if (sqlite3_prepare_v2(c.db, "SELECT count(*) FROM sqlite_master", -1, &probe, NULL) !=
            SQLITE_OK ||
        sqlite3_step(probe) != SQLITE_ROW) {
        if (probe)
            sqlite3_finalize(probe);
        rc = db_err(&c, "not a readable SQLite database (truncated or corrupt?)");
        goto out;
    }
    sqlite3_finalize(probe);
    /* Exports hold tables; a view in place of one is refused, for reading
     * one could take without end (WITH RECURSIVE) */
    static const char *const read_here[] = {T_KERNEL, T_RUNTIME, T_MEMCPY, T_MEMSET, T_SYNC,
                                            T_EVENT, "StringIds", "NVTX_EVENTS",
                                            "TARGET_INFO_GPU"};
    for (size_t i = 0; i < sizeof read_here / sizeof *read_here; i++)
        if (has_object(&c, "view", read_here[i])) {
            rc = tl_errf(err, TL_EFORMAT,
                         "%s: %s is a view, not a table as Nsight Systems exports it: not read",
                         path, read_here[i]);
            goto out;
        }
    static const char *const required[] = {T_KERNEL, T_RUNTIME, "StringIds"};
    for (size_t i = 0; i < 3; i++)
        if (!has_table(&c, required[i])) {
            rc = tl_errf(err, TL_EFORMAT,
                         "%s: not an Nsight Systems export with CUDA trace (no table %s; "
                         "export with `nsys export --type sqlite` after `nsys profile -t cuda`)",
                         path, required[i]);
            goto out;
        }
    if ((rc = check_strings(&c)) < 0)
        goto out;
    dev_count dc = {.k = 0};
    if ((rc = read_kernels(&c, &dc)) < 0 || (rc = read_copies(&c, T_MEMCPY, true)) < 0 ||
        (rc = read_copies(&c, T_MEMSET, false)) < 0 || (rc = read_runtime(&c)) < 0 ||
        (rc = read_syncinfo(&c, T_SYNC, false)) < 0 ||
        (rc = read_syncinfo(&c, T_EVENT, true)) < 0 || (rc = read_nvtx(&c)) < 0)
        goto out;
    if (dc.k > 1) {
        rc = tl_trace_one_device(path, dc.k, dc.id, err);
        goto out;
    }
    read_gpu_info(&c, &dc);
    rc = tl_raw_build(&raw, t, path, "nsys", opts, err);
out:
    if (c.db)
        sqlite3_close(c.db);
    tl_raw_close(&raw);
    return rc;
}
