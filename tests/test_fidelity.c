/* Solo-replay fidelity (core/fidelity.c) and the trace modelling it rests on.
 *
 * 1. Every bundled trace, replayed alone in the simulator, reproduces its own
 *    mean iteration time and GPU-busy time within 3% (issue 2).
 * 2. A tiny Kineto trace (tests/data/kineto_inferred.json) where the reader
 *    must infer one cross-stream dependency and one stretch of untraced CUDA
 *    graph work from the GPU timeline (traces/FORMAT.md, "Inferred
 *    dependencies"): the ops and the replay are checked to the nanosecond.
 * 3. The runner's side of it on the fake device (every op runs exactly its
 *    duration): UNTRACED ops hold their stream, and a request's busy time is
 *    the union of its tasks' intervals even when they complete out of order.
 * Every expected number is worked out by hand in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_device.h"
#include "tally/fidelity.h"
#include "tally/policy.h"
#include "tally/runner.h"
#include "tally/sim.h"
#include "tally/trace.h"

#define US 1000LL

static void load_ok(tl_trace *t, const char *path, const tl_trace_options *o)
{
    tl_err e = {0};
    tl_trace_init(t);
    int r = tl_trace_load(t, path, o, &e);
    if (r < 0)
        print_error("%s\n", e.msg);
    assert_int_equal(r, 0);
}

/* ---- 1. every bundled trace -------------------------------------------------- */

static void test_bundled_traces_within_3pct(void **state)
{
    (void)state;
    glob_t g;
    memset(&g, 0, sizeof g);
    assert_int_equal(glob("traces/bundled/h100/*.json.gz", 0, NULL, &g), 0);
    assert_int_equal(glob("traces/bundled/external/*.json.gz", GLOB_APPEND, NULL, &g), 0);
    /* the five H100 traces and the four from other people's machines, at least */
    assert_true(g.gl_pathc >= 9);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        tl_trace t;
        load_ok(&t, g.gl_pathv[i], NULL);
        tl_fidelity f;
        tl_err e = {0};
        int r = tl_fidelity_check(&t, NULL, &f, &e);
        if (r < 0)
            print_error("%s\n", e.msg);
        assert_int_equal(r, 0);
        print_message("%-60s iteration %+6.2f%%  busy %+6.2f%%\n", g.gl_pathv[i],
                      100 * f.iter_err, 100 * f.busy_err);
        assert_int_equal(f.iterations, t.n_iters);
        if (fabs(f.iter_err) > 0.03 || fabs(f.busy_err) > 0.03)
            fail_msg("%s: iteration %+.2f%%, busy %+.2f%% (limit 3%%)", g.gl_pathv[i],
                     100 * f.iter_err, 100 * f.busy_err);
        tl_trace_close(&t);
    }
    globfree(&g);
}

/* Without the inferred dependencies the multi-stream A100 trace is not
 * reproduced: the GPU overlaps work it in fact serialized. The same for the
 * DDP trace without its untraced graph time: the GPU finishes each step in a
 * third of the time. (So the 3% above is owed to the modelling.) */
static void test_inference_is_what_makes_it_faithful(void **state)
{
    (void)state;
    tl_trace_options off = {.no_inferred_deps = true};
    const char *paths[] = {"traces/bundled/external/a100_train_3streams.json.gz",
                           "traces/bundled/external/a100_train_5streams.json.gz"};
    for (int i = 0; i < 2; i++) {
        tl_trace t;
        load_ok(&t, paths[i], &off);
        assert_int_equal(t.n_inferred, 0);
        assert_int_equal(t.n_untraced, 0);
        tl_fidelity f;
        tl_err e = {0};
        assert_int_equal(tl_fidelity_check(&t, NULL, &f, &e), 0);
        assert_true(f.iter_err < -0.03);
        tl_trace_close(&t);
    }
}

/* ---- 2. the hand-made trace -------------------------------------------------- */

