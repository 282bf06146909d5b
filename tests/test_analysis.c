/* Analysis: the data behind every plot, the Chrome export and the report are
 * checked against a results database built here by hand (schema from the
 * results.h contract), with values worked out below; the gnuplot scripts must
 * run; the command's error cases give their sysexits codes. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
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

#include "tally/analysis.h"
#include "tally/results.h"
#include "test_db.h"

/* ---- the test database ------------------------------------------------------ */

/* The schema of results.h, written out here so that these tests do not lean on
 * the writer (core/results.c); test_open_accepts_writer_schema checks the two agree. */
static const char schema_sql[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE runs(run_id INTEGER PRIMARY KEY, run_key TEXT UNIQUE NOT NULL, experiment TEXT,"
    " kind TEXT NOT NULL, policy TEXT NOT NULL, policy_params TEXT, gpu TEXT, driver TEXT,"
    " clocks TEXT, seed INTEGER, repetition INTEGER, load REAL, duration_ns INTEGER,"
    " warmup_ns INTEGER, config TEXT, status TEXT, wall_s REAL, events INTEGER, created TEXT);"
    "CREATE TABLE jobs(run_id INTEGER NOT NULL, job_id INTEGER NOT NULL, name TEXT, trace TEXT,"
    " role TEXT, priority INTEGER, arrival TEXT, rate REAL, slo_ns INTEGER, alone_run_id INTEGER,"
    " PRIMARY KEY(run_id, job_id));"
    "CREATE TABLE requests(run_id INTEGER NOT NULL, job_id INTEGER NOT NULL, req_id INTEGER NOT NULL,"
    " arrival_ns INTEGER, start_ns INTEGER, end_ns INTEGER, latency_ns INTEGER, service_ns INTEGER,"
    " PRIMARY KEY(run_id, job_id, req_id));"
    "CREATE TABLE iterations(run_id INTEGER NOT NULL, job_id INTEGER NOT NULL, iter_idx INTEGER NOT NULL,"
    " start_ns INTEGER, end_ns INTEGER, PRIMARY KEY(run_id, job_id, iter_idx));"
    "CREATE TABLE metrics(run_id INTEGER NOT NULL, job_id INTEGER NOT NULL, name TEXT NOT NULL,"
    " value REAL, PRIMARY KEY(run_id, job_id, name));"
    "CREATE TABLE kernels(run_id INTEGER NOT NULL, job_id INTEGER, seq INTEGER, name TEXT,"
    " stream INTEGER, start_ns INTEGER, end_ns INTEGER, blocks INTEGER, avg_sms REAL, ptb INTEGER,"
    " retreated INTEGER);"
    "INSERT INTO meta VALUES('schema_version', '1');";

/* Experiment exp1 (sim unless said): bert = inference, priority 0, SLO 10 ms;
 * resnet = training, priority 1.
 *   run 1  alone  bert    p50 4 ms, p99 8 ms, throughput 50 req/s; 4 requests
 *   run 2  alone  resnet  throughput 10 it/s
 *   run 3  tally  rep 0   bert p99 8.8 ms (overhead 0.10), resnet rel 0.8, system 1.8,
 *                         5 requests, 4 kernels (one PTB retreated), 3 iterations
 *   run 4  tally  rep 1   bert p99 9.6 ms (overhead 0.20), resnet rel 0.6, system 1.6,
 *                         3 requests
 *          => tally mean: overhead 15 %, p99 9.2 ms, best-effort 0.7, system 1.7
 *   run 5  tgs            bert p99 16 ms and throughput 50, resnet throughput 9; no
 *                         derived metrics stored: overhead 100 %, resnet rel 0.9,
 *                         bert rel 1.0, system 1.9 come from the alone runs
 *   run 6  tally, kind hw  bert p99 10 ms, resnet throughput 7.5 (sim mean 7)
 *   run 7  tally, status 'failed': must be ignored
 *   run 8  experiment exp2, policy mps
 *   run 9  experiment exp2, policy mps with parameters: a group of its own */
static const char data_sql[] =
    "INSERT INTO runs(run_id, run_key, experiment, kind, policy, seed, repetition, load, status) VALUES"
    " (1,'k1','exp1','sim','alone',1,0,0.5,'done'),"
    " (2,'k2','exp1','sim','alone',1,0,0.5,'done'),"
    " (3,'k3','exp1','sim','tally',1,0,0.5,'done'),"
    " (4,'k4','exp1','sim','tally',2,1,0.5,'done'),"
    " (5,'k5','exp1','sim','tgs',1,0,0.5,'done'),"
    " (6,'k6','exp1','hw','tally',1,0,0.5,'done'),"
    " (7,'k7','exp1','sim','tally',3,2,0.5,'failed'),"
    " (8,'k8','exp2','sim','mps',1,0,0.5,'done');"
    "INSERT INTO runs(run_id, run_key, experiment, kind, policy, policy_params, load, status) VALUES"
    " (9,'k9','exp2','sim','mps','{\"sm_percent\": 50}',0.5,'done');"
    "INSERT INTO jobs(run_id, job_id, name, role, priority, slo_ns, alone_run_id) VALUES"
    " (1,0,'bert','inference',0,10000000,NULL),"
    " (2,0,'resnet','training',1,0,NULL),"
    " (3,0,'bert','inference',0,10000000,1), (3,1,'resnet','training',1,0,2),"
    " (4,0,'bert','inference',0,10000000,1), (4,1,'resnet','training',1,0,2),"
    " (5,0,'bert','inference',0,10000000,1), (5,1,'resnet','training',1,0,2),"
    " (6,0,'bert','inference',0,10000000,NULL), (6,1,'resnet','training',1,0,NULL),"
    " (7,0,'bert','inference',0,10000000,1), (7,1,'resnet','training',1,0,2),"
    " (8,0,'bert','inference',0,10000000,NULL), (8,1,'resnet','training',1,0,NULL),"
    " (9,0,'bert','inference',0,10000000,NULL), (9,1,'resnet','training',1,0,NULL);"
    "INSERT INTO metrics VALUES"
    " (1,0,'p50_ns',4000000), (1,0,'p99_ns',8000000), (1,0,'throughput',50),"
    " (1,0,'slo_attainment',1.0), (1,0,'util',0.2),"
    " (2,0,'throughput',10), (2,0,'util',0.6),"
    " (3,0,'p50_ns',4200000), (3,0,'p99_ns',8800000), (3,0,'p99_overhead',0.1),"
    " (3,0,'throughput',50), (3,0,'throughput_rel',1.0), (3,0,'slo_attainment',0.9),"
    " (3,0,'util',0.25),"
    " (3,1,'throughput',8), (3,1,'throughput_rel',0.8), (3,1,'util',0.5),"
    " (3,-1,'system_throughput',1.8), (3,-1,'util',0.75),"
    " (4,0,'p50_ns',4400000), (4,0,'p99_ns',9600000), (4,0,'p99_overhead',0.2),"
    " (4,0,'throughput',50), (4,0,'throughput_rel',1.0), (4,0,'slo_attainment',0.8),"
    " (4,0,'util',0.15),"
    " (4,1,'throughput',6), (4,1,'throughput_rel',0.6), (4,1,'util',0.4),"
    " (4,-1,'system_throughput',1.6), (4,-1,'util',0.55),"
    " (5,0,'p50_ns',6000000), (5,0,'p99_ns',16000000), (5,0,'throughput',50),"
    " (5,1,'throughput',9),"
    " (6,0,'p50_ns',5000000), (6,0,'p99_ns',10000000), (6,0,'throughput',48),"
    " (6,1,'throughput',7.5),"
    " (7,0,'p99_ns',99000000), (7,0,'p99_overhead',99),"
    " (8,0,'p99_ns',12000000), (8,0,'throughput',40), (8,1,'throughput',5);"
    /* latencies: alone 4, tally 5 + 3 (pooled 8), tgs 2, hw 2, exp2 1 */
    "INSERT INTO requests VALUES"
    " (1,0,0, 0,0, 3000000, 3000000,3000000), (1,0,1, 10000000,10000000,14000000, 4000000,4000000),"
    " (1,0,2, 20000000,20000000,25000000, 5000000,5000000),"
    " (1,0,3, 30000000,30000000,38000000, 8000000,8000000),"
    " (3,0,0, 0,      0,       4000000, 4000000,4000000),"
    " (3,0,1, 1000000,4000000, 9000000, 8000000,5000000),"
    " (3,0,2, 2000000,9000000, 11000000, 9000000,2000000),"
    " (3,0,3, 20000000,20000000,24000000, 4000000,4000000),"
    " (3,0,4, 30000000,30000000,33000000, 3000000,3000000),"
    " (4,0,0, 0,0, 6000000, 6000000,6000000), (4,0,1, 10000000,10000000,12000000, 2000000,2000000),"
    " (4,0,2, 20000000,20000000,29600000, 9600000,9600000),"
    " (5,0,0, 0,0, 16000000, 16000000,16000000), (5,0,1, 20000000,20000000,25000000, 5000000,5000000),"
    " (6,0,0, 0,0, 10000000, 10000000,10000000), (6,0,1, 20000000,20000000,24000000, 4000000,4000000),"
    " (8,0,0, 0,0, 12000000, 12000000,12000000);"
    "INSERT INTO iterations VALUES (3,1,0, 0,2000000), (3,1,1, 2000000,3000000),"
    " (3,1,2, 3000000,9000000);"
    /* run 3 kernels: bert on stream 7; resnet on streams 13 (PTB) and 14 */
    "INSERT INTO kernels VALUES"
    " (3,0,0,'gemm',7, 0,1000000, 100, 66.0, 0,0),"
    " (3,1,0,'conv',13, 500000,2000000, 800, 132.0, 1,1),"
    " (3,1,1,'conv',13, 2000000,3000000, 400, 50.0, 1,0),"
    " (3,1,2,'relu',14, 2500000,2800000, 64, 10.0, 0,0);";

static char tmpdir[64];
static char db_path[128];

static void make_db(const char *path, const char *schema, const char *data)
{
    unlink(path);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    tl_test_exec_sql(db, schema);
    if (data)
        tl_test_exec_sql(db, data);
    sqlite3_close(db);
}

static char *path_in(const char *name)
{
    static char buf[8][256];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 256, "%s/%s", tmpdir, name);
    return p;
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tally-test-analysis-XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    snprintf(db_path, sizeof db_path, "%s/results.db", tmpdir);
    make_db(db_path, schema_sql, data_sql);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return tl_test_remove_tree(tmpdir);
}

static bool have_gnuplot(void)
{
    static int cached = -1;
    if (cached < 0)
        cached = system("gnuplot --version >/dev/null 2>&1") == 0;
    if (!cached)
        print_message("gnuplot not installed: skipping the rendering checks\n");
    return cached;
}

static void open_db(tl_analysis *a)
{
    tl_err err = {0};
    int r = tl_analysis_open(a, db_path, &err);
    if (r < 0)
        fail_msg("%s", err.msg);
}

/* ---- reading the .dat files ---------------------------------------------- */

typedef struct dat_row {
    int block; /* blocks are separated by two blank lines */
    int n;
    char tok[12][96];
} dat_row;

typedef struct dat {
    dat_row *rows;
    int n;
    int blocks;
} dat;

static void dat_read(const char *path, dat *d)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s: missing", path);
    memset(d, 0, sizeof *d);
    char line[4096];
    int blanks = 0, block = 0;
    bool any = false;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!line[0]) {
            blanks++;
            continue;
        }
        if (blanks >= 2 && any)
            block++;
        blanks = 0;
        any = true;
        if (line[0] == '#')
            continue;
        d->rows = realloc(d->rows, (size_t)(d->n + 1) * sizeof *d->rows);
        dat_row *r = &d->rows[d->n++];
        memset(r, 0, sizeof *r);
        r->block = block;
        for (char *p = line; *p && r->n < 12;) {
            while (*p == ' ')
                p++;
            if (!*p)
                break;
            char *o = r->tok[r->n++];
            if (*p == '"') {
                char *e = strchr(p + 1, '"');
                assert_non_null(e);
                snprintf(o, 96, "%.*s", (int)(e - p - 1), p + 1);
                p = e + 1;
            } else {
                size_t len = strcspn(p, " ");
                snprintf(o, 96, "%.*s", (int)len, p);
                p += len;
            }
        }
    }
    d->blocks = any ? block + 1 : 0;
    fclose(f);
}

