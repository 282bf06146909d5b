/* The calibration cache in SQLite (schema in backend.h). Measured points are
 * kept per kernel shape so that later targets of the same shape start from
 * them; answered targets are kept under the full key for direct reuse. */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"
#include "synth_version.h"
#include "tally/results.h"

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS calib_point(gpu TEXT NOT NULL, synth_version INTEGER NOT NULL,"
    " kind INTEGER NOT NULL, blocks INTEGER NOT NULL, bx INTEGER NOT NULL, by INTEGER NOT NULL,"
    " bz INTEGER NOT NULL, smem INTEGER NOT NULL, variant INTEGER NOT NULL, iters INTEGER NOT NULL,"
    " ns INTEGER NOT NULL,"
    " PRIMARY KEY(gpu, synth_version, kind, blocks, bx, by, bz, smem, variant, iters));"
    "CREATE TABLE IF NOT EXISTS calib(gpu TEXT NOT NULL, synth_version INTEGER NOT NULL,"
    " kind INTEGER NOT NULL, blocks INTEGER NOT NULL, bx INTEGER NOT NULL, by INTEGER NOT NULL,"
    " bz INTEGER NOT NULL, smem INTEGER NOT NULL, variant INTEGER NOT NULL,"
    " target_ns INTEGER NOT NULL, iters INTEGER NOT NULL, measured_ns INTEGER NOT NULL,"
    " PRIMARY KEY(gpu, synth_version, kind, blocks, bx, by, bz, smem, variant, target_ns));"
    /* The same two tables for kernels calibrated as CUDA-graph nodes (key.node):
     * a node's blocks end more cheaply than a launch's (synth.cu, node_exit),
     * so the same work units take less time inside a graph. Tables of their
     * own keep caches written before them valid. */
    "CREATE TABLE IF NOT EXISTS calib_node_point(gpu TEXT NOT NULL, synth_version INTEGER NOT NULL,"
    " kind INTEGER NOT NULL, blocks INTEGER NOT NULL, bx INTEGER NOT NULL, by INTEGER NOT NULL,"
    " bz INTEGER NOT NULL, smem INTEGER NOT NULL, variant INTEGER NOT NULL, iters INTEGER NOT NULL,"
    " ns INTEGER NOT NULL,"
    " PRIMARY KEY(gpu, synth_version, kind, blocks, bx, by, bz, smem, variant, iters));"
    "CREATE TABLE IF NOT EXISTS calib_node(gpu TEXT NOT NULL, synth_version INTEGER NOT NULL,"
    " kind INTEGER NOT NULL, blocks INTEGER NOT NULL, bx INTEGER NOT NULL, by INTEGER NOT NULL,"
    " bz INTEGER NOT NULL, smem INTEGER NOT NULL, variant INTEGER NOT NULL,"
    " target_ns INTEGER NOT NULL, iters INTEGER NOT NULL, measured_ns INTEGER NOT NULL,"
    " PRIMARY KEY(gpu, synth_version, kind, blocks, bx, by, bz, smem, variant, target_ns));"
    "CREATE TABLE IF NOT EXISTS measure(gpu TEXT NOT NULL, synth_version INTEGER NOT NULL,"
    " key TEXT NOT NULL, ns INTEGER NOT NULL, PRIMARY KEY(gpu, synth_version, key));";

char *tl_calib_default_path(void)
{
    char buf[1024];
    const char *e = getenv("TALLY_CALIB_DB");
    if (e && *e) return tl_xstrdup(e);
    if ((e = getenv("XDG_CACHE_HOME")) && *e)
        snprintf(buf, sizeof buf, "%s/tally/calib.sqlite", e);
    else if ((e = getenv("HOME")) && *e)
        snprintf(buf, sizeof buf, "%s/.cache/tally/calib.sqlite", e);
    else
        snprintf(buf, sizeof buf, "tally-calib.sqlite");
    return tl_xstrdup(buf);
}

int tl_calib_db_open(tl_calib_db *c, const char *path, tl_err *err)
{
    memset(c, 0, sizeof *c);
    if (!path || !*path) return tl_errf(err, TL_EINVAL, "calibration cache: empty path");
    tl_err mk = {0};
    if (tl_mkdirs_for(path, &mk) < 0)
        return tl_errf(err, TL_EDB, "%s: cannot open calibration cache: %s", path, mk.msg);
    sqlite3 *db = NULL;
    if (tl_results_sqlite_open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &db) != SQLITE_OK) {
        int r = tl_errf(err, TL_EDB, "%s: cannot open calibration cache: %s", path,
                        db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return r;
    }
    sqlite3_busy_timeout(db, 10000);
    /* A cache: losing the last rows in a crash costs a re-measurement, while
     * a synchronous commit per row would stall runs that measure lazily. */
    sqlite3_exec(db, "PRAGMA synchronous=OFF", NULL, NULL, NULL);
    char *msg = NULL;
    if (sqlite3_exec(db, schema, NULL, NULL, &msg) != SQLITE_OK) {
        int r = tl_errf(err, TL_EDB, "%s: calibration cache schema: %s", path, msg ? msg : "?");
        sqlite3_free(msg);
        sqlite3_close(db);
        return r;
    }
    c->db = db;
    c->path = tl_xstrdup(path);
    return 0;
}

void tl_calib_db_close(tl_calib_db *c)
{
    if (!c) return;
    if (c->db) sqlite3_close((sqlite3 *)c->db);
    free(c->path);
    memset(c, 0, sizeof *c);
}

static void bind_key(sqlite3_stmt *st, const tl_calib_key *k)
{
    sqlite3_bind_text(st, 1, k->gpu ? k->gpu : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, TL_SYNTH_VERSION);
    sqlite3_bind_int(st, 3, k->kind);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)k->blocks);
    sqlite3_bind_int(st, 5, (int)k->block[0]);
    sqlite3_bind_int(st, 6, (int)k->block[1]);
    sqlite3_bind_int(st, 7, (int)k->block[2]);
    sqlite3_bind_int(st, 8, (int)k->smem);
    sqlite3_bind_int(st, 9, k->variant);
}