/* tests/data/kineto_inferred.json (µs; marker [100, 320]):
 *   producer  stream 7, launched 110 (5 long), runs [110, 210]
 *   cudaStreamWaitEvent at 120: no cuda_sync record, no cudaEventRecord:
 *             unresolved
 *   consumer  stream 8, launched 125 (5 long), runs [213, 243]: 88 µs after
 *             it could have started, 3 µs after the producer ended -> waited
 *             for it
 *   cudaGraphLaunch at 300 (10 long): g0 stream 7 [300, 310], g1 [370, 390]:
 *             g1 starts 60 µs after g0 with nothing else on the GPU -> the
 *             graph ran 60 µs of work that has no record
 * Expected ops (host gaps from the marker start and the previous API end):
 *   0 producer        gap 10 call 5   gpu 10 dur 100   stream 0 (7)
 *   1 EVENT_RECORD    gap 10 call 0   stream 0, event 0   (inferred, just before
 *                                     the consumer: no later launch on 7 before it)
 *   2 STREAM_WAIT     gap 0  call 0   stream 1 (8), event 0
 *   3 consumer        gap 0  call 5   gpu 113 dur 30
 *   4 g0              gap 170 call 0  gpu 200 dur 10   (a graph's first record)
 *   5 UNTRACED        gap 0  call 0   stream 0, dur 60
 *   6 g1              gap 0  call 10  gpu 270 dur 20
 *   tail 10; traced 290 (GPU end 390 - 100); busy 100 + 30 + 10 + 20 = 160. */
#define INFERRED "tests/data/kineto_inferred.json"

static void expect_op(const tl_trace *t, uint32_t k, tl_op_kind kind, int stream, int event,
                      tl_ns gap, tl_ns call, tl_ns gpu_start, tl_ns dur)
{
    const tl_op *op = &t->iters[0].ops[k];
    if (op->kind != kind || op->stream != stream || op->event != event ||
        op->host_gap_ns != gap || op->host_call_ns != call || op->gpu_start_ns != gpu_start ||
        op->dur_ns != dur)
        fail_msg("op %u: kind %d stream %d event %d gap %lld call %lld gpu %lld dur %lld", k,
                 op->kind, op->stream, op->event, (long long)op->host_gap_ns,
                 (long long)op->host_call_ns, (long long)op->gpu_start_ns,
                 (long long)op->dur_ns);
}

static void test_inferred_ops(void **state)
{
    (void)state;
    tl_trace t;
    load_ok(&t, INFERRED, NULL);
    assert_int_equal(t.n_iters, 1);
    assert_int_equal(t.n_unresolved, 1);
    assert_int_equal(t.n_inferred, 1);
    assert_int_equal(t.n_untraced, 1);
    assert_int_equal(t.n_streams, 2);
    assert_int_equal(t.streams[0], 7);
    assert_int_equal(t.streams[1], 8);
    assert_int_equal(t.iters[0].n_ops, 7);
    expect_op(&t, 0, TL_OP_KERNEL, 0, -1, 10 * US, 5 * US, 10 * US, 100 * US);
    expect_op(&t, 1, TL_OP_EVENT_RECORD, 0, 0, 10 * US, 0, -1, 0);
    expect_op(&t, 2, TL_OP_STREAM_WAIT, 1, 0, 0, 0, -1, 0);
    expect_op(&t, 3, TL_OP_KERNEL, 1, -1, 0, 5 * US, 113 * US, 30 * US);
    expect_op(&t, 4, TL_OP_KERNEL, 0, -1, 170 * US, 0, 200 * US, 10 * US);
    expect_op(&t, 5, TL_OP_UNTRACED, 0, -1, 0, 0, -1, 60 * US);
    expect_op(&t, 6, TL_OP_KERNEL, 0, -1, 0, 10 * US, 270 * US, 20 * US);
    assert_string_equal(tl_trace_op_name(&t, &t.iters[0].ops[3]), "consumer");
    assert_int_equal(t.iters[0].tail_host_ns, 10 * US);
    assert_int_equal(t.iters[0].traced_ns, 290 * US);
    assert_int_equal(t.iters[0].traced_busy_ns, 160 * US);
    tl_trace_close(&t);

    /* Switched off: the wait stays host time, the graph gap is not modelled. */
    tl_trace_options off = {.no_inferred_deps = true};
    load_ok(&t, INFERRED, &off);
    assert_int_equal(t.n_unresolved, 1);
    assert_int_equal(t.n_inferred, 0);
    assert_int_equal(t.n_untraced, 0);
    assert_int_equal(t.iters[0].n_ops, 4); /* producer, consumer, g0, g1 */
    for (uint32_t k = 0; k < 4; k++)
        assert_int_equal(t.iters[0].ops[k].kind, TL_OP_KERNEL);
    assert_int_equal(t.iters[0].ops[1].host_gap_ns, 10 * US); /* 115 -> 125 */
    assert_int_equal(t.iters[0].traced_ns, 290 * US);         /* the trace's own numbers */
    assert_int_equal(t.iters[0].traced_busy_ns, 160 * US);
    tl_trace_close(&t);
}

