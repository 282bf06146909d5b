/* The results database: schema, open, and the one-transaction run writer. */
#include "tally/results.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tally/metrics.h"
#include "tally/spec.h"

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);\n"
    "CREATE TABLE IF NOT EXISTS runs(run_id INTEGER PRIMARY KEY, run_key TEXT UNIQUE NOT NULL,\n"
    "  experiment TEXT, kind TEXT NOT NULL, policy TEXT NOT NULL, policy_params TEXT,\n"
    "  gpu TEXT, driver TEXT, clocks TEXT, seed INTEGER, repetition INTEGER, load REAL,\n"
    "  duration_ns INTEGER, warmup_ns INTEGER, config TEXT, status TEXT, wall_s REAL,\n"
    "  events INTEGER, created TEXT, inputs TEXT);\n"
    "CREATE TABLE IF NOT EXISTS jobs(run_id INTEGER NOT NULL, job_id INTEGER NOT NULL, name TEXT,\n"
    "  trace TEXT, role TEXT, priority INTEGER, arrival TEXT, rate REAL, slo_ns INTEGER,\n"
    "  alone_run_id INTEGER, PRIMARY KEY(run_id, job_id));\n"
    "CREATE TABLE IF NOT EXISTS requests(run_id INTEGER NOT NULL, job_id INTEGER NOT NULL,\n"
    "  req_id INTEGER NOT NULL, arrival_ns INTEGER, start_ns INTEGER, end_ns INTEGER,\n"
    "  latency_ns INTEGER, service_ns INTEGER, PRIMARY KEY(run_id, job_id, req_id));\n"
    "CREATE TABLE IF NOT EXISTS iterations(run_id INTEGER NOT NULL, job_id INTEGER NOT NULL,\n"
    "  iter_idx INTEGER NOT NULL, start_ns INTEGER, end_ns INTEGER,\n"
    "  PRIMARY KEY(run_id, job_id, iter_idx));\n"
    "CREATE TABLE IF NOT EXISTS metrics(run_id INTEGER NOT NULL, job_id INTEGER NOT NULL,\n"
    "  name TEXT NOT NULL, value REAL, PRIMARY KEY(run_id, job_id, name));\n"
    "CREATE TABLE IF NOT EXISTS kernels(run_id INTEGER NOT NULL, job_id INTEGER, seq INTEGER,\n"
    "  name TEXT, stream INTEGER, start_ns INTEGER, end_ns INTEGER, blocks INTEGER,\n"
    "  avg_sms REAL, ptb INTEGER, retreated INTEGER);\n"
    "CREATE INDEX IF NOT EXISTS kernels_run ON kernels(run_id, job_id);\n"
    "INSERT OR IGNORE INTO meta VALUES('schema_version', '1');\n";

const char *tl_results_schema_sql(void)
{
    return schema_sql;
}

static int db_err(tl_results *r, tl_err *err, const char *what)
{
    return tl_errf(err, TL_EDB, "%s: %s: %s", r->path, what, r->db ? sqlite3_errmsg(r->db) : "?");
}

/* ---------- is it ours? ---------- */

/* The tables of the schema above with every column, for the checks made before
 * anything is written. A table may be absent from an existing database of
 * this version (created on open); one that is there must have these columns.
 * Not runs.inputs: it came later, and a database without it is read as it
 * is, and gets it when opened for writing (add_inputs). */
enum { T_META, T_RUNS, T_JOBS, T_REQUESTS, T_ITERATIONS, T_METRICS, T_KERNELS, T_COUNT };
static const struct {
    const char *name, *columns;
} tables[T_COUNT] = {
    [T_META] = { "meta", "key, value" },
    [T_RUNS] = { "runs", "run_id, run_key, experiment, kind, policy, policy_params, gpu, driver, "
                         "clocks, seed, repetition, load, duration_ns, warmup_ns, config, status, "
                         "wall_s, events, created" },
    [T_JOBS] = { "jobs", "run_id, job_id, name, trace, role, priority, arrival, rate, slo_ns, "
                         "alone_run_id" },
    [T_REQUESTS] = { "requests", "run_id, job_id, req_id, arrival_ns, start_ns, end_ns, "
                                 "latency_ns, service_ns" },
    [T_ITERATIONS] = { "iterations", "run_id, job_id, iter_idx, start_ns, end_ns" },
    [T_METRICS] = { "metrics", "run_id, job_id, name, value" },
    [T_KERNELS] = { "kernels", "run_id, job_id, seq, name, stream, start_ns, end_ns, blocks, "
                               "avg_sms, ptb, retreated" },
};

/* An error reading db: TL_EFORMAT when the file is no SQLite database, else
 * io_code (the caller's: TL_EDB for the database it writes, TL_EIO for one
 * it reads). */