static double num(const dat_row *r, int i)
{
    assert_true(i < r->n);
    return strcmp(r->tok[i], "NaN") ? atof(r->tok[i]) : NAN;
}

static const dat_row *find_row(const dat *d, int block, int col, const char *val)
{
    for (int i = 0; i < d->n; i++)
        if (d->rows[i].block == block && !strcmp(d->rows[i].tok[col], val))
            return &d->rows[i];
    fail_msg("no row with column %d = '%s' in block %d", col, val, block);
    return NULL;
}

static int rows_in_block(const dat *d, int block)
{
    int n = 0;
    for (int i = 0; i < d->n; i++)
        n += d->rows[i].block == block;
    return n;
}

static bool file_nonempty(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_size > 0;
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

/* How many temporaries (".NAME.XXXXXX") of the output helper are left in dir. */
static int no_temporaries(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -E '^\\..*\\.[A-Za-z0-9]{6}$' >/dev/null", dir);
    return system(cmd) == 0 ? 1 : 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    fclose(f);
    return s;
}

#define assert_near(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-6 * (1 + fabs((double)(b))))

static tl_plot_opts opts(const char *sub, bool render)
{
    return (tl_plot_opts){.out_dir = path_in(sub), .formats = TL_FMT_PNG | TL_FMT_SVG,
                          .no_render = !render};
}

/* ---- the database -------------------------------------------------------- */

static void test_open_errors(void **state)
{
    (void)state;
    tl_analysis a;
    tl_err err = {0};
    assert_int_equal(tl_analysis_open(&a, path_in("nope.db"), &err), TL_EIO);
    assert_non_null(strstr(err.msg, "nope.db"));
    /* an empty file name (--db ''): the user's mistake, exit 64, not 70 (fuzzing) */
    assert_int_equal(tl_analysis_open(&a, "", &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "no results database given"));
    assert_int_equal(tl_exit_code(err.code), EX_USAGE);
    /* a folder: SQLite's own "disk I/O error" said nothing (fuzz round 26) */
    assert_int_equal(tl_analysis_open(&a, "/tmp", &err), TL_EIO);
    assert_non_null(strstr(err.msg, "/tmp: is a folder"));

    /* an SQLite file without our tables */
    const char *other = path_in("other.db");
    make_db(other, "CREATE TABLE t(x);", NULL);
    assert_int_equal(tl_analysis_open(&a, other, &err), TL_EFORMAT);
    assert_non_null(strstr(err.msg, "not a Tally results database"));

    /* a text file */
    const char *text = path_in("text.db");
    FILE *f = fopen(text, "w");
    fputs("this is not a database, but it is long enough to have a header or two.......\n"
          "................................................................................\n",
          f);
    fclose(f);
    assert_int_equal(tl_analysis_open(&a, text, &err), TL_EFORMAT);
    assert_non_null(strstr(err.msg, "text.db"));

    /* a runs table missing a column */
    const char *bad = path_in("badcol.db");
    make_db(bad,
            "CREATE TABLE runs(run_id INTEGER PRIMARY KEY, experiment TEXT);"
            "CREATE TABLE jobs(x); CREATE TABLE requests(x); CREATE TABLE metrics(x);",
            NULL);
    assert_int_equal(tl_analysis_open(&a, bad, &err), TL_EFORMAT);
    assert_non_null(strstr(err.msg, "runs"));

    /* another schema version */
    const char *v2 = path_in("v2.db");
    make_db(v2, schema_sql, "UPDATE meta SET value='2' WHERE key='schema_version';");
    assert_int_equal(tl_analysis_open(&a, v2, &err), TL_EFORMAT);
    assert_non_null(strstr(err.msg, "schema_version is '2', this version of Tally reads 1"));
    /* compared as the writer does, as text: 'abc' was reported as version 0
     * and '1x' read as 1 */
    make_db(v2, schema_sql, "UPDATE meta SET value='1x' WHERE key='schema_version';");
    assert_int_equal(tl_analysis_open(&a, v2, &err), TL_EFORMAT);
    assert_non_null(strstr(err.msg, "schema_version is '1x'"));

    /* text or a fraction in a numeric column: sqlite3_column_int64 and SQL's
     * sums read 'abc' as 0, a silent wrong answer (fuzz round 26); named at open */
    const char *typed = path_in("typed.db");
    static const struct { const char *rows, *want; } damaged[] = {
        {"INSERT INTO requests VALUES(1, 0, 0, 0, 5, 10, 10, 5);"
         "INSERT INTO requests VALUES(1, 0, 1, 20, 25, 30, 'abc', 5);",
         "typed.db: table 'requests', row 2: latency_ns is text 'abc' (expected an integer or nothing)"},
        {"INSERT INTO requests VALUES(1, 0, 0, 0, 5, 10.5, 10, 5);",
         "row 1: end_ns is a fraction '10.5'"},
        {"INSERT INTO metrics VALUES(1, 0, 'x', 'fast');",
         "table 'metrics', row 1: value is text 'fast' (expected a number or nothing)"},
    };
    for (size_t i = 0; i < sizeof damaged / sizeof *damaged; i++) {
        char rows[512];
        snprintf(rows, sizeof rows, "INSERT INTO runs(run_id, run_key, kind, policy) "
                 "VALUES(1, 'k', 'sim', 'tally');%s", damaged[i].rows);
        make_db(typed, schema_sql, rows);
        assert_int_equal(tl_analysis_open(&a, typed, &err), TL_EFORMAT);
        if (!strstr(err.msg, damaged[i].want))
            fail_msg("got '%s', want '%s'", err.msg, damaged[i].want);
    }
    /* a damaged file: a page overwritten past the schema's was a failure
     * to write an output (TL_EDB, exit 73), a truncated one "no table
     * 'runs'"; both are the database's content, and say it is damaged */
    const char *big = path_in("big.db");
    make_db(big, schema_sql,
            "INSERT INTO runs(run_id, run_key, kind, policy) VALUES(1, 'k', 'sim', 'tally');"
            "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 20000) "
            "INSERT INTO requests SELECT 1, 0, i, i, i, i, 0, 0 FROM c;");
    assert_int_equal(tl_analysis_open(&a, big, &err), 0);
    tl_analysis_close(&a);
    size_t len = (size_t)file_size(big);
    char *bytes = slurp(big);
    assert_true(len > 200000);
    const char *dmg = path_in("damaged.db");
    for (int k = 0; k < 2; k++) {
        FILE *w = fopen(dmg, "wb");
        assert_non_null(w);
        if (k == 0) { /* 8 KiB of 0xff in the middle */
            memset(bytes + len / 2, 0xff, 8192);
            fwrite(bytes, 1, len, w);
        } else { /* its first two pages */
            fwrite(bytes, 1, 8192, w);
        }
        fclose(w);
        assert_int_equal(tl_analysis_open(&a, dmg, &err), TL_EFORMAT);
        if (!strstr(err.msg, "damaged.db: a damaged SQLite database (truncated or corrupt"))
            fail_msg("got '%s'", err.msg);
    }
    free(bytes);

    /* numbers where they belong, and NULLs, are accepted */
    make_db(typed, schema_sql,
            "INSERT INTO runs(run_id, run_key, kind, policy, load) VALUES(1, 'k', 'sim', 'tally', 1);"
            "INSERT INTO requests VALUES(1, 0, 0, 0, NULL, NULL, NULL, NULL);"
            "INSERT INTO metrics VALUES(1, 0, 'x', 2.5);");
    assert_int_equal(tl_analysis_open(&a, typed, &err), 0);
    tl_analysis_close(&a);
}

/* The writer's own schema (core/results.c) must be readable: the contract holds. */
static void test_open_accepts_writer_schema(void **state)
{
    (void)state;
    const char *p = path_in("writer.db");
    make_db(p, tl_results_schema_sql(), NULL);
    tl_analysis a;
    tl_err err = {0};
    assert_int_equal(tl_analysis_open(&a, p, &err), 0);
    assert_true(a.has_kernels);
    tl_groups g;
    assert_int_equal(tl_groups_load(&a, NULL, &g, &err), TL_EMISSING);
    assert_non_null(strstr(err.msg, "no finished runs"));
    tl_analysis_close(&a);
}

static const tl_group *find_group(const tl_groups *g, const char *policy, const char *kind)
{
    for (size_t i = 0; i < g->n; i++)
        if (!strcmp(g->v[i].policy, policy) && !strcmp(g->v[i].kind, kind))
            return &g->v[i];
    return NULL;
}

static void test_groups_mean_and_derived(void **state)
{
    (void)state;
    tl_analysis a;
    open_db(&a);
    tl_groups g;
    tl_err err = {0};
    tl_filter f = {.experiment = "exp1"};
    assert_int_equal(tl_groups_load(&a, &f, &g, &err), 0);
    /* alone bert, alone resnet, tally sim, tally hw, tgs sim; failed run 7 left out */
    assert_int_equal(g.n, 5);
    const tl_group *t = find_group(&g, "tally", "sim");
    assert_non_null(t);
    assert_int_equal(t->n_runs, 2);
    assert_int_equal(t->hp, 0);
    assert_string_equal(t->jobs[0].name, "bert");
    assert_near(tl_group_job_mean(&t->jobs[0], TL_M_P99), 9.2e6);
    assert_near(tl_group_job_mean(&t->jobs[0], TL_M_P99_OVERHEAD), 0.15);
    assert_near(tl_group_job_mean(&t->jobs[1], TL_M_THROUGHPUT_REL), 0.7);
    assert_near(tl_group_sys_mean(t, TL_SYS_THROUGHPUT), 1.7);
    assert_near(tl_group_sys_mean(t, TL_SYS_UTIL), 0.65);
    assert_true(isnan(tl_group_job_mean(&t->jobs[1], TL_M_P99)));
    /* tgs stored no derived metrics: they come from the alone runs */
    const tl_group *s = find_group(&g, "tgs", "sim");
    assert_non_null(s);
    assert_near(tl_group_job_mean(&s->jobs[0], TL_M_P99_OVERHEAD), 1.0);
    assert_near(tl_group_job_mean(&s->jobs[1], TL_M_THROUGHPUT_REL), 0.9);
    assert_near(tl_group_sys_mean(s, TL_SYS_THROUGHPUT), 1.9);
    /* sim and hw in one experiment: the legend says which */
    assert_string_equal(t->label, "tally (sim)");
    tl_groups_close(&g);

    /* filters: policy list, kind, run id, nothing */
    f = (tl_filter){.policies = "tgs,mps"};
    assert_int_equal(tl_groups_load(&a, &f, &g, &err), 0);
    assert_int_equal(g.n, 3); /* exp1 tgs; exp2 mps with and without parameters */
    tl_groups_close(&g);
    f = (tl_filter){.experiment = "exp2"};
    assert_int_equal(tl_groups_load(&a, &f, &g, &err), 0);
    assert_int_equal(g.n, 2);
    assert_string_equal(g.v[0].label, "mps");
    assert_string_equal(g.v[1].label, "mps {sm_percent: 50}");
    tl_groups_close(&g);
    f = (tl_filter){.experiment = "exp1", .kind = "sim", .policies = "tally"};
    assert_int_equal(tl_groups_load(&a, &f, &g, &err), 0);
    assert_int_equal(g.n, 1);
    assert_string_equal(g.v[0].label, "tally");
    tl_groups_close(&g);
    f = (tl_filter){.run_id = 7};
    assert_int_equal(tl_groups_load(&a, &f, &g, &err), TL_EMISSING);
    assert_non_null(strstr(err.msg, "--run-id 7"));
    f = (tl_filter){.experiment = "nope"};
    assert_int_equal(tl_groups_load(&a, &f, &g, &err), TL_EMISSING);
    assert_non_null(strstr(err.msg, "--experiment nope"));
    tl_analysis_close(&a);
}

/* A database written before model revision 22 stored an inference job's
 * throughput as every request that arrived in the window (the run drains after
 * it): an overloaded queue read 1.000 of alone. Groups recount it from the
 * requests, served inside the window (warm-up 0.1 s + 1 s): alone 4 of 4 (4/s),
 * mps 3 of 5 (the two ending after 1.1 s are not): 3/s, 0.75 of alone, and the
 * system 0.75 + 0.9 = 1.65, not the stored 5/s, 1.25 and 2.15. */
static void test_groups_recount_served(void **state)
{
    (void)state;
    const char *data =
        "INSERT INTO runs(run_id, run_key, experiment, kind, policy, seed, repetition, load, status,"
        " duration_ns, warmup_ns) VALUES (1,'a','old','hw','alone',1,0,0.5,'done',1000000000,100000000),"
        " (2,'b','old','hw','alone',1,0,0.5,'done',1000000000,100000000),"
        " (3,'c','old','hw','mps',1,0,0.5,'done',1000000000,100000000);"
        "INSERT INTO jobs(run_id, job_id, name, role, priority, slo_ns, alone_run_id) VALUES"
        " (1,0,'bert','inference',0,0,NULL), (2,0,'resnet','training',1,0,NULL),"
        " (3,0,'bert','inference',0,0,1), (3,1,'resnet','training',1,0,2);"
        "INSERT INTO metrics VALUES (1,0,'throughput',4), (2,0,'throughput',10),"
        " (3,0,'throughput',5), (3,0,'throughput_rel',1.25), (3,1,'throughput',9),"
        " (3,1,'throughput_rel',0.9), (3,-1,'system_throughput',2.15);"
        "INSERT INTO requests VALUES"
        " (1,0,0, 200000000,200000000,210000000, 10000000,10000000),"
        " (1,0,1, 400000000,400000000,410000000, 10000000,10000000),"
        " (1,0,2, 600000000,600000000,610000000, 10000000,10000000),"
        " (1,0,3, 800000000,800000000,810000000, 10000000,10000000),"
        " (3,0,0, 200000000,200000000,300000000, 100000000,100000000),"
        " (3,0,1, 400000000,400000000,700000000, 300000000,300000000),"
        " (3,0,2, 600000000,700000000,1000000000, 400000000,300000000),"
        " (3,0,3, 800000000,1000000000,1300000000, 500000000,300000000),"
        " (3,0,4, 1000000000,1300000000,1600000000, 600000000,300000000);";
    make_db(path_in("old.db"), schema_sql, data);
    tl_analysis a;
    tl_err err = {0};
    assert_int_equal(tl_analysis_open(&a, path_in("old.db"), &err), 0);
    tl_groups g;
    tl_filter f = {0};
    assert_int_equal(tl_groups_load(&a, &f, &g, &err), 0);
    const tl_group *m = find_group(&g, "mps", "hw");
    assert_non_null(m);
    assert_near(tl_group_job_mean(&m->jobs[0], TL_M_THROUGHPUT), 3.0);
    assert_near(tl_group_job_mean(&m->jobs[0], TL_M_THROUGHPUT_REL), 0.75);
    assert_near(tl_group_job_mean(&m->jobs[1], TL_M_THROUGHPUT_REL), 0.9); /* training: as stored */
    assert_near(tl_group_sys_mean(m, TL_SYS_THROUGHPUT), 1.65);
    tl_groups_close(&g);
    tl_analysis_close(&a);
}

/* ---- plots ------------------------------------------------------------------ */

static void test_tradeoff_data(void **state)
{
    (void)state;
    tl_analysis a;
    open_db(&a);
    tl_err err = {0};
    tl_filter f = {.experiment = "exp1", .kind = "sim"};
    tl_plot_opts o = opts("tradeoff", have_gnuplot());
    int r = tl_plot_tradeoff(&a, &f, &o, &err);
    if (r < 0)
        fail_msg("%s", err.msg);
    dat d;
    dat_read(path_in("tradeoff/exp1_tradeoff.dat"), &d);
    /* one row per policy, 'alone' baselines excluded:
     * label runs hp p99_ms overhead_pct be_rel system */
    assert_int_equal(d.n, 2);
    const dat_row *t = find_row(&d, 0, 0, "tally");
    assert_int_equal(atoi(t->tok[1]), 2);
    assert_string_equal(t->tok[2], "bert");
    assert_near(num(t, 3), 9.2);
    assert_near(num(t, 4), 15.0);
    assert_near(num(t, 5), 0.7);
    assert_near(num(t, 6), 1.7);
    const dat_row *s = find_row(&d, 0, 0, "tgs");
    assert_near(num(s, 3), 16.0);
    assert_near(num(s, 4), 100.0);
    assert_near(num(s, 5), 0.9);
    assert_near(num(s, 6), 1.9);
    free(d.rows);

    char *gp = slurp(path_in("tradeoff/exp1_tradeoff.gp"));
    assert_non_null(gp);
    assert_non_null(strstr(gp, "set xlabel \"p99 latency overhead of bert vs running alone (%)\""));
    assert_non_null(strstr(gp, "exp1: latency / throughput trade-off (mean of 1-2 runs per policy)"));
    free(gp);
    if (have_gnuplot()) {
        assert_true(file_nonempty(path_in("tradeoff/exp1_tradeoff.png")));
        assert_true(file_nonempty(path_in("tradeoff/exp1_tradeoff.svg")));
    }

    /* same database, same files: byte for byte */
    char *first = slurp(path_in("tradeoff/exp1_tradeoff.dat"));
    o.no_render = true;
    assert_int_equal(tl_plot_tradeoff(&a, &f, &o, &err), 0);
    char *second = slurp(path_in("tradeoff/exp1_tradeoff.dat"));
    assert_string_equal(first, second);
    free(first);
    free(second);

    /* exp2 has no alone baselines and no derived metrics: nothing to plot */
    f = (tl_filter){.experiment = "exp2"};
    assert_int_equal(tl_plot_tradeoff(&a, &f, &o, &err), TL_EMISSING);
    assert_non_null(strstr(err.msg, "exp2"));
    /* and names the database (said only "experiment exp2: ..."; fuzz round 27) */
    assert_non_null(strstr(err.msg, a.path));
    assert_ptr_equal(strstr(err.msg, a.path), err.msg);
    tl_analysis_close(&a);
}

static void check_cdf_block(const dat *d, int block, int count)
{
    assert_int_equal(rows_in_block(d, block), count);
    double last_x = -1, last_y = 0;
    int seen = 0;
    for (int i = 0; i < d->n; i++) {
        const dat_row *r = &d->rows[i];
        if (r->block != block)
            continue;
        seen++;
        assert_true(num(r, 0) >= last_x);
        assert_true(num(r, 1) > last_y);
        assert_near(num(r, 1), (double)seen / count);
        last_x = num(r, 0);
        last_y = num(r, 1);
    }
    assert_near(last_y, 1.0);
}

static void test_cdf_data(void **state)
{
    (void)state;
    tl_analysis a;
    open_db(&a);
    tl_err err = {0};
    tl_filter f = {.experiment = "exp1", .kind = "sim"};
    tl_plot_opts o = opts("cdf", have_gnuplot());
    int r = tl_plot_cdf(&a, &f, &o, &err);
    if (r < 0)
        fail_msg("%s", err.msg);
    dat d;
    dat_read(path_in("cdf/exp1_cdf.dat"), &d);
    /* blocks in group order: alone [bert] (4), tally (3 + 5 pooled), tgs (2), then the SLO */
    assert_int_equal(d.blocks, 4);
    check_cdf_block(&d, 0, 4);
    check_cdf_block(&d, 1, 8);
    check_cdf_block(&d, 2, 2);
    /* pooled tally latencies sorted: 2 3 4 4 6 8 9 9.6 ms */
    static const double tally_ms[] = {2, 3, 4, 4, 6, 8, 9, 9.6};
    int k = 0;
    for (int i = 0; i < d.n; i++)
        if (d.rows[i].block == 1) {
            assert_near(num(&d.rows[i], 0), tally_ms[k]);
            k++;
        }
    /* the SLO: a vertical line at 10 ms */
    assert_int_equal(rows_in_block(&d, 3), 2);
    for (int i = 0; i < d.n; i++)
        if (d.rows[i].block == 3)
            assert_near(num(&d.rows[i], 0), 10.0);
    free(d.rows);
    char *gp = slurp(path_in("cdf/exp1_cdf.gp"));
    assert_non_null(strstr(gp, "title \"SLO of bert: 10 ms\""));
    assert_non_null(strstr(gp, "title \"tally (8 requests)\""));
    assert_non_null(strstr(gp, "pooled over 1-2 runs per policy"));
    free(gp);
    if (have_gnuplot())
        assert_true(file_nonempty(path_in("cdf/exp1_cdf.png")));
    tl_analysis_close(&a);
}

static void test_bars_data(void **state)
{
    (void)state;
    tl_analysis a;
    open_db(&a);
    tl_err err = {0};
    tl_filter f = {.experiment = "exp1", .kind = "sim"};
    tl_plot_opts o = opts("bars", have_gnuplot());
    int r = tl_plot_bars(&a, &f, &o, &err);
    if (r < 0)
        fail_msg("%s", err.msg);
    dat d;
    dat_read(path_in("bars/exp1_bars.dat"), &d);
    /* block 0 bert, block 1 resnet, block 2 system; rows: tally (x 0), tgs (x 1)
     * columns: x label p50_ms p99_ms throughput_rel util_pct throughput */
    assert_int_equal(d.blocks, 3);
    const dat_row *b = find_row(&d, 0, 1, "tally");
    assert_int_equal(atoi(b->tok[0]), 0);
    assert_near(num(b, 2), 4.3);
    assert_near(num(b, 3), 9.2);
    assert_near(num(b, 4), 1.0);
    assert_near(num(b, 5), 20.0);
    assert_near(num(b, 6), 50.0);
    const dat_row *t = find_row(&d, 1, 1, "tgs");
    assert_int_equal(atoi(t->tok[0]), 1);
    assert_true(isnan(num(t, 3)));
    assert_near(num(t, 4), 0.9);
    assert_near(num(t, 6), 9.0);
    const dat_row *s = find_row(&d, 2, 1, "tally");
    assert_near(num(s, 2), 1.7);
    assert_near(num(s, 3), 65.0);
    free(d.rows);
    if (have_gnuplot())
        assert_true(file_nonempty(path_in("bars/exp1_bars.png")));
    tl_analysis_close(&a);
}

/* Experiments "exp 1" and "exp_1" have one safe file name: the second's
 * plots used to replace the first's (exit 0). The second is refused, naming
 * both, and the first's files stay its own. */
static void test_plot_name_clash(void **state)
{
    (void)state;
    const char *db = path_in("clash.db");
    make_db(db, schema_sql, data_sql);
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    tl_test_exec_sql(h, "UPDATE runs SET experiment = CASE experiment WHEN 'exp1' THEN 'exp_1' "
                        "ELSE 'exp 1' END");
    sqlite3_close(h);
    tl_analysis a;
    tl_err err = {0};
    assert_int_equal(tl_analysis_open(&a, db, &err), 0);
    tl_filter f = {.kind = "sim"};
    tl_plot_opts o = opts("clash", false);
    assert_int_equal(tl_plot_bars(&a, &f, &o, &err), TL_EIO);
    assert_non_null(strstr(err.msg, "'exp 1' and 'exp_1'")); /* in name order */
    assert_non_null(strstr(err.msg, "clash.db"));
    char *text = slurp(path_in("clash/exp_1_bars.dat"));
    assert_non_null(strstr(text, "experiment exp 1:"));
    free(text);
    /* one of them at a time is plotted */
    f.experiment = "exp_1";
    o = opts("clash2", false);
    assert_int_equal(tl_plot_bars(&a, &f, &o, &err), 0);
    tl_analysis_close(&a);
}

/* Occupancy of each job at time t (ms), read off the step function. */
static void occ_at(const dat *d, double t, double *bert, double *resnet)
{
    /* the value after the last change at or before t */
    for (int i = 0; i < d->n; i++) {
        const dat_row *r = &d->rows[i];
        if (r->block != 0 || num(r, 0) > t)
            continue;
        *bert = num(r, 1);
        *resnet = num(r, 2);
    }
}

static void test_timeline_data(void **state)
{
    (void)state;
    tl_analysis a;
    open_db(&a);
    tl_err err = {0};
    tl_plot_opts o = opts("timeline", have_gnuplot());
    int r = tl_plot_timeline(&a, 3, &o, &err);
    if (r < 0)
        fail_msg("%s", err.msg);
    dat d;
    dat_read(path_in("timeline/run3_timeline.dat"), &d);
    /* block 0 occupancy; block 1 the requests of bert (resnet has none) */
    assert_int_equal(d.blocks, 2);
    double b = -1, s = -1;
    occ_at(&d, 0.25, &b, &s);
    assert_near(b, 66);
    assert_near(s, 0);
    occ_at(&d, 0.75, &b, &s);
    assert_near(b, 66);
    assert_near(s, 132);
    occ_at(&d, 2.6, &b, &s);
    assert_near(b, 0);
    assert_near(s, 60);
    occ_at(&d, 2.9, &b, &s);
    assert_near(s, 50);
    /* whole run: from the first arrival (0) to the last completion (33 ms) */
    assert_near(num(&d.rows[0], 0), 0);
    assert_near(num(&d.rows[rows_in_block(&d, 0) - 1], 0), 33);
    assert_int_equal(rows_in_block(&d, 1), 5);
    const dat_row *q = find_row(&d, 1, 0, "1");
    assert_near(num(q, 1), 1.0);
    assert_near(num(q, 2), 9.0);
    assert_near(num(q, 3), 8.0);
    free(d.rows);
    if (have_gnuplot())
        assert_true(file_nonempty(path_in("timeline/run3_timeline.png")));

    /* a window [0.6, 2.2] ms: kernels clipped, requests overlapping it kept */
    o.from_ns = 600000;
    o.to_ns = 2200000;
    o.no_render = true;
    assert_int_equal(tl_plot_timeline(&a, 3, &o, &err), 0);
    dat_read(path_in("timeline/run3_timeline.dat"), &d);
    assert_near(num(&d.rows[0], 0), 0.6);
    assert_near(num(&d.rows[0], 1), 66);
    assert_near(num(&d.rows[0], 2), 132);
    assert_near(num(&d.rows[rows_in_block(&d, 0) - 1], 0), 2.2);
    assert_int_equal(rows_in_block(&d, 1), 3); /* requests 0, 1, 2 */
    free(d.rows);
    /* a window past its kernels: said so, not 'run tally-sim with --kernels' */
    o.from_ns = 5000000;
    o.to_ns = 6000000;
    assert_int_equal(tl_plot_timeline(&a, 3, &o, &err), TL_EMISSING);
    if (!strstr(err.msg, "run 3 has no kernel records from 5 to 6 ms (--from-ms, --to-ms); they "
                         "run from 0 to 3 ms"))
        fail_msg("got '%s'", err.msg);

    /* a run without kernel records, a run that does not exist */
    o = opts("timeline", false);
    assert_int_equal(tl_plot_timeline(&a, 4, &o, &err), TL_EMISSING);
    assert_non_null(strstr(err.msg, "--kernels"));
    assert_int_equal(tl_plot_timeline(&a, 99, &o, &err), TL_EMISSING);
    assert_non_null(strstr(err.msg, "99"));
    tl_analysis_close(&a);

    /* A damaged database (fuzzing): run 3 without its jobs is refused, naming
     * the file, by timeline and chrome alike; with its jobs but every kernel
     * of no SMs the timeline has no occupancy change (qsort of none). */
    const char *nojobs = path_in("nojobs.db");
    make_db(nojobs, schema_sql, data_sql);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(nojobs, &db), SQLITE_OK);
    tl_test_exec_sql(db, "DELETE FROM jobs WHERE run_id=3;");
    sqlite3_close(db);
    tl_err e2 = {0};
    assert_int_equal(tl_analysis_open(&a, nojobs, &e2), 0);
    assert_int_equal(tl_plot_timeline(&a, 3, &o, &e2), TL_EFORMAT);
    assert_non_null(strstr(e2.msg, "nojobs.db: run 3 has no rows in table jobs"));
    assert_int_equal(tl_chrome_export(&a, 3, path_in("nojobs.json"), &e2), TL_EFORMAT);
    assert_non_null(strstr(e2.msg, "nojobs.db: run 3 has no rows in table jobs"));
    tl_analysis_close(&a);
    const char *nosms = path_in("nosms.db");
    make_db(nosms, schema_sql, data_sql);
    assert_int_equal(sqlite3_open(nosms, &db), SQLITE_OK);
    tl_test_exec_sql(db, "UPDATE kernels SET avg_sms=0 WHERE run_id=3;");
    sqlite3_close(db);
    assert_int_equal(tl_analysis_open(&a, nosms, &e2), 0);
    o.no_render = true;
    if (tl_plot_timeline(&a, 3, &o, &e2) < 0)
        fail_msg("%s", e2.msg);
    tl_analysis_close(&a);
}