/* Replay alone in the simulator with per-kernel records. */
typedef struct replay {
    tl_ns start[4], end[4]; /* by index into knames; -1 if not seen */
    tl_ns iter_ns, busy_ns;
    tl_ns stream_gap_ns; /* the simulated GPU's default back-to-back gap */
} replay;

static const char *const knames[] = {"producer", "consumer", "g0", "g1"};

static void replay_kernels(const tl_trace *t, replay *out)
{
    memset(out, 0xff, sizeof *out);
    tl_gpu_props g = t->gpu;
    tl_gpu_complete(&g);
    tl_device dev;
    tl_sim_params p;
    tl_sim_params_default(&p, &g);
    out->stream_gap_ns = p.stream_gap_ns;
    tl_err e = {0};
    assert_int_equal(tl_sim_open(&dev, &g, &p, &e), 0);
    tl_job_spec job = {.name = "solo", .trace = t, .role = TL_ROLE_TRAINING};
    /* a window that ends during the second iteration: only the first is kept */
    tl_run_config cfg = {.jobs = &job, .n_jobs = 1, .policy = tl_policy_find("time-slicing"),
                         .duration_ns = 300 * US, .seed = 1, .record_kernels = true};
    tl_run_result res;
    assert_int_equal(tl_run(&cfg, &dev, &res, &e), 0);
    tl_dev_close(&dev);
    assert_true(res.n_recs >= 1);
    assert_int_equal(res.recs[0].id, 0);
    out->iter_ns = res.recs[0].end_ns - res.recs[0].start_ns;
    out->busy_ns = res.recs[0].busy_ns;
    /* Records come in completion order; each name's first one is iteration
     * 0's (the second iteration's copy queues behind it on its stream). */
    for (size_t k = 0; k < res.n_kernels; k++) {
        const tl_kernel_record *kr = &res.kernels[k];
        for (int n = 0; n < 4; n++)
            if (strcmp(kr->name, knames[n]) == 0 && out->start[n] < 0) {
                out->start[n] = kr->start_ns - res.recs[0].start_ns;
                out->end[n] = kr->end_ns - res.recs[0].start_ns;
            }
    }
    tl_run_result_close(&res);
}

/* Replay (the host starts at 0): producer issued at 10 runs [10, 110]; the
 * record (25) and the wait (25) gate stream 8, so the consumer, issued at
 * 25, runs [110, 140], right after the producer. g0 at 200 runs [200, 210];
 * the untraced 60 µs then hold stream 7 until 270; g1 runs [270, 290]. Host:
 * last call ends at 210, tail 10 -> 220. Iteration = 290 (as traced), busy =
 * [10, 140] + [200, 210] + [270, 290] = 160 (as traced). */