static int read_err(sqlite3 *db, const char *path, int io_code, tl_err *err)
{
    int ec = sqlite3_errcode(db);
    if (ec == SQLITE_NOTADB)
        return tl_errf(err, TL_EFORMAT, "%s: not an SQLite database (so not a Tally results "
                       "database)", path);
    /* the file's content, as NOTADB is: not a database that cannot be
     * written (73), nor one that is missing (66) */
    if (ec == SQLITE_CORRUPT)
        return tl_errf(err, TL_EFORMAT, "%s: a damaged SQLite database (truncated or corrupt: "
                       "%s); refused, the file is left as it was", path, sqlite3_errmsg(db));
    return tl_errf(err, io_code, "%s: cannot read the results database: %s", path,
                   sqlite3_errmsg(db));
}

/* Does db (schema "main" or an attached one) hold the Tally results schema of
 * this version? Reads only. *n_objects: how many tables, indexes, views or
 * triggers it has (0: an empty or new file, which is ours to initialise: no
 * error then). *present: bit T_x set for each of our tables found. */
static int check_schema(sqlite3 *db, const char *schema, const char *path, int io_code,
                        int *n_objects, unsigned *present, tl_err *err)
{
    char sql[512];
    sqlite3_stmt *st;
    *present = 0;
    *n_objects = 0;
    snprintf(sql, sizeof sql, "SELECT type, name FROM \"%s\".sqlite_master ORDER BY rowid", schema);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return read_err(db, path, io_code, err);
    char others[160] = "";
    int n_others = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        (*n_objects)++;
        if (!type || strcmp(type, "table") || !name)
            continue;
        bool ours = false;
        for (int t = 0; t < T_COUNT; t++)
            if (!strcmp(name, tables[t].name)) {
                *present |= 1u << t;
                ours = true;
            }
        if (!ours && n_others++ < 3) {
            size_t l = strlen(others);
            snprintf(others + l, sizeof others - l, "%s%s", l ? ", " : "", name);
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return read_err(db, path, io_code, err);
    if (*n_objects == 0)
        return 0;
    char tabs[200] = "";
    if (n_others)
        snprintf(tabs, sizeof tabs, " (it has table%s %s%s)", n_others > 1 ? "s" : "", others,
                 n_others > 3 ? ", ..." : "");
    if (!(*present & (1u << T_META)))
        return tl_errf(err, TL_EFORMAT, "%s: not a Tally results database: no meta table with "
                       "its schema_version%s; refused, the file is left as it was", path, tabs);
    snprintf(sql, sizeof sql, "SELECT value FROM \"%s\".meta WHERE key='schema_version'", schema);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return tl_errf(err, TL_EFORMAT, "%s: not a Tally results database: its meta table is "
                       "not ours (%s)%s", path, sqlite3_errmsg(db), tabs);
    char version[32] = "";
    bool found = (rc = sqlite3_step(st)) == SQLITE_ROW;
    if (found) {
        const char *v = (const char *)sqlite3_column_text(st, 0);
        snprintf(version, sizeof version, "%s", v ? v : "NULL");
    }
    sqlite3_finalize(st);
    if (!found && rc != SQLITE_DONE)
        return read_err(db, path, io_code, err);
    if (!found)
        return tl_errf(err, TL_EFORMAT, "%s: not a Tally results database: no schema_version in "
                       "its meta table%s; refused, the file is left as it was", path, tabs);
    char want[16];
    snprintf(want, sizeof want, "%d", TL_RESULTS_SCHEMA_VERSION);
    if (strcmp(version, want))
        return tl_errf(err, TL_EFORMAT, "%s: a results database of schema version %s, expected %d "
                       "(made by another version of Tally?); refused, the file is left as it was",
                       path, version, TL_RESULTS_SCHEMA_VERSION);
    for (int t = 0; t < T_COUNT; t++) {
        if (!(*present & (1u << t)))
            continue;
        snprintf(sql, sizeof sql, "SELECT %s FROM \"%s\".%s LIMIT 0", tables[t].columns, schema,
                 tables[t].name);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
            return tl_errf(err, TL_EFORMAT, "%s: table '%s' is not the Tally results schema "
                           "version %d: %s", path, tables[t].name, TL_RESULTS_SCHEMA_VERSION,
                           sqlite3_errmsg(db));
        sqlite3_finalize(st);
    }
    return 0;
}

/* Has schema.table a column of this name? */
static bool has_column(sqlite3 *db, const char *schema, const char *table, const char *column)
{
    char sql[160];
    sqlite3_stmt *st;
    snprintf(sql, sizeof sql, "SELECT %s FROM \"%s\".%s LIMIT 0", column, schema, table);
    bool ok = sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK;
    sqlite3_finalize(st);
    return ok;
}

/* runs.inputs (the digests of the files a run read, include/tally/digest.h)
 * in a database made before it: a nullable column at the end, where a new
 * database has it. Nothing else changes, so older Tally builds (whose
 * inserts name their columns) still write and read the file; their runs have
 * no digests, and a resume takes them as it did. */
static int add_inputs(sqlite3 *db, char **msg)
{
    if (has_column(db, "main", "runs", "inputs"))
        return SQLITE_OK;
    return sqlite3_exec(db, "ALTER TABLE runs ADD COLUMN inputs TEXT", NULL, NULL, msg);
}

/* An empty name is a private temporary database to SQLite, ":memory:" one in
 * memory: both vanish at close, with every result written there. */
static int check_name(const char *path, const char *what, tl_err *err)
{
    if (!path || !*path)
        return tl_errf(err, TL_EUNKNOWN, "the %s is an empty file name (SQLite would keep it in a "
                       "temporary file deleted at exit): give a path", what);
    if (!strcmp(path, ":memory:"))
        return tl_errf(err, TL_EUNKNOWN, "%s: the %s would be in memory only, lost at exit: give "
                       "a path", path, what);
    return 0;
}

/* A relative path that happens to start with "file:" must stay a file name:
 * SQLite reads such a name as a URI where the connection takes URIs (the main
 * database here, so that shards can be attached read-only) and where the
 * library was built with SQLITE_USE_URI (Debian's is). malloc'ed. */
static char *plain_name(const char *path)
{
    if (strncmp(path, "file:", 5))
        return tl_xstrdup(path);
    size_t n = strlen(path) + 3;
    char *p = tl_xmalloc(n);
    snprintf(p, n, "./%s", path);
    return p;
}

int tl_results_sqlite_open(const char *path, int flags, sqlite3 **db)
{
    char *name = plain_name(path);
    int rc = sqlite3_open_v2(name, db, flags, NULL);
    free(name);
    return rc;
}

bool tl_results_same_file(const char *a, const char *b)
{
    if (!a || !b)
        return false;
    struct stat sa, sb;
    bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea != eb)
        return false; /* one exists, the other does not */
    /* Neither exists yet: the same name once the folders are resolved. */
    char *ca = tl_results_canonical_path(a), *cb = tl_results_canonical_path(b);
    bool same = ca && cb && !strcmp(ca, cb);
    free(ca);
    free(cb);
    return same;
}

