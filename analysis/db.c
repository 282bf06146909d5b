/* Open the results database read-only and check that it holds the Tally
 * results schema (results.h), so that every later query can trust its columns. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "an_internal.h"
#include "tally/results.h"

int tl_an_prepare(tl_analysis *a, const char *sql, sqlite3_stmt **st, tl_err *err)
{
    if (sqlite3_prepare_v2(a->db, sql, -1, st, NULL) != SQLITE_OK) {
        *st = NULL;
        return tl_errf(err, TL_EDB, "%s: query failed: %s", a->path, sqlite3_errmsg(a->db));
    }
    return 0;
}

static bool table_exists(sqlite3 *db, const char *table)
{
    sqlite3_stmt *st;
    bool found = false;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?1",
                           -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

/* Each table with the columns the readers use: preparing a SELECT of them
 * fails, naming the column, when the database is not ours. Of those, the
 * numeric ones: an INTEGER column may hold integers or NULL, a REAL one
 * numbers or NULL. SQLite keeps whatever a hand edit stores ('abc' in
 * latency_ns), and sqlite3_column_int64 and SQL's sums read text as 0, a
 * silent wrong answer; so each table is scanned once at open (a full scan:
 * ~0.06 s for 126k requests) and the first bad value named. */
static const struct {
    const char *table;
    const char *columns;
    bool required;
    const char *integers, *reals; /* comma-separated, without spaces */
} probes[] = {
    {"runs", "run_id, run_key, experiment, kind, policy, load, seed, repetition, status, "
             "duration_ns, gpu",
     true, "run_id,seed,repetition,duration_ns", "load"},
    {"jobs", "run_id, job_id, name, role, priority, slo_ns, alone_run_id", true,
     "run_id,job_id,priority,slo_ns,alone_run_id", ""},
    {"requests", "run_id, job_id, req_id, arrival_ns, start_ns, end_ns, latency_ns, service_ns",
     true, "run_id,job_id,req_id,arrival_ns,start_ns,end_ns,latency_ns,service_ns", ""},
    {"metrics", "run_id, job_id, name, value", true, "run_id,job_id", "value"},
    {"iterations", "run_id, job_id, iter_idx, start_ns, end_ns", false,
     "run_id,job_id,iter_idx,start_ns,end_ns", ""},
    {"kernels", "run_id, job_id, seq, name, stream, start_ns, end_ns, blocks, avg_sms, ptb, "
                "retreated",
     false, "run_id,job_id,seq,stream,start_ns,end_ns,blocks,ptb,retreated", "avg_sms"},
};

/* Appends "typeof(c) NOT IN (allowed) OR " for each column of a comma list. */
static void append_type_tests(char *sql, size_t cap, const char *cols, const char *allowed)
{
    for (const char *c = cols; *c;) {
        size_t n = strcspn(c, ",");
        size_t used = strlen(sql);
        snprintf(sql + used, cap - used, "typeof(%.*s) NOT IN (%s) OR ", (int)n, c, allowed);
        c += n + (c[n] == ',');
    }
}

/* Which listed column of the row at st's columns 1.. is bad; NULL if none. */
static const char *bad_column(sqlite3_stmt *st, const char *ints, const char *reals,
                              int *index, bool *want_int)
{
    int i = 1;
    for (int pass = 0; pass < 2; pass++) {
        const char *cols = pass ? reals : ints;
        for (const char *c = cols; *c; i++) {
            size_t n = strcspn(c, ",");
            int t = sqlite3_column_type(st, i);
            bool ok = t == SQLITE_NULL || t == SQLITE_INTEGER || (pass && t == SQLITE_FLOAT);
            if (!ok) {
                *index = i;
                *want_int = !pass;
                return sqlite3_column_name(st, i);
            }
            c += n + (c[n] == ',');
        }
    }
    return NULL;
}

static int check_numeric_columns(tl_analysis *a, size_t t, tl_err *err)
{
    const char *table = probes[t].table;
    const char *ints = probes[t].integers, *reals = probes[t].reals;
    char sql[2048];
    snprintf(sql, sizeof sql, "SELECT rowid, %s%s%s FROM %s WHERE ", ints, *reals ? "," : "",
             reals, table);
    append_type_tests(sql, sizeof sql, ints, "'integer','null'");
    append_type_tests(sql, sizeof sql, reals, "'integer','real','null'");
    size_t used = strlen(sql);
    snprintf(sql + used, sizeof sql - used, "0 LIMIT 1");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(a->db, sql, -1, &st, NULL) != SQLITE_OK)
        return tl_errf(err, TL_EFORMAT, "%s: table '%s' is not the Tally schema: %s", a->path,
                       table, sqlite3_errmsg(a->db));
    int r = 0, rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        int i = 0;
        bool want_int = true;
        const char *col = bad_column(st, ints, reals, &i, &want_int);
        const char *v = (const char *)sqlite3_column_text(st, i);
        r = tl_errf(err, TL_EFORMAT, "%s: table '%s', row %lld: %s is %s '%.40s' (expected %s)",
                    a->path, table, (long long)sqlite3_column_int64(st, 0), col ? col : "?",
                    sqlite3_column_type(st, i) == SQLITE_FLOAT ? "a fraction"
                    : sqlite3_column_type(st, i) == SQLITE_BLOB ? "a blob" : "text",
                    v ? v : "", want_int ? "an integer or nothing" : "a number or nothing");
    } else if (rc != SQLITE_DONE) {
        r = tl_errf(err, TL_EDB, "%s: reading table '%s': %s", a->path, table,
                    sqlite3_errmsg(a->db));
    }
    sqlite3_finalize(st);
    return r;
}