static void test_simhw_data(void **state)
{
    (void)state;
    tl_analysis a;
    open_db(&a);
    tl_err err = {0};
    tl_filter f = {.experiment = "exp1"};
    tl_plot_opts o = opts("simhw", have_gnuplot());
    int r = tl_plot_simhw(&a, &f, &o, &err);
    if (r < 0)
        fail_msg("%s", err.msg);
    dat d;
    dat_read(path_in("simhw/exp1_simhw.dat"), &d);
    /* block 0 throughput of every job, block 1 p99 of the inference job; only
     * tally has both kinds. columns: x label sim hw err_pct */
    assert_int_equal(d.blocks, 2);
    assert_int_equal(rows_in_block(&d, 0), 2);
    const dat_row *t = find_row(&d, 0, 1, "tally: resnet");
    assert_near(num(t, 2), 7.0);
    assert_near(num(t, 3), 7.5);
    assert_near(num(t, 4), (7.0 - 7.5) / 7.5 * 100);
    assert_int_equal(rows_in_block(&d, 1), 1);
    const dat_row *p = find_row(&d, 1, 1, "tally: bert");
    assert_near(num(p, 2), 9.2);
    assert_near(num(p, 3), 10.0);
    assert_near(num(p, 4), -8.0);
    free(d.rows);
    /* values within a factor of 50 of each other: linear axes (a log axis
     * only where bars would vanish beside others orders of magnitude taller) */
    char *gp = slurp(path_in("simhw/exp1_simhw.gp"));
    assert_null(strstr(gp, "\nset logscale y"));
    assert_non_null(strstr(gp, "set yrange [0:*]"));
    assert_non_null(strstr(gp, "rotate by 45 right"));
    free(gp);
    if (have_gnuplot())
        assert_true(file_nonempty(path_in("simhw/exp1_simhw.png")));
    f = (tl_filter){.experiment = "exp2"};
    assert_int_equal(tl_plot_simhw(&a, &f, &o, &err), TL_EMISSING);
    assert_non_null(strstr(err.msg, "both"));
    tl_analysis_close(&a);
}