char *tl_results_canonical_path(const char *path)
{
    char *full = realpath(path, NULL);
    if (full)
        return full;
    /* Not there (yet): the resolved folder and the last name. */
    char *copy = tl_xstrdup(path);
    size_t n = strlen(copy);
    while (n > 1 && copy[n - 1] == '/')
        copy[--n] = '\0';
    char *slash = strrchr(copy, '/');
    const char *base = slash ? slash + 1 : copy;
    char *dir = NULL;
    if (!slash)
        dir = realpath(".", NULL);
    else if (slash == copy)
        dir = tl_xstrdup("/");
    else {
        *slash = '\0';
        dir = realpath(copy, NULL);
    }
    char *out = NULL;
    if (dir && *base) {
        size_t m = strlen(dir) + strlen(base) + 2;
        out = tl_xmalloc(m);
        snprintf(out, m, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", base);
    }
    free(dir);
    free(copy);
    return out;
}

int tl_results_open(tl_results *r, const char *path, tl_err *err)
{
    memset(r, 0, sizeof *r);
    int rc = check_name(path, "results database", err);
    if (rc < 0)
        return rc;
    r->path = tl_xstrdup(path);
    /* --db out/quick.db on a fresh checkout: make the folder, as tally-plot does
     * for its --out-dir. */
    tl_err mk = {0};
    if (tl_mkdirs_for(path, &mk) < 0) { /* an output: exit 73, not 66 */
        rc = tl_errf(err, TL_EDB, "%s: cannot create the results database: %s", path, mk.msg);
        tl_results_close(r);
        return rc;
    }
    int orc = tl_results_sqlite_open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                     SQLITE_OPEN_URI, &r->db);
    if (orc != SQLITE_OK) {
        rc = tl_errf(err, TL_EDB, "%s: cannot open the results database for writing: %s", path,
                     r->db ? sqlite3_errmsg(r->db) : "out of memory");
        tl_results_close(r);
        return rc;
    }
    /* Several sweep workers write one database: wait for each other. */
    sqlite3_busy_timeout(r->db, 120000);
    /* Nothing is written before the file is known to be ours or empty: a
     * foreign or older database is refused as it was. */
    int n_objects;
    unsigned present;
    rc = check_schema(r->db, "main", path, TL_EDB, &n_objects, &present, err);
    char *msg = NULL;
    /* The schema in one write transaction, checked again under its lock: a
     * process opening the same new file meanwhile sees all of it or none. */
    if (rc == 0 && sqlite3_exec(r->db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK)
        rc = tl_errf(err, TL_EDB, "%s: cannot write the results database: %s", path,
                     msg ? msg : sqlite3_errmsg(r->db));
    else if (rc == 0) {
        rc = check_schema(r->db, "main", path, TL_EDB, &n_objects, &present, err);
        if (rc == 0 && (sqlite3_exec(r->db, schema_sql, NULL, NULL, &msg) != SQLITE_OK ||
                        add_inputs(r->db, &msg) != SQLITE_OK))
            rc = tl_errf(err, TL_EDB, "%s: cannot create the results schema: %s", path,
                         msg ? msg : "?");
        if (rc == 0 && sqlite3_exec(r->db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK)
            rc = tl_errf(err, TL_EDB, "%s: cannot write the results database: %s", path,
                         msg ? msg : sqlite3_errmsg(r->db));
        if (rc < 0)
            sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
    }
    sqlite3_free(msg);
    msg = NULL;
    /* WAL lets readers (plots) run during a sweep. */
    if (rc == 0 && sqlite3_exec(r->db, "PRAGMA journal_mode=WAL;", NULL, NULL, &msg) != SQLITE_OK)
        rc = tl_errf(err, TL_EDB, "%s: cannot switch the results database to WAL: %s", path,
                     msg ? msg : "?");
    sqlite3_free(msg);
    if (rc < 0)
        tl_results_close(r);
    return rc;
}

/* Every page of db readable and consistent (PRAGMA quick_check: one pass
 * over the file, ~1 s for 1 GB). A shard damaged past its schema page passed
 * the checks above, and merge failed half-way blaming the output ("OUT.db:
 * merging SHARD: database disk image is malformed", exit 73). */
static int check_intact(sqlite3 *db, const char *path, tl_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL) != SQLITE_OK)
        return read_err(db, path, TL_EIO, err);
    int s = sqlite3_step(st);
    const char *v = s == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    int rc = 0;
    if (s != SQLITE_ROW)
        rc = read_err(db, path, TL_EIO, err);
    else if (!v || strcmp(v, "ok"))
        rc = tl_errf(err, TL_EFORMAT, "%s: a damaged SQLite database (quick_check: %.120s); "
                     "refused, the file is left as it was", path, v ? v : "NULL");
    sqlite3_finalize(st);
    return rc;
}

