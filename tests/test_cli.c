/* The tally-sim command as users run it: options, bad input (one clear line
 * naming the file, a non-zero sysexits status), determinism of summary and
 * database, and a sweep killed with -9 that resumes without lost or
 * duplicated runs. */
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "tally/sim.h"

static char sim[200];
static char tmp[64];

#define INFER "traces/bundled/h100/mobilenetv3_infer_b1.json.gz"
#define TRAIN "traces/bundled/h100/resnet50_train_b32_steps.json.gz"
#define JOBS " --job trace=" INFER ",role=inference,load=0.5 --job trace=" TRAIN ",role=training"

/* Run a shell command; capture stdout+stderr; return the exit status. */
static int run(const char *cmd, char *out, size_t n)
{
    char full[4096];
    /* stderr joins stdout unless the command redirects it itself */
    snprintf(full, sizeof full, strstr(cmd, "2>") ? "%s" : "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    size_t got = fread(out, 1, n - 1, p);
    out[got] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int run_sim(char *out, size_t n, const char *fmt, ...)
{
    char args[2048], cmd[2400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "%s %s", sim, args);
    return run(cmd, out, n);
}

static int setup(void **state)
{
    const char *b = getenv("TALLY_BUILD");
    snprintf(sim, sizeof sim, "%s/tally-sim", b ? b : "build");
    snprintf(tmp, sizeof tmp, "/tmp/tally-test-cli-%d", (int)getpid());
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", tmp, tmp);
    assert_int_equal(system(cmd), 0);
    return 0;
}

static int teardown(void **state)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    return system(cmd);
}

static void test_help_version(void **state)
{
    char out[8192];
    assert_int_equal(run_sim(out, sizeof out, "--version"), 0);
    assert_non_null(strstr(out, "tally-sim "));
    assert_int_equal(run_sim(out, sizeof out, "--help"), 0);
    assert_non_null(strstr(out, "--spec"));
    /* every settable simulator parameter is named (the contention.* ones
     * after the first may be shortened to what follows the dot) */
    for (int i = 0; tl_sim_param_name(i); i++) {
        const char *name = tl_sim_param_name(i);
        const char *dot = strchr(name, '.');
        if (!strstr(out, name) && !(dot && strstr(out, dot + 1)))
            print_error("--help does not name --sim-param %s\n", name);
        assert_true(strstr(out, name) || (dot && strstr(out, dot + 1)));
    }
    assert_non_null(strstr(out, "idle_handover_ns"));
    assert_int_equal(run_sim(out, sizeof out, "--list-policies"), 0);
    assert_non_null(strstr(out, "tally"));
    assert_non_null(strstr(out, "pipeswitch"));
}

static void expect_fail(int want, const char *needle1, const char *needle2, const char *fmt, ...)
{
    char args[2048], out[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    int st = run_sim(out, sizeof out, "%s", args);
    if ((want && st != want) || !st || !strstr(out, needle1) || (needle2 && !strstr(out, needle2)))
        print_error("args: %s\nstatus %d (wanted %d)\noutput: %s\n", args, st, want, out);
    if (want)
        assert_int_equal(st, want);
    assert_true(st != 0);
    assert_non_null(strstr(out, needle1));
    if (needle2)
        assert_non_null(strstr(out, needle2));
    /* one clear line, not a crash dump */
    assert_null(strstr(out, "Sanitizer"));
    assert_null(strstr(out, "Segmentation"));
}

static void test_bad_input(void **state)
{
    expect_fail(EX_USAGE, "try --help", NULL, "--frobnicate");
    /* getopt's own line named the subcommand alone ("info: unrecognized option") */
    expect_fail(EX_USAGE, "tally-sim info: unrecognized option '--frobnicate'", NULL, "info --frobnicate");
    expect_fail(EX_USAGE, "tally-sim run: unrecognized option '--frobnicate'", NULL, "run --frobnicate");
    expect_fail(0, "Z80", NULL, "--policy mps --gpu Z80 --db %s/a.db" JOBS, tmp);
    /* the option's mistake, not the spec file's (it said "demo.json: gpu: unknown
     * GPU 'Z80'", exit 64; found by fuzz round 27) */
    expect_fail(EX_USAGE, "tally-sim: --gpu: unknown GPU 'Z80'", NULL,
                "--spec experiments/specs/demo.json --gpu Z80 --db %s/a.db", tmp);
    expect_fail(0, "unknown policy 'nope'", NULL, "--policy nope --db %s/a.db" JOBS, tmp);
    expect_fail(0, "truncated_gzip.json.gz", "gzip",
                "--policy mps --db %s/a.db --job trace=tests/data/cli/truncated_gzip.json.gz,role=training", tmp);
    expect_fail(0, "truncated_json.json.gz", NULL,
                "--policy mps --db %s/a.db --job trace=tests/data/cli/truncated_json.json.gz,role=training", tmp);
    expect_fail(0, "malformed.json", NULL,
                "--policy mps --db %s/a.db --job trace=tests/data/cli/malformed.json,role=training", tmp);
    expect_fail(EX_NOINPUT, "no-such-trace.json", NULL,
                "--policy mps --db %s/a.db --job trace=no-such-trace.json,role=training", tmp);
    expect_fail(EX_DATAERR, "bad_spec.json:1", NULL, "--spec tests/data/cli/bad_spec.json --db %s/a.db", tmp);
    /* a folder that cannot be made (a file is in the way): the output's mistake */
    char in_the_way[256];
    snprintf(in_the_way, sizeof in_the_way, "%s/a-file", tmp);
    FILE *f = fopen(in_the_way, "w");
    assert_non_null(f);
    fclose(f);
    expect_fail(EX_CANTCREAT, "a-file/r.db: cannot create the results database", "not a folder",
                "--policy mps --duration 0.1 --db %s/r.db" JOBS, in_the_way);
    expect_fail(EX_USAGE, "--duration", NULL, "--policy mps --duration ten" JOBS);
    /* -1 is how the overrides mark "not given": it must not pass for that */
    expect_fail(EX_USAGE, "--duration: '-1' must be > 0", NULL, "--policy mps --duration -1" JOBS);
    expect_fail(EX_USAGE, "--warmup: '-1' must be >= 0", NULL, "--policy mps --warmup -1" JOBS);
    expect_fail(EX_USAGE, "--load: '0' must be > 0", NULL, "--policy mps --load 0" JOBS);
    expect_fail(EX_USAGE, "load must be a number > 0", NULL,
                "--policy mps --db %s/a.db --job trace=" INFER ",role=inference,load=nan", tmp);
    expect_fail(EX_USAGE, "give one of load, rate and arrivals", NULL,
                "--policy mps --db %s/a.db --job trace=" INFER ",role=inference,load=0.5,rate=10", tmp);
    expect_fail(EX_USAGE, "is not KEY=VALUE", NULL,
                "--policy mps --db %s/a.db --job trace=" INFER ",inference", tmp);
    /* exited 65 as a spec's mistake ("command line: job 0: 'name' is empty") */
    expect_fail(EX_USAGE, "name is empty", NULL,
                "--policy mps --db %s/a.db --job trace=" INFER ",role=training,name=", tmp);
    expect_fail(EX_USAGE, "--load set inference jobs' arrivals", NULL,
                "--policy mps --load 0.5 --db %s/a.db --job trace=" INFER ",role=training", tmp);
    expect_fail(EX_DATAERR, "closed loop", NULL,
                "--policy mps --db %s/a.db --job trace=" INFER ",role=training,load=0.5", tmp);
    expect_fail(EX_DATAERR, "policies 0 and 1 are the same", NULL,
                "--policy mps --policy mps --db %s/a.db" JOBS, tmp);
    expect_fail(EX_USAGE, "--skip: 'abc'", NULL, "info --skip abc " INFER);
    /* another command's option: it said "unknown option" (run: "try --help") */
    expect_fail(EX_USAGE, "tally-sim info: --scale-grid does not apply to info", NULL,
                "info --scale-grid 2 " INFER);
    expect_fail(EX_USAGE, "tally-sim convert: --skip does not apply to convert", NULL,
                "convert --skip 1 " INFER " %s/c.json", tmp);
    expect_fail(EX_USAGE, "tally-sim fidelity: --graph does not apply to fidelity", NULL,
                "fidelity --graph " INFER);
    expect_fail(EX_USAGE, "tally-sim run: --iteration-kernel does not apply to run", NULL,
                "--iteration-kernel conv --policy mps" JOBS);
    /* '' was taken for no option: no split kernel, no parameter */
    expect_fail(EX_USAGE, "--iteration-kernel: give a part of a kernel name, not ''", NULL,
                "info --iteration-kernel '' " INFER);
    expect_fail(EX_USAGE, "--sim-param '': expected KEY=VALUE", NULL, "fidelity --sim-param '' " INFER);
    /* a kernel the GPU cannot launch (an H100 GEMM's shared memory on an A100) */
    expect_fail(EX_DATAERR, "so CUDA would not launch it", NULL,
                "--policy mps --gpu A100-SXM4-80GB --db %s/a.db --job "
                "trace=traces/bundled/h100/resnet50_train_b32.json.gz,role=training", tmp);
    expect_fail(EX_USAGE, "unknown parameter 'no.such'", NULL,
                "--policy mps --db %s/a.db --sim-param no.such=1" JOBS, tmp);
    expect_fail(EX_USAGE, "threads or kinds", NULL,
                "--policy mps --db %s/a.db --sim-param contention.model=fast" JOBS, tmp);
    expect_fail(EX_USAGE, "callback_launch_latency_ns", NULL,
                "--policy mps --db %s/a.db --sim-param callback_launch_latency_ns=-1" JOBS, tmp);
    expect_fail(0, "load", NULL,
                "--policy mps --db %s/a.db --job trace=" INFER ",role=inference,load=2", tmp);
    expect_fail(EX_USAGE, "stream_gap_ns", NULL,
                "--policy mps --db %s/a.db --sim-param stream_gap_ns=-1" JOBS, tmp);
    expect_fail(EX_USAGE, "graph_gap_ns", NULL,
                "--policy mps --db %s/a.db --sim-param graph_gap_ns=2000000" JOBS, tmp);
    /* fidelity takes the same parameters, refused before any trace is read */
    expect_fail(EX_USAGE, "unknown parameter 'bogus'", NULL, "fidelity --sim-param bogus=1 " INFER);
    expect_fail(EX_USAGE, "graph_gap_ns must be in", NULL, "fidelity --sim-param graph_gap_ns=-5 " INFER);
    expect_fail(EX_USAGE, "one KEY=VALUE per option", NULL, "fidelity --sim-param 'a=1;b=2' " INFER);
    /* strtod's ERANGE for a subnormal said "not a number"; hex and a leading
     * space passed as numbers, here and in --duration and the other options */
    expect_fail(EX_USAGE, "'1e400' is out of range", NULL, "fidelity --sim-param contention.alpha=1e400 " INFER);
    expect_fail(EX_USAGE, "'0x10' is not a decimal number", NULL,
                "fidelity --sim-param contention.alpha=0x10 " INFER);
    expect_fail(EX_USAGE, "' 5' is not a decimal number", NULL,
                "fidelity --sim-param 'contention.alpha= 5' " INFER);
    expect_fail(EX_USAGE, "tally-sim: --duration: '0x1' is not a decimal number", NULL,
                "--policy mps --db %s/a.db -t 0x1" JOBS, tmp);
    expect_fail(EX_USAGE, "tally-sim: --load: '1e999' is out of range", NULL,
                "--policy mps --db %s/a.db -l 1e999" JOBS, tmp);
    expect_fail(EX_USAGE, "load must be a number > 0", NULL,
                "--policy mps --db %s/a.db --job trace=" INFER ",role=inference,load=0x1", tmp);
    /* --duration and --warmup out of the spec's range blamed the spec file
     * ('demo.json: duration_s 86401 must be in ...', exit 65) */
    expect_fail(EX_USAGE, "tally-sim: --duration: 86401 must be in (0, 86400]", NULL,
                "--spec experiments/specs/demo.json --db %s/a.db -t 86401", tmp);
    expect_fail(EX_USAGE, "tally-sim: --duration: 1e-12 must be in", NULL,
                "--policy mps --db %s/a.db -t 1e-12" JOBS, tmp);
    expect_fail(EX_USAGE, "tally-sim: --warmup: 90000 must be in [0, 86400]", NULL,
                "--spec experiments/specs/demo.json --db %s/a.db -w 90000", tmp);
}

/* Integer options read what strtol reads: a leading space or '+' (" 1",
 * "+1") passed, where the decimal options refuse a leading space. Now digits
 * alone (tl_parse_int64), worded as the decimal options are. --seed, --jobs
 * and --repetitions were read as decimals, so "1e1" passed for 10. */
static void test_integer_options(void **state)
{
    expect_fail(EX_USAGE, "tally-sim info: --skip: ' 1' is not an integer", NULL, "info --skip ' 1' " INFER);
    expect_fail(EX_USAGE, "tally-sim info: --skip: '+1' is not an integer", NULL, "info --skip +1 " INFER);
    expect_fail(EX_USAGE, "tally-sim info: --skip: '1000001' is out of range (0 to 1000000)", NULL,
                "info --skip 1000001 " INFER);
    expect_fail(EX_USAGE, "tally-sim convert: --scale-grid: '+2' is not an integer", NULL,
                "convert --scale-grid +2 " INFER " %s/c.json", tmp);
    expect_fail(EX_USAGE, "tally-sim convert: --scale-grid: ' 2' is not an integer", NULL,
                "convert --scale-grid ' 2' " INFER " %s/c.json", tmp);
    expect_fail(EX_USAGE, "tally-sim convert: --scale-grid: '0' is out of range (1 to 1000000)", NULL,
                "convert --scale-grid 0 " INFER " %s/c.json", tmp);
    expect_fail(EX_USAGE, "tally-sim: --seed: '+1' is not an integer", NULL,
                "--policy mps --db %s/a.db --seed +1" JOBS, tmp);
    expect_fail(EX_USAGE, "tally-sim: --jobs: '1e1' is not an integer", NULL,
                "--policy mps --db %s/a.db --jobs 1e1" JOBS, tmp);
    expect_fail(EX_USAGE, "tally-sim: --repetitions: '1001' is out of range (1 to 1000)", NULL,
                "--policy mps --db %s/a.db --repetitions 1001" JOBS, tmp);
    char out[8192];
    assert_int_equal(run_sim(out, sizeof out, "info --skip 1 " INFER), 0);
}

static char *dump(const char *db)
{
    /* every row that must be identical between two runs of the same spec */
    static const char *const q[] = {
        "SELECT run_key, policy, seed, config FROM runs ORDER BY run_key",
        "SELECT r.run_key, q.job_id, q.req_id, q.arrival_ns, q.start_ns, q.end_ns FROM requests q "
        "JOIN runs r USING(run_id) ORDER BY 1, 2, 3",
        "SELECT r.run_key, i.job_id, i.iter_idx, i.start_ns, i.end_ns FROM iterations i "
        "JOIN runs r USING(run_id) ORDER BY 1, 2, 3",
        "SELECT r.run_key, m.job_id, m.name, m.value FROM metrics m JOIN runs r USING(run_id) "
        "ORDER BY 1, 2, 3",
    };
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    for (size_t k = 0; k < sizeof q / sizeof q[0]; k++) {
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(h, q[k], -1, &st, NULL), SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW) {
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const char *v = (const char *)sqlite3_column_text(st, c);
                size_t n = strlen(v ? v : "") + 2;
                if (len + n + 1 > cap)
                    buf = realloc(buf, cap *= 2);
                len += (size_t)snprintf(buf + len, cap - len, "%s|", v ? v : "");
            }
            buf[len++] = '\n';
            buf[len] = 0;
        }
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return buf;
}

static void test_deterministic(void **state)
{
    static char a[65536], b[65536];
    const char *args = "--quiet --policy tally --policy mps --duration 0.5 --warmup 0.1 --seed 42" JOBS;
    assert_int_equal(run_sim(a, sizeof a, "%s --db %s/x.db 2>/dev/null", args, tmp), 0);
    assert_int_equal(run_sim(b, sizeof b, "%s --db %s/y.db 2>/dev/null", args, tmp), 0);
    assert_string_equal(a, b);
    assert_non_null(strstr(a, "seed 42"));
    char p1[256], p2[256];
    snprintf(p1, sizeof p1, "%s/x.db", tmp);
    snprintf(p2, sizeof p2, "%s/y.db", tmp);
    char *d1 = dump(p1), *d2 = dump(p2);
    assert_true(strlen(d1) > 1000);
    assert_string_equal(d1, d2);
    free(d1);
    free(d2);
    /* a rerun into the same database is a resume: nothing runs again */
    assert_int_equal(run_sim(b, sizeof b, "%s --db %s/x.db", args, tmp), 0);
    assert_non_null(strstr(b, "already in"));
}

static int count(const char *db, const char *sql)
{
    sqlite3 *h;
    if (sqlite3_open(db, &h) != SQLITE_OK)
        return -1;
    sqlite3_busy_timeout(h, 5000);
    sqlite3_stmt *st;
    int n = -1;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return n;
}

/* Kill a 2-worker sweep with SIGKILL (the whole process group) part-way, then
 * rerun it: every run is there once, each complete. */
/* tally-sim running, with two workers, the spec of name NAME (written to
 * tmp/NAME.json: head, then the two bundled jobs) into db (tmp/NAME.db), in a
 * process group of its own (its id: the pid returned), its output discarded. */
static pid_t spawn_sweep(const char *name, const char *head, char *db, size_t cap)
{
    char spec[256];
    snprintf(spec, sizeof spec, "%s/%s.json", tmp, name);
    snprintf(db, cap, "%s/%s.db", tmp, name);
    FILE *f = fopen(spec, "w");
    assert_non_null(f);
    fprintf(f, "{\"name\":\"%s\",%s\"jobs\":[{\"trace\":\"%s\",\"role\":\"inference\"},"
               "{\"trace\":\"%s\",\"role\":\"training\"}]}", name, head, INFER, TRAIN);
    fclose(f);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr);
        execl(sim, sim, "run", "--quiet", "--jobs", "2", "--spec", spec, "--db", db, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    return pid;
}

static void test_kill9_resume(void **state)
{
    char db[256];
    pid_t pid = spawn_sweep("k9", "\"duration_s\":0.6,\"warmup_s\":0.1,\"repetitions\":3,"
                            "\"policies\":[\"priority-streams\",\"time-slicing\",\"mps\",\"tally\"],"
                            "\"loads\":[0.3,0.6],", db, sizeof db);
    int done = 0;
    for (int i = 0; i < 600 && done < 6; i++) {
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        done = count(db, "SELECT count(*) FROM runs");
    }
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    int before = count(db, "SELECT count(*) FROM runs");
    assert_true(before >= 6);
    /* the total: 4 policies x 2 loads x 3 reps = 24 shared; alone: inference at
     * 2 loads + training, x 3 reps = 9 */
    assert_true(before < 33);
    char out[65536];
    assert_int_equal(run_sim(out, sizeof out, "run --quiet --jobs 2 --spec %s/k9.json --db %s", tmp, db), 0);
    assert_non_null(strstr(out, "skipped (resume)"));
    assert_int_equal(count(db, "SELECT count(*) FROM runs"), 33);
    assert_int_equal(count(db, "SELECT count(DISTINCT run_key) FROM runs"), 33);
    /* complete runs only: jobs, metrics and requests agree with each run */
    assert_int_equal(count(db, "SELECT count(*) FROM runs WHERE run_id NOT IN (SELECT run_id FROM jobs)"), 0);
    assert_int_equal(count(db, "SELECT count(*) FROM jobs j WHERE (SELECT count(*) FROM requests q WHERE "
                               "q.run_id=j.run_id AND q.job_id=j.job_id) + (SELECT count(*) FROM iterations i "
                               "WHERE i.run_id=j.run_id AND i.job_id=j.job_id AND j.role='training') != "
                               "(SELECT value FROM metrics m WHERE m.run_id=j.run_id AND m.job_id=j.job_id "
                               "AND m.name='requests')"), 0);
}

#ifdef __linux__
/* The processes of process group pgid (from /proc). */
static int group_size(pid_t pgid)
{
    int n = 0;
    FILE *p = popen("cat /proc/[0-9]*/stat 2>/dev/null", "r");
    if (!p)
        return -1;
    char line[4096];
    while (fgets(line, sizeof line, p)) {
        char *close_paren = strrchr(line, ')'); /* the name may hold spaces */
        char state;
        int ppid, pgrp;
        if (close_paren && sscanf(close_paren + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 &&
            pgrp == (int)pgid && state != 'Z')
            n++;
    }
    pclose(p);
    return n;
}

/* A sweep's parent killed outright: its workers end with it instead of
 * finishing their runs (each run here is minutes of simulated time, so a
 * worker left alone would live for seconds or more). */
static void test_kill9_parent_ends_workers(void **state)
{
    (void)state;
    char db[256];
    pid_t pid = spawn_sweep("long", "\"duration_s\":3000,\"warmup_s\":0,"
                            "\"policies\":[\"priority-streams\",\"mps\"],\"loads\":[0.5],",
                            db, sizeof db);
    int n = 0;
    for (int i = 0; i < 1000 && n < 3; i++) { /* the parent and its two workers */
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        n = group_size(pid);
    }
    assert_int_equal(n, 3);
    kill(pid, SIGKILL); /* the parent only */
    waitpid(pid, NULL, 0);
    for (int i = 0; i < 250 && n > 0; i++) {
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        n = group_size(pid);
    }
    if (n > 0)
        kill(-pid, SIGKILL);
    assert_int_equal(n, 0);
}
#endif

/* tally-sim merge: options parsed, shards checked before anything is written
 * and only read; the results database refused before it is written when it
 * is not ours, and never a temporary one. */
#define SMALL "--job trace=tests/data/kineto_small.json,role=training"

static bool same_bytes(const char *a, const char *b)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

static bool exists(const char *fmt, const char *dir)
{
    char p[512];
    snprintf(p, sizeof p, fmt, dir);
    return access(p, F_OK) == 0;
}

static void test_merge_and_db_checks(void **state)
{
    char out[8192];
    for (int i = 1; i <= 2; i++)
        assert_int_equal(run_sim(out, sizeof out, "run -q -j1 --policy %s --duration 0.05 --warmup 0 "
                                 "--db %s/s%d.db " SMALL, i == 1 ? "tally" : "mps", tmp, i), 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp %s/s1.db %s/s1.copy && cp %s/s2.db %s/s2.copy && "
             "sqlite3 %s/nsys.db 'CREATE TABLE TARGET_INFO_GPU(id); CREATE TABLE "
             "CUPTI_ACTIVITY_KIND_KERNEL(start, end)' && cp %s/nsys.db %s/nsys.copy",
             tmp, tmp, tmp, tmp, tmp, tmp, tmp);
    if (system(cmd) != 0) { /* no sqlite3 shell: make the foreign database here */
        char p[256];
        snprintf(p, sizeof p, "%s/nsys.db", tmp);
        sqlite3 *db;
        assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
        assert_int_equal(sqlite3_exec(db, "CREATE TABLE TARGET_INFO_GPU(id)", NULL, NULL, NULL), 0);
        sqlite3_close(db);
        snprintf(cmd, sizeof cmd, "cp %s/s1.db %s/s1.copy && cp %s/s2.db %s/s2.copy && "
                 "cp %s/nsys.db %s/nsys.copy", tmp, tmp, tmp, tmp, tmp, tmp);
        assert_int_equal(system(cmd), 0);
    }
    /* usage */
    assert_int_equal(run_sim(out, sizeof out, "merge --help 2>/dev/null"), 0);
    assert_non_null(strstr(out, "tally-sim merge"));
    expect_fail(EX_USAGE, "unknown option", NULL, "merge --bogus %s/bogus_x.db", tmp);
    assert_false(exists("%s/bogus_x.db", tmp));
    assert_false(exists("--bogus", tmp));
    expect_fail(EX_USAGE, "SHARD", NULL, "merge %s/o.db", tmp);
    /* a missing shard: named, not created, the output not created either */
    expect_fail(EX_NOINPUT, "typo.db", NULL, "merge %s/o.db %s/typo.db", tmp, tmp);
    assert_false(exists("%s/typo.db", tmp));
    assert_false(exists("%s/o.db", tmp));
    /* another program's database: refused, untouched */
    expect_fail(EX_DATAERR, "not a Tally results database", "nsys.db", "merge %s/o.db %s/s1.db %s/nsys.db",
                tmp, tmp, tmp);
    assert_false(exists("%s/o.db", tmp));
    /* the output as a shard, a shard twice: usage errors, at once */
    time_t t0 = time(NULL);
    expect_fail(EX_USAGE, "a shard is the output database", NULL, "merge %s/s1.db %s/./s1.db", tmp, tmp);
    expect_fail(EX_USAGE, "listed twice", NULL, "merge %s/o.db %s/s1.db %s/s2.db %s/s1.db", tmp, tmp,
                tmp, tmp);
    assert_true(time(NULL) - t0 < 20);
    /* the merge itself; the shards only read */
    assert_int_equal(run_sim(out, sizeof out, "merge %s/o.db %s/s1.db %s/s2.db", tmp, tmp, tmp), 0);
    assert_non_null(strstr(out, "merged 2 runs"));
    assert_non_null(strstr(out, "merged 1 runs"));
    char a[256], b[256];
    const char *names[] = { "s1", "s2", "nsys" };
    for (int i = 0; i < 3; i++) {
        snprintf(a, sizeof a, "%s/%s.db", tmp, names[i]);
        snprintf(b, sizeof b, "%s/%s.copy", tmp, names[i]);
        assert_true(same_bytes(a, b));
    }
    /* the results database: not ours, or of another schema version, is refused
     * and left as it was; an empty name is a usage error */
    expect_fail(EX_DATAERR, "not a Tally results database", NULL,
                "run -q -j1 --policy tally --duration 0.05 --warmup 0 --db %s/nsys.db " SMALL, tmp);
    snprintf(a, sizeof a, "%s/nsys.db", tmp);
    snprintf(b, sizeof b, "%s/nsys.copy", tmp);
    assert_true(same_bytes(a, b));
    expect_fail(EX_USAGE, "empty", NULL, "run -q -j1 --policy tally --duration 0.05 --warmup 0 --db '' " SMALL);
}

static void expect_ok(const char *fmt, ...)
{
    char args[2048], out[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    int st = run_sim(out, sizeof out, "%s", args);
    if (st)
        print_error("args: %s\nstatus %d\noutput: %s\n", args, st, out);
    assert_int_equal(st, 0);
}

static void write_bytes(const char *path, const char *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* --db in a folder that does not exist yet (the README's quick tour writes
 * out/quick.db on a fresh checkout): the folders are made. */
static void test_db_in_new_folder(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/new/sub/r.db", tmp);
    expect_ok("--quiet --policy mps --duration 0.1 --db %s" JOBS, path);
    assert_int_equal(access(path, R_OK), 0);
}

/* Arrival files (--job ...,arrivals=PATH): one time in seconds a line. */
static void test_arrival_files(void **state)
{
    char path[128], line[400];
#define ARRIVALS(name) " --policy mps --duration 0.2 --warmup 0.1 --db %s/arr.db --job trace=" INFER \
                       ",role=inference,arrivals=%s/" name, tmp, tmp
    /* a folder opens but does not read: it said "no arrival times" */
    snprintf(path, sizeof path, "%s/adir", tmp);
    assert_int_equal(mkdir(path, 0755), 0);
    expect_fail(EX_NOINPUT, "adir: cannot read the arrival file: Is a directory", NULL, ARRIVALS("adir"));
    /* a NUL byte ended the line: "0.15<NUL>junk" read as 0.15, a NUL line skipped */
    snprintf(path, sizeof path, "%s/nul.txt", tmp);
    write_bytes(path, "0.12\n0.15\0junk\n", 15);
    expect_fail(EX_DATAERR, "nul.txt:2: a NUL byte: not a text file of arrival times", NULL,
                ARRIVALS("nul.txt"));
    /* a line past 255 bytes was read as two: a wrong line number, or two times */
    snprintf(path, sizeof path, "%s/long.txt", tmp);
    memset(line, '0', sizeof line);
    memcpy(line, "0.1", 3);
    memcpy(line + 300, "1\n0.2\n", 6);
    write_bytes(path, line, 306);
    expect_ok("--quiet" ARRIVALS("long.txt"));
    snprintf(path, sizeof path, "%s/longbad.txt", tmp);
    memset(line, ' ', sizeof line);
    memcpy(line, "0.12", 4);
    memcpy(line + 300, "x\n", 2);
    write_bytes(path, line, 302);
    expect_fail(EX_DATAERR, "longbad.txt:1: '0.12", "is not an arrival time in seconds from 0 to 1e6",
                ARRIVALS("longbad.txt"));
    /* past the upper bound: the message said only ">= 0" */
    snprintf(path, sizeof path, "%s/huge.txt", tmp);
    write_bytes(path, "0.12\n1e300\n", 11);
    expect_fail(EX_DATAERR, "huge.txt:2: '1e300' is not an arrival time in seconds from 0 to 1e6",
                NULL, ARRIVALS("huge.txt"));
    /* strtod's hex floats were read as times: 0x1p-3 as 0.125 s */
    snprintf(path, sizeof path, "%s/hex.txt", tmp);
    write_bytes(path, "0.12\n0x1p-3\n", 12);
    expect_fail(EX_DATAERR, "hex.txt:2: '0x1p-3' is not an arrival time in seconds from 0 to 1e6",
                NULL, ARRIVALS("hex.txt"));
    /* far more requests than the GPU serves: refused naming the job, where
     * the run drained for simulated hours (an arrival every microsecond
     * queues a million requests of MobileNetV3 in a second) */
    expect_fail(EX_DATAERR, "job mobilenetv3_infer_b1: over 1048576 requests waiting at",
                "the offered load far exceeds what the GPU serves", " --policy mps --duration 2 "
                "--db %s/flood.db --job trace=" INFER ",role=inference,rate=2e6", tmp);
    /* CRLF lines, blank ones included, are fine */
    snprintf(path, sizeof path, "%s/crlf.txt", tmp);
    write_bytes(path, "0.12\r\n\r\n0.15\r\n", 14);
    expect_ok("--quiet" ARRIVALS("crlf.txt"));
    /* every time outside the measured window: 0 requests, exit 0 */
    snprintf(path, sizeof path, "%s/late.txt", tmp);
    write_bytes(path, "0.05\n5\n6\n", 9);
    expect_fail(EX_DATAERR, "late.txt: none of its 3 arrival times falls in the measured window, 0.1 s "
                "to 0.3 s", NULL, ARRIVALS("late.txt"));
#undef ARRIVALS
}

/* convert writes OUT whole or not at all: a write that fails keeps the file
 * that was there (it was truncated to 4096 bytes, exit 66 "no input"). */
static void test_convert_output(void **state)
{
    char out[8192], cmd[1024], path[128];
    snprintf(path, sizeof path, "%s/conv.json", tmp);
    write_bytes(path, "keep\n", 5);
    /* a file size limit of 8 KiB: the write fails part way (EFBIG) */
    snprintf(cmd, sizeof cmd, "sh -c \"ulimit -f 8; trap '' XFSZ; exec %s convert %s %s\"", sim,
             INFER, path);
    int st = run(cmd, out, sizeof out);
    if (st != EX_CANTCREAT || !strstr(out, "conv.json: write failed: File too large"))
        print_error("status %d\noutput: %s\n", st, out);
    assert_int_equal(st, EX_CANTCREAT);
    assert_non_null(strstr(out, "(any earlier file of that name is kept)"));
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(out, sizeof out, f));
    fclose(f);
    assert_string_equal(out, "keep\n");
    /* OUT's missing folders are made, as --db's are; one under a file cannot be */
    snprintf(cmd, sizeof cmd, "%s convert " INFER " %s/convnew/sub/c.json", sim, tmp);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    snprintf(cmd, sizeof cmd, "%s/convnew/sub/c.json", tmp);
    struct stat sb;
    assert_int_equal(stat(cmd, &sb), 0);
    expect_fail(EX_CANTCREAT, "convnew/sub/c.json/d/c.json: cannot write:",
                "convnew/sub/c.json/d: cannot create folder",
                "convert " INFER " %s/convnew/sub/c.json/d/c.json", tmp);
    expect_fail(EX_USAGE, "OUT is empty: '' names no file", NULL, "convert " INFER " ''");
    /* OUT may not be IN: the trace read would be lost */
    snprintf(cmd, sizeof cmd, "%s convert " INFER " %s/conv2.json && %s convert %s/conv2.json "
             "%s/./conv2.json", sim, tmp, sim, tmp, tmp);
    assert_int_equal(run(cmd, out, sizeof out), EX_USAGE);
    assert_non_null(strstr(out, "the output would overwrite"));
    expect_ok("convert %s/conv2.json %s", tmp, path);
    /* an OUT named .gz is gzip (it was plain JSON: the readers took it, gunzip
     * did not), inflating to what a plain OUT holds */
    snprintf(cmd, sizeof cmd, "%s convert " INFER " %s/conv3.json.gz && gzip -dc %s/conv3.json.gz | "
             "cmp - %s/conv2.json", sim, tmp, tmp, tmp);
    st = run(cmd, out, sizeof out);
    if (st != 0)
        print_error("status %d\noutput: %s\n", st, out);
    assert_int_equal(st, 0);
    /* and a gzip write that fails part way keeps the file OUT.gz was */
    snprintf(path, sizeof path, "%s/conv4.json.gz", tmp);
    write_bytes(path, "keep\n", 5);
    snprintf(cmd, sizeof cmd, "sh -c \"ulimit -f 8; trap '' XFSZ; exec %s convert %s %s\"", sim,
             TRAIN, path);
    st = run(cmd, out, sizeof out);
    if (st != EX_CANTCREAT || !strstr(out, "conv4.json.gz: gzip: write error"))
        print_error("status %d\noutput: %s\n", st, out);
    assert_int_equal(st, EX_CANTCREAT);
    f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(out, sizeof out, f));
    fclose(f);
    assert_string_equal(out, "keep\n");
}

/* fidelity's CSV quotes a trace path holding a comma or a quote: "a,b.json"
 * printed as it was made a row of one column too many. */
static void test_fidelity_csv(void **state)
{
    char out[8192], cmd[1024], want[256];
    snprintf(cmd, sizeof cmd, "cp " INFER " '%s/a,\"b\".json.gz' && %s fidelity '%s/a,\"b\".json.gz' "
             "2>/dev/null", tmp, sim, tmp);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    char *row = strchr(out, '\n');
    assert_non_null(row);
    row++;
    int n = snprintf(want, sizeof want, "\"%s/a,\"\"b\"\".json.gz\",", tmp);
    if (strncmp(row, want, (size_t)n))
        print_error("row: %s\nwanted it to start with: %s\n", row, want);
    assert_true(!strncmp(row, want, (size_t)n));
    int commas = 0;
    for (const char *p = row + n; *p && *p != '\n'; p++)
        commas += *p == ',';
    assert_int_equal(commas, 7); /* 9 columns, as the header's */
}

/* A spec copied under a new name into the same database runs nothing: its
 * shared runs are stored under the first name, and tally-plot --experiment
 * of the second found none, exit 0 without a word. Now a warning says so;
 * alone runs, shared between experiments on purpose, do not count. */
static void test_runs_of_another_experiment(void **state)
{
    char out[8192], spec[256];
    const char *names[] = {"first", "second", "third"};
    for (int i = 0; i < 3; i++) {
        snprintf(spec, sizeof spec, "%s/%s.json", tmp, names[i]);
        FILE *f = fopen(spec, "w");
        assert_non_null(f);
        fprintf(f, "{\"name\":\"%s\",\"duration_s\":0.2,\"warmup_s\":0.05,\"policies\":[\"%s\"],"
                   "\"jobs\":[{\"trace\":\"%s\",\"role\":\"inference\"},{\"trace\":\"%s\","
                   "\"role\":\"training\"}]}", names[i], i < 2 ? "tally" : "mps", INFER, TRAIN);
        fclose(f);
    }
    assert_int_equal(run_sim(out, sizeof out, "--quiet --jobs 1 --spec %s/first.json --db %s/fe.db",
                             tmp, tmp), 0);
    assert_int_equal(run_sim(out, sizeof out, "--quiet --jobs 1 --spec %s/second.json --db %s/fe.db",
                             tmp, tmp), 0);
    if (!strstr(out, "warning: 1 shared run skipped is stored under experiment 'first'"))
        print_error("output: %s\n", out);
    assert_non_null(strstr(out, "warning: 1 shared run skipped is stored under experiment 'first'"));
    assert_non_null(strstr(out, "tally-plot --experiment second leaves it out"));
    /* its own resume, and another policy beside the same alone runs: no warning */
    assert_int_equal(run_sim(out, sizeof out, "--quiet --jobs 1 --spec %s/first.json --db %s/fe.db",
                             tmp, tmp), 0);
    assert_null(strstr(out, "warning"));
    assert_int_equal(run_sim(out, sizeof out, "--quiet --jobs 1 --spec %s/third.json --db %s/fe.db",
                             tmp, tmp), 0);
    assert_non_null(strstr(out, "2 runs already in"));
    assert_null(strstr(out, "warning"));
}

/* fidelity with every --sim-param at once (over 4 KiB of them) was refused as
 * "one KEY=VALUE per option": its list had a fixed 4 KiB buffer. */
static void test_fidelity_many_sim_params(void **state)
{
    char script[128], out[8192];
    snprintf(script, sizeof script, "%s/many.sh", tmp);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fprintf(f, "exec %s fidelity", sim);
    for (int i = 0; tl_sim_param_name(i); i++) {
        const char *k = tl_sim_param_name(i);
        if (strcmp(k, "contention.model") && strcmp(k, "residency_speedup")) /* 1 is no value of theirs */
            fprintf(f, " --sim-param %s=1.%0*d", k, 80, 0);
    }
    fprintf(f, " tests/data/flat_small.json\n");
    assert_int_equal(fclose(f), 0);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "sh %s", script);
    int rc = run(cmd, out, sizeof out);
    if (rc != 0)
        print_error("%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "tests/data/flat_small.json,"));
}

/* A shell command; fmt names the test's folder as %1$s. */
static void sh(const char *fmt, const char *a)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, fmt, a);
    assert_int_equal(system(cmd), 0);
}