static int check_schema(tl_analysis *a, tl_err *err)
{
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        if (!table_exists(a->db, probes[i].table)) {
            if (!probes[i].required)
                continue;
            return tl_errf(err, TL_EFORMAT,
                           "%s: not a Tally results database (no table '%s')", a->path,
                           probes[i].table);
        }
        char sql[512];
        snprintf(sql, sizeof sql, "SELECT %s FROM %s LIMIT 0", probes[i].columns,
                 probes[i].table);
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(a->db, sql, -1, &st, NULL) != SQLITE_OK)
            return tl_errf(err, TL_EFORMAT, "%s: table '%s' is not the Tally schema: %s",
                           a->path, probes[i].table, sqlite3_errmsg(a->db));
        sqlite3_finalize(st);
        int r = check_numeric_columns(a, i, err);
        if (r < 0)
            return r;
        if (!strcmp(probes[i].table, "kernels"))
            a->has_kernels = true;
        if (!strcmp(probes[i].table, "iterations"))
            a->has_iterations = true;
    }
    /* The version lives in meta; a database written without meta is accepted
     * as long as its tables match (the probes above). */
    if (table_exists(a->db, "meta")) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(a->db, "SELECT value FROM meta WHERE key='schema_version'", -1,
                               &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW) {
                /* compared as text: 'abc' read as the integer 0 and '1x' as 1 */
                const char *v = (const char *)sqlite3_column_text(st, 0);
                char want[16];
                snprintf(want, sizeof want, "%d", TL_RESULTS_SCHEMA_VERSION);
                if (!v || strcmp(v, want)) {
                    int r = tl_errf(err, TL_EFORMAT,
                                    "%s: meta.schema_version is '%.40s', this version of Tally "
                                    "reads %s", a->path, v ? v : "NULL", want);
                    sqlite3_finalize(st);
                    return r;
                }
            }
            sqlite3_finalize(st);
        }
    }
    return 0;
}

int tl_analysis_open(tl_analysis *a, const char *path, tl_err *err)
{
    memset(a, 0, sizeof *a);
    if (!path || !*path) /* the user's: --db '' is a usage error, not ours */
        return tl_errf(err, TL_EUNKNOWN, "no results database given (an empty file name)");
    if (access(path, R_OK) != 0)
        return tl_errf(err, TL_EIO, "%s: cannot read the results database: %s", path,
                       strerror(errno));
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) /* SQLite said "disk I/O error" */
        return tl_errf(err, TL_EIO, "%s: is a folder, not a results database", path);
    a->path = tl_xstrdup(path);
    if (tl_results_sqlite_open(path, SQLITE_OPEN_READONLY, &a->db) != SQLITE_OK) {
        tl_errf(err, TL_EIO, "%s: cannot open: %s", path,
                a->db ? sqlite3_errmsg(a->db) : "out of memory");
        tl_analysis_close(a);
        return err ? err->code : TL_EIO;
    }
    /* Writers may be busy (a sweep running): wait rather than fail. */
    sqlite3_busy_timeout(a->db, 10000);
    int r = check_schema(a, err);
    if (r < 0) {
        /* A file that is not SQLite at all fails on the first query; a
         * damaged one (truncated, overwritten) wherever the damage is: its
         * content (65), where a truncated file read as "no table 'runs'"
         * and damaged rows exited 73, which says an output failed. */
        int ec = sqlite3_errcode(a->db);
        if (ec == SQLITE_NOTADB)
            r = tl_errf(err, TL_EFORMAT, "%s: not an SQLite database", path);
        else if (ec == SQLITE_CORRUPT)
            r = tl_errf(err, TL_EFORMAT, "%s: a damaged SQLite database (truncated or "
                        "corrupt: %s)", path, sqlite3_errmsg(a->db));
        tl_analysis_close(a);
        return r;
    }
    return 0;
}

void tl_analysis_close(tl_analysis *a)
{
    if (a->db)
        sqlite3_close(a->db);
    free(a->path);
    memset(a, 0, sizeof *a);
}