/* ---- gnuplot ----------------------------------------------------------------- */

static void test_gnuplot_errors(void **state)
{
    (void)state;
    const char *dir = path_in("gp");
    mkdir(dir, 0777);
    tl_err err = {0};
    setenv("TALLY_GNUPLOT", "/nonexistent/gnuplot", 1);
    assert_int_equal(tl_gnuplot_render(dir, "x.gp", "x", TL_FMT_PNG, NULL, &err), TL_ENODEV);
    assert_non_null(strstr(err.msg, "gnuplot not found"));
    unsetenv("TALLY_GNUPLOT");
    if (!have_gnuplot())
        return;
    /* a script gnuplot rejects: the error carries its message */
    FILE *f = fopen(path_in("gp/bad.gp"), "w");
    fputs("set output 'bad.png'\nplot sin(x) with nonsense\n", f);
    fclose(f);
    assert_int_equal(tl_gnuplot_render(dir, "bad.gp", "bad", TL_FMT_PNG, NULL, &err), TL_EINVAL);
    assert_non_null(strstr(err.msg, "gnuplot failed on"));
    assert_non_null(strstr(err.msg, "bad.gp"));
    assert_null(strchr(err.msg, '\n'));
    /* a script that runs but writes no image */
    f = fopen(path_in("gp/noimg.gp"), "w");
    fputs("print 1\n", f);
    fclose(f);
    assert_int_equal(tl_gnuplot_render(dir, "noimg.gp", "noimg", TL_FMT_PNG, NULL, &err),
                     TL_EINVAL);
    assert_non_null(strstr(err.msg, "no image"));
    unsigned fm;
    assert_int_equal(tl_plot_parse_formats("png,svg", &fm, &err), 0);
    assert_int_equal(fm, TL_FMT_PNG | TL_FMT_SVG);
    assert_int_equal(tl_plot_parse_formats("png,gif", &fm, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "unknown format 'gif'"));
    /* empty entries are refused, as --policy's are (they were skipped; fuzz round 27) */
    assert_int_equal(tl_plot_parse_formats("png,,svg", &fm, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "an empty entry in 'png,,svg'"));
    assert_int_equal(tl_plot_parse_formats("png,", &fm, &err), TL_EUNKNOWN);
    assert_int_equal(tl_plot_parse_formats(",png", &fm, &err), TL_EUNKNOWN);
    assert_int_equal(tl_plot_parse_formats("", &fm, &err), TL_EUNKNOWN);
    assert_int_equal(tl_plot_parse_formats("pdf,png", &fm, &err), 0);
    assert_int_equal(fm, TL_FMT_PDF | TL_FMT_PNG);
}