static void test_inferred_replay_exact(void **state)
{
    (void)state;
    tl_trace t;
    load_ok(&t, INFERRED, NULL);
    replay r;
    replay_kernels(&t, &r);
    assert_int_equal(r.start[0], 10 * US);
    assert_int_equal(r.end[0], 110 * US);
    assert_int_equal(r.start[1], r.end[0]); /* the inferred dependency */
    assert_int_equal(r.end[1], 140 * US);
    assert_int_equal(r.start[2], 200 * US);
    assert_int_equal(r.end[2], 210 * US);
    assert_int_equal(r.start[3], r.end[2] + 60 * US); /* the untraced graph work */
    assert_int_equal(r.end[3], 290 * US);
    assert_int_equal(r.iter_ns, 290 * US);
    assert_int_equal(r.busy_ns, 160 * US);
    tl_fidelity f;
    tl_err e = {0};
    assert_int_equal(tl_fidelity_check(&t, NULL, &f, &e), 0);
    assert_true(f.iter_err == 0 && f.busy_err == 0);
    tl_trace_close(&t);

    /* Without the modelling: the consumer starts when issued, on top of the
     * producer; g1 follows g0 after the stream's back-to-back gap; the
     * iteration ends with the host's tail at 220 or g1's end at ~230: 20%
     * short. */
    tl_trace_options off = {.no_inferred_deps = true};
    load_ok(&t, INFERRED, &off);
    replay_kernels(&t, &r);
    assert_int_equal(r.start[1], 25 * US);
    assert_true(r.stream_gap_ns > 0);
    assert_int_equal(r.start[3], r.end[2] + r.stream_gap_ns);
    assert_int_equal(tl_fidelity_check(&t, NULL, &f, &e), 0);
    assert_true(f.iter_err < -0.15 && f.busy_err < -0.15);
    tl_trace_close(&t);
}

/* ---- 3. the runner on the fake device -------------------------------------- */

typedef struct plain_state {
    tl_stream_map map;
} plain_state;

static int plain_setup(tl_policy *p, tl_err *err)
{
    plain_state *s = p->state;
    tl_ctx_config cc = {.kind = TL_CTX_TIMESLICED, .job = 0};
    tl_ctx_id ctx;
    int r = tl_dev_ctx_create(p->dev, &cc, &ctx, err);
    return r < 0 ? r : tl_stream_map_create(&s->map, p->dev, ctx, &p->jobs[0], 0, err);
}

static void plain_submit(tl_policy *p, tl_task *t)
{
    plain_state *s = p->state;
    tl_policy_run_plain(p, t, tl_stream_map_get(&s->map, t->op));
}

static const tl_policy_ops plain_ops = {
    .name = "test-plain", .state_size = sizeof(plain_state), .setup = plain_setup,
    .submit = plain_submit,
};

static tl_op op_of(tl_op_kind kind, int stream, int event, tl_ns gap, tl_ns dur)
{
    tl_op o = {.kind = (uint8_t)kind, .stream = stream, .event = event, .host_gap_ns = gap,
               .dur_ns = dur, .gpu_start_ns = kind == TL_OP_KERNEL ? 0 : -1,
               .grid = {1, 1, 1}, .block = {32, 1, 1}, .regs = 32};
    return o;
}

static char *no_names[] = {""};
static int64_t raw_streams[] = {7, 8};

/* One iteration on the fake device; returns its first record. */
static tl_request_rec run_fake(tl_op *ops, uint32_t n)
{
    tl_iteration it = {.ops = ops, .n_ops = n, .traced_ns = 1000 * US};
    tl_trace t = {.iters = &it, .n_iters = 1, .strings = no_names, .n_strings = 1,
                  .streams = raw_streams, .n_streams = 2};
    tl_gpu_props gpu = {.name = "test", .sms = 1};
    tl_device dev;
    tl_fake_device_open(&dev, &gpu);
    tl_job_spec job = {.name = "j", .trace = &t, .role = TL_ROLE_INFERENCE,
                       .arrival = TL_ARRIVAL_CLOSED};
    tl_run_config cfg = {.jobs = &job, .n_jobs = 1, .policy = &plain_ops,
                         .duration_ns = 1, .seed = 1};
    tl_run_result res;
    tl_err e = {0};
    int r = tl_run(&cfg, &dev, &res, &e);
    if (r < 0)
        print_error("%s\n", e.msg);
    assert_int_equal(r, 0);
    tl_dev_close(&dev);
    assert_true(res.n_recs >= 1);
    tl_request_rec rec = res.recs[0];
    tl_run_result_close(&res);
    return rec;
}

