/* Validation (analysis/validate*.c): a results database built here by hand
 * holds simulated and hardware runs of one experiment; matching by run config,
 * the means and errors per policy and job, the rankings, the Markdown/CSV
 * output and the combined database the plot reads are checked against values
 * worked out below. Last, the simulator validated against itself (a sweep on
 * the simulated device written as kind 'hw', from a bundled-trace spec) must
 * show zero error and identical rankings. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include <cmocka.h>

#include "tally/results.h"
#include "tally/sim.h"
#include "tally/sweep.h"
#include "tally/validate.h"
#include "test_db.h"

static char tmpdir[64];
static char db_path[128];

static char *path_in(const char *name)
{
    static char buf[8][256];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 256, "%s/%s", tmpdir, name);
    return p;
}

/* ---- the hand-built database ----------------------------------------------------
 * Experiment exp: bert (inference, priority 0) + resnet (training, priority 1).
 * Simulated runs (gpu "H100", traces under /a/):
 *   1 alone bert   rep 0  p50 4 ms, p99 8 ms, 50 req/s
 *   2 alone resnet rep 0  p50 100 ms, p99 110 ms, 10 it/s
 *   3 tally rep 0         bert p99 8.8 ms (overhead NOT stored: 0.10 from run 1),
 *                         resnet 8 it/s, system 1.8
 *   4 tally rep 1         bert p99 9.6 ms, overhead 0.20; resnet 6 it/s; system 1.6
 *   5 mps   rep 0         bert p99 16 ms, overhead 1.0; resnet 10 it/s; system 2.0
 *   6 tgs   rep 0         bert p99 12 ms, overhead 0.5; resnet 4 it/s; system 1.4
 *   7 tally rep 0, seed 99: no hardware twin
 * Hardware runs (gpu "NVIDIA H100 80GB HBM3", traces under /elsewhere/b/):
 *   8 alone bert    p50 5 ms, p99 10 ms, 50 req/s
 *   9 alone resnet  8 it/s
 *  10 tally rep 0   bert p99 11 ms, overhead 0.1; resnet 6.4 it/s; system 1.8
 *  11 tally rep 1   bert p99 12 ms, overhead 0.2; resnet 5.6 it/s; system 1.7
 *  12 mps           bert p99 30 ms, overhead 2.0; resnet 8 it/s; system 2.0
 *  13 tgs           bert p99 13 ms, overhead 0.3; resnet 3.2 it/s; system 1.9
 *  14 time-slicing: no simulated twin
 * => tally: bert p99 sim 9.2 hw 11.5 (err -20%), overhead 0.15 both; resnet 7 vs 6
 *    it/s (+16.7%). p99-overhead order: tally, tgs, mps in both (tau 1); system
 *    throughput: sim mps, tally, tgs; hw mps, tgs, tally (tau 1/3). */

static char *config(const char *kind, const char *gpu, const char *dir, const char *policy,
                    long long seed, int rep, int which /* 0 both, 1 bert, 2 resnet */)
{
    json_t *jobs = json_array();
    if (which != 2)
        json_array_append_new(
            jobs, json_pack("{s:s, s:s, s:s, s:i, s:{s:s, s:f}}", "name", "bert", "trace",
                            "x", "role", "inference", "priority", 0, "arrival",
                            "kind", "poisson", "load", 0.5));
    if (which != 1)
        json_array_append_new(jobs, json_pack("{s:s, s:s, s:s, s:i, s:{s:s}}", "name", "resnet",
                                              "trace", "x", "role", "training", "priority", 1,
                                              "arrival", "kind", "closed"));
    size_t i;
    json_t *j;
    json_array_foreach(jobs, i, j) {
        char t[128];
        snprintf(t, sizeof t, "%s/%s.json.gz", dir,
                 !strcmp(json_string_value(json_object_get(j, "name")), "bert") ? "bert" : "resnet");
        json_object_set_new(j, "trace", json_string(t));
    }
    json_t *c = json_pack("{s:s, s:s, s:s, s:I, s:i, s:I, s:I, s:o, s:b, s:{}}", "kind", kind,
                          "gpu", gpu, "policy", policy, "seed", (json_int_t)seed, "repetition",
                          rep, "duration_ns", (json_int_t)1000000000, "warmup_ns",
                          (json_int_t)100000000, "jobs", jobs, "kernels", 0, "policy_params");
    char *s = json_dumps(c, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(c);
    return s;
}

static void add_run(sqlite3 *db, int id, bool hw, const char *policy, long long seed, int rep,
                    int which)
{
    const char *gpu = hw ? "NVIDIA H100 80GB HBM3" : "H100";
    char *cfg = config(hw ? "hw" : "sim", gpu, hw ? "/elsewhere/b" : "/a", policy, seed, rep, which);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "INSERT INTO runs(run_id, run_key, experiment, kind, policy, "
                                        "policy_params, gpu, seed, repetition, duration_ns, "
                                        "warmup_ns, config, status) VALUES(?1, ?2, 'exp', ?3, ?4, "
                                        "'{}', ?5, ?6, ?7, 1000000000, 100000000, ?8, 'done')",
                                        -1, &st, NULL),
                     SQLITE_OK);
    char key[32];
    snprintf(key, sizeof key, "k%d", id);
    sqlite3_bind_int(st, 1, id);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, hw ? "hw" : "sim", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, policy, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, gpu, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, seed);
    sqlite3_bind_int(st, 7, rep);
    sqlite3_bind_text(st, 8, cfg, -1, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    free(cfg);
}

static void job(sqlite3 *db, int run, int job_id, const char *name, int alone)
{
    bool inf = !strcmp(name, "bert");
    char alone_s[16] = "NULL", sql[256];
    if (alone)
        snprintf(alone_s, sizeof alone_s, "%d", alone);
    snprintf(sql, sizeof sql,
             "INSERT INTO jobs(run_id, job_id, name, role, priority, alone_run_id) VALUES(%d, %d, "
             "'%s', '%s', %d, %s);",
             run, job_id, name, inf ? "inference" : "training", inf ? 0 : 1, alone_s);
    tl_test_exec_sql(db, sql);
}

static void metric(sqlite3 *db, int run, int job_id, const char *name, double v)
{
    char sql[200];
    snprintf(sql, sizeof sql, "INSERT INTO metrics VALUES(%d, %d, '%s', %.17g);", run, job_id, name,
             v);
    tl_test_exec_sql(db, sql);
}

/* A shared run: bert p99 (ms), overhead (NAN: not stored), resnet throughput, system. */
static void shared(sqlite3 *db, int id, bool hw, const char *policy, long long seed, int rep,
                   double p99_ms, double ovh, double tput, double sys)
{
    int a_bert = hw ? 8 : 1, a_res = hw ? 9 : 2;
    add_run(db, id, hw, policy, seed, rep, 0);
    job(db, id, 0, "bert", a_bert);
    job(db, id, 1, "resnet", a_res);
    metric(db, id, 0, "p50_ns", p99_ms * 0.5e6);
    metric(db, id, 0, "p99_ns", p99_ms * 1e6);
    metric(db, id, 0, "mean_service_ns", p99_ms * 0.4e6);
    metric(db, id, 0, "throughput", 50);
    if (!isnan(ovh))
        metric(db, id, 0, "p99_overhead", ovh);
    metric(db, id, 1, "throughput", tput);
    metric(db, id, -1, "system_throughput", sys);
}

/* n requests of job 0 of a run, arriving 10 ms apart, latency first_ms growing
 * by step_ms per request, each served for svc_ms before its end (the fixture's
 * runs store 0.4 x p99 as their mean service time: the same here); the last
 * 'unfinished' of them never finish. */
static void requests(sqlite3 *db, int run, int n, double first_ms, double step_ms, int unfinished,
                     double svc_ms)
{
    for (int i = 0; i < n; i++) {
        char sql[256];
        long long arr = 100000000LL + 10000000LL * i, lat = (long long)((first_ms + step_ms * i) * 1e6);
        long long svc = (long long)(svc_ms * 1e6);
        if (i >= n - unfinished)
            snprintf(sql, sizeof sql, "INSERT INTO requests VALUES(%d, 0, %d, %lld, %lld, NULL, NULL, NULL);",
                     run, i, arr, arr);
        else
            snprintf(sql, sizeof sql, "INSERT INTO requests VALUES(%d, 0, %d, %lld, %lld, %lld, %lld, %lld);",
                     run, i, arr, arr + lat - svc, arr + lat, lat, svc);
        tl_test_exec_sql(db, sql);
    }
}