/* A results database to read (a shard): opened read-only, nothing written.
 * *present: our tables found (bits T_x). */
static int check_file(const char *path, unsigned *present, tl_err *err)
{
    int rc = check_name(path, "results database", err);
    if (rc < 0)
        return rc;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return tl_errf(err, TL_EIO, "%s: cannot read the results database: %s", path,
                       strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return tl_errf(err, TL_EFORMAT, "%s: not a results database (not a regular file)", path);
    if (access(path, R_OK) != 0)
        return tl_errf(err, TL_EIO, "%s: cannot read the results database: %s", path,
                       strerror(errno));
    sqlite3 *db = NULL;
    if (tl_results_sqlite_open(path, SQLITE_OPEN_READONLY, &db) != SQLITE_OK) {
        rc = tl_errf(err, TL_EIO, "%s: cannot open the results database: %s", path,
                     db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return rc;
    }
    sqlite3_busy_timeout(db, 10000);
    int n_objects;
    rc = check_schema(db, "main", path, TL_EIO, &n_objects, present, err);
    if (rc == 0 && !n_objects)
        rc = tl_errf(err, TL_EFORMAT, "%s: not a Tally results database (an empty database)",
                     path);
    static const int needed[] = { T_RUNS, T_JOBS, T_REQUESTS, T_METRICS };
    for (size_t i = 0; rc == 0 && i < sizeof needed / sizeof needed[0]; i++)
        if (!(*present & (1u << needed[i])))
            rc = tl_errf(err, TL_EFORMAT, "%s: a Tally results database without its table '%s'",
                         path, tables[needed[i]].name);
    if (rc == 0)
        rc = check_intact(db, path, err);
    sqlite3_close(db);
    return rc;
}

int tl_results_check(const char *path, tl_err *err)
{
    unsigned present;
    return check_file(path, &present, err);
}

void tl_results_close(tl_results *r)
{
    if (r->db)
        sqlite3_close(r->db);
    free(r->path);
    memset(r, 0, sizeof *r);
}

int tl_results_has_run(tl_results *r, const char *run_key, long long *run_id, tl_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "SELECT run_id FROM runs WHERE run_key=?1 AND status='done'", -1,
                           &st, NULL) != SQLITE_OK)
        return db_err(r, err, "query runs");
    sqlite3_bind_text(st, 1, run_key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    int found = rc == SQLITE_ROW;
    if (found && run_id)
        *run_id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_err(r, err, "query runs");
    return found;
}

int tl_results_run_inputs(tl_results *r, const char *run_key, char **inputs, tl_err *err)
{
    *inputs = NULL;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "SELECT inputs FROM runs WHERE run_key=?1 AND status='done'",
                           -1, &st, NULL) != SQLITE_OK)
        return db_err(r, err, "query runs");
    sqlite3_bind_text(st, 1, run_key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    const char *v = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (v)
        *inputs = tl_xstrdup(v);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_err(r, err, "query runs");
    return rc == SQLITE_ROW;
}

