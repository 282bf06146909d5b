/* The results database: schema, refusal of unwritable or foreign files, one
 * transaction per run, resume lookup, replace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

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

static void write_one(tl_results *r, const char *key, bool replace, int n_reqs, int expect)
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
                          .system_throughput = 1.0, .system_util = 0.5, .replace = replace };
    tl_err err = { 0 };
    long long id = 0;
    assert_int_equal(tl_results_write_run(r, &rec, &id, &err), expect);
    if (expect == 0)
        assert_true(id > 0);
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
    int rc = tl_results_open(&r, "/nonexistent-dir/results.db", &err);
    assert_int_equal(rc, TL_EDB);
    assert_non_null(strstr(err.msg, "/nonexistent-dir/results.db"));
}

static void test_foreign_database(void **state)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE runs(a, b)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    tl_results r;
    tl_err err = { 0 };
    assert_int_equal(tl_results_open(&r, path, &err), TL_EDB);
    assert_non_null(strstr(err.msg, path));
    /* a text file is no database either */
    FILE *f = fopen(path, "w");
    fputs("hello, not sqlite\n", f);
    fclose(f);
    assert_int_equal(tl_results_open(&r, path, &err), TL_EDB);
    assert_non_null(strstr(err.msg, path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_and_find, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unwritable_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_database, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