/* The scripts are meant to be rerun by hand, in every format this gnuplot has. */
static void test_scripts_rerun(void **state)
{
    (void)state;
    if (!have_gnuplot())
        return;
    tl_analysis a;
    open_db(&a);
    tl_err err = {0};
    tl_filter f = {.experiment = "exp1"};
    tl_plot_opts o = opts("rerun", false);
    assert_int_equal(tl_plot_bars(&a, &f, &o, &err), 0);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot exp1_bars.gp 2>/dev/null", o.out_dir);
    assert_int_equal(system(cmd), 0);
    assert_true(file_nonempty(path_in("rerun/exp1_bars.png")));
    if (tl_gnuplot_has_terminal("pdfcairo")) {
        o.formats = TL_FMT_PDF;
        o.no_render = false;
        assert_int_equal(tl_plot_bars(&a, &f, &o, &err), 0);
        assert_true(file_nonempty(path_in("rerun/exp1_bars.pdf")));
    } else {
        print_message("gnuplot has no pdfcairo: PDF not checked\n");
    }
    tl_analysis_close(&a);
}

/* ---- Chrome trace ------------------------------------------------------------- */

static void test_chrome_export(void **state)
{
    (void)state;
    tl_analysis a;
    open_db(&a);
    tl_err err = {0};
    const char *out = path_in("run3.json");
    int r = tl_chrome_export(&a, 3, out, &err);
    if (r < 0)
        fail_msg("%s", err.msg);
    json_error_t jerr;
    json_t *root = json_load_file(out, 0, &jerr);
    if (!root)
        fail_msg("%s: line %d: %s", out, jerr.line, jerr.text);
    json_t *evs = json_object_get(root, "traceEvents");
    assert_true(json_is_array(evs));
    int kernels = 0, retreats = 0, requests = 0, ptb = 0;
    bool proc_bert = false, proc_resnet = false, st7 = false, st13 = false, st14 = false,
         req_track = false, iter_track = false;
    size_t i;
    json_t *ev;
    json_array_foreach(evs, i, ev) {
        const char *ph = json_string_value(json_object_get(ev, "ph"));
        const char *name = json_string_value(json_object_get(ev, "name"));
        const char *cat = json_string_value(json_object_get(ev, "cat"));
        json_int_t pid = json_integer_value(json_object_get(ev, "pid"));
        assert_non_null(ph);
        assert_non_null(name);
        if (!strcmp(ph, "M")) {
            const char *v = json_string_value(json_object_get(json_object_get(ev, "args"), "name"));
            if (!strcmp(name, "process_name")) {
                proc_bert |= pid == 1 && !strcmp(v, "job 0: bert (inference)");
                proc_resnet |= pid == 2 && !strcmp(v, "job 1: resnet (training)");
            } else if (!strcmp(name, "thread_name")) {
                st7 |= pid == 1 && !strcmp(v, "stream 7");
                st13 |= pid == 2 && !strcmp(v, "stream 13");
                st14 |= pid == 2 && !strcmp(v, "stream 14");
                req_track |= pid == 1 && !strcmp(v, "requests");
                iter_track |= pid == 2 && !strcmp(v, "iterations");
            }
        } else if (!strcmp(ph, "X") && cat && !strncmp(cat, "kernel", 6)) {
            kernels++;
            json_t *args = json_object_get(ev, "args");
            assert_true(json_is_integer(json_object_get(args, "blocks")));
            assert_true(json_is_number(json_object_get(args, "avg_sms")));
            assert_true(json_is_boolean(json_object_get(args, "ptb")));
            assert_true(json_is_boolean(json_object_get(args, "retreated")));
            ptb += json_is_true(json_object_get(args, "ptb"));
            if (!strcmp(name, "gemm")) {
                assert_near(json_number_value(json_object_get(ev, "ts")), 0.0);
                assert_near(json_number_value(json_object_get(ev, "dur")), 1000.0); /* us */
                assert_int_equal(json_integer_value(json_object_get(args, "blocks")), 100);
            }
        } else if (!strcmp(ph, "X") && cat && !strcmp(cat, "request") &&
                   !strncmp(name, "request ", 8)) {
            requests++;
        } else if (!strcmp(ph, "i") && !strcmp(name, "retreat")) {
            retreats++;
        }
    }
    /* the same kernel count as the database */
    sqlite3_stmt *st;
    assert_int_equal(
        sqlite3_prepare_v2(a.db, "SELECT COUNT(*), SUM(retreated), SUM(ptb) FROM kernels WHERE run_id=3",
                           -1, &st, NULL),
        SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(kernels, sqlite3_column_int(st, 0));
    assert_int_equal(retreats, sqlite3_column_int(st, 1));
    assert_int_equal(ptb, sqlite3_column_int(st, 2));
    sqlite3_finalize(st);
    assert_int_equal(requests, 5);
    assert_true(proc_bert && proc_resnet);
    assert_true(st7 && st13 && st14);
    assert_true(req_track && iter_track);
    json_decref(root);

    /* a damaged database (fuzzing): times at INT64_MIN give durations of
     * about 9.2e15 us (computed in double), not a signed overflow */
    const char *extreme = path_in("extreme.db");
    make_db(extreme, schema_sql, data_sql);
    sqlite3 *xdb;
    assert_int_equal(sqlite3_open(extreme, &xdb), SQLITE_OK);
    tl_test_exec_sql(xdb, "UPDATE iterations SET start_ns = -9223372036854775808;"
                          "UPDATE kernels SET start_ns = -9223372036854775808;"
                          "UPDATE requests SET arrival_ns = -9223372036854775808, "
                          "start_ns = -9223372036854775807;");
    sqlite3_close(xdb);
    tl_analysis x;
    assert_int_equal(tl_analysis_open(&x, extreme, &err), 0);
    assert_int_equal(tl_chrome_export(&x, 3, path_in("extreme.json"), &err), 0);
    tl_analysis_close(&x);

    /* no kernel records: refused, nothing left behind */
    const char *out4 = path_in("run4.json");
    assert_int_equal(tl_chrome_export(&a, 4, out4, &err), TL_EMISSING);
    assert_int_equal(access(out4, F_OK), -1);
    /* ... and a file already there is kept as it was */
    FILE *k = fopen(out4, "w");
    fputs("keep me\n", k);
    fclose(k);
    assert_int_equal(tl_chrome_export(&a, 4, out4, &err), TL_EMISSING);
    char *kept = slurp(out4);
    assert_string_equal(kept, "keep me\n");
    free(kept);
    /* the database itself is never the output (it was truncated, then removed) */
    size_t before = file_size(db_path);
    assert_int_equal(tl_chrome_export(&a, 3, db_path, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "overwrite"));
    assert_int_equal(tl_chrome_export(&a, 4, db_path, &err), TL_EUNKNOWN);
    char wal[300];
    snprintf(wal, sizeof wal, "%s-wal", db_path);
    assert_int_equal(tl_chrome_export(&a, 3, wal, &err), TL_EUNKNOWN);
    assert_int_equal(file_size(db_path), before);
    assert_int_equal(no_temporaries(tmpdir), 0);
    tl_analysis_close(&a);
    open_db(&a); /* still a database */
    tl_analysis_close(&a);
}

/* ---- report ----------------------------------------------------------------------- */

/* The cells of the report line whose first columns match. */
static bool report_row(const char *text, const char *prefix[], int np, char cells[][32], int max)
{
    const char *line = text;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)(end ? end - line : (long)strlen(line)), line);
        int n = 0;
        char *save = NULL;
        for (char *t = strtok_r(buf, " ", &save); t && n < max; t = strtok_r(NULL, " ", &save))
            snprintf(cells[n++], 32, "%s", t);
        bool ok = n >= np;
        for (int i = 0; ok && i < np; i++)
            ok = !strcmp(cells[i], prefix[i]);
        if (ok)
            return true;
        line = end ? end + 1 : NULL;
    }
    return false;
}