/* k more requests of job 0 (ids from first_id) that arrive at the end of the
 * measured window (1.1 s: warm-up 0.1 s + 1 s) and are served after it, 2 ms each,
 * as a grown queue drains alone. */
static void drained(sqlite3 *db, int run, int first_id, int k)
{
    for (int i = 0; i < k; i++) {
        char sql[256];
        long long arr = 1090000000LL + i, end = 1100000000LL + 2000000LL * (i + 1);
        snprintf(sql, sizeof sql, "INSERT INTO requests VALUES(%d, 0, %d, %lld, %lld, %lld, %lld, %lld);",
                 run, first_id + i, arr, end - 2000000LL, end, end - arr, 2000000LL);
        tl_test_exec_sql(db, sql);
    }
}

static void make_db(const char *path, bool with_sim, bool with_hw)
{
    unlink(path);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    tl_test_exec_sql(db, tl_results_schema_sql());
    if (with_sim) {
        add_run(db, 1, false, "alone", 11, 0, 1);
        job(db, 1, 0, "bert", 0);
        metric(db, 1, 0, "p50_ns", 4e6);
        metric(db, 1, 0, "p99_ns", 8e6);
        metric(db, 1, 0, "throughput", 50);
        add_run(db, 2, false, "alone", 11, 0, 2);
        job(db, 2, 0, "resnet", 0);
        metric(db, 2, 0, "p50_ns", 100e6);
        metric(db, 2, 0, "p99_ns", 110e6);
        metric(db, 2, 0, "throughput", 10);
        shared(db, 3, false, "tally", 11, 0, 8.8, NAN, 8, 1.8);
        shared(db, 4, false, "tally", 12, 1, 9.6, 0.2, 6, 1.6);
        shared(db, 5, false, "mps", 11, 0, 16, 1.0, 10, 2.0);
        requests(db, 5, 50, 16, 0, 0, 6.4); /* a steady queue */
        shared(db, 6, false, "tgs", 11, 0, 12, 0.5, 4, 1.4);
        shared(db, 7, false, "tally", 99, 0, 50, 5.0, 1, 1.1);
    }
    if (with_hw) {
        add_run(db, 8, true, "alone", 11, 0, 1);
        job(db, 8, 0, "bert", 0);
        metric(db, 8, 0, "p50_ns", 5e6);
        metric(db, 8, 0, "p99_ns", 10e6);
        metric(db, 8, 0, "throughput", 50);
        add_run(db, 9, true, "alone", 11, 0, 2);
        job(db, 9, 0, "resnet", 0);
        metric(db, 9, 0, "throughput", 8);
        shared(db, 10, true, "tally", 11, 0, 11, 0.1, 6.4, 1.8);
        shared(db, 11, true, "tally", 12, 1, 12, 0.2, 5.6, 1.7);
        shared(db, 12, true, "mps", 11, 0, 30, 2.0, 8, 2.0);
        requests(db, 12, 50, 1, 1, 0, 11); /* one that grows: 1 ms to 50 ms */
        drained(db, 12, 50, 5); /* served after the window: not in the service time */
        /* as written before model revision 22: throughput by arrival (55 a
         * second), system 55/50 + 1 */
        tl_test_exec_sql(db, "UPDATE metrics SET value = 55 WHERE run_id = 12 AND job_id = 0 "
                             "AND name = 'throughput';");
        tl_test_exec_sql(db, "UPDATE metrics SET value = 2.1 WHERE run_id = 12 AND job_id = -1;");
        shared(db, 13, true, "tgs", 11, 0, 13, 0.3, 3.2, 1.9);
        shared(db, 14, true, "time-slicing", 11, 0, 40, 3.0, 5, 1.5);
    }
    sqlite3_close(db);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tally-test-validate-XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    snprintf(db_path, sizeof db_path, "%s/both.db", tmpdir);
    make_db(db_path, true, true);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tl_test_remove_tree(tmpdir);
}