/* K1 stream 0 [0, 100]; UNTRACED 50 on stream 0 issued at 0: starts when K1
 * is done, holds the stream to 150; a stream sync at 0 waits for it (150);
 * then K2 on stream 0, 50 long: [150, 200]. Busy: 100 + 50 (not the held
 * time). */
static void test_untraced_holds_its_stream(void **state)
{
    (void)state;
    tl_op ops[] = {op_of(TL_OP_KERNEL, 0, -1, 0, 100 * US), op_of(TL_OP_UNTRACED, 0, -1, 0, 50 * US),
                   op_of(TL_OP_SYNC, 0, -1, 0, 0), op_of(TL_OP_KERNEL, 0, -1, 0, 50 * US)};
    ops[2].sync_kind = TL_SYNC_STREAM;
    tl_request_rec r = run_fake(ops, 4);
    assert_int_equal(r.end_ns - r.start_ns, 200 * US);
    assert_int_equal(r.busy_ns, 150 * US);
}

/* Stream 1 waits for K1 of stream 0 (ends at 100), then holds 30 untraced,
 * then K3 (10): the UNTRACED op was held behind the gate and still starts
 * only after the work issued before it: [100, 130], K3 [130, 140]. */
static void test_untraced_behind_a_wait(void **state)
{
    (void)state;
    tl_op ops[] = {op_of(TL_OP_KERNEL, 0, -1, 0, 100 * US), op_of(TL_OP_EVENT_RECORD, 0, 0, 0, 0),
                   op_of(TL_OP_STREAM_WAIT, 1, 0, 0, 0), op_of(TL_OP_UNTRACED, 1, -1, 0, 30 * US),
                   op_of(TL_OP_KERNEL, 1, -1, 0, 10 * US)};
    tl_request_rec r = run_fake(ops, 5);
    assert_int_equal(r.end_ns - r.start_ns, 140 * US);
    assert_int_equal(r.busy_ns, 110 * US);
}

/* A long kernel on stream 0 [0, 100] and a short one on stream 1 issued at
 * 50, [50, 60]: the short one completes first. Busy = union = 100 (a merge
 * in completion order would have lost [0, 50]). */
static void test_busy_is_the_union(void **state)
{
    (void)state;
    tl_op ops[] = {op_of(TL_OP_KERNEL, 0, -1, 0, 100 * US), op_of(TL_OP_KERNEL, 1, -1, 50 * US, 10 * US)};
    tl_request_rec r = run_fake(ops, 2);
    assert_int_equal(r.end_ns - r.start_ns, 100 * US);
    assert_int_equal(r.busy_ns, 100 * US);
}

/* A trace whose traced time is far longer than its replay (fuzzing: one
 * kernel's timestamp moved 35 minutes on): the window, 3x the traced time,
 * would hold hundreds of millions of replayed iterations. The run is bounded
 * by iterations too and the error is reported, at once. */
static void test_broken_timestamp_replays_quickly(void **state)
{
    (void)state;
    tl_trace t;
    load_ok(&t, "tests/data/kineto_small.json", NULL);
    assert_int_equal(t.n_iters, 2);
    t.iters[1].traced_ns = 2147483LL * 1000000; /* 2147 s */
    alarm(60); /* the unbounded replay took hours */
    tl_fidelity f;
    tl_err e = {0};
    int r = tl_fidelity_check(&t, NULL, &f, &e);
    alarm(0);
    if (r < 0)
        fail_msg("%s", e.msg);
    assert_int_equal(f.iterations, 2);
    assert_true(f.iter_err < -0.99);
    assert_true(fabs(f.busy_err) < 0.03);
    tl_trace_close(&t);
}

