/* The results database: schema, refusal of unwritable or foreign files, one
 * transaction per run, resume lookup, replace. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tally/digest.h"
#include "tally/metrics.h"
#include "tally/results.h"
#include "tally/spec.h"

static char path[64];

static int setup(void **state)
{
    snprintf(path, sizeof path, "/tmp/tally-test-results-%d.db", (int)getpid());
    unlink(path);
    return 0;
}

static int teardown(void **state)
{
    char p[80];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
    return 0;
}

static long long count(tl_results *r, const char *sql)
{
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(r->db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* A run of one inference job, with runs.inputs (NULL: none). */
static void write_inputs(tl_results *r, const char *key, bool replace, int n_reqs, int expect,
                         const char *inputs)
{
    tl_job_conf job = { .name = "bert", .trace_path = "t.json", .role = TL_ROLE_INFERENCE,
                        .arrival = TL_ARRIVAL_POISSON_RATE, .rate = 10, .slo_ns = 5000000 };
    tl_request_rec recs[8];
    for (int i = 0; i < n_reqs; i++)
        recs[i] = (tl_request_rec){ .job = 0, .id = (uint32_t)i, .arrival_ns = i * 1000,
                                    .start_ns = i * 1000 + 10, .end_ns = i * 1000 + 500 };
    tl_job_stats js = { 0 };
    tl_run_result res = { .recs = recs, .n_recs = (size_t)n_reqs, .job_stats = &js, .n_jobs = 1,
                          .window_start_ns = 0, .window_end_ns = 1000000000 };
    tl_job_metrics m = { .count = (uint64_t)n_reqs, .p99_ns = 490, .throughput = n_reqs,
                         .slo_attainment = 1, .throughput_rel = 1, .p99_overhead = 0 };
    long long alone = -1;
    tl_run_record rec = { .run_key = key, .experiment = "x", .kind = "sim", .policy = "mps",
                          .policy_params = "{}", .gpu = "H100", .seed = 1, .load = 0.5,
                          .duration_ns = 1000000000, .config = "{}", .n_jobs = 1, .jobs = &job,
                          .alone_run_ids = &alone, .result = &res, .metrics = &m,
                          .system_throughput = 1.0, .system_util = 0.5, .replace = replace,
                          .inputs = inputs };
    tl_err err = { 0 };
    long long id = 0;
    assert_int_equal(tl_results_write_run(r, &rec, &id, &err), expect);
    if (expect == 0)
        assert_true(id > 0);
}

static void write_one(tl_results *r, const char *key, bool replace, int n_reqs, int expect)
{
    write_inputs(r, key, replace, n_reqs, expect, NULL);
}

static void test_write_and_find(void **state)
{
    tl_results r;
    tl_err err = { 0 };
    assert_int_equal(tl_results_open(&r, path, &err), 0);
    write_one(&r, "k1", false, 3, 0);
    long long id = 0;
    assert_int_equal(tl_results_has_run(&r, "k1", &id, &err), 1);
    assert_int_equal(tl_results_has_run(&r, "k2", NULL, &err), 0);
    assert_int_equal(count(&r, "SELECT count(*) FROM requests"), 3);
    assert_int_equal(count(&r, "SELECT latency_ns FROM requests WHERE req_id=1"), 500);
    assert_int_equal(count(&r, "SELECT service_ns FROM requests WHERE req_id=1"), 490);
    tl_job_metrics m;
    assert_int_equal(tl_results_job_metrics(&r, id, 0, &m, &err), 0);
    assert_true(m.p99_ns == 490);
    /* The same key again fails as a whole: nothing half-written. */
    write_one(&r, "k1", false, 2, TL_EDB);
    assert_int_equal(count(&r, "SELECT count(*) FROM runs"), 1);
    assert_int_equal(count(&r, "SELECT count(*) FROM requests"), 3);
    /* replace swaps the run atomically */
    write_one(&r, "k1", true, 2, 0);
    assert_int_equal(count(&r, "SELECT count(*) FROM runs"), 1);
    assert_int_equal(count(&r, "SELECT count(*) FROM requests"), 2);
    tl_results_close(&r);
    /* reopen: still there */
    assert_int_equal(tl_results_open(&r, path, &err), 0);
    assert_int_equal(tl_results_has_run(&r, "k1", NULL, &err), 1);
    tl_results_close(&r);
}