int tl_results_begin(tl_results *r, tl_err *err)
{
    /* IMMEDIATE: take the write lock now, so concurrent workers queue here
     * (busy timeout) rather than failing half-way through a run. */
    if (sqlite3_exec(r->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_err(r, err, "begin transaction");
    return 0;
}

int tl_results_commit(tl_results *r, tl_err *err)
{
    if (sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        int rc = db_err(r, err, "commit");
        tl_results_rollback(r);
        return rc;
    }
    return 0;
}

void tl_results_rollback(tl_results *r)
{
    sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
}

int tl_results_set_meta(tl_results *r, const char *key, const char *value, tl_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)", -1, &st,
                           NULL) != SQLITE_OK)
        return db_err(r, err, "meta");
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    sqlite3_finalize(st);
    return s == SQLITE_DONE ? 0 : db_err(r, err, "meta");
}

/* ---------- the run writer ---------- */

static void bind_real_or_null(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

static int step_done(tl_results *r, sqlite3_stmt *st, tl_err *err, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return db_err(r, err, what);
    return 0;
}

static int put_metric(tl_results *r, sqlite3_stmt *st, int job, const char *name, double v, tl_err *err)
{
    if (isnan(v))
        return 0; /* unknown: absent, rather than a NULL to trip over */
    sqlite3_bind_int(st, 2, job);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, v);
    return step_done(r, st, err, "insert metric");
}