/* A GPU-bound trace without syncs (the consumer kernel of
 * kineto_inferred.json lasting 71 minutes, from fuzzing): the host ran ahead
 * by the 64 spare iterations the replay allowed, and their GPU work outlasted
 * the drain's limit, so the replay failed as an overload ("lower the job's
 * rate or load"). One pass after the measured one is all it may start. */
static void test_gpu_bound_trace_replays(void **state)
{
    (void)state;
    FILE *in = fopen("tests/data/kineto_inferred.json", "r");
    assert_non_null(in);
    char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, in);
    fclose(in);
    text[n] = 0;
    char *dur = strstr(strstr(text, "\"name\": \"consumer\""), "\"dur\": 30,");
    assert_non_null(dur);
    char path[64], out[8300];
    snprintf(path, sizeof path, "/tmp/tally-fidelity-%d.json", (int)getpid());
    snprintf(out, sizeof out, "%.*s\"dur\": 4294967296,%s", (int)(dur - text), text,
             dur + strlen("\"dur\": 30,"));
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(out, f);
    fclose(f);
    tl_trace t;
    load_ok(&t, path, NULL);
    remove(path);
    tl_fidelity fr;
    tl_err e = {0};
    if (tl_fidelity_check(&t, NULL, &fr, &e) < 0)
        fail_msg("%s", e.msg);
    assert_true(fabs(fr.iter_err) < 1e-6);
    assert_true(fabs(fr.busy_err) < 1e-6);
    tl_trace_close(&t);
}

/* A trace the GPU cannot launch is refused as a run refuses it, naming the
 * trace and the kernel: the replay placed an H100 GEMM's 226 KiB of shared
 * memory on a V100's SMs and reported a fidelity. */
static void test_unlaunchable_kernel_refused(void **state)
{
    (void)state;
    tl_trace t;
    load_ok(&t, "traces/bundled/h100/resnet50_train_b32.json.gz", NULL);
    tl_gpu_props v100;
    tl_err e = {0};
    assert_int_equal(tl_gpu_lookup("V100-SXM2-32GB", &v100, &e), 0);
    tl_fidelity fr;
    assert_int_equal(tl_fidelity_check(&t, &v100, &fr, &e), TL_ERANGE);
    const char *want = "traces/bundled/h100/resnet50_train_b32.json.gz: iteration 0 op ";
    if (strncmp(e.msg, want, strlen(want)) || !strstr(e.msg, "so CUDA would not launch it"))
        fail_msg("%s", e.msg);
    tl_trace_close(&t);
}

/* Waves of blocks faster than any GPU runs them are refused before a replay:
 * one kernel of 2^31 - 1 blocks of 1024 threads in 100 ns (8,134,408 waves on
 * the H100) made every wave an event beside another launch (days of simulation;
 * found by fuzzing). 1000 waves in the same 100 ns are still replayed: the rule
 * is for absurd traces only. */
static void test_impossibly_fast_waves_refused(void **state)
{
    (void)state;
    tl_trace t;
    load_ok(&t, "tests/data/fast_waves.json", NULL);
    tl_gpu_props h100;
    tl_err e = {0};
    assert_int_equal(tl_gpu_lookup("H100", &h100, &e), 0);
    tl_fidelity fr;
    assert_int_equal(tl_fidelity_check(&t, &h100, &fr, &e), TL_ERANGE);
    const char *want = "tests/data/fast_waves.json: iteration 0 op ";
    if (strncmp(e.msg, want, strlen(want)) || !strstr(e.msg, "8134408 waves") ||
        !strstr(e.msg, "no GPU runs blocks that fast"))
        fail_msg("%s", e.msg);
    tl_trace_close(&t);
    load_ok(&t, "tests/data/fast_waves_1000.json", NULL);
    assert_int_equal(tl_fidelity_check(&t, &h100, &fr, &e), 0);
    tl_trace_close(&t);
}