static void test_unwritable_path(void **state)
{
    tl_results r;
    tl_err err = { 0 };
    /* a folder that cannot be made: a file is in its way (a missing folder is
     * made, as tally-plot makes its --out-dir) */
    char in_the_way[128], below[160];
    snprintf(in_the_way, sizeof in_the_way, "/tmp/tally-test-in-the-way-%d", (int)getpid());
    snprintf(below, sizeof below, "%s/results.db", in_the_way);
    FILE *f = fopen(in_the_way, "w");
    assert_non_null(f);
    fclose(f);
    int rc = tl_results_open(&r, below, &err);
    unlink(in_the_way);
    assert_int_equal(rc, TL_EDB);
    assert_non_null(strstr(err.msg, below));
    assert_non_null(strstr(err.msg, "not a folder"));
}

/* The whole file, to check that a refused database is left byte for byte. */
static char *slurp(const char *p, size_t *n)
{
    FILE *f = fopen(p, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return buf;
}

static bool exists(const char *p)
{
    return access(p, F_OK) == 0;
}

/* tl_results_open on path fails with code, naming path and saying what, and
 * the file is as it was (no table added, no WAL switched on). */
static void refused_untouched(const char *what, int code)
{
    size_t n0, n1;
    char *before = slurp(path, &n0);
    assert_non_null(before);
    tl_results r;
    tl_err err = { 0 };
    assert_int_equal(tl_results_open(&r, path, &err), code);
    assert_null(r.db);
    assert_non_null(strstr(err.msg, path));
    if (!strstr(err.msg, what))
        fail_msg("'%s' not in: %s", what, err.msg);
    char *after = slurp(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    char p[96];
    snprintf(p, sizeof p, "%s-wal", path);
    assert_false(exists(p));
    free(before);
    free(after);
}

static void test_foreign_database(void **state)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE runs(a, b)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    refused_untouched("not a Tally results database", TL_EFORMAT);
    /* another program's database (an Nsight Systems export): named tables, untouched */
    unlink(path);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE TARGET_INFO_GPU(id INTEGER, name TEXT);"
                                      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start, end);"
                                      "INSERT INTO TARGET_INFO_GPU VALUES(0, 'H100');",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    refused_untouched("TARGET_INFO_GPU", TL_EFORMAT);
    assert_int_equal(tl_results_check(path, NULL), TL_EFORMAT);
    /* an older schema version: refused before anything is written */
    unlink(path);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
                                      "INSERT INTO meta VALUES('schema_version', '0');"
                                      "CREATE TABLE runs(run_id INTEGER PRIMARY KEY, run_key TEXT,"
                                      " policy TEXT, status TEXT);",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    refused_untouched("schema version 0, expected 1", TL_EFORMAT);
    /* our version, but a table of ours with other columns */
    unlink(path);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
                                      "INSERT INTO meta VALUES('schema_version', '1');"
                                      "CREATE TABLE runs(run_id INTEGER PRIMARY KEY, x);",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    refused_untouched("table 'runs'", TL_EFORMAT);
    /* a text file is no database either */
    FILE *f = fopen(path, "w");
    fputs("hello, not sqlite, and long enough to fill a database header......................"
          "..............................\n", f);
    fclose(f);
    refused_untouched("not an SQLite database", TL_EFORMAT);
}

static void test_empty_name_and_file(void **state)
{
    tl_results r;
    tl_err err = { 0 };
    /* "" is a temporary database to SQLite: everything written would be lost */
    assert_int_equal(tl_results_open(&r, "", &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "empty"));
    assert_int_equal(tl_exit_code(TL_EUNKNOWN), 64);
    assert_int_equal(tl_results_open(&r, ":memory:", &err), TL_EUNKNOWN);
    assert_int_equal(tl_results_check("", &err), TL_EUNKNOWN);
    /* an empty file is a new database */
    FILE *f = fopen(path, "w");
    fclose(f);
    assert_int_equal(tl_results_open(&r, path, &err), 0);
    write_one(&r, "k1", false, 1, 0);
    tl_results_close(&r);
    assert_int_equal(tl_results_check(path, &err), 0);
    /* an existing database of ours is opened again as it is */
    assert_int_equal(tl_results_open(&r, path, &err), 0);
    assert_int_equal(count(&r, "SELECT count(*) FROM runs"), 1);
    tl_results_close(&r);
}