static int write_job_metrics(tl_results *r, sqlite3_stmt *st, int job, const tl_job_metrics *m,
                             tl_err *err)
{
    struct { const char *n; double v; } kv[] = {
        { "requests", (double)m->count }, { "p50_ns", m->p50_ns }, { "p90_ns", m->p90_ns },
        { "p95_ns", m->p95_ns }, { "p99_ns", m->p99_ns }, { "p999_ns", m->p999_ns },
        { "mean_latency_ns", m->mean_latency_ns }, { "mean_service_ns", m->mean_service_ns },
        { "slo_attainment", m->slo_attainment }, { "throughput", m->throughput },
        { "throughput_rel", m->throughput_rel }, { "p99_overhead", m->p99_overhead },
        { "util", m->util }, { "turnaround_var_ns2", m->turnaround_var_ns2 },
        { "slow_phases", m->slow_phases },
    };
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
        int rc = put_metric(r, st, job, kv[i].n, kv[i].v, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static const char *arrival_text(const tl_job_conf *j, char *buf, size_t n)
{
    switch (j->arrival) {
    case TL_ARRIVAL_CLOSED: return "closed";
    case TL_ARRIVAL_POISSON_RATE: snprintf(buf, n, "poisson rate %g/s", j->rate); return buf;
    case TL_ARRIVAL_POISSON_LOAD: snprintf(buf, n, "poisson load %g", j->load); return buf;
    case TL_ARRIVAL_FILE: snprintf(buf, n, "file %s", j->arrival_path); return buf;
    }
    return "?";
}

static int insert_all(tl_results *r, const tl_run_record *rec, long long run_id, tl_err *err)
{
    int rc = 0;
    sqlite3_stmt *sj = NULL, *sq = NULL, *si = NULL, *sm = NULL, *sk = NULL;
    if (sqlite3_prepare_v2(r->db, "INSERT INTO jobs VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)", -1, &sj, NULL) ||
        sqlite3_prepare_v2(r->db, "INSERT INTO requests VALUES(?1,?2,?3,?4,?5,?6,?7,?8)", -1, &sq, NULL) ||
        sqlite3_prepare_v2(r->db, "INSERT INTO iterations VALUES(?1,?2,?3,?4,?5)", -1, &si, NULL) ||
        sqlite3_prepare_v2(r->db, "INSERT INTO metrics VALUES(?1,?2,?3,?4)", -1, &sm, NULL) ||
        sqlite3_prepare_v2(r->db, "INSERT INTO kernels VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)", -1,
                           &sk, NULL)) {
        rc = db_err(r, err, "prepare inserts");
        goto out;
    }
    sqlite3_bind_int64(sj, 1, run_id);
    sqlite3_bind_int64(sq, 1, run_id);
    sqlite3_bind_int64(si, 1, run_id);
    sqlite3_bind_int64(sm, 1, run_id);
    sqlite3_bind_int64(sk, 1, run_id);
    for (int j = 0; j < rec->n_jobs && rc == 0; j++) {
        const tl_job_conf *c = &rec->jobs[j];
        char buf[256];
        sqlite3_bind_int(sj, 2, j);
        sqlite3_bind_text(sj, 3, c->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(sj, 4, c->trace_path, -1, SQLITE_STATIC);
        sqlite3_bind_text(sj, 5, tl_role_name(c->role), -1, SQLITE_STATIC);
        sqlite3_bind_int(sj, 6, c->priority);
        sqlite3_bind_text(sj, 7, arrival_text(c, buf, sizeof buf), -1, SQLITE_TRANSIENT);
        bind_real_or_null(sj, 8, c->arrival == TL_ARRIVAL_POISSON_RATE ? c->rate : NAN);
        sqlite3_bind_int64(sj, 9, c->slo_ns);
        if (rec->alone_run_ids && rec->alone_run_ids[j] >= 0)
            sqlite3_bind_int64(sj, 10, rec->alone_run_ids[j]);
        else
            sqlite3_bind_null(sj, 10);
        rc = step_done(r, sj, err, "insert job");
        if (rc == 0)
            rc = write_job_metrics(r, sm, j, &rec->metrics[j], err);
    }
    const tl_run_result *res = rec->result;
    for (size_t i = 0; i < res->n_recs && rc == 0; i++) {
        const tl_request_rec *q = &res->recs[i];
        bool inference = rec->jobs[q->job].role == TL_ROLE_INFERENCE;
        sqlite3_stmt *st = inference ? sq : si;
        sqlite3_bind_int(st, 2, q->job);
        sqlite3_bind_int64(st, 3, q->id);
        if (inference) {
            sqlite3_bind_int64(st, 4, q->arrival_ns);
            sqlite3_bind_int64(st, 5, q->start_ns);
            sqlite3_bind_int64(st, 6, q->end_ns);
            sqlite3_bind_int64(st, 7, q->end_ns - q->arrival_ns);
            sqlite3_bind_int64(st, 8, q->end_ns - q->start_ns);
        } else {
            sqlite3_bind_int64(st, 4, q->start_ns);
            sqlite3_bind_int64(st, 5, q->end_ns);
        }
        rc = step_done(r, st, err, inference ? "insert request" : "insert iteration");
    }
    /* Inference requests are iterations of their trace too. */
    for (size_t i = 0; i < res->n_recs && rc == 0; i++) {
        const tl_request_rec *q = &res->recs[i];
        if (rec->jobs[q->job].role != TL_ROLE_INFERENCE)
            continue;
        sqlite3_bind_int(si, 2, q->job);
        sqlite3_bind_int64(si, 3, q->id);
        sqlite3_bind_int64(si, 4, q->start_ns);
        sqlite3_bind_int64(si, 5, q->end_ns);
        rc = step_done(r, si, err, "insert iteration");
    }
    for (size_t i = 0; i < res->n_kernels && rc == 0; i++) {
        const tl_kernel_record *k = &res->kernels[i];
        const tl_trace *t = NULL;
        (void)t;
        sqlite3_bind_int(sk, 2, k->job);
        sqlite3_bind_int64(sk, 3, (sqlite3_int64)i);
        sqlite3_bind_text(sk, 4, k->name ? k->name : "", -1, SQLITE_STATIC);
        sqlite3_bind_int(sk, 5, k->stream);
        sqlite3_bind_int64(sk, 6, k->start_ns);
        sqlite3_bind_int64(sk, 7, k->end_ns);
        sqlite3_bind_int64(sk, 8, (sqlite3_int64)k->blocks);
        sqlite3_bind_double(sk, 9, k->avg_sms);
        sqlite3_bind_int(sk, 10, k->ptb);
        sqlite3_bind_int(sk, 11, k->retreated);
        rc = step_done(r, sk, err, "insert kernel");
    }
    if (rc == 0)
        rc = put_metric(r, sm, -1, "system_throughput", rec->system_throughput, err);
    if (rc == 0)
        rc = put_metric(r, sm, -1, "util", rec->system_util, err);
    for (int i = 0; i < rec->n_device_metrics && rc == 0; i++)
        rc = put_metric(r, sm, -1, rec->device_metric_names[i], rec->device_metric_values[i], err);
out:
    sqlite3_finalize(sj);
    sqlite3_finalize(sq);
    sqlite3_finalize(si);
    sqlite3_finalize(sm);
    sqlite3_finalize(sk);
    return rc;
}

int tl_results_write_run(tl_results *r, const tl_run_record *rec, long long *run_id, tl_err *err)
{
    int rc = tl_results_begin(r, err);
    if (rc < 0)
        return rc;
    if (rec->replace) {
        static const char *const del[] = {
            "DELETE FROM jobs WHERE run_id IN (SELECT run_id FROM runs WHERE run_key=?1)",
            "DELETE FROM requests WHERE run_id IN (SELECT run_id FROM runs WHERE run_key=?1)",
            "DELETE FROM iterations WHERE run_id IN (SELECT run_id FROM runs WHERE run_key=?1)",
            "DELETE FROM metrics WHERE run_id IN (SELECT run_id FROM runs WHERE run_key=?1)",
            "DELETE FROM kernels WHERE run_id IN (SELECT run_id FROM runs WHERE run_key=?1)",
            "DELETE FROM runs WHERE run_key=?1",
        };
        for (size_t i = 0; i < sizeof del / sizeof del[0]; i++) {
            sqlite3_stmt *d;
            int ok = sqlite3_prepare_v2(r->db, del[i], -1, &d, NULL) == SQLITE_OK;
            if (ok) {
                sqlite3_bind_text(d, 1, rec->run_key, -1, SQLITE_STATIC);
                ok = sqlite3_step(d) == SQLITE_DONE;
            }
            sqlite3_finalize(d);
            if (!ok) {
                rc = db_err(r, err, "replace run");
                tl_results_rollback(r);
                return rc;
            }
        }
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db,
                           "INSERT INTO runs(run_key, experiment, kind, policy, policy_params, gpu, "
                           "driver, clocks, seed, repetition, load, duration_ns, warmup_ns, config, "
                           "status, wall_s, events, created, inputs) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,"
                           "?9,?10,?11,?12,?13,?14,'done',?15,?16,?17,?18)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = db_err(r, err, "prepare run insert");
        tl_results_rollback(r);
        return rc;
    }
    char created[32];
    time_t now = time(NULL);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    sqlite3_bind_text(st, 1, rec->run_key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, rec->experiment, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, rec->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, rec->policy, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, rec->policy_params, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, rec->gpu, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, rec->driver, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, rec->clocks, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)rec->seed);
    sqlite3_bind_int(st, 10, rec->repetition);
    bind_real_or_null(st, 11, rec->load);
    sqlite3_bind_int64(st, 12, rec->duration_ns);
    sqlite3_bind_int64(st, 13, rec->warmup_ns);
    sqlite3_bind_text(st, 14, rec->config, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 15, rec->wall_s);
    sqlite3_bind_int64(st, 16, (sqlite3_int64)rec->events);
    sqlite3_bind_text(st, 17, created, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 18, rec->inputs, -1, SQLITE_STATIC); /* NULL: none */
    int s = sqlite3_step(st);
    sqlite3_finalize(st);
    if (s != SQLITE_DONE) {
        rc = db_err(r, err, "insert run");
        tl_results_rollback(r);
        return rc;
    }
    long long id = sqlite3_last_insert_rowid(r->db);
    rc = insert_all(r, rec, id, err);
    if (rc < 0) {
        tl_results_rollback(r);
        return rc;
    }
    rc = tl_results_commit(r, err);
    if (rc == 0 && run_id)
        *run_id = id;
    return rc;
}

int tl_results_job_metrics(tl_results *r, long long run_id, int job_id, tl_job_metrics *m,
                           tl_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "SELECT name, value FROM metrics WHERE run_id=?1 AND job_id=?2",
                           -1, &st, NULL) != SQLITE_OK)
        return db_err(r, err, "query metrics");
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int(st, 2, job_id);
    memset(m, 0, sizeof *m);
    m->slo_attainment = m->throughput_rel = m->p99_overhead = NAN;
    int found = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *n = (const char *)sqlite3_column_text(st, 0);
        double v = sqlite3_column_double(st, 1);
        found = 1;
        if (!strcmp(n, "p99_ns")) m->p99_ns = v;
        else if (!strcmp(n, "p50_ns")) m->p50_ns = v;
        else if (!strcmp(n, "throughput")) m->throughput = v;
        else if (!strcmp(n, "requests")) m->count = (uint64_t)v;
        else if (!strcmp(n, "util")) m->util = v;
    }
    sqlite3_finalize(st);
    if (!found)
        return tl_errf(err, TL_EDB, "%s: run %lld has no metrics for job %d", r->path, run_id, job_id);
    return 0;
}