/* A replay slower than its capture is measured, not lost: a legal
 * --sim-param (stream_gap_ns=1000000 behind 10 us kernels) or a traced_ns
 * below the host time kept the measured pass outside the window of 3-5x the
 * traced time, and fidelity exited 70 ('replay finished 0 of 2 iterations').
 * Traced times near the format's limit (2^61 ns an iteration) overflowed the
 * window to a negative duration ('run: duration must be > 0'). */
static void test_slow_replay_is_measured(void **state)
{
    (void)state;
    tl_trace t;
    load_ok(&t, "tests/data/flat_small.json", NULL);
    tl_fidelity f;
    tl_err e = {0};
    if (tl_fidelity_check_params(&t, NULL, "stream_gap_ns=1000000", &f, &e) < 0)
        fail_msg("%s", e.msg);
    assert_int_equal(f.iterations, 2);
    assert_true(f.replay_iter_ns > 10 * f.traced_iter_ns);
    t.iters[0].tail_host_ns = 2 * TL_NS_PER_S; /* traced_ns stays 100 us */
    if (tl_fidelity_check(&t, NULL, &f, &e) < 0)
        fail_msg("%s", e.msg);
    assert_true(f.replay_iter_ns > 1e9);
    t.iters[0].tail_host_ns = 0;
    for (uint32_t i = 0; i < t.n_iters; i++)
        t.iters[i].traced_ns = INT64_MAX / 4;
    if (tl_fidelity_check(&t, NULL, &f, &e) < 0)
        fail_msg("%s", e.msg);
    assert_true(f.iter_err < -0.99);
    /* a window already past 1/16 of the largest grows to the largest: ops
     * overlapping on one stream (a broken trace) replay one after another,
     * 2e14 ns where 1e13 were traced */
    for (uint32_t i = 0; i < t.n_iters; i++)
        t.iters[i].traced_ns = 10000000000000LL;
    t.iters[0].ops[0].dur_ns = 200000000000000LL;
    if (tl_fidelity_check(&t, NULL, &f, &e) < 0)
        fail_msg("%s", e.msg);
    assert_true(f.iter_err > 1);
    tl_trace_close(&t);
}

/* A replayed iteration that outlasts the runner's wait after the window (60
 * s where 0.1 ms were traced) failed as "the offered load far exceeds what
 * the GPU serves; lower the job's rate or load": a replay has none. It is
 * said as what it is, naming the trace; still a data error (TL_ERANGE). */
static void test_replay_far_too_long(void **state)
{
    (void)state;
    tl_trace t;
    load_ok(&t, "tests/data/flat_small.json", NULL);
    t.iters[0].tail_host_ns = 61 * TL_NS_PER_S; /* traced_ns stays 100 us */
    tl_fidelity f;
    tl_err e = {0};
    assert_int_equal(tl_fidelity_check(&t, NULL, &f, &e), TL_ERANGE);
    print_message("%s\n", e.msg);
    assert_null(strstr(e.msg, "offered load"));
    assert_non_null(strstr(e.msg, "tests/data/flat_small.json: replayed, an iteration was still "
                                  "running 60 s after the replay's window of 2 ms (sized by the "
                                  "0.2 ms traced) ended"));
    assert_non_null(strstr(e.msg, "a replay window long enough to hold it would be too long"));
    tl_trace_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inferred_ops),
        cmocka_unit_test(test_inferred_replay_exact),
        cmocka_unit_test(test_untraced_holds_its_stream),
        cmocka_unit_test(test_untraced_behind_a_wait),
        cmocka_unit_test(test_busy_is_the_union),
        cmocka_unit_test(test_bundled_traces_within_3pct),
        cmocka_unit_test(test_inference_is_what_makes_it_faithful),
        cmocka_unit_test(test_broken_timestamp_replays_quickly),
        cmocka_unit_test(test_gpu_bound_trace_replays),
        cmocka_unit_test(test_unlaunchable_kernel_refused),
        cmocka_unit_test(test_impossibly_fast_waves_refused),
        cmocka_unit_test(test_slow_replay_is_measured),
        cmocka_unit_test(test_replay_far_too_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