static void remove_db(const char *p)
{
    static const char *const sfx[] = { "", "-wal", "-shm", "-journal" };
    char q[128];
    for (int i = 0; i < 4; i++) {
        snprintf(q, sizeof q, "%s%s", p, sfx[i]);
        unlink(q);
    }
}

static void test_merge(void **state)
{
    char shard1[96], shard2[96], missing[96], foreign[96];
    snprintf(shard1, sizeof shard1, "%s.s1", path);
    snprintf(shard2, sizeof shard2, "%s.s2", path);
    snprintf(missing, sizeof missing, "%s.none", path);
    snprintf(foreign, sizeof foreign, "%s.nsys", path);
    const char *all[] = { shard1, shard2, missing, foreign };
    for (int i = 0; i < 4; i++)
        remove_db(all[i]);
    tl_results r;
    tl_err err = { 0 };
    assert_int_equal(tl_results_open(&r, shard1, &err), 0);
    write_one(&r, "a", false, 2, 0);
    write_one(&r, "b", false, 3, 0);
    tl_results_close(&r);
    assert_int_equal(tl_results_open(&r, shard2, &err), 0);
    write_one(&r, "b", false, 3, 0);
    write_one(&r, "c", false, 1, 0);
    tl_results_close(&r);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(foreign, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE TARGET_INFO_GPU(id);", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    size_t n1, n2, nf;
    char *b1 = slurp(shard1, &n1), *b2 = slurp(shard2, &n2), *bf = slurp(foreign, &nf);

    assert_int_equal(tl_results_check(shard1, &err), 0);
    assert_int_equal(tl_results_check(missing, &err), TL_EIO);
    assert_non_null(strstr(err.msg, missing));
    assert_false(exists(missing));

    assert_int_equal(tl_results_open(&r, path, &err), 0);
    int n = -1;
    assert_int_equal(tl_results_merge(&r, shard1, &n, &err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(tl_results_merge(&r, shard2, &n, &err), 0);
    assert_int_equal(n, 1); /* b is there already */
    assert_int_equal(count(&r, "SELECT count(*) FROM runs"), 3);
    assert_int_equal(count(&r, "SELECT count(*) FROM requests"), 6);
    /* a missing shard is not created; a foreign one is not written to */
    assert_int_equal(tl_results_merge(&r, missing, &n, &err), TL_EIO);
    assert_non_null(strstr(err.msg, missing));
    assert_false(exists(missing));
    assert_int_equal(tl_results_merge(&r, foreign, &n, &err), TL_EFORMAT);
    assert_non_null(strstr(err.msg, foreign));
    /* the output itself, under another name: a usage error, at once */
    char self[128];
    snprintf(self, sizeof self, "/tmp/../%s", path);
    assert_int_equal(tl_results_merge(&r, self, &n, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "output"));
    assert_int_equal(count(&r, "SELECT count(*) FROM runs"), 3);
    tl_results_close(&r);
    /* the shards are byte for byte what they were */
    size_t m;
    char *a1 = slurp(shard1, &m);
    assert_int_equal(m, n1);
    assert_memory_equal(a1, b1, n1);
    char *a2 = slurp(shard2, &m);
    assert_int_equal(m, n2);
    assert_memory_equal(a2, b2, n2);
    char *af = slurp(foreign, &m);
    assert_int_equal(m, nf);
    assert_memory_equal(af, bf, nf);
    free(a1); free(a2); free(af); free(b1); free(b2); free(bf);

    assert_true(tl_results_same_file(shard1, self + 0) == false);
    assert_true(tl_results_same_file(path, self));
    assert_true(tl_results_same_file(missing, missing));
    assert_false(tl_results_same_file(missing, shard1));
    for (int i = 0; i < 4; i++)
        remove_db(all[i]);
}

/* A copy of src whose bytes [off, off + n) are 0xff, or (n == 0) its first
 * off bytes only. */
static void damaged_copy(const char *src, const char *dst, size_t off, size_t n)
{
    size_t len;
    char *b = slurp(src, &len);
    assert_non_null(b);
    assert_true(off + n <= len);
    if (n)
        memset(b + off, 0xff, n);
    FILE *f = fopen(dst, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n ? len : off, f), n ? len : off);
    fclose(f);
    free(b);
}

/* A damaged database is its content's fault (65): a shard damaged past its
 * schema page passed the checks, and merge failed half-way blaming the output
 * ("OUT: merging SHARD: database disk image is malformed", 73); a truncated
 * one was 'missing' (66) to merge and unwritable (73) to a sweep. Refused
 * before anything is written, naming the file. */
static void test_damaged_database(void **state)
{
    char shard[96], bad[96];
    snprintf(shard, sizeof shard, "%s.s1", path);
    snprintf(bad, sizeof bad, "%s.bad", path);
    remove_db(shard);
    tl_results r;
    tl_err err = { 0 };
    assert_int_equal(tl_results_open(&r, shard, &err), 0);
    write_one(&r, "a", false, 2, 0);
    /* enough requests for pages of their own, far from the schema's */
    assert_int_equal(sqlite3_exec(r.db, "WITH RECURSIVE c(i) AS (SELECT 10 UNION ALL SELECT "
                                        "i + 1 FROM c WHERE i < 20000) INSERT INTO requests "
                                        "SELECT 1, 0, i, i, i, i, 0, 0 FROM c;"
                                        "PRAGMA journal_mode=DELETE;", NULL, NULL, NULL),
                     SQLITE_OK);
    tl_results_close(&r);
    size_t len;
    free(slurp(shard, &len));
    assert_true(len > 200000);
    assert_int_equal(tl_results_open(&r, path, &err), 0);
    write_one(&r, "b", false, 1, 0);
    int n = -1;
    damaged_copy(shard, bad, len / 2, 8192);
    assert_int_equal(tl_results_check(bad, &err), TL_EFORMAT);
    assert_non_null(strstr(err.msg, bad));
    assert_non_null(strstr(err.msg, "a damaged SQLite database"));
    assert_int_equal(tl_results_merge(&r, bad, &n, &err), TL_EFORMAT);
    assert_non_null(strstr(err.msg, bad));
    damaged_copy(shard, bad, 8192, 0);
    assert_int_equal(tl_results_merge(&r, bad, &n, &err), TL_EFORMAT);
    assert_non_null(strstr(err.msg, "a damaged SQLite database (truncated or corrupt"));
    assert_int_equal(count(&r, "SELECT count(*) FROM runs"), 1);
    assert_int_equal(tl_results_merge(&r, shard, &n, &err), 0);
    assert_int_equal(n, 1);
    tl_results_close(&r);
    /* to write into: refused as its content, untouched */
    size_t n0, n1;
    char *before = slurp(bad, &n0);
    assert_int_equal(tl_results_open(&r, bad, &err), TL_EFORMAT);
    assert_non_null(strstr(err.msg, bad));
    char *after = slurp(bad, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);
    remove_db(shard);
    remove_db(bad);
}

/* runs.inputs of key: its text, "NULL" for none, "absent" for no such run. */
static char *inputs_of(tl_results *r, const char *key)
{
    char *v;
    tl_err err = { 0 };
    int have = tl_results_run_inputs(r, key, &v, &err);
    assert_true(have >= 0);
    return have ? (v ? v : strdup("NULL")) : strdup("absent");
}

static void assert_inputs(tl_results *r, const char *key, const char *want)
{
    char *v = inputs_of(r, key);
    assert_string_equal(v, want);
    free(v);
}

/* runs.inputs (the digests of a run's files) came after schema version 1's
 * first databases: one made before it is read as it is (checked, merged:
 * its runs have none), and gets the column when opened for writing, its runs
 * kept. A shard with digests merges them. */
static void test_inputs_column(void **state)
{
    char old[96], shard[96];
    snprintf(old, sizeof old, "%s.old", path);
    snprintf(shard, sizeof shard, "%s.new", path);
    remove_db(old);
    remove_db(shard);
    /* the schema as it was: runs without inputs */
    const char *full = tl_results_schema_sql(), *col = strstr(full, ", inputs TEXT");
    assert_non_null(col);
    char *before = strdup(full);
    memmove(before + (col - full), col + strlen(", inputs TEXT"), strlen(col + strlen(", inputs TEXT")) + 1);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(old, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, before, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "INSERT INTO runs(run_key, kind, policy, status) "
                                      "VALUES('old', 'sim', 'mps', 'done');"
                                      "INSERT INTO jobs(run_id, job_id) VALUES(1, 0);",
                                  NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    free(before);
    size_t n0, n1;
    char *bytes = slurp(old, &n0);
    tl_results r;
    tl_err err = { 0 };
    assert_int_equal(tl_results_check(old, &err), 0);
    /* a shard of runs with digests */
    assert_int_equal(tl_results_open(&r, shard, &err), 0);
    write_inputs(&r, "new", false, 1, 0, "[{\"trace\":\"crc32:00000001:5\"}]");
    tl_results_close(&r);
    /* both merged: the old one's run has none */
    assert_int_equal(tl_results_open(&r, path, &err), 0);
    int n = -1;
    assert_int_equal(tl_results_merge(&r, old, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(tl_results_merge(&r, shard, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_inputs(&r, "old", "NULL");
    assert_inputs(&r, "new", "[{\"trace\":\"crc32:00000001:5\"}]");
    assert_inputs(&r, "none", "absent");
    tl_results_close(&r);
    char *after = slurp(old, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(bytes, after, n0); /* read, never written */
    free(after);
    free(bytes);
    /* opened for writing: the column added, the run kept without digests */
    assert_int_equal(tl_results_open(&r, old, &err), 0);
    assert_inputs(&r, "old", "NULL");
    write_inputs(&r, "next", false, 1, 0, "[]");
    assert_inputs(&r, "next", "[]");
    assert_int_equal(count(&r, "SELECT count(*) FROM runs"), 2);
    tl_results_close(&r);
    assert_int_equal(tl_results_check(old, &err), 0);
    remove_db(old);
    remove_db(shard);
}

/* The record of a run's digests, and its comparison with the files now. */
static void test_inputs_record(void **state)
{
    tl_digest t = { 0x1234abcd, 42 }, a = { 7, 3 }, t2 = { 0x1234abcd, 43 };
    tl_job_inputs now[2] = { { &t, NULL }, { &t, &a } };
    char *rec = tl_inputs_record(now, 2);
    assert_string_equal(rec, "[{\"trace\":\"crc32:1234abcd:42\"},"
                             "{\"arrivals\":\"crc32:00000007:3\",\"trace\":\"crc32:1234abcd:42\"}]");
    int job = -1;
    bool arrivals = true;
    char was[TL_DIGEST_TEXT] = "";
    assert_int_equal(tl_inputs_compare(rec, now, 2, &job, &arrivals, was), TL_INPUTS_SAME);
    /* the second job's trace: one byte longer */
    now[1].trace = &t2;
    assert_int_equal(tl_inputs_compare(rec, now, 2, &job, &arrivals, was), TL_INPUTS_CHANGED);
    assert_int_equal(job, 1);
    assert_false(arrivals);
    assert_string_equal(was, "crc32:1234abcd:42");
    /* its arrival file */
    now[1].trace = &t;
    tl_digest a2 = { 8, 3 };
    now[1].arrivals = &a2;
    assert_int_equal(tl_inputs_compare(rec, now, 2, &job, &arrivals, was), TL_INPUTS_CHANGED);
    assert_int_equal(job, 1);
    assert_true(arrivals);
    assert_string_equal(was, "crc32:00000007:3");
    /* nothing to compare: no record, not ours, digests of another kind */
    assert_int_equal(tl_inputs_compare(NULL, now, 2, &job, &arrivals, was), TL_INPUTS_UNRECORDED);
    assert_int_equal(tl_inputs_compare("x", now, 2, &job, &arrivals, was), TL_INPUTS_UNRECORDED);
    assert_int_equal(tl_inputs_compare("[{\"trace\":\"sha256:00\"},{}]", now, 2, &job, &arrivals,
                                       was), TL_INPUTS_UNRECORDED);
    free(rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_and_find, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unwritable_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_database, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_name_and_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_merge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_database, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inputs_column, setup, teardown),
        cmocka_unit_test(test_inputs_record),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