/* "file:" URI of an existing file, opened read-only (malloc'ed; NULL if the
 * path cannot be resolved). Every byte but [A-Za-z0-9/._~-] is %-escaped. */
static char *readonly_uri(const char *path)
{
    char *full = realpath(path, NULL);
    if (!full)
        return NULL;
    size_t n = strlen(full);
    char *u = tl_xmalloc(n * 3 + 32), *o = u;
    o += sprintf(o, "file:");
    for (const unsigned char *p = (const unsigned char *)full; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("/._~-", *p))
            *o++ = (char)*p;
        else
            o += sprintf(o, "%%%02X", *p);
    }
    strcpy(o, "?mode=ro");
    free(full);
    return u;
}

/* Attach another file as schema 'src', read-only, by its resolved path as a URI
 * (r's connection takes URIs: a relative name starting with "file:" must stay a
 * file name, and mode=ro keeps the file from ever being written). */
int tl_results_attach_src(tl_results *r, const char *path, tl_err *err)
{
    char *uri = readonly_uri(path);
    if (!uri)
        return tl_errf(err, TL_EIO, "%s: cannot resolve the path: %s", path, strerror(errno));
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "ATTACH ?1 AS src", -1, &st, NULL) != SQLITE_OK) {
        free(uri);
        return db_err(r, err, "attach");
    }
    sqlite3_bind_text(st, 1, uri, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    sqlite3_finalize(st);
    free(uri);
    if (s != SQLITE_DONE)
        return tl_errf(err, TL_EIO, "%s: cannot attach %s: %s", r->path, path,
                       sqlite3_errmsg(r->db));
    return 0;
}

/* Merge the finished runs of another results database (a sweep shard) into r.
 * Runs whose key r already has are skipped; run ids are renumbered and every
 * reference (child rows, alone_run_id) follows. One transaction. The shard is
 * checked first and attached read-only: it is never written. */