#define KEY_WHERE "gpu=?1 AND synth_version=?2 AND kind=?3 AND blocks=?4 AND bx=?5 AND by=?6 AND bz=?7 AND smem=?8 AND variant=?9"

static int prep(tl_calib_db *c, const char *sql, sqlite3_stmt **st, tl_err *err)
{
    if (!c->db) return tl_errf(err, TL_EINVAL, "calibration cache: not open");
    if (sqlite3_prepare_v2((sqlite3 *)c->db, sql, -1, st, NULL) != SQLITE_OK)
        return tl_errf(err, TL_EDB, "%s: %s", c->path, sqlite3_errmsg((sqlite3 *)c->db));
    return 0;
}

/* fmt with its "%s" (each table name's) replaced by the key's table suffix:
 * "" or "_node". */
static int prep_key(tl_calib_db *c, const tl_calib_key *k, const char *fmt, sqlite3_stmt **st, tl_err *err)
{
    char sql[512];
    snprintf(sql, sizeof sql, fmt, k->node ? "_node" : "");
    return prep(c, sql, st, err);
}

int tl_calib_db_load_curve(tl_calib_db *c, const tl_calib_key *k, tl_calib_curve *out, tl_err *err)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st;
    int r = prep_key(c, k, "SELECT iters, ns FROM calib%s_point WHERE " KEY_WHERE " ORDER BY iters", &st, err);
    if (r) return r;
    bind_key(st, k);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        tl_calib_curve_add(out, (uint32_t)sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), 0);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return tl_errf(err, TL_EDB, "%s: %s", c->path, sqlite3_errmsg((sqlite3 *)c->db));
    return 0;
}

int tl_calib_db_add_point(tl_calib_db *c, const tl_calib_key *k, uint32_t iters, tl_ns ns, tl_err *err)
{
    sqlite3_stmt *st;
    int r = prep_key(c, k, "INSERT OR REPLACE INTO calib%s_point(gpu, synth_version, kind, blocks, bx, by, bz,"
                    " smem, variant, iters, ns) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)", &st, err);
    if (r) return r;
    bind_key(st, k);
    sqlite3_bind_int64(st, 10, iters);
    sqlite3_bind_int64(st, 11, ns);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return tl_errf(err, TL_EDB, "%s: %s", c->path, sqlite3_errmsg((sqlite3 *)c->db));
    return 0;
}