static const tl_val_cell *find_cell(const tl_validation *v, const char *policy, const char *sig)
{
    for (size_t i = 0; i < v->n_cells; i++)
        if (!strcmp(v->cells[i].policy, policy) && !strcmp(v->cells[i].jobsig, sig))
            return &v->cells[i];
    return NULL;
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_kendall(void **state)
{
    (void)state;
    double a[] = {1, 2, 3, 4}, b[] = {10, 20, 30, 40}, r[] = {4, 3, 2, 1};
    assert_float_equal(tl_kendall_tau_b(a, b, 4), 1.0, 1e-12);
    assert_float_equal(tl_kendall_tau_b(a, r, 4), -1.0, 1e-12);
    double c[] = {1, 3, 2}, d[] = {1, 2, 3};
    assert_float_equal(tl_kendall_tau_b(c, d, 3), 1.0 / 3.0, 1e-12);
    /* ties: x = (1,1,2), y = (1,2,3): C = 2, D = 0, 3 pairs, 1 tied in x: 2/sqrt(2*3) */
    double e[] = {1, 1, 2}, f[] = {1, 2, 3};
    assert_float_equal(tl_kendall_tau_b(e, f, 3), 2.0 / sqrt(6.0), 1e-12);
    double g[] = {5, 5};
    assert_true(isnan(tl_kendall_tau_b(g, f, 2)));
    assert_true(isnan(tl_kendall_tau_b(a, b, 1)));
}

/* Pairs separated by the hardware and discordant in the simulator; with two
 * overloaded policies (queues growing on the hardware) tied. hw = (0.1, 5,
 * 9, 0.4), sim = (0.2, 12, 6, 0.15), band 0.02: all 6 pairs separated; the
 * simulator swaps (5, 9) and (0.1, 0.4): 2 discordant. With policies 1 and 2
 * overloaded their pair is a tie: 5 separated, 1 discordant. */
static void test_count_pairs(void **state)
{
    (void)state;
    double hw[] = {0.1, 5, 9, 0.4}, sim[] = {0.2, 12, 6, 0.15};
    bool over[] = {false, true, true, false};
    int sep = -1, dis = -1;
    tl_val_count_pairs(sim, hw, NULL, 4, 0.02, &sep, &dis);
    assert_int_equal(sep, 6);
    assert_int_equal(dis, 2);
    tl_val_count_pairs(sim, hw, over, 4, 0.02, &sep, &dis);
    assert_int_equal(sep, 5);
    assert_int_equal(dis, 1);
    /* a hardware tie within the band is never separated, NaN neither */
    double hw2[] = {1.0, 1.01, NAN}, sim2[] = {2, 1, 0};
    tl_val_count_pairs(sim2, hw2, NULL, 3, 0.02, &sep, &dis);
    assert_int_equal(sep, 0);
    assert_int_equal(dis, 0);
}

static void test_match_and_means(void **state)
{
    (void)state;
    tl_validation v;
    tl_err err = {0};
    assert_int_equal(tl_validation_load(&v, db_path, db_path, NULL, &err), 0);
    assert_int_equal(v.sim_runs, 7);
    assert_int_equal(v.hw_runs, 7);
    assert_int_equal(v.matched, 6); /* not the seed-99 run, not time-slicing */
    assert_string_equal(v.sim_gpu, "H100");
    assert_string_equal(v.hw_gpu, "NVIDIA H100 80GB HBM3");
    assert_int_equal(v.n_cells, 5);
    /* order: alone cells (job sets in hardware order), then policies in hardware order */
    const char *order[] = {"alone", "alone", "tally", "mps", "tgs"};
    for (int i = 0; i < 5; i++)
        assert_string_equal(v.cells[i].policy, order[i]);
    assert_string_equal(v.cells[0].jobsig, "bert");
    assert_string_equal(v.cells[1].jobsig, "resnet");
    assert_null(find_cell(&v, "time-slicing", "bert+resnet"));

    const tl_val_cell *t = find_cell(&v, "tally", "bert+resnet");
    assert_non_null(t);
    assert_int_equal(t->n_pairs, 2);
    assert_int_equal(t->hp, 0);
    assert_float_equal(t->jobs[0].sim[TL_M_P99], 9.2e6, 1);
    assert_float_equal(t->jobs[0].hw[TL_M_P99], 11.5e6, 1);
    assert_float_equal(t->jobs[0].sim[TL_M_P50], 4.6e6, 1);
    /* run 3's overhead derived from its alone run: (0.1 + 0.2) / 2 */
    assert_float_equal(t->jobs[0].sim[TL_M_P99_OVERHEAD], 0.15, 1e-9);
    assert_float_equal(t->jobs[0].hw[TL_M_P99_OVERHEAD], 0.15, 1e-9);
    assert_float_equal(t->jobs[1].sim[TL_M_THROUGHPUT], 7, 1e-9);
    assert_float_equal(t->jobs[1].hw[TL_M_THROUGHPUT], 6, 1e-9);
    assert_float_equal(t->sys_sim, 1.7, 1e-9);
    assert_float_equal(t->sys_hw, 1.75, 1e-9);
    /* throughput_rel derived from the alone runs where not stored: 7/10 and 6/8 */
    assert_float_equal(t->jobs[1].sim[TL_M_THROUGHPUT_REL], 0.7, 1e-9);
    assert_float_equal(t->jobs[1].hw[TL_M_THROUGHPUT_REL], 0.75, 1e-9);
    const tl_val_cell *a = &v.cells[1];
    assert_true(isnan(a->jobs[0].hw[TL_M_P99])); /* not stored for hw run 9 */
    assert_true(isnan(a->sys_sim));
    tl_validation_close(&v);

    /* only one experiment's hardware runs */
    assert_int_equal(tl_validation_load(&v, db_path, db_path, "nope", &err), TL_EMISSING);
    assert_non_null(strstr(err.msg, "nope"));
}

static void test_rankings(void **state)
{
    (void)state;
    tl_validation v;
    tl_err err = {0};
    assert_int_equal(tl_validation_load(&v, db_path, db_path, NULL, &err), 0);
    assert_int_equal(v.n_ranks, 2); /* one job set: no mean over sets */
    const tl_val_ranking *p = &v.ranks[0], *s = &v.ranks[1];
    assert_int_equal(p->metric, TL_VAL_RANK_P99_OVERHEAD);
    assert_int_equal(p->n, 3);
    assert_true(p->same);
    assert_float_equal(p->tau, 1.0, 1e-12);
    assert_string_equal(p->policies[p->order_sim[0]], "tally");
    assert_string_equal(p->policies[p->order_sim[1]], "tgs");
    assert_string_equal(p->policies[p->order_sim[2]], "mps");
    assert_int_equal(s->metric, TL_VAL_RANK_SYS_THROUGHPUT);
    assert_false(s->same);
    assert_float_equal(s->tau, 1.0 / 3.0, 1e-12);
    /* the hardware separates all three pairs (by 0.10, 0.15, 0.25 > 0.02); the
     * simulator orders tally above tgs: one discordant pair */
    assert_int_equal(s->separated, 3);
    assert_int_equal(s->discordant, 1);
    assert_int_equal(p->discordant, 0);
    assert_int_equal(p->separated_ov, p->separated); /* no queue grows in these runs */
    assert_int_equal(p->discordant_ov, 0);
    const char *sim_order[] = {"mps", "tally", "tgs"}, *hw_order[] = {"mps", "tgs", "tally"};
    for (int i = 0; i < 3; i++) {
        assert_string_equal(s->policies[s->order_sim[i]], sim_order[i]);
        assert_string_equal(s->policies[s->order_hw[i]], hw_order[i]);
    }
    /* the text report says both orders */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tl_validation_print(&v, f);
    fclose(f);
    assert_non_null(strstr(buf, "same order: no (Kendall tau-b 0.33); up to ties: no (1 of 3 separated pairs discordant)"));
    assert_non_null(strstr(buf, "hw:  mps 2.000, tgs 1.900, tally 1.750"));
    assert_non_null(strstr(buf, "within 10% of the hardware: 1 of 4"));
    free(buf);
    tl_validation_close(&v);
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

/* tl_val_queue_grows (arrivals 10 ms apart): a steady queue, one that falls
 * behind by 10% of the time (the last quarter waits 30 ms longer, 300 ms
 * after the first), one behind by 1% only, one that leaves requests
 * unfinished, and too few requests to tell. */
/* Two pairs of databases pooled: pairs matched within each, cells' means over
 * all, the combined database keeps both sources' runs apart. The second is a
 * copy whose hardware tally run of seed 11 measured a p99 of 21 ms (11 in the
 * first): tally's hardware p99 is the mean of 11, 12, 21 and 12. */
static void test_pooled_sources(void **state)
{
    (void)state;
    const char *second = path_in("second.db");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    char sql[512];
    unlink(second);
    snprintf(sql, sizeof sql, "VACUUM INTO '%s'", second);
    tl_test_exec_sql(db, sql);
    sqlite3_close(db);
    assert_int_equal(sqlite3_open(second, &db), SQLITE_OK);
    tl_test_exec_sql(db, "UPDATE metrics SET value = 21e6 WHERE run_id = 10 AND job_id = 0 "
                         "AND name = 'p99_ns'");
    sqlite3_close(db);
    const char *sims[] = {db_path, second}, *hws[] = {db_path, second};
    tl_validation v;
    tl_err err = {0};
    assert_int_equal(tl_validation_load_many(&v, 2, sims, hws, NULL, NULL, &err), 0);
    assert_int_equal(v.n_sources, 2);
    assert_int_equal(v.matched, 12);
    assert_int_equal(v.hw_runs, 14);
    assert_int_equal(v.sources[1].matched, 6);
    assert_string_equal(v.sources[1].hw_path, second);
    assert_int_equal(v.n_cells, 5); /* the same cells as one source's */
    const tl_val_cell *t = find_cell(&v, "tally", "bert+resnet");
    assert_non_null(t);
    assert_int_equal(t->n_pairs, 4);
    assert_int_equal(t->src[0], 0);
    assert_int_equal(t->src[3], 1);
    assert_float_equal(t->jobs[0].hw[TL_M_P99], 14e6, 1);
    assert_float_equal(t->jobs[0].sim[TL_M_P99], 9.2e6, 1);
    /* the report names both sources */
    const char *md = path_in("pooled.md");
    assert_int_equal(tl_validation_write_markdown(&v, md, NULL, &err), 0);
    char *text = slurp(md);
    assert_non_null(strstr(text, "pooled from 2 pairs of databases"));
    assert_non_null(strstr(text, "second.db"));
    free(text);
    /* the combined database: every run once, keys told apart by source */
    const char *comb = path_in("pooled_combined.db");
    assert_int_equal(tl_validation_combine(&v, comb, &err), 0);
    assert_int_equal(sqlite3_open(comb, &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT COUNT(*), SUM(run_key LIKE 'hw:2:%'), "
                                            "COUNT(DISTINCT run_key) FROM runs", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 24);
    assert_int_equal(sqlite3_column_int(st, 1), 6);
    assert_int_equal(sqlite3_column_int(st, 2), 24);
    sqlite3_finalize(st);
    sqlite3_close(db);
    /* neither source's database may be the output */
    assert_int_equal(tl_validation_combine(&v, second, &err), TL_EUNKNOWN);
    tl_validation_close(&v);
    /* a source that matches nothing is an error naming it */
    assert_int_equal(sqlite3_open(second, &db), SQLITE_OK);
    tl_test_exec_sql(db, "DELETE FROM runs WHERE kind = 'sim'");
    sqlite3_close(db);
    assert_int_equal(tl_validation_load_many(&v, 2, sims, hws, NULL, NULL, &err), TL_EMISSING);
    assert_non_null(strstr(err.msg, "second.db"));
    assert_int_equal(tl_validation_load_many(&v, 0, sims, hws, NULL, NULL, &err), TL_EINVAL);
}

static void test_queue_grows(void **state)
{
    (void)state;
    double arr[40], steady[40], grow[40], slow[40];
    for (int i = 0; i < 40; i++) {
        arr[i] = 10.0 * i;
        steady[i] = 10 + (i % 3);
        grow[i] = 1 + i;
        slow[i] = 5 + 0.1 * i;
    }
    assert_false(tl_val_queue_grows(arr, steady, 40, 0));
    assert_true(tl_val_queue_grows(arr, grow, 40, 0));
    assert_false(tl_val_queue_grows(arr, slow, 40, 0));
    assert_false(tl_val_queue_grows(arr, steady, 40, 2)); /* 2 of 42 unfinished: under 5% */
    assert_true(tl_val_queue_grows(arr, steady, 10, 1));  /* 1 of 11 */
    assert_false(tl_val_queue_grows(arr, grow, 7, 0));    /* too few to tell */
    assert_false(tl_val_queue_grows(NULL, NULL, 0, 0));
}

/* tl_val_p99_range: 10 one-second windows of 1000 requests at 1 ms; one
 * window also holds a stall, 150 requests at 10 ms (1.5% of all: the whole
 * run's p99 is 10 ms). Resamples without the stall's window (0.9^10 = 35% of
 * them) give 1 ms: the range is 1-10 ms. Without the stall: 1-1; fewer than
 * four windows: no range. The same data give the same range. */
static void test_p99_range(void **state)
{
    (void)state;
    size_t n = 10 * 1000 + 150;
    double *arr = malloc(n * sizeof *arr), *lat = malloc(n * sizeof *lat);
    size_t k = 0;
    for (int w = 0; w < 10; w++) {
        for (int i = 0; i < 1000; i++) {
            arr[k] = w * 1e9 + i * 1e6;
            lat[k++] = 1e6;
        }
        for (int i = 0; w == 3 && i < 150; i++) {
            arr[k] = w * 1e9 + 999e6 + i;
            lat[k++] = 10e6;
        }
    }
    assert_int_equal(k, n);
    double lo, hi, lo2, hi2;
    tl_val_p99_range(arr, lat, n, &lo, &hi);
    assert_float_equal(lo, 1e6, 0);
    assert_float_equal(hi, 10e6, 0);
    tl_val_p99_range(arr, lat, n, &lo2, &hi2);
    assert_true(lo2 == lo && hi2 == hi);
    for (size_t i = 0; i < n; i++)
        lat[i] = 1e6; /* no stall */
    tl_val_p99_range(arr, lat, n, &lo, &hi);
    assert_float_equal(lo, 1e6, 0);
    assert_float_equal(hi, 1e6, 0);
    tl_val_p99_range(arr, lat, 3000, &lo, &hi); /* 3 windows (the stall's requests lie in the 4th) */
    assert_true(isnan(lo) && isnan(hi));
    tl_val_p99_range(arr, lat, 0, &lo, &hi);
    assert_true(isnan(lo) && isnan(hi));
    free(arr);
    free(lat);
}

static void test_csv_markdown(void **state)
{
    (void)state;
    tl_validation v;
    tl_err err = {0};
    assert_int_equal(tl_validation_load(&v, db_path, db_path, NULL, &err), 0);
    assert_int_equal(tl_validation_write_csv(&v, path_in("v.csv"), &err), 0);
    assert_int_equal(tl_validation_write_markdown(&v, path_in("v.md"), "tally-validate x y", &err), 0);
    char *csv = slurp(path_in("v.csv"));
    /* header + 2 alone rows + 3 policies x (2 jobs + system) */
    int lines = 0;
    for (char *p = csv; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 1 + 2 + 9);
    assert_non_null(strstr(csv, ",p99_hw_lo_ms,p99_hw_hi_ms,slow_phases_sim,slow_phases_hw\n"));
    char *row = strstr(csv, "exp,bert+resnet,,tally,,bert,inference,2,");
    assert_non_null(row);
    double vals[13];
    char *q = row + strlen("exp,bert+resnet,,tally,,bert,inference,2,");
    for (int i = 0; i < 13; i++) {
        vals[i] = strtod(q, &q);
        assert_true(*q == ',' || *q == '\n');
        q++;
    }
    assert_float_equal(vals[3], 9.2, 1e-9);   /* p99 sim ms */
    assert_float_equal(vals[4], 11.5, 1e-9);  /* p99 hw ms */
    assert_float_equal(vals[5], -0.2, 1e-9);  /* p99 err */
    assert_float_equal(vals[9], 0.15, 1e-9);  /* p99 overhead sim */
    assert_non_null(strstr(csv, "exp,bert+resnet,,tally,,resnet,training,2,"));
    assert_non_null(strstr(csv, "exp,bert+resnet,,tally,,system,,2,,,,,,,1.7,1.75,"));
    /* the queue columns (mps's bert grows on the hardware only; tally's nowhere),
     * then the mean service time (0.4 x p99 here): tally 3.68 vs 4.6 ms; mps's from
     * its requests that ended inside the window: 11 ms on the hardware (not its
     * metric's 12, nor 10.0 with the 5 drained requests' 2 ms) */
    row = strstr(csv, "exp,bert+resnet,,mps,,bert,inference,1,");
    assert_non_null(row);
    assert_non_null(strstr(row, ",0,1,6.4,11,-0.418181"));
    row = strstr(csv, "exp,bert+resnet,,tally,,bert,inference,2,");
    assert_non_null(strstr(row, ",0,0,3.68,4.6,-0.2"));
    assert_true(strstr(row, ",0,0,3.68,4.6,-0.2") < strchr(row, '\n'));
    /* throughput counts the requests served inside the window, recounted from
     * the requests whatever the metrics table says: 50 of 50 simulated, 50 of
     * 55 on the hardware (the 5 drained after the window are not; its table
     * said 55/s, the arrivals); relative to alone's 50/s 1.0, and the
     * system's 2.0, not the table's 2.1 */
    assert_non_null(strstr(csv, "exp,bert+resnet,,mps,,bert,inference,1,8,15,-0.466666667,16,30,"
                                "-0.466666667,50,50,0,1,2,1,1,"));
    assert_non_null(strstr(csv, "exp,bert+resnet,,mps,,system,,1,,,,,,,2,2,0,"));
    free(csv);
    char *md = slurp(path_in("v.md"));
    assert_non_null(strstr(md, "Made with `tally-validate x y`"));
    assert_non_null(strstr(md, "| tally | bert | inference | 2 | 4.600 | 5.750 | -20.0% | 9.200 | "
                               "11.500 | -20.0% |"));
    assert_non_null(strstr(md, "| tally | resnet | training | 2 |"));
    assert_non_null(strstr(md, "+16.7% |"));
    assert_non_null(strstr(md, "| exp | bert+resnet | system throughput, highest first | no | 0.33 |"));
    assert_non_null(strstr(md, "| mps | bert | inference | 1 | 8.000 | 15.000 | -46.7% | 16.000 | "
                               "30.000 | -46.7% | 6.400 | 11.000 | -41.8% | 50.00 | 50.00 | +0.0% |  | "
                               "hw |")); /* no p99 range: too few requests */
    /* service time: tally -20%, mps -41.8%, tgs -7.7% (alone runs have none here) */
    assert_non_null(strstr(md, "\"svc\", ms) within 10% of the hardware: 1 of 3"));
    /* alone, tally, mps and tgs bert; mps grows; of the others tgs (-7.7%) is within 10% */
    assert_non_null(strstr(md, "never finish; their p99 depends on how long the run is): 1 of 4; p99 "
                               "within 10% in 1 of the other 3"));
    /* the slow-phase column and its summary line (the fixture's requests have none) */
    assert_non_null(strstr(md, "| queue grows | slow phases |"));
    assert_non_null(strstr(md, "slowed by something outside the experiment"));
    assert_null(strstr(md, "(hw slowed)"));
    /* no record of how graph kernels were calibrated: nothing said */
    assert_null(strstr(md, "calibrated as"));
    free(md);
    /* missing folders are made, as for the results database */
    assert_int_equal(tl_validation_write_csv(&v, path_in("new/sub/x.csv"), &err), 0);
    assert_int_equal(tl_validation_write_markdown(&v, path_in("new/md/x.md"), NULL, &err), 0);
    assert_true(file_size(path_in("new/sub/x.csv")) > 0 && file_size(path_in("new/md/x.md")) > 0);
    /* an unwritable path: a folder under a file */
    assert_int_equal(tl_validation_write_csv(&v, path_in("v.md/sub/x.csv"), &err), TL_EIO);
    assert_non_null(strstr(err.msg, path_in("v.md/sub/x.csv")));
    assert_non_null(strstr(err.msg, "v.md/sub: cannot create folder"));
    /* never a database compared (it was overwritten with text) */
    long size = file_size(db_path);
    assert_int_equal(tl_validation_write_csv(&v, db_path, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, db_path));
    assert_int_equal(tl_validation_write_markdown(&v, db_path, NULL, &err), TL_EUNKNOWN);
    assert_int_equal(file_size(db_path), size);
    /* a failed write keeps the earlier file */
    csv = slurp(path_in("v.csv"));
    assert_int_equal(tl_validation_write_markdown(&v, path_in("v.csv"), NULL, &err), 0);
    assert_int_equal(tl_validation_write_csv(&v, path_in("v.csv"), &err), 0);
    char *again = slurp(path_in("v.csv"));
    assert_string_equal(csv, again);
    free(again);
    free(csv);
    tl_validation_close(&v);
    assert_int_equal(tl_validation_load(&v, db_path, db_path, NULL, &err), 0);
    tl_validation_close(&v);
}


/* tally-run's record of how it calibrated graph jobs' kernels (meta
 * hw_graph_calibration) is carried into the report, so a reader knows which
 * replay a hardware database holds (graph nodes since session 12). */
static void set_hw_meta(const char *hw, const char *key, const char *value);
static void test_graph_calibration_reported(void **state)
{
    (void)state;
    set_hw_meta(db_path, "hw_graph_calibration", "node");
    tl_validation v;
    tl_err err = {0};
    assert_int_equal(tl_validation_load(&v, db_path, db_path, NULL, &err), 0);
    assert_string_equal(v.sources[0].hw_graph_calib, "node");
    assert_int_equal(tl_validation_write_markdown(&v, path_in("vc.md"), NULL, &err), 0);
    char *md = slurp(path_in("vc.md"));
    assert_non_null(strstr(md, "Hardware graph jobs' kernels calibrated as: node"));
    free(md);
    tl_validation_close(&v);
}
/* A relative database name that starts with "file:" is a file name, not a URI,
 * for both the reading and the combining (which attaches it to a connection that
 * takes URIs): a copy named file:hw.db in the temporary folder, given from there. */
static void test_combine_file_prefixed_name(void **state)
{
    (void)state;
    char old_cwd[512];
    assert_non_null(getcwd(old_cwd, sizeof old_cwd));
    sqlite3 *db;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    char sql[512];
    unlink(path_in("file:hw.db"));
    snprintf(sql, sizeof sql, "VACUUM INTO '%s'", path_in("file:hw.db"));
    tl_test_exec_sql(db, sql);
    sqlite3_close(db);
    assert_int_equal(chdir(tmpdir), 0);
    tl_validation v;
    tl_err err = {0};
    int rc = tl_validation_load(&v, "file:hw.db", "file:hw.db", NULL, &err);
    if (rc == 0)
        rc = tl_validation_combine(&v, "prefixed_combined.db", &err);
    if (rc == 0)
        tl_validation_close(&v);
    assert_int_equal(chdir(old_cwd), 0);
    if (rc)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_int_equal(sqlite3_open(path_in("prefixed_combined.db"), &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM runs", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 12);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_combine_and_plot(void **state)
{
    (void)state;
    tl_validation v;
    tl_err err = {0};
    assert_int_equal(tl_validation_load(&v, db_path, db_path, NULL, &err), 0);
    const char *comb = path_in("combined.db");
    assert_int_equal(tl_validation_combine(&v, comb, &err), 0);
    /* again: an earlier combined database is replaced */
    assert_int_equal(tl_validation_combine(&v, comb, &err), 0);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(comb, &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT kind, COUNT(*), SUM(run_key LIKE kind || ':%'), "
                                        "SUM(experiment = 'exp') FROM runs GROUP BY kind ORDER BY kind",
                                        -1, &st, NULL),
                     SQLITE_OK);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_string_equal((const char *)sqlite3_column_text(st, 0), i ? "sim" : "hw");
        assert_int_equal(sqlite3_column_int(st, 1), 6);
        assert_int_equal(sqlite3_column_int(st, 2), 6);
        assert_int_equal(sqlite3_column_int(st, 3), 6);
    }
    sqlite3_finalize(st);
    /* alone links renumbered inside the combined database */
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT COUNT(*) FROM jobs j JOIN runs a ON a.run_id = "
                                        "j.alone_run_id JOIN runs r ON r.run_id = j.run_id WHERE "
                                        "a.policy = 'alone' AND a.kind = r.kind",
                                        -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 16); /* 4 shared runs x 2 jobs x 2 kinds */
    sqlite3_finalize(st);
    sqlite3_close(db);

    tl_plot_opts o = {.out_dir = path_in("plots"), .no_render = true};
    assert_int_equal(tl_validation_plot(&v, comb, &o, &err), 0);
    char *dat = slurp(path_in("plots/exp_simhw.dat"));
    /* tally's bert p99: sim 9.2 ms, hw 11.5 ms, -20 % */
    assert_non_null(strstr(dat, "\"tally: bert\" 9.2 11.5 -20"));
    free(dat);

    /* a file that is not a combined database is never overwritten */
    FILE *f = fopen(path_in("precious.db"), "w");
    fputs("keep me", f);
    fclose(f);
    assert_int_equal(tl_validation_combine(&v, path_in("precious.db"), &err), TL_EIO);
    assert_non_null(strstr(err.msg, "not overwritten"));
    char *kept = slurp(path_in("precious.db"));
    assert_string_equal(kept, "keep me");
    free(kept);
    /* nor the database it is made from: a usage error, the database intact */
    long size = file_size(db_path);
    assert_int_equal(tl_validation_combine(&v, db_path, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, db_path));
    assert_int_equal(file_size(db_path), size);
    /* a combined database given as the simulated runs is not replaced by
     * the combination made from it */
    tl_validation_close(&v);
    assert_int_equal(tl_validation_load(&v, comb, db_path, NULL, &err), 0);
    assert_int_equal(tl_validation_combine(&v, comb, &err), TL_EUNKNOWN);
    tl_validation_close(&v);
    assert_int_equal(tl_validation_load(&v, comb, db_path, NULL, &err), 0);
    tl_validation_close(&v);
}

static void test_errors(void **state)
{
    (void)state;
    tl_validation v;
    tl_err err = {0};
    assert_int_equal(tl_validation_load(&v, path_in("none.db"), db_path, NULL, &err), TL_EIO);
    assert_non_null(strstr(err.msg, "none.db"));
    assert_int_equal(tl_validation_load(&v, db_path, path_in("none.db"), NULL, &err), TL_EIO);
    /* not a results database */
    FILE *f = fopen(path_in("junk.db"), "w");
    fputs("this is not SQLite, not at all, and long enough to be read as a header.....", f);
    fclose(f);
    assert_int_equal(tl_validation_load(&v, path_in("junk.db"), db_path, NULL, &err), TL_EFORMAT);
    /* a database without hardware runs */
    make_db(path_in("sim_only.db"), true, false);
    assert_int_equal(tl_validation_load(&v, path_in("sim_only.db"), path_in("sim_only.db"), NULL,
                                        &err),
                     TL_EMISSING);
    assert_non_null(strstr(err.msg, "no finished hardware runs"));
    /* runs of both kinds but no common config: a hint about the seed */
    make_db(path_in("hw_only.db"), false, true);
    assert_int_equal(tl_validation_load(&v, path_in("sim_only.db"), path_in("hw_only.db"), NULL,
                                        &err),
                     0);
    tl_validation_close(&v);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path_in("hw_only.db"), &db), SQLITE_OK);
    tl_test_exec_sql(db, "UPDATE runs SET config = replace(config, '\"seed\":1', '\"seed\":7');"
                 "UPDATE runs SET config = 'not json' WHERE run_id = 8;");
    sqlite3_close(db);
    assert_int_equal(tl_validation_load(&v, path_in("sim_only.db"), path_in("hw_only.db"), NULL,
                                        &err),
                     TL_EMISSING);
    assert_non_null(strstr(err.msg, "--seed"));
    /* a damaged database (fuzzing): a request started at INT64_MIN; its service
     * time is end - start in double, not an overflowing long long */
    make_db(path_in("extreme.db"), true, true);
    assert_int_equal(sqlite3_open(path_in("extreme.db"), &db), SQLITE_OK);
    tl_test_exec_sql(db, "UPDATE requests SET start_ns = -9223372036854775808;");
    sqlite3_close(db);
    assert_int_equal(tl_validation_load(&v, path_in("extreme.db"), path_in("extreme.db"), NULL,
                                        &err),
                     0);
    tl_validation_close(&v);
}

/* ---- the simulator against itself ------------------------------------------------ */

/* tally-run's record of its replay (meta key = value) in the hardware database. */
static void set_hw_meta(const char *hw, const char *key, const char *value)
{
    tl_results db;
    tl_err err;
    assert_int_equal(tl_results_open(&db, hw, &err), 0);
    assert_int_equal(tl_results_set_meta(&db, key, value, &err), 0);
    tl_results_close(&db);
}

/* The validation experiment of spec and hw, with the user's simulator
 * parameter user_kv (NULL: none); tl_validation_hw_params' result on it. */
static int hw_params_with(tl_experiment *e, const char *spec, const char *hw, const char *user_kv,
                          char *applied, size_t cap, tl_err *err)
{
    tl_experiment_init(e);
    assert_int_equal(tl_validation_experiment(e, spec, hw, NULL, -1, err), 0);
    if (user_kv)
        assert_int_equal(tl_experiment_set_sim_param(e, user_kv, err), 0);
    return tl_validation_hw_params(e, hw, applied, cap, err);
}

/* The simulator as the "hardware", with device figures of its own
 * (tl_device_ops.run_metrics): the run's kernels so far, and 48 more (tally-run
 * gives over 32, the sweep's old cap), all of which the sweep must record
 * with the run. */
static tl_device_ops sim_with_figures;

static void sim_figures(tl_device *d, tl_dev_metric_fn fn, void *arg)
{
    tl_sim_stats st;
    tl_sim_get_stats(d, &st);
    fn(arg, "sim_kernels_seen", (double)st.kernels);
    for (int i = 0; i < 48; i++) {
        char name[32];
        snprintf(name, sizeof name, "fig_%02d", i);
        fn(arg, name, i);
    }
}

static int sim_factory(void *arg, tl_device *dev, const tl_gpu_props *gpu, tl_err *err)
{
    (void)arg;
    int r = tl_sim_open(dev, gpu, NULL, err);
    if (r == 0) {
        sim_with_figures = *dev->ops;
        sim_with_figures.run_metrics = sim_figures;
        dev->ops = &sim_with_figures;
    }
    return r;
}

/* "Hardware" runs written by the simulator (kind 'hw') into path: spec.json's
 * jobs (test_self_validation writes it) under policies, for duration_s after
 * warmup_s, reps repetitions, at seed (-1: the spec's). */
typedef struct {
    const char *policies[4];
    double duration_s, warmup_s;
    int reps;
    long long seed;
} sim_hw_runs;

static void make_sim_hw(const char *path, const sim_hw_runs *h)
{
    char spec[256]; /* not path_in's: its ring of 8 names belongs to the caller */
    snprintf(spec, sizeof spec, "%s/spec.json", tmpdir);
    tl_spec_overrides ov;
    tl_spec_overrides_init(&ov);
    ov.spec_path = spec;
    for (ov.n_policies = 0; ov.n_policies < 4 && h->policies[ov.n_policies]; ov.n_policies++)
        ov.policies[ov.n_policies] = h->policies[ov.n_policies];
    ov.duration_s = h->duration_s;
    ov.warmup_s = h->warmup_s;
    ov.repetitions = h->reps;
    ov.seed = h->seed;
    tl_experiment e;
    tl_err err = {0};
    tl_experiment_init(&e);
    assert_int_equal(tl_experiment_from_overrides(&e, &ov, &err), 0);
    tl_sweep_options so = {.db_path = path, .workers = 1, .quiet = true, .kind = "hw",
                           .open_device = sim_factory};
    assert_int_equal(tl_sweep_run(&e, &so, NULL, &err), 0);
    tl_experiment_close(&e);
}

static void test_self_validation(void **state)
{
    (void)state;
    /* The "hardware" runs: two policies, 0.3 s, two repetitions, seed 5, written
     * as kind 'hw' by the simulator. The spec on disk says otherwise (other
     * policy, duration, repetitions): the validation takes the hardware's. */
    const char *spec_path = path_in("spec.json");
    char cwd[1024];
    assert_non_null(getcwd(cwd, sizeof cwd));
    FILE *f = fopen(spec_path, "w");
    fprintf(f,
            "{\"name\": \"self\", \"gpu\": \"H100\", \"duration_s\": 20, \"warmup_s\": 1,"
            " \"seed\": 5, \"repetitions\": 1, \"policies\": [\"time-slicing\"],"
            " \"jobs\": [{\"name\": \"mobilenet\", \"trace\": \"%s/traces/bundled/h100/"
            "mobilenetv3_infer_b1.json.gz\", \"role\": \"inference\", \"arrival\": {\"kind\":"
            " \"poisson\", \"load\": 0.5}, \"graph\": true},"
            " {\"name\": \"train\", \"trace\": \"%s/traces/bundled/h100/"
            "resnet50_train_b32_steps.json.gz\", \"role\": \"training\", \"graph\": true}]}",
            cwd, cwd);
    fclose(f);
    const char *hw = path_in("self_hw.db"), *sim = path_in("self_sim.db");
    make_sim_hw(hw, &(sim_hw_runs){{"tally", "mps", "priority-streams"}, 0.3, 0.1, 2, -1});
    tl_experiment e;
    tl_err err = {0};
    /* every run carries the device's figure (its kernel count, above 0) */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(hw, &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT COUNT(m.value), MIN(m.value) FROM runs LEFT JOIN metrics m "
                                            "ON m.run_id = runs.run_id AND m.job_id = -1 "
                                            "AND m.name = 'sim_kernels_seen'", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 2 * 2 + 3 * 2);
    assert_true(sqlite3_column_double(st, 1) > 0);
    sqlite3_finalize(st);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT COUNT(*), MAX(value) FROM metrics WHERE job_id = -1 "
                                            "AND name LIKE 'fig_%'", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), 48 * (2 * 2 + 3 * 2));
    assert_float_equal(sqlite3_column_double(st, 1), 47, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);

    tl_experiment_init(&e);
    assert_int_equal(tl_validation_experiment(&e, spec_path, hw, NULL, -1, &err), 0);
    assert_int_equal(e.duration_ns, 300000000);
    assert_int_equal(e.warmup_ns, 100000000);
    assert_int_equal(e.repetitions, 2);
    assert_int_equal(e.n_policies, 3);
    assert_string_equal(e.policies[0].ops->name, "tally");
    assert_string_equal(e.policies[1].ops->name, "mps");
    assert_int_equal(tl_validation_simulate(&e, sim, NULL, 1, true, &err), 0);
    tl_experiment_close(&e);

    tl_validation v;
    assert_int_equal(tl_validation_load(&v, sim, hw, NULL, &err), 0);
    assert_string_equal(v.sources[0].sim_params, ""); /* the GPU's defaults, as the "hardware" */
    assert_int_equal(v.matched, 2 * 2 + 3 * 2); /* alone: 2 jobs x 2 reps; 3 policies x 2 */
    assert_int_equal(v.matched, v.hw_runs);
    for (size_t i = 0; i < v.n_cells; i++)
        for (int j = 0; j < v.cells[i].n_jobs; j++)
            for (int m = 0; m < TL_M_COUNT; m++) {
                double s = v.cells[i].jobs[j].sim[m], h = v.cells[i].jobs[j].hw[m];
                assert_true((isnan(s) && isnan(h)) || s == h);
            }
    assert_int_equal(v.n_ranks, 2);
    for (size_t i = 0; i < v.n_ranks; i++)
        assert_true(v.ranks[i].same);
    tl_validation_close(&v);

    /* another seed: nothing matches */
    tl_experiment_init(&e);
    assert_int_equal(tl_validation_experiment(&e, spec_path, hw, NULL, 6, &err), 0);
    assert_int_equal(tl_validation_simulate(&e, path_in("self_sim6.db"), NULL, 1, true, &err), 0);
    tl_experiment_close(&e);
    assert_int_equal(tl_validation_load(&v, path_in("self_sim6.db"), hw, NULL, &err), TL_EMISSING);
    /* ... unless the base seed is found from the runs' derived seeds: none
     * needed with the spec's (5); a spec saying 6 gets 5 back */
    long long found = -1;
    assert_int_equal(tl_validation_hw_seed(spec_path, hw, NULL, &found, &err), 0);
    assert_int_equal(found, -1);
    const char *spec6 = path_in("spec6.json");
    json_error_t je;
    json_t *sj = json_load_file(spec_path, 0, &je);
    assert_non_null(sj);
    json_object_set_new(sj, "seed", json_integer(6));
    assert_int_equal(json_dump_file(sj, spec6, 0), 0);
    json_decref(sj);
    assert_int_equal(tl_validation_hw_seed(spec6, hw, NULL, &found, &err), 1);
    assert_int_equal(found, 5);
    /* runs whose seeds no base up to the limit derives: none found (the
     * report then says nothing matched); a copy, the runs stay as they were */
    const char *odd = path_in("self_hw_oddseed.db");
    sqlite3 *odb;
    assert_int_equal(sqlite3_open(hw, &odb), SQLITE_OK);
    char sql[512];
    snprintf(sql, sizeof sql, "VACUUM INTO '%s'", odd);
    assert_int_equal(sqlite3_exec(odb, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(odb);
    assert_int_equal(sqlite3_open(odd, &odb), SQLITE_OK);
    assert_int_equal(sqlite3_exec(odb, "UPDATE runs SET seed = seed + 1", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(odb);
    found = -1;
    assert_int_equal(tl_validation_hw_seed(spec6, odd, NULL, &found, &err), 0);
    assert_int_equal(found, -1);

    /* tally-run's record of its replay's back-to-back gap: the simulated twin
     * runs with it (the report says so), unless the user set the gap; a bad
     * value is refused, naming the database */
    char applied[128];
    set_hw_meta(hw, "hw_stream_gap_ns", "6100");
    assert_int_equal(hw_params_with(&e, spec_path, hw, NULL, applied, sizeof applied, &err), 0);
    assert_string_equal(applied, "stream_gap_ns=6100");
    const char *gapdb = path_in("self_sim_gap.db");
    assert_int_equal(tl_validation_simulate(&e, gapdb, NULL, 1, true, &err), 0);
    tl_experiment_close(&e);
    assert_int_equal(tl_validation_load(&v, gapdb, hw, NULL, &err), 0);
    assert_non_null(strstr(v.sources[0].sim_params, "stream_gap_ns=6100"));
    assert_int_equal(v.matched, v.hw_runs);
    tl_validation_close(&v);
    assert_int_equal(hw_params_with(&e, spec_path, hw, "stream_gap_ns=0", applied, sizeof applied, &err), 0);
    assert_string_equal(applied, "");
    tl_experiment_close(&e);
    /* the gap inside a CUDA graph (graph jobs) sets graph_gap_ns beside it;
     * a user's graph_gap_ns keeps only that one from being set */
    set_hw_meta(hw, "hw_graph_gap_ns", "2500");
    assert_int_equal(hw_params_with(&e, spec_path, hw, NULL, applied, sizeof applied, &err), 0);
    assert_string_equal(applied, "stream_gap_ns=6100;graph_gap_ns=2500");
    /* graph jobs' arrivals stay those of the hardware runs: their capacity
     * counts the gap the hardware runs were given (the GPU's default) */
    tl_sim_params dp;
    tl_sim_params_default(&dp, &e.gpu);
    assert_int_equal(e.graph_capacity_gap_ns, dp.graph_gap_ns);
    assert_true(dp.graph_gap_ns != 2500);
    tl_experiment_close(&e);
    assert_int_equal(hw_params_with(&e, spec_path, hw, "graph_gap_ns=900", applied, sizeof applied, &err), 0);
    assert_string_equal(applied, "stream_gap_ns=6100");
    tl_experiment_close(&e);
    /* the replay's issue cost of a graph (run metrics cuda_graph_lag_*): the
     * alone inference runs' mean per op sets graph_node_ns, with the launch
     * call inside it (graph_launch_ns 0); the training job's alone runs and
     * the shared runs do not count; a user's graph_node_ns or graph_launch_ns
     * keeps both */
    assert_int_equal(sqlite3_open(hw, &db), SQLITE_OK);
    tl_test_exec_sql(db, "INSERT INTO metrics SELECT r.run_id, -1, 'cuda_graph_lag_sum_ns',"
                         " CASE WHEN r.policy <> 'alone' THEN 9e9"
                         " WHEN j.role = 'inference' THEN 102000 * (r.repetition + 1) ELSE 7e9 END"
                         " FROM runs r JOIN jobs j ON j.run_id = r.run_id AND j.job_id = 0;"
                         "INSERT INTO metrics SELECT r.run_id, -1, 'cuda_graph_lag_ops', 204 * (r.repetition + 1)"
                         " FROM runs r;");
    sqlite3_close(db);
    char many[256];
    assert_int_equal(hw_params_with(&e, spec_path, hw, NULL, many, sizeof many, &err), 0);
    assert_string_equal(many, "stream_gap_ns=6100;graph_gap_ns=2500;graph_node_ns=500;graph_launch_ns=0");
    tl_experiment_close(&e);
    assert_int_equal(hw_params_with(&e, spec_path, hw, "graph_launch_ns=2500", many, sizeof many, &err), 0);
    assert_string_equal(many, "stream_gap_ns=6100;graph_gap_ns=2500");
    tl_experiment_close(&e);
    /* what does not fit in applied is cut, not overrun */
    char small[24];
    assert_int_equal(hw_params_with(&e, spec_path, hw, NULL, small, sizeof small, &err), 0);
    assert_string_equal(small, "stream_gap_ns=6100;grap");
    tl_experiment_close(&e);
    /* a replay whose synthetic kernels all preferred the largest carveout
     * (TALLY_SYNTH_CARVEOUT=100) is simulated without the co-residency rule
     * (carveout 0), unless the user set it; another value changes nothing */
    set_hw_meta(hw, "hw_synth_carveout", "100");
    assert_int_equal(hw_params_with(&e, spec_path, hw, "graph_launch_ns=2500", many, sizeof many, &err), 0);
    assert_string_equal(many, "stream_gap_ns=6100;graph_gap_ns=2500;carveout=0");
    tl_experiment_close(&e);
    assert_int_equal(hw_params_with(&e, spec_path, hw, "carveout=2", many, sizeof many, &err), 0);
    assert_string_equal(many, "stream_gap_ns=6100;graph_gap_ns=2500;graph_node_ns=500;graph_launch_ns=0");
    tl_experiment_close(&e);
    set_hw_meta(hw, "hw_synth_carveout", "50");
    assert_int_equal(hw_params_with(&e, spec_path, hw, "graph_launch_ns=2500", many, sizeof many, &err), 0);
    assert_string_equal(many, "stream_gap_ns=6100;graph_gap_ns=2500");
    tl_experiment_close(&e);
    set_hw_meta(hw, "hw_stream_gap_ns", "-5");
    assert_true(hw_params_with(&e, spec_path, hw, NULL, applied, sizeof applied, &err) < 0);
    assert_non_null(strstr(err.msg, "self_hw.db"));
    assert_non_null(strstr(err.msg, "hw_stream_gap_ns"));
    tl_experiment_close(&e);

    /* a spec that cannot be read */
    tl_experiment_init(&e);
    assert_int_equal(tl_validation_experiment(&e, path_in("nospec.json"), hw, NULL, -1, &err),
                     TL_EIO);
    assert_non_null(strstr(err.msg, "nospec.json"));
    tl_experiment_close(&e);
}

/* ---- the command ------------------------------------------------------------------ */

/* Run tally-validate with args (stdout and stderr to files): its exit status. */
static int run_validate(const char *args, const char *redirect)
{
    const char *b = getenv("TALLY_BUILD");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s/tally-validate' %s >'%s' 2>'%s' %s", b && *b ? b : "build",
             args, path_in("cmd.out"), path_in("cmd.err"), redirect ? redirect : "");
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool err_has(const char *s)
{
    char *e = slurp(path_in("cmd.err"));
    bool ok = strstr(e, s) != NULL;
    if (!ok)
        print_message("stderr was: %s\n", e);
    free(e);
    return ok;
}

static void test_command(void **state)
{
    (void)state;
    const char *b = getenv("TALLY_BUILD");
    char bin[256];
    snprintf(bin, sizeof bin, "%s/tally-validate", b && *b ? b : "build");
    if (access(bin, X_OK) != 0) {
        print_message("%s not built: skipping the command tests\n", bin);
        return;
    }
    char a[2048];
    long size = file_size(db_path);
    /* no output may be an input: usage errors, before anything is written */
    static const char *const outs[] = {"--csv", "--markdown", "--combined-db"};
    for (int i = 0; i < 3; i++) {
        snprintf(a, sizeof a, "--hw-db '%s' --sim-db '%s' %s '%s'", db_path, db_path, outs[i],
                 db_path);
        assert_int_equal(run_validate(a, NULL), EX_USAGE);
        assert_true(err_has("not overwritten"));
    }
    snprintf(a, sizeof a, "--hw-db '%s' --sim-db '%s' --csv '%s' --markdown '%s'", db_path, db_path,
             path_in("same.out"), path_in("same.out"));
    assert_int_equal(run_validate(a, NULL), EX_USAGE);
    assert_int_equal(file_size(db_path), size);
    /* '' as a name: --plot-dir '' plotted into this folder (exit 0),
     * --combined-db '' said "tally-validate: : cannot write" */
    static const char *const empties[] = {"--plot-dir", "--combined-db", "--markdown", "--csv",
                                          "--experiment"};
    for (int i = 0; i < 5; i++) {
        char want[64];
        snprintf(a, sizeof a, "--hw-db '%s' --sim-db '%s' %s ''", db_path, db_path, empties[i]);
        assert_int_equal(run_validate(a, NULL), EX_USAGE);
        snprintf(want, sizeof want, "%s: '' is empty", empties[i]);
        assert_true(err_has(want));
    }
    /* strtoll took a leading space or '+' (" 5", "+2"); digits alone now */
    static const char *const ints[][2] = {
        {"--seed ' 5'", "--seed: ' 5' is not an integer"},
        {"--jobs +2", "--jobs: '+2' is not an integer"},
        {"--jobs 0", "--jobs: '0' is out of range (1 to 100000)"},
    };
    for (int i = 0; i < 3; i++) {
        snprintf(a, sizeof a, "--hw-db '%s' --sim-db '%s' %s", db_path, db_path, ints[i][0]);
        assert_int_equal(run_validate(a, NULL), EX_USAGE);
        assert_true(err_has(ints[i][1]));
    }
    snprintf(a, sizeof a, "--hw-db '%s' --sim-db '%s' --csv '%s'", db_path, db_path,
             path_in("cmd.csv"));
    assert_int_equal(run_validate(a, NULL), EX_OK);
    assert_true(file_size(path_in("cmd.csv")) > 0);
    /* outputs in folders not there yet: made, as --sim-db's are */
    snprintf(a, sizeof a, "--hw-db '%s' --sim-db '%s' --markdown '%s' --combined-db '%s'", db_path, db_path,
             path_in("cmdnew/md/r.md"), path_in("cmdnew/db/c.db"));
    assert_int_equal(run_validate(a, NULL), EX_OK);
    assert_true(file_size(path_in("cmdnew/md/r.md")) > 0 && file_size(path_in("cmdnew/db/c.db")) > 0);
    /* one that cannot be made (under a file): exit 73 naming it */
    snprintf(a, sizeof a, "--hw-db '%s' --sim-db '%s' --combined-db '%s'", db_path, db_path,
             path_in("cmd.csv/db/c.db"));
    assert_int_equal(run_validate(a, NULL), EX_CANTCREAT);
    assert_true(err_has("cmd.csv/db: cannot create folder"));
    /* the time-slicing hardware run has no simulated twin: warned of on
     * stderr (the report alone leaves it out without a word) */
    assert_true(err_has("warning: 1 of the 7 hardware runs in"));
    assert_true(err_has("have no simulated twin"));
    /* standard output that cannot be written: exit 73 */
    snprintf(a, sizeof a, "--hw-db '%s' --sim-db '%s'", db_path, db_path);
    char redirect[300];
    snprintf(redirect, sizeof redirect, "1<'%s'", db_path);
    assert_int_equal(run_validate(a, redirect), EX_CANTCREAT);
    assert_true(err_has("write error on standard output"));
    assert_int_equal(run_validate("--help", redirect), EX_CANTCREAT);
    assert_int_equal(run_validate("--help", NULL), EX_OK);

    /* a simulation into a temporary database that matches nothing (another
     * seed than test_self_validation's hardware runs): the message says what
     * the database was, not a path that is gone by the time it is read */
    const char *hw = path_in("cmd_hw.db");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path_in("self_hw.db"), &db), SQLITE_OK);
    char sql[512];
    snprintf(sql, sizeof sql, "VACUUM INTO '%s'", hw);
    tl_test_exec_sql(db, sql);
    sqlite3_close(db);
    assert_int_equal(sqlite3_open(hw, &db), SQLITE_OK);
    tl_test_exec_sql(db, "DELETE FROM meta WHERE key LIKE 'hw_%'"); /* test_self_validation's */
    sqlite3_close(db);
    snprintf(a, sizeof a, "-q -j 2 --seed 6 '%s' '%s'", path_in("spec.json"), hw);
    assert_int_equal(run_validate(a, NULL), EX_DATAERR);
    char *e = slurp(path_in("cmd.err"));
    char *last = e + strlen(e);
    while (last > e && last[-1] == '\n')
        *--last = '\0';
    last = strrchr(e, '\n') ? strrchr(e, '\n') + 1 : e;
    if (strstr(last, "tally-validate-") || !strstr(last, "simulated now, temporary"))
        fail_msg("the last message names the temporary database: %s", last);
    free(e);

    /* hardware databases of two seeds pooled: each simulated with its own
     * seed (found from its runs), every run matched, nothing off (the
     * "hardware" is the simulator); the report lists both */
    char p5[256], p7[256], keep[256]; /* path_in's buffers are reused */
    snprintf(p5, sizeof p5, "%s", path_in("pool5.db"));
    snprintf(p7, sizeof p7, "%s", path_in("pool7.db"));
    snprintf(keep, sizeof keep, "%s", path_in("keep.db"));
    make_sim_hw(p5, &(sim_hw_runs){{"tally", "mps"}, 0.2, 0.05, 1, 5});
    make_sim_hw(p7, &(sim_hw_runs){{"tally", "mps"}, 0.2, 0.05, 1, 7});
    snprintf(a, sizeof a, "-q -j 2 -m '%s' '%s' '%s' '%s'", path_in("pool.md"),
             path_in("spec.json"), p5, p7);
    assert_int_equal(run_validate(a, NULL), EX_OK);
    char *out = slurp(path_in("cmd.out"));
    assert_non_null(strstr(out, "pooled from 2 pairs of databases: 8 pairs matched"));
    assert_non_null(strstr(out, "pool7.db (4 runs) vs simulated now, temporary (4 runs): 4 pairs"));
    assert_null(strstr(out, "tally-validate-")); /* no temporary path */
    free(out);
    char *md = slurp(path_in("pool.md"));
    assert_non_null(strstr(md, "- `"));
    assert_non_null(strstr(md, "inference p99 latency within 10% of the hardware: 3 of 3 (mean |error| 0.0%)"));
    free(md);
    /* what several databases cannot take */
    snprintf(a, sizeof a, "--sim-db '%s' '%s' '%s' '%s'", db_path, path_in("spec.json"), p5, p7);
    assert_int_equal(run_validate(a, NULL), EX_USAGE);
    assert_true(err_has("--sim-db takes the twins of one hardware database"));
    snprintf(a, sizeof a, "--seed 5 '%s' '%s' '%s'", path_in("spec.json"), p5, p7);
    assert_int_equal(run_validate(a, NULL), EX_USAGE);
    snprintf(a, sizeof a, "--hw-db '%s' --hw-db '%s' --sim-db '%s'", p5, p7, db_path);
    assert_int_equal(run_validate(a, NULL), EX_USAGE);
    snprintf(a, sizeof a, "'%s' '%s' '%s'", path_in("spec.json"), p5, p5);
    assert_int_equal(run_validate(a, NULL), EX_USAGE);
    assert_true(err_has("given twice"));
    snprintf(a, sizeof a, "-m '%s' '%s' '%s' '%s'", p7, path_in("spec.json"), p5, p7);
    assert_int_equal(run_validate(a, NULL), EX_USAGE);
    assert_true(err_has("is a hardware database (--hw-db)"));

    /* with a spec, only its own simulated runs count: a kept --sim-db's older
     * twins (here renamed to another experiment) do not stand in for a spec
     * that matches none of the hardware runs (its inference job is another
     * trace) */
    snprintf(a, sizeof a, "-q -j 2 --sim-db '%s' '%s' '%s'", keep, path_in("spec.json"), p5);
    assert_int_equal(run_validate(a, NULL), EX_OK);
    assert_int_equal(sqlite3_open(keep, &db), SQLITE_OK);
    tl_test_exec_sql(db, "UPDATE runs SET experiment = 'older'");
    sqlite3_close(db);
    char cwd[1024];
    assert_non_null(getcwd(cwd, sizeof cwd));
    FILE *sf = fopen(path_in("other.json"), "w");
    fprintf(sf,
            "{\"name\": \"other\", \"gpu\": \"H100\", \"duration_s\": 1, \"seed\": 5,"
            " \"policies\": [\"tally\"], \"jobs\": [{\"name\": \"vit\", \"trace\": \"%s/"
            "traces/bundled/h100/vit_b16_infer_b1.json.gz\", \"role\": \"inference\","
            " \"arrival\": {\"kind\": \"poisson\", \"load\": 0.5}, \"graph\": true},"
            " {\"name\": \"train\", \"trace\": \"%s/traces/bundled/h100/"
            "resnet50_train_b32_steps.json.gz\", \"role\": \"training\", \"graph\": true}]}",
            cwd, cwd);
    fclose(sf);
    snprintf(a, sizeof a, "-q -j 2 --sim-db '%s' '%s' '%s'", keep, path_in("other.json"), p5);
    assert_int_equal(run_validate(a, NULL), EX_DATAERR);
    assert_true(err_has("no finished simulated runs (kind 'sim') of experiment other") ||
                err_has("none of its"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kendall),
        cmocka_unit_test(test_match_and_means),
        cmocka_unit_test(test_count_pairs),
        cmocka_unit_test(test_pooled_sources),
        cmocka_unit_test(test_rankings),
        cmocka_unit_test(test_queue_grows),
        cmocka_unit_test(test_p99_range),
        cmocka_unit_test(test_csv_markdown),
        cmocka_unit_test(test_graph_calibration_reported),
        cmocka_unit_test(test_combine_and_plot),
        cmocka_unit_test(test_combine_file_prefixed_name),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_self_validation),
        cmocka_unit_test(test_command),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