static void test_report(void **state)
{
    (void)state;
    tl_analysis a;
    open_db(&a);
    tl_err err = {0};
    tl_filter f = {.experiment = "exp1"};
    const char *txt = path_in("report.txt"), *md = path_in("report.md");
    FILE *out = fopen(txt, "w");
    int r = tl_report(&a, &f, out, md, &err);
    fclose(out);
    if (r < 0)
        fail_msg("%s", err.msg);
    char *text = slurp(txt);
    /* experiment kind policy load runs job role p50 p99 ovh slo tput rel util */
    char c[16][32];
    const char *tb[] = {"exp1", "sim", "tally", "0.5", "2", "bert"};
    assert_true(report_row(text, tb, 6, c, 16));
    assert_string_equal(c[7], "4.300");
    assert_string_equal(c[8], "9.200");
    assert_string_equal(c[9], "+15.0");
    assert_string_equal(c[10], "85.0");
    assert_string_equal(c[11], "50.00");
    assert_string_equal(c[12], "1.000");
    assert_string_equal(c[13], "20.0");
    const char *ts[] = {"exp1", "sim", "tally", "0.5", "2", "(system)"};
    assert_true(report_row(text, ts, 6, c, 16));
    assert_string_equal(c[12], "1.700");
    assert_string_equal(c[13], "65.0");
    const char *gr[] = {"exp1", "sim", "tgs", "0.5", "1", "resnet"};
    assert_true(report_row(text, gr, 6, c, 16));
    assert_string_equal(c[8], "-");
    assert_string_equal(c[11], "9.00");
    assert_string_equal(c[12], "0.900");
    /* the header and the columns line up: every line equally long up to the last column */
    assert_non_null(strstr(text, "experiment  kind  policy"));
    free(text);
    char *m = slurp(md);
    assert_non_null(m);
    assert_non_null(strstr(m, "| experiment | kind | policy |"));
    assert_non_null(strstr(m, "| exp1 | sim | tally | 0.5 | 2 | bert | inference | 4.300 | 9.200 | "
                              "+15.0 | 85.0 | 50.00 | 1.000 | 20.0 |"));
    free(m);
    /* the Markdown is never the database */
    long before = file_size(db_path);
    assert_int_equal(tl_report(&a, &f, NULL, db_path, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, db_path));
    assert_int_equal(file_size(db_path), before);
    tl_analysis_close(&a);
    open_db(&a);
    tl_analysis_close(&a);
}