int tl_calib_db_get(tl_calib_db *c, const tl_calib_key *k, tl_ns target, uint32_t *iters,
                    tl_ns *measured, bool *found, tl_err *err)
{
    *found = false;
    sqlite3_stmt *st;
    int r = prep_key(c, k, "SELECT iters, measured_ns FROM calib%s WHERE " KEY_WHERE " AND target_ns=?10", &st, err);
    if (r) return r;
    bind_key(st, k);
    sqlite3_bind_int64(st, 10, target);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *iters = (uint32_t)sqlite3_column_int64(st, 0);
        *measured = sqlite3_column_int64(st, 1);
        *found = true;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return tl_errf(err, TL_EDB, "%s: %s", c->path, sqlite3_errmsg((sqlite3 *)c->db));
    return 0;
}

int tl_calib_db_put(tl_calib_db *c, const tl_calib_key *k, tl_ns target, uint32_t iters,
                    tl_ns measured, tl_err *err)
{
    sqlite3_stmt *st;
    int r = prep_key(c, k, "INSERT OR REPLACE INTO calib%s(gpu, synth_version, kind, blocks, bx, by, bz, smem,"
                    " variant, target_ns, iters, measured_ns) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
                 &st, err);
    if (r) return r;
    bind_key(st, k);
    sqlite3_bind_int64(st, 10, target);
    sqlite3_bind_int64(st, 11, iters);
    sqlite3_bind_int64(st, 12, measured);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return tl_errf(err, TL_EDB, "%s: %s", c->path, sqlite3_errmsg((sqlite3 *)c->db));
    return 0;
}

int tl_calib_db_begin(tl_calib_db *c)
{
    return c->db && sqlite3_exec((sqlite3 *)c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK ? 0 : TL_EDB;
}

int tl_calib_db_commit(tl_calib_db *c)
{
    return c->db && sqlite3_exec((sqlite3 *)c->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : TL_EDB;
}

static int each_table(tl_calib_db *c, const char *gpu, int node, tl_calib_row_cb cb, void *arg, tl_err *err)
{
    sqlite3_stmt *st;
    tl_calib_key nk = {.node = node};
    int r = prep_key(c, &nk, "SELECT kind, blocks, bx, by, bz, smem, variant, target_ns, iters, measured_ns"
                             " FROM calib%s WHERE gpu=?1 AND synth_version=?2", &st, err);
    if (r) return r;
    sqlite3_bind_text(st, 1, gpu ? gpu : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, TL_SYNTH_VERSION);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        tl_calib_key k = {gpu, sqlite3_column_int(st, 0), sqlite3_column_int(st, 6),
                          (uint64_t)sqlite3_column_int64(st, 1),
                          {(uint32_t)sqlite3_column_int(st, 2), (uint32_t)sqlite3_column_int(st, 3),
                           (uint32_t)sqlite3_column_int(st, 4)},
                          (uint32_t)sqlite3_column_int(st, 5), node};
        cb(arg, &k, sqlite3_column_int64(st, 7), (uint32_t)sqlite3_column_int64(st, 8),
           sqlite3_column_int64(st, 9));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return tl_errf(err, TL_EDB, "%s: %s", c->path, sqlite3_errmsg((sqlite3 *)c->db));
    return 0;
}

int tl_calib_db_each(tl_calib_db *c, const char *gpu, tl_calib_row_cb cb, void *arg, tl_err *err)
{
    int r = each_table(c, gpu, 0, cb, arg, err);
    return r ? r : each_table(c, gpu, 1, cb, arg, err);
}

int tl_calib_db_measure_each(tl_calib_db *c, const char *gpu, tl_measure_row_cb cb, void *arg, tl_err *err)
{
    sqlite3_stmt *st;
    int r = prep(c, "SELECT key, ns FROM measure WHERE gpu=?1 AND synth_version=?2", &st, err);
    if (r) return r;
    sqlite3_bind_text(st, 1, gpu ? gpu : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, TL_SYNTH_VERSION);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        cb(arg, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1));
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return tl_errf(err, TL_EDB, "%s: %s", c->path, sqlite3_errmsg((sqlite3 *)c->db));
    return 0;
}

int tl_calib_db_measure_put(tl_calib_db *c, const char *gpu, const char *key, tl_ns ns, tl_err *err)
{
    sqlite3_stmt *st;
    int r = prep(c, "INSERT OR REPLACE INTO measure(gpu, synth_version, key, ns) VALUES(?1,?2,?3,?4)", &st, err);
    if (r) return r;
    sqlite3_bind_text(st, 1, gpu ? gpu : "", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, TL_SYNTH_VERSION);
    sqlite3_bind_text(st, 3, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, ns);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return tl_errf(err, TL_EDB, "%s: %s", c->path, sqlite3_errmsg((sqlite3 *)c->db));
    return 0;
}