/* A resume reuses runs by their key, which names a trace by its path only: a
 * trace edited or captured again at the same path kept the old trace's
 * results, silently. Each run records the digests of the files it read; a
 * resume compares them and refuses (65) before anything is written. */
static void test_resume_checks_inputs(void **state)
{
    char out[16384], db[160], args[1024], arr[160];
    snprintf(db, sizeof db, "%s/dg.db", tmp);
    snprintf(arr, sizeof arr, "%s/dg.txt", tmp);
    snprintf(args, sizeof args, "--quiet --policy mps --duration 0.2 --warmup 0.1 --db %s "
             "--job trace=%s/dg.json.gz,role=inference,arrivals=%s --job trace=" TRAIN
             ",role=training", db, tmp, arr);
    sh("cp " INFER " %1$s/dg.json.gz", tmp);
    write_bytes(arr, "0.12\n0.15\n0.2\n", 14);
    assert_int_equal(run_sim(out, sizeof out, "%s", args), 0);
    /* unchanged: skipped, as ever */
    assert_int_equal(run_sim(out, sizeof out, "%s", args), 0);
    assert_non_null(strstr(out, "3 runs already in"));
    assert_null(strstr(out, "note"));
    /* gzipped again at another level: the same trace */
    sh("zcat %1$s/dg.json.gz | gzip -9 > %1$s/dg2 && mv %1$s/dg2 %1$s/dg.json.gz", tmp);
    assert_int_equal(run_sim(out, sizeof out, "%s", args), 0);
    assert_non_null(strstr(out, "3 runs already in"));
    /* its content changed (a space before the JSON): refused, nothing written */
    sh("(printf ' '; zcat %1$s/dg.json.gz) | gzip > %1$s/dg2 && mv %1$s/dg2 %1$s/dg.json.gz", tmp);
    char *before = dump(db);
    int st = run_sim(out, sizeof out, "%s", args);
    if (st != EX_DATAERR || !strstr(out, "dg.json.gz (the trace of job dg) has changed") ||
        !strstr(out, db) || !strstr(out, "--force") || !strstr(out, "another --db"))
        print_error("status %d: %s\n", st, out);
    assert_int_equal(st, EX_DATAERR);
    assert_non_null(strstr(out, "dg.json.gz (the trace of job dg) has changed"));
    assert_non_null(strstr(out, "another --db"));
    assert_null(strstr(out, "already in"));
    char *after = dump(db);
    assert_string_equal(before, after);
    free(before);
    free(after);
    /* --force runs them again, and they resume */
    assert_int_equal(run_sim(out, sizeof out, "%s --force", args), 0);
    assert_null(strstr(out, "already in"));
    assert_int_equal(run_sim(out, sizeof out, "%s", args), 0);
    assert_non_null(strstr(out, "3 runs already in"));
    assert_int_equal(count(db, "SELECT count(*) FROM runs"), 3);
    /* the arrival file changed: refused, naming it; put back: resumed */
    write_bytes(arr, "0.12\n0.16\n0.2\n", 14);
    assert_int_equal(run_sim(out, sizeof out, "%s", args), EX_DATAERR);
    assert_non_null(strstr(out, "dg.txt (the arrival file of job dg) has changed"));
    write_bytes(arr, "0.12\n0.15\n0.2\n", 14);
    assert_int_equal(run_sim(out, sizeof out, "%s", args), 0);
    /* runs of a Tally that recorded no digests: reused as they were, with a note */
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "UPDATE runs SET inputs = NULL", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    sh("cp " INFER " %1$s/dg.json.gz", tmp);
    assert_int_equal(run_sim(out, sizeof out, "%s", args), 0);
    assert_non_null(strstr(out, "3 runs already in"));
    assert_non_null(strstr(out, "note: 3 runs in"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_version),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_integer_options),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_kill9_resume),
#ifdef __linux__
        cmocka_unit_test(test_kill9_parent_ends_workers),
#endif
        cmocka_unit_test(test_merge_and_db_checks),
        cmocka_unit_test(test_db_in_new_folder),
        cmocka_unit_test(test_arrival_files),
        cmocka_unit_test(test_convert_output),
        cmocka_unit_test(test_fidelity_csv),
        cmocka_unit_test(test_fidelity_many_sim_params),
        cmocka_unit_test(test_runs_of_another_experiment),
        cmocka_unit_test(test_resume_checks_inputs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