int tl_results_merge(tl_results *r, const char *shard, int *merged, tl_err *err)
{
    unsigned present;
    int rc = check_file(shard, &present, err);
    if (rc < 0)
        return rc;
    if (tl_results_same_file(shard, r->path))
        return tl_errf(err, TL_EUNKNOWN, "%s: a shard is the output database %s", shard, r->path);
    rc = tl_results_attach_src(r, shard, err);
    if (rc < 0)
        return rc;
    /* Checked again as attached (the file could have changed meanwhile). */
    int n_objects;
    unsigned seen;
    rc = check_schema(r->db, "src", shard, TL_EIO, &n_objects, &seen, err);
    if (rc == 0 && seen != present)
        rc = tl_errf(err, TL_EIO, "%s: the shard changed while it was being merged", shard);
    /* runs.inputs: NULL for the runs of a shard made before it. */
    static const char runs_sql[] =
        "CREATE TEMP TABLE newruns AS SELECT run_id AS old_id, run_key FROM src.runs "
        "  WHERE status='done' AND run_key NOT IN (SELECT run_key FROM main.runs);"
        "INSERT INTO main.runs(run_key, experiment, kind, policy, policy_params, gpu, driver, clocks,"
        "  seed, repetition, load, duration_ns, warmup_ns, config, status, wall_s, events, created,"
        "  inputs) SELECT run_key, experiment, kind, policy, policy_params, gpu, driver, clocks, seed,"
        "  repetition, load, duration_ns, warmup_ns, config, status, wall_s, events, created, %s"
        "  FROM src.runs WHERE run_id IN (SELECT old_id FROM newruns) ORDER BY run_id;";
    char runs_copy[sizeof runs_sql + 16];
    snprintf(runs_copy, sizeof runs_copy, runs_sql,
             rc == 0 && has_column(r->db, "src", "runs", "inputs") ? "inputs" : "NULL");
    static const char sql[] =
        "CREATE TEMP TABLE idmap AS SELECT n.old_id, m.run_id AS new_id FROM newruns n"
        "  JOIN main.runs m ON m.run_key = n.run_key;"
        "CREATE TEMP TABLE keymap AS SELECT s.run_id AS old_id, m.run_id AS new_id FROM src.runs s"
        "  JOIN main.runs m ON m.run_key = s.run_key;"
        "INSERT INTO main.jobs SELECT i.new_id, j.job_id, j.name, j.trace, j.role, j.priority,"
        "  j.arrival, j.rate, j.slo_ns, (SELECT k.new_id FROM keymap k WHERE k.old_id = j.alone_run_id)"
        "  FROM src.jobs j JOIN idmap i ON j.run_id = i.old_id;"
        "INSERT INTO main.requests SELECT i.new_id, q.job_id, q.req_id, q.arrival_ns, q.start_ns,"
        "  q.end_ns, q.latency_ns, q.service_ns FROM src.requests q JOIN idmap i ON q.run_id = i.old_id;"
        "INSERT INTO main.metrics SELECT i.new_id, x.job_id, x.name, x.value"
        "  FROM src.metrics x JOIN idmap i ON x.run_id = i.old_id;";
    /* Tables a shard may lack (none of its runs had any). */
    static const char iterations_sql[] =
        "INSERT INTO main.iterations SELECT i.new_id, t.job_id, t.iter_idx, t.start_ns, t.end_ns"
        "  FROM src.iterations t JOIN idmap i ON t.run_id = i.old_id;";
    static const char kernels_sql[] =
        "INSERT INTO main.kernels SELECT i.new_id, k.job_id, k.seq, k.name, k.stream, k.start_ns,"
        "  k.end_ns, k.blocks, k.avg_sms, k.ptb, k.retreated FROM src.kernels k"
        "  JOIN idmap i ON k.run_id = i.old_id;";
    if (rc == 0)
        rc = tl_results_begin(r, err);
    if (rc == 0) {
        char *msg = NULL;
        if (sqlite3_exec(r->db, runs_copy, NULL, NULL, &msg) != SQLITE_OK ||
            sqlite3_exec(r->db, sql, NULL, NULL, &msg) != SQLITE_OK ||
            ((present & (1u << T_ITERATIONS)) &&
             sqlite3_exec(r->db, iterations_sql, NULL, NULL, &msg) != SQLITE_OK) ||
            ((present & (1u << T_KERNELS)) &&
             sqlite3_exec(r->db, kernels_sql, NULL, NULL, &msg) != SQLITE_OK)) {
            rc = tl_errf(err, TL_EDB, "%s: merging %s: %s", r->path, shard, msg ? msg : "?");
            sqlite3_free(msg);
            tl_results_rollback(r);
        } else {
            sqlite3_stmt *st;
            if (merged && sqlite3_prepare_v2(r->db, "SELECT count(*) FROM temp.idmap", -1, &st, NULL) == SQLITE_OK) {
                if (sqlite3_step(st) == SQLITE_ROW)
                    *merged = sqlite3_column_int(st, 0);
                sqlite3_finalize(st);
            }
            rc = tl_results_commit(r, err);
        }
    }
    sqlite3_exec(r->db, "DROP TABLE IF EXISTS temp.newruns; DROP TABLE IF EXISTS temp.idmap;"
                        "DROP TABLE IF EXISTS temp.keymap; DETACH src;", NULL, NULL, NULL);
    return rc;
}