/* ---- output files ------------------------------------------------------------ */

static void test_output_files(void **state)
{
    (void)state;
    tl_err err = {0};
    const char *p = path_in("out.txt");
    /* written whole, then renamed into place */
    FILE *f = tl_out_open(p, NULL, &err);
    assert_non_null(f);
    fputs("one\n", f);
    assert_int_equal(access(p, F_OK), -1); /* not there until committed */
    assert_int_equal(tl_out_commit(f, &err), 0);
    char *t = slurp(p);
    assert_string_equal(t, "one\n");
    free(t);
    /* a discarded write keeps the file that was there, mode included */
    chmod(p, 0640);
    f = tl_out_open(p, NULL, &err);
    assert_non_null(f);
    fputs("two, half-written", f);
    tl_out_discard(f);
    t = slurp(p);
    assert_string_equal(t, "one\n");
    free(t);
    f = tl_out_open(p, NULL, &err);
    fputs("three\n", f);
    assert_int_equal(tl_out_commit(f, &err), 0);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0640);
    /* a link is followed: its file is replaced, the link kept */
    const char *l = path_in("link.txt");
    unlink(l);
    assert_int_equal(symlink(p, l), 0);
    f = tl_out_open(l, NULL, &err);
    fputs("four\n", f);
    assert_int_equal(tl_out_commit(f, &err), 0);
    assert_int_equal(lstat(l, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    t = slurp(p);
    assert_string_equal(t, "four\n");
    free(t);
    /* an input is refused, by any name, also through a link */
    const char *in[] = {p, NULL};
    assert_null(tl_out_open(l, in, &err));
    assert_int_equal(err.code, TL_EUNKNOWN);
    char other[300];
    snprintf(other, sizeof other, "%s/../%s/out.txt", tmpdir, strrchr(tmpdir, '/') + 1);
    assert_ptr_equal(tl_output_clobbers(other, in), p);
    assert_null(tl_output_clobbers(path_in("elsewhere.txt"), in));
    /* missing folders are made, as for the results database */
    assert_non_null(f = tl_out_open(path_in("new/sub/x.txt"), NULL, &err));
    fputs("five\n", f);
    assert_int_equal(tl_out_commit(f, &err), 0);
    t = slurp(path_in("new/sub/x.txt"));
    assert_string_equal(t, "five\n");
    free(t);
    /* a folder that cannot be made (under a file): TL_EIO naming the path and
     * the folder (not /nonexistent-dir/x.txt: root makes that folder) */
    char under[300], sub[300];
    snprintf(under, sizeof under, "%s/x.txt", path_in("out.txt"));
    snprintf(sub, sizeof sub, "%s/deeper/x.txt", path_in("out.txt"));
    assert_null(tl_out_open(under, NULL, &err));
    assert_int_equal(err.code, TL_EIO);
    assert_non_null(strstr(err.msg, under));
    assert_null(tl_out_open(sub, NULL, &err));
    assert_int_equal(err.code, TL_EIO);
    snprintf(under, sizeof under, "%s/deeper: cannot create folder", path_in("out.txt"));
    assert_non_null(strstr(err.msg, under));
    assert_int_equal(no_temporaries(tmpdir), 0);

    /* standard output's check at exit: a write that failed is reported */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    close(fds[0]);
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    FILE *w = fdopen(fds[1], "w");
    fputs("lost", w);
    errno = 0;
    assert_int_equal(tl_close_stream(w), -1);
    assert_int_equal(errno, EPIPE);
    signal(SIGPIPE, old);
    w = fopen(path_in("fine.txt"), "w");
    fputs("fine", w);
    assert_int_equal(tl_close_stream(w), 0);
    /* a descriptor closed but never written to is no error (gnulib's rule) */
    w = fopen(path_in("fine.txt"), "r");
    close(fileno(w));
    assert_int_equal(tl_close_stream(w), 0);
}

/* ---- the command ---------------------------------------------------------------- */

static char plot_bin[256];

static bool have_command(void)
{
    const char *b = getenv("TALLY_BUILD");
    snprintf(plot_bin, sizeof plot_bin, "%s/tally-plot", b && *b ? b : "build");
    if (access(plot_bin, X_OK) != 0) {
        print_message("%s not built: skipping the command tests\n", plot_bin);
        return false;
    }
    return true;
}

/* Run tally-plot with args; exit status; stdout and stderr into files. */
static int run_cmd(const char *env, const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s '%s' %s >'%s' 2>'%s'", env ? env : "", plot_bin, args,
             path_in("cmd.out"), path_in("cmd.err"));
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool err_has(const char *s)
{
    char *e = slurp(path_in("cmd.err"));
    bool ok = e && strstr(e, s);
    if (!ok)
        print_message("stderr was: %s\n", e ? e : "(none)");
    /* errors are one line */
    if (ok && strchr(e, '\n') != strrchr(e, '\n') && !strstr(e, "Try 'tally-plot"))
        ok = false;
    free(e);
    return ok;
}

static void test_command(void **state)
{
    (void)state;
    if (!have_command())
        return;
    char a[1024];
    assert_int_equal(run_cmd(NULL, "--help"), EX_OK);
    char *o = slurp(path_in("cmd.out"));
    assert_non_null(strstr(o, "usage: tally-plot COMMAND"));
    free(o);
    assert_int_equal(run_cmd(NULL, "--version"), EX_OK);
    o = slurp(path_in("cmd.out"));
    assert_non_null(strstr(o, "tally-plot " TL_VERSION));
    free(o);

    assert_int_equal(run_cmd(NULL, "frobnicate"), EX_USAGE);
    assert_true(err_has("unknown command 'frobnicate'"));
    assert_int_equal(run_cmd(NULL, "report --bogus"), EX_USAGE);
    assert_int_equal(run_cmd(NULL, "timeline"), EX_USAGE);
    assert_true(err_has("--run-id"));
    /* strtoll took a leading space or '+' (" 3", "+3"); digits alone now */
    assert_int_equal(run_cmd(NULL, "timeline --run-id ' 3'"), EX_USAGE);
    assert_true(err_has("--run-id: ' 3' is not an integer"));
    assert_int_equal(run_cmd(NULL, "timeline --run-id +3"), EX_USAGE);
    assert_true(err_has("--run-id: '+3' is not an integer"));
    assert_int_equal(run_cmd(NULL, "timeline --run-id 0"), EX_USAGE);
    assert_true(err_has("--run-id: '0' is out of range (run ids start at 1)"));
    assert_int_equal(run_cmd(NULL, "tradeoff --format gif"), EX_USAGE);

    snprintf(a, sizeof a, "report --db '%s'", path_in("missing.db"));
    assert_int_equal(run_cmd(NULL, a), EX_NOINPUT);
    assert_true(err_has("missing.db"));

    snprintf(a, sizeof a, "report --db '%s'", path_in("other.db"));
    make_db(path_in("other.db"), "CREATE TABLE t(x);", NULL);
    assert_int_equal(run_cmd(NULL, a), EX_DATAERR);
    assert_true(err_has("not a Tally results database"));

    /* '' as a name: --out-dir '' wrote into this folder, --experiment '' and
     * --policy '' selected every run, --markdown '' failed after the report */
    static const char *const empties[] = {"--out-dir", "--experiment", "--markdown"};
    for (int i = 0; i < 3; i++) {
        char want[64];
        snprintf(a, sizeof a, "report --db '%s' %s ''", db_path, empties[i]);
        assert_int_equal(run_cmd(NULL, a), EX_USAGE);
        snprintf(want, sizeof want, "%s: '' is empty", empties[i]);
        assert_true(err_has(want));
        assert_int_equal(file_size(path_in("cmd.out")), 0);
    }
    static const char *const lists[] = {"", "mps,,tally", "mps,", ",mps"};
    for (int i = 0; i < 4; i++) {
        snprintf(a, sizeof a, "report --db '%s' --policy '%s'", db_path, lists[i]);
        assert_int_equal(run_cmd(NULL, a), EX_USAGE);
        assert_true(err_has("has an empty policy name"));
    }
    /* --policy twice: both lists (the last one alone was used) */
    snprintf(a, sizeof a, "report --db '%s' --experiment exp1 --kind sim --policy tgs --policy tally",
             db_path);
    assert_int_equal(run_cmd(NULL, a), EX_OK);
    o = slurp(path_in("cmd.out"));
    assert_non_null(strstr(o, " tgs "));
    assert_non_null(strstr(o, " tally "));
    assert_null(strstr(o, " alone "));
    free(o);
    snprintf(a, sizeof a, "report --db '%s' --experiment nope", db_path);
    assert_int_equal(run_cmd(NULL, a), EX_DATAERR);
    assert_true(err_has("no finished runs match --experiment nope"));

    snprintf(a, sizeof a, "tradeoff --db '%s' --experiment exp1 --out-dir '%s'", db_path,
             path_in("cmdplots"));
    assert_int_equal(run_cmd("TALLY_GNUPLOT=/nonexistent/gnuplot", a), EX_UNAVAILABLE);
    assert_true(err_has("gnuplot not found"));

    snprintf(a, sizeof a, "report --db '%s' --experiment exp1 --markdown '%s'", db_path,
             path_in("cmd.md"));
    assert_int_equal(run_cmd(NULL, a), EX_OK);
    assert_true(file_nonempty(path_in("cmd.md")));

    snprintf(a, sizeof a, "chrome --db '%s' --run-id 3 -o '%s'", db_path, path_in("cmd.json"));
    assert_int_equal(run_cmd(NULL, a), EX_OK);
    json_t *j = json_load_file(path_in("cmd.json"), 0, NULL);
    assert_non_null(j);
    json_decref(j);

    /* -o in folders not there yet: made, as for --db */
    snprintf(a, sizeof a, "chrome --db '%s' --run-id 3 -o '%s'", db_path, path_in("cmdnew/sub/x.json"));
    assert_int_equal(run_cmd(NULL, a), EX_OK);
    assert_true(file_nonempty(path_in("cmdnew/sub/x.json")));
    snprintf(a, sizeof a, "report --db '%s' --experiment exp1 --markdown '%s'", db_path,
             path_in("cmdnew/md/cmd.md"));
    assert_int_equal(run_cmd(NULL, a), EX_OK);
    assert_true(file_nonempty(path_in("cmdnew/md/cmd.md")));
    /* one that cannot be made (under a file): exit 73 naming it */
    snprintf(a, sizeof a, "chrome --db '%s' --run-id 3 -o '%s/dir/x.json'", db_path, path_in("cmd.md"));
    assert_int_equal(run_cmd(NULL, a), EX_CANTCREAT);
    assert_true(err_has("cmd.md/dir: cannot create folder"));

    /* no output is ever the database: a usage error, the database intact */
    long size = file_size(db_path);
    snprintf(a, sizeof a, "chrome --db '%s' --run-id 3 -o '%s'", db_path, db_path);
    assert_int_equal(run_cmd(NULL, a), EX_USAGE);
    assert_true(err_has("would overwrite the results database"));
    snprintf(a, sizeof a, "chrome --db '%s' --run-id 4 -o '%s/../%s/results.db'", db_path, tmpdir,
             strrchr(tmpdir, '/') + 1);
    assert_int_equal(run_cmd(NULL, a), EX_USAGE);
    snprintf(a, sizeof a, "report --db '%s' --markdown '%s'", db_path, db_path);
    assert_int_equal(run_cmd(NULL, a), EX_USAGE);
    assert_true(err_has("--markdown"));
    assert_int_equal(file_size(db_path), size);
    snprintf(a, sizeof a, "report --db '%s' --experiment exp1", db_path);
    assert_int_equal(run_cmd(NULL, a), EX_OK);
    /* a failed export keeps what was at -o */
    FILE *kf = fopen(path_in("keep.json"), "w");
    fputs("x\n", kf);
    fclose(kf);
    snprintf(a, sizeof a, "chrome --db '%s' --run-id 4 -o '%s'", db_path, path_in("keep.json"));
    assert_int_equal(run_cmd(NULL, a), EX_DATAERR);
    char *kept = slurp(path_in("keep.json"));
    assert_string_equal(kept, "x\n");
    free(kept);
    /* standard output that cannot be written: exit 73, not 0 with nothing */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' report --db '%s' 1<'%s' 2>'%s'", plot_bin, db_path, db_path,
             path_in("cmd.err"));
    int st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), EX_CANTCREAT);
    assert_true(err_has("write error on standard output"));
    snprintf(cmd, sizeof cmd, "'%s' --help 1<'%s' 2>/dev/null", plot_bin, db_path);
    st = system(cmd);
    assert_int_equal(WEXITSTATUS(st), EX_CANTCREAT);

    if (have_gnuplot()) {
        snprintf(a, sizeof a, "all --db '%s' --experiment exp1 --kind sim --out-dir '%s' -f png",
                 db_path, path_in("cmdplots"));
        assert_int_equal(run_cmd(NULL, a), EX_OK);
        assert_true(file_nonempty(path_in("cmdplots/exp1_tradeoff.png")));
        assert_true(file_nonempty(path_in("cmdplots/exp1_cdf.png")));
        assert_true(file_nonempty(path_in("cmdplots/exp1_bars.png")));
        /* a gnuplot that fails: its message comes through, exit 70 */
        FILE *f = fopen(path_in("fakegp"), "w");
        fputs("#!/bin/sh\necho 'line 3: simulated gnuplot failure' >&2\nexit 1\n", f);
        fclose(f);
        chmod(path_in("fakegp"), 0755);
        char env[300];
        snprintf(env, sizeof env, "TALLY_GNUPLOT='%s'", path_in("fakegp"));
        snprintf(a, sizeof a, "cdf --db '%s' --experiment exp1 --out-dir '%s' -f png", db_path,
                 path_in("cmdplots"));
        assert_int_equal(run_cmd(env, a), EX_SOFTWARE);
        assert_true(err_has("simulated gnuplot failure"));
        /* the image of the earlier run is kept (it was removed before gnuplot ran) */
        assert_true(file_nonempty(path_in("cmdplots/exp1_cdf.png")));
        assert_int_equal(no_temporaries(path_in("cmdplots")), 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_open_accepts_writer_schema),
        cmocka_unit_test(test_groups_mean_and_derived),
        cmocka_unit_test(test_groups_recount_served),
        cmocka_unit_test(test_tradeoff_data),
        cmocka_unit_test(test_cdf_data),
        cmocka_unit_test(test_bars_data),
        cmocka_unit_test(test_plot_name_clash),
        cmocka_unit_test(test_timeline_data),
        cmocka_unit_test(test_simhw_data),
        cmocka_unit_test(test_gnuplot_errors),
        cmocka_unit_test(test_scripts_rerun),
        cmocka_unit_test(test_chrome_export),
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_output_files),
        cmocka_unit_test(test_command),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
