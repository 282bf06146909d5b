/* The runner's host-timeline replay, on a fake device whose streams run each
 * op for exactly its duration (tests/support/fake_device.c): host gaps, call
 * overheads, syncs, cross-stream event waits, queueing of requests, windows.
 * Every expected number is worked out by hand in the comments. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_device.h"
#include "tally/metrics.h"
#include "tally/runner.h"

#define US 1000

/* A minimal policy: one device stream per trace stream, run everything as is. */
typedef struct plain_state { tl_stream_map maps[4]; } plain_state;

static int plain_setup(tl_policy *p, tl_err *err)
{
    plain_state *s = p->state;
    for (int j = 0; j < p->n_jobs; j++) {
        tl_ctx_config cc = { .kind = TL_CTX_TIMESLICED, .job = j };
        tl_ctx_id ctx;
        int r = tl_dev_ctx_create(p->dev, &cc, &ctx, err);
        if (r == 0)
            r = tl_stream_map_create(&s->maps[j], p->dev, ctx, &p->jobs[j], 0, err);
        if (r < 0)
            return r;
    }
    return 0;
}

static void plain_submit(tl_policy *p, tl_task *t)
{
    plain_state *s = p->state;
    tl_policy_run_plain(p, t, tl_stream_map_get(&s->maps[t->job->id], t->op));
}

static const tl_policy_ops plain_ops = {
    .name = "test-plain", .state_size = sizeof(plain_state), .setup = plain_setup,
    .submit = plain_submit,
};

static tl_op kernel(int stream, tl_ns gap, tl_ns call, tl_ns dur)
{
    tl_op o = { .kind = TL_OP_KERNEL, .stream = stream, .event = -1, .host_gap_ns = gap,
                .host_call_ns = call, .dur_ns = dur, .gpu_start_ns = -1, .grid = { 1, 1, 1 },
                .block = { 32, 1, 1 }, .regs = 32 };
    return o;
}

static tl_op sync_op(tl_sync_kind k, int stream, int event, tl_ns gap, tl_ns call)
{
    tl_op o = { .kind = TL_OP_SYNC, .sync_kind = k, .stream = stream, .event = event,
                .host_gap_ns = gap, .host_call_ns = call, .gpu_start_ns = -1 };
    return o;
}

static char *strings[] = { "" };
static int64_t two_streams[] = { 7, 8 };

static void make_trace(tl_trace *t, tl_iteration *it, tl_op *ops, uint32_t n, tl_ns tail)
{
    memset(t, 0, sizeof *t);
    memset(it, 0, sizeof *it);
    it->ops = ops;
    it->n_ops = n;
    it->tail_host_ns = tail;
    it->traced_ns = 100 * US;
    t->iters = it;
    t->n_iters = 1;
    t->strings = strings;
    t->n_strings = 1;
    t->streams = two_streams;
    t->n_streams = 2;
}

static void run(tl_job_spec *jobs, int n, tl_ns warmup, tl_ns duration, tl_run_result *res)
{
    tl_gpu_props gpu = { .name = "test", .sms = 1 };
    tl_device dev;
    tl_fake_device_open(&dev, &gpu);
    tl_run_config cfg = { .jobs = jobs, .n_jobs = n, .policy = &plain_ops,
                          .duration_ns = duration, .warmup_ns = warmup, .seed = 1 };
    tl_err err = { 0 };
    int r = tl_run(&cfg, &dev, res, &err);
    if (r < 0)
        print_error("%s\n", err.msg);
    assert_int_equal(r, 0);
    tl_dev_close(&dev);
}

/* One inference request arriving at 0 that plays ops: its end time. */
static tl_ns one_request_end(tl_op *ops, uint32_t n)
{
    tl_trace t;
    tl_iteration it;
    make_trace(&t, &it, ops, n, 0);
    tl_ns arrivals[] = { 0 };
    tl_job_spec job = { .name = "one", .trace = &t, .role = TL_ROLE_INFERENCE,
                        .arrival = TL_ARRIVAL_FILE, .arrival_times = arrivals, .n_arrival_times = 1 };
    tl_run_result res;
    run(&job, 1, 0, 1000 * US, &res);
    assert_int_equal(res.n_recs, 1);
    tl_ns end = res.recs[0].end_ns;
    tl_run_result_close(&res);
    return end;
}

/* K1: gap 10, call 5, 100 long; K2: gap 0, call 5, 50 long; device sync with a
 * 2 us return; tail 20. K1 runs [10,110], K2 [110,160] (issued at 15, queued);
 * the sync waits to 160, returns at 162; the tail ends the host at 182.
 * Closed loop: iterations of 182 us; 5 end inside a 1 ms window. */
static void test_training_closed_loop(void **state)
{
    tl_op ops[] = { kernel(0, 10 * US, 5 * US, 100 * US), kernel(0, 0, 5 * US, 50 * US),
                    sync_op(TL_SYNC_DEVICE, 0, -1, 0, 2 * US) };
    tl_trace t;
    tl_iteration it;
    make_trace(&t, &it, ops, 3, 20 * US);
    tl_job_spec job = { .name = "train", .trace = &t, .role = TL_ROLE_TRAINING };
    tl_run_result res;
    run(&job, 1, 0, 1000 * US, &res);
    assert_int_equal(res.n_recs, 5);
    for (size_t i = 0; i < res.n_recs; i++) {
        assert_int_equal(res.recs[i].start_ns, (tl_ns)i * 182 * US);
        assert_int_equal(res.recs[i].end_ns - res.recs[i].start_ns, 182 * US);
        assert_int_equal(res.recs[i].busy_ns, 150 * US); /* [10,110] + [110,160] */
    }
    tl_run_result_close(&res);
}

/* No sync: the host runs ahead. Host: K at gap 0, call 10, then a 30 us tail:
 * iterations start every 40 us on the host, but the GPU needs 100 us each, so
 * iteration i ends at 100 (i + 1): the GPU-bound rate. */
static void test_host_runs_ahead_gpu_bound(void **state)
{
    tl_op ops[] = { kernel(0, 0, 10 * US, 100 * US) };
    tl_trace t;
    tl_iteration it;
    make_trace(&t, &it, ops, 1, 30 * US);
    tl_job_spec job = { .name = "train", .trace = &t, .role = TL_ROLE_TRAINING };
    tl_run_result res;
    run(&job, 1, 0, 1000 * US, &res);
    /* ends at 100, 200, ..., 900 inside [0, 1000): 9 iterations */
    assert_int_equal(res.n_recs, 9);
    for (size_t i = 0; i < res.n_recs; i++) {
        assert_int_equal(res.recs[i].start_ns, (tl_ns)i * 40 * US);
        assert_int_equal(res.recs[i].end_ns, (tl_ns)(i + 1) * 100 * US);
    }
    tl_run_result_close(&res);
}

/* The launch queue (1024 pending launches) with 600 1-us kernels an iteration,
 * issued at once. Launched one by one, the host blocks mid-iteration: iteration
 * 1 gets 424 launches at 0 and one per completion after, so it is issued by 176
 * us, iteration 2 (starting then) by 776 us. As a CUDA graph (op.graph) an
 * iteration is one launch: the host blocks only before one, and the room comes
 * back when a whole graph has ended (the host learns of its kernels at its
 * end). Iteration 1 is issued whole at 0 (600 pending < 1024); iteration 2
 * starts at 0 but waits while 1200 are pending in two graphs, until iteration 0
 * ends at 600 us, and is then issued whole, so iteration 3 starts at 600 us. */
static void test_graph_blocks_between_iterations(void **state)
{
    static tl_op ops[600];
    for (int graph = 0; graph < 2; graph++) {
        for (int i = 0; i < 600; i++) {
            ops[i] = kernel(0, 0, 0, 1 * US);
            ops[i].graph = (uint8_t)graph;
        }
        tl_trace t;
        tl_iteration it;
        make_trace(&t, &it, ops, 600, 0);
        tl_job_spec job = { .name = "train", .trace = &t, .role = TL_ROLE_TRAINING };
        tl_run_result res;
        run(&job, 1, 0, 3000 * US, &res);
        assert_true(res.n_recs >= 4);
        assert_int_equal(res.recs[1].start_ns, 0);
        assert_int_equal(res.recs[2].start_ns, graph ? 0 : 176 * US);
        assert_int_equal(res.recs[3].start_ns, graph ? 600 * US : 776 * US);
        tl_run_result_close(&res);
    }
}

/* A graph of more ops than the launch queue holds (1500 1-us kernels) is still
 * one launch, and one graph may queue behind another: iterations 0 and 1 are
 * issued at 0, iteration 2 (starting at 0) waits while two graphs hold 3000
 * ops, until iteration 0 ends at 1500 us, so iteration 3 starts then. */
static void test_graph_larger_than_queue(void **state)
{
    static tl_op ops[1500];
    for (int i = 0; i < 1500; i++) {
        ops[i] = kernel(0, 0, 0, 1 * US);
        ops[i].graph = 1;
    }
    tl_trace t;
    tl_iteration it;
    make_trace(&t, &it, ops, 1500, 0);
    tl_job_spec job = { .name = "train", .trace = &t, .role = TL_ROLE_TRAINING };
    tl_run_result res;
    run(&job, 1, 0, 5000 * US, &res);
    assert_true(res.n_recs >= 3);
    assert_int_equal(res.recs[1].start_ns, 0);
    assert_int_equal(res.recs[2].start_ns, 0);
    assert_int_equal(res.recs[2].end_ns, 4500 * US);
    tl_run_result_close(&res);
    (void)state;
}

/* Requests at 0 and 50 us, 100 us of GPU each, served one at a time: the
 * second waits for the first: latency 150 us, service 100 us. */
static void test_inference_queueing(void **state)
{
    tl_op ops[] = { kernel(0, 0, 0, 100 * US), sync_op(TL_SYNC_STREAM, 0, -1, 0, 0) };
    tl_trace t;
    tl_iteration it;
    make_trace(&t, &it, ops, 2, 0);
    tl_ns arrivals[] = { 0, 50 * US };
    tl_job_spec job = { .name = "infer", .trace = &t, .role = TL_ROLE_INFERENCE,
                        .arrival = TL_ARRIVAL_FILE, .arrival_times = arrivals,
                        .n_arrival_times = 2 };
    tl_run_result res;
    run(&job, 1, 0, 1000 * US, &res);
    assert_int_equal(res.n_recs, 2);
    assert_int_equal(res.recs[0].end_ns - res.recs[0].arrival_ns, 100 * US);
    assert_int_equal(res.recs[1].arrival_ns, 50 * US);
    assert_int_equal(res.recs[1].start_ns, 100 * US);
    assert_int_equal(res.recs[1].end_ns - res.recs[1].arrival_ns, 150 * US);
    tl_run_config cfg = { .jobs = &job, .n_jobs = 1 };
    tl_job_metrics m;
    tl_metrics_compute(&res, &cfg, 1, &m);
    assert_int_equal(m.count, 2);
    assert_true(m.p99_ns == 150 * US);
    assert_true(m.p50_ns == 100 * US);
    assert_true(m.mean_service_ns == 100 * US);
    assert_true(m.slow_phases == 0); /* two requests: too few to tell */
    tl_run_result_close(&res);
}

/* tl_slow_phases: 100 requests of 1 ms (median 1 ms, bar 1.6 ms) with
 * slow runs of 3 (a phase), 2 (too short) and 5 at the very end (a phase);
 * a request at exactly 1.6x is not slow; too few requests to tell. */
static void test_slow_phases(void **state)
{
    (void)state;
    double svc[100];
    for (int i = 0; i < 100; i++)
        svc[i] = 1.0;
    assert_int_equal(tl_slow_phases(svc, 100), 0);
    svc[10] = svc[11] = svc[12] = 2.2;          /* a phase of 3 */
    svc[40] = svc[41] = 3.0;                    /* 2: not a phase */
    svc[60] = svc[61] = 2.0, svc[62] = 1.6;     /* the bar is exclusive */
    for (int i = 95; i < 100; i++)
        svc[i] = 5.0;                           /* a phase that ends the run */
    assert_int_equal(tl_slow_phases(svc, 100), 2);
    svc[13] = 2.0;                              /* the first phase grows: still one */
    assert_int_equal(tl_slow_phases(svc, 100), 2);
    svc[50] = svc[51] = svc[52] = 1.7;
    assert_int_equal(tl_slow_phases(svc, 100), 3);
    double few[2] = {1, 9};
    assert_int_equal(tl_slow_phases(few, 2), 0);
    assert_int_equal(tl_slow_phases(NULL, 0), 0);
}

/* The metric per job: an inference job's phases counted over its requests in
 * order of arrival, whatever order they completed in (records 2 and 1 swapped
 * below: still one phase of 3); a training job has none (NAN). */
static void test_slow_phases_metric(void **state)
{
    (void)state;
    tl_request_rec recs[12];
    for (int i = 0; i < 10; i++)
        recs[i] = (tl_request_rec){.job = 0, .id = (uint32_t)i, .arrival_ns = 10 * i * US,
                                   .start_ns = 10 * i * US, .end_ns = 10 * i * US + (i >= 1 && i <= 3 ? 5 : 1) * US};
    tl_request_rec tmp = recs[1];
    recs[1] = recs[4];
    recs[4] = tmp; /* a slow one completes after a quick one */
    recs[10] = (tl_request_rec){.job = 1, .arrival_ns = 0, .start_ns = 0, .end_ns = 90 * US};
    recs[11] = (tl_request_rec){.job = 1, .arrival_ns = 90 * US, .start_ns = 90 * US, .end_ns = 99 * US};
    tl_run_result res = {.recs = recs, .n_recs = 12, .window_start_ns = 0, .window_end_ns = 100 * US};
    tl_job_spec jobs[2] = {{.name = "infer", .role = TL_ROLE_INFERENCE}, {.name = "train", .role = TL_ROLE_TRAINING}};
    tl_run_config cfg = {.jobs = jobs, .n_jobs = 2};
    tl_job_metrics m[2];
    tl_metrics_compute(&res, &cfg, 1, m);
    assert_int_equal(m[0].count, 10);
    assert_true(m[0].slow_phases == 1);
    assert_true(isnan(m[1].slow_phases));
    recs[4].end_ns = recs[4].start_ns + 1 * US; /* record 4 holds request 1: the phase is 2 long now */
    tl_metrics_compute(&res, &cfg, 1, m);
    assert_true(m[0].slow_phases == 0);
    /* a job with nothing finished in the window has no latency (NAN: not
     * stored, shown as '-'), not 0 ms; its throughput is a real 0 */
    res.n_recs = 10;
    tl_metrics_compute(&res, &cfg, 1, m);
    assert_int_equal(m[1].count, 0);
    assert_true(isnan(m[1].p50_ns) && isnan(m[1].p99_ns) && isnan(m[1].p999_ns));
    assert_true(isnan(m[1].mean_latency_ns) && isnan(m[1].mean_service_ns));
    assert_true(m[1].throughput == 0);
}

/* Stream 0: K1 (100 us), record e0; stream 1: wait e0, K2 (10 us); device
 * sync. K2 may only start when K1 is done: the sync returns at 110. */
static void test_cross_stream_event_wait(void **state)
{
    tl_op rec = { .kind = TL_OP_EVENT_RECORD, .stream = 0, .event = 0, .gpu_start_ns = -1 };
    tl_op wait = { .kind = TL_OP_STREAM_WAIT, .stream = 1, .event = 0, .gpu_start_ns = -1 };
    tl_op ops[] = { kernel(0, 0, 0, 100 * US), rec, wait, kernel(1, 0, 0, 10 * US),
                    sync_op(TL_SYNC_DEVICE, 0, -1, 0, 0) };
    assert_int_equal(one_request_end(ops, 5), 110 * US);
}

/* An event sync waits for the work before the record only: K1 (100) then
 * record e0 then K2 (50) on the same stream; event sync returns at 100 while
 * K2 still runs; the host then ends, and the request ends with K2 at 150. */
static void test_event_sync(void **state)
{
    tl_op rec = { .kind = TL_OP_EVENT_RECORD, .stream = 0, .event = 0, .gpu_start_ns = -1 };
    tl_op ops[] = { kernel(0, 0, 0, 100 * US), rec, kernel(0, 0, 0, 50 * US),
                    sync_op(TL_SYNC_EVENT, 0, 0, 0, 0), kernel(1, 0, 0, 5 * US) };
    /* the last kernel is issued at 100 on stream 1 and ends at 105; K2 at 150 */
    assert_int_equal(one_request_end(ops, 5), 150 * US);
}

/* Warm-up is discarded: with 182 us iterations and a window [400, 1000) us,
 * iterations ending at 546, 728, 910 count. */
static void test_window(void **state)
{
    tl_op ops[] = { kernel(0, 10 * US, 5 * US, 100 * US), kernel(0, 0, 5 * US, 50 * US),
                    sync_op(TL_SYNC_DEVICE, 0, -1, 0, 2 * US) };
    tl_trace t;
    tl_iteration it;
    make_trace(&t, &it, ops, 3, 20 * US);
    tl_job_spec job = { .name = "train", .trace = &t, .role = TL_ROLE_TRAINING };
    tl_run_result res;
    run(&job, 1, 400 * US, 600 * US, &res);
    assert_int_equal(res.n_recs, 3);
    assert_int_equal(res.recs[0].end_ns, 546 * US);
    tl_run_result_close(&res);
}

/* Same spec and seed: identical records (Poisson arrivals). */
static void test_deterministic_poisson(void **state)
{
    tl_op ops[] = { kernel(0, 0, 0, 100 * US), sync_op(TL_SYNC_STREAM, 0, -1, 0, 0) };
    tl_trace t;
    tl_iteration it;
    make_trace(&t, &it, ops, 2, 0);
    tl_job_spec job = { .name = "p", .trace = &t, .role = TL_ROLE_INFERENCE,
                        .arrival = TL_ARRIVAL_POISSON_RATE, .rate = 2000 };
    tl_run_result a, b;
    run(&job, 1, 0, 100 * 1000 * US, &a);
    run(&job, 1, 0, 100 * 1000 * US, &b);
    assert_true(a.n_recs > 150 && a.n_recs < 250); /* 2000/s for 0.1 s: ~200 */
    assert_int_equal(a.n_recs, b.n_recs);
    assert_memory_equal(a.recs, b.recs, a.n_recs * sizeof *a.recs);
    tl_run_result_close(&a);
    tl_run_result_close(&b);
}

/* A rate so small that its gaps pass what a tl_ns holds: no arrival falls in
 * the run (the gap's cast wrapped them into the past, over and over). */
static void test_tiny_rate_no_arrivals(void **state)
{
    tl_op ops[] = { kernel(0, 0, 0, 100 * US), sync_op(TL_SYNC_STREAM, 0, -1, 0, 0) };
    tl_trace t;
    tl_iteration it;
    make_trace(&t, &it, ops, 2, 0);
    tl_job_spec job = { .name = "p", .trace = &t, .role = TL_ROLE_INFERENCE,
                        .arrival = TL_ARRIVAL_POISSON_RATE, .rate = 1e-20 };
    tl_run_result a;
    run(&job, 1, 0, 100 * 1000 * US, &a);
    assert_int_equal(a.n_recs, 0);
    tl_run_result_close(&a);
    (void)state;
}

/* An inference job of requests of dur (one at a time) fed by an arrival
 * file of n requests, gap apart from 0, in a 10 ms window: tl_run's result. */
static int overload_run(size_t n, tl_ns dur, tl_ns gap, tl_run_result *res, tl_err *err)
{
    tl_op ops[] = { kernel(0, 0, 0, dur), sync_op(TL_SYNC_STREAM, 0, -1, 0, 0) };
    tl_trace t;
    tl_iteration it;
    make_trace(&t, &it, ops, 2, 0);
    tl_ns *arrivals = malloc(n * sizeof *arrivals);
    assert_non_null(arrivals);
    for (size_t i = 0; i < n; i++)
        arrivals[i] = (tl_ns)i * gap;
    tl_job_spec job = { .name = "flood", .trace = &t, .role = TL_ROLE_INFERENCE,
                        .arrival = TL_ARRIVAL_FILE, .arrival_times = arrivals,
                        .n_arrival_times = n };
    tl_gpu_props gpu = { .name = "test", .sms = 1 };
    tl_device dev;
    tl_fake_device_open(&dev, &gpu);
    tl_run_config cfg = { .jobs = &job, .n_jobs = 1, .policy = &plain_ops,
                          .duration_ns = 10 * 1000 * US, .warmup_ns = 0, .seed = 1 };
    int r = tl_run(&cfg, &dev, res, err);
    tl_dev_close(&dev);
    free(arrivals);
    return r;
}

/* Requests arriving faster than they are served. 150 of 100 us, 5 us apart,
 * drain 5 ms after the 10 ms window: every one is served, as before; so do
 * two of 30 s (a long request in a short window). 10,000 of 10 ms, 1 us
 * apart (100 s of work) would drain past the drain's limit (10x the run, at
 * least 60 s): the run fails naming the job instead of draining on, which at
 * a rate of millions a second took simulated hours. 1,100,000 arrivals 5 ns
 * apart pass the cap on waiting requests (2^20) first. */
static void test_overload_refused(void **state)
{
    (void)state;
    tl_run_result res;
    tl_err err = { 0 };
    assert_int_equal(overload_run(150, 100 * US, 5 * US, &res, &err), 0);
    assert_int_equal(res.n_recs, 150);
    assert_int_equal(res.recs[149].end_ns, 150 * 100 * US);
    /* throughput counts the requests served inside the window: the k-th ends
     * at k x 100 us, so 99 of the 150 before 10 ms (not the 150 that arrived) */
    tl_job_spec job = { .role = TL_ROLE_INFERENCE };
    tl_run_config cfg = { .jobs = &job, .n_jobs = 1 };
    tl_job_metrics m;
    tl_metrics_compute(&res, &cfg, 1, &m);
    assert_int_equal(m.count, 150);
    assert_true(m.throughput == 9900.0);
    tl_run_result_close(&res);
    assert_int_equal(overload_run(2, 30 * TL_NS_PER_S, 1, &res, &err), 0);
    assert_int_equal(res.n_recs, 2);
    tl_run_result_close(&res);

    assert_int_equal(overload_run(10000, 10 * 1000 * US, 1 * US, &res, &err), TL_ERANGE);
    assert_non_null(strstr(err.msg, "job flood: 3999 requests unfinished 60.0 s after the window ended"));
    assert_non_null(strstr(err.msg, "the offered load far exceeds what the GPU serves"));
    assert_int_equal(res.n_recs, 0); /* the failed run's result is released */

    memset(&err, 0, sizeof err);
    assert_int_equal(overload_run(1100000, 100 * US, 5, &res, &err), TL_ERANGE);
    assert_non_null(strstr(err.msg, "job flood: over 1048576 requests waiting"));
}

/* A training job left at the drain's limit offers no load: it was told "the
 * offered load far exceeds what the GPU serves; lower the job's rate or load",
 * which it has none of. One iteration of a 70 s kernel in a 10 ms window is
 * still running when the drain stops at 60 s; the message says so. */
static void test_training_past_drain(void **state)
{
    (void)state;
    tl_op ops[] = { kernel(0, 0, 0, 70 * TL_NS_PER_S), sync_op(TL_SYNC_DEVICE, 0, -1, 0, 0) };
    tl_trace t;
    tl_iteration it;
    make_trace(&t, &it, ops, 2, 0);
    tl_job_spec job = { .name = "train", .trace = &t, .role = TL_ROLE_TRAINING };
    tl_gpu_props gpu = { .name = "test", .sms = 1 };
    tl_device dev;
    tl_fake_device_open(&dev, &gpu);
    tl_run_config cfg = { .jobs = &job, .n_jobs = 1, .policy = &plain_ops,
                          .duration_ns = 10 * 1000 * US, .warmup_ns = 0, .seed = 1 };
    tl_run_result res;
    tl_err err = { 0 };
    assert_int_equal(tl_run(&cfg, &dev, &res, &err), TL_ERANGE);
    tl_dev_close(&dev);
    assert_non_null(strstr(err.msg, "job train: 1 training iteration unfinished 60.0 s after the "
                                    "window ended"));
    assert_non_null(strstr(err.msg, "the training job had not finished its training iterations "
                                    "by the drain's limit"));
    assert_null(strstr(err.msg, "offered load"));
}

/* The runner calls the device's begin hook once, after the policy's setup
 * (every stream created) and before the first timer: a device whose setup
 * takes real time (tally-run's contexts in worker processes) starts the run's
 * clock there, so the first arrivals are not late by the setup's length. */
static const tl_device_ops *inner_ops;
static int begins, streams_after_begin, timers_before_begin;

static int w_stream(tl_device *d, tl_ctx_id c, int prio, tl_stream_id *o, tl_err *e)
{
    streams_after_begin += begins > 0;
    return inner_ops->stream_create(d, c, prio, o, e);
}

static int w_timer(tl_device *d, tl_ns at, tl_timer_cb cb, void *arg)
{
    timers_before_begin += begins == 0;
    return inner_ops->timer(d, at, cb, arg);
}

static void w_begin(tl_device *d)
{
    (void)d;
    begins++;
}

static void test_begin_after_setup(void **state)
{
    (void)state;
    tl_op ops[] = { kernel(0, 0, 5 * US, 10 * US) };
    tl_trace t;
    tl_iteration it;
    make_trace(&t, &it, ops, 1, 0);
    tl_ns arrivals[] = { 0, 50 * US };
    tl_job_spec jobs[] = {
        { .name = "inf", .trace = &t, .role = TL_ROLE_INFERENCE, .arrival = TL_ARRIVAL_FILE,
          .arrival_times = arrivals, .n_arrival_times = 2 },
        { .name = "train", .trace = &t, .role = TL_ROLE_TRAINING },
    };
    tl_gpu_props gpu = { .name = "test", .sms = 1 };
    tl_device dev;
    tl_fake_device_open(&dev, &gpu);
    inner_ops = dev.ops;
    tl_device_ops wrapped = *dev.ops;
    wrapped.stream_create = w_stream;
    wrapped.timer = w_timer;
    wrapped.begin = w_begin;
    dev.ops = &wrapped;
    begins = streams_after_begin = timers_before_begin = 0;
    tl_run_config cfg = { .jobs = jobs, .n_jobs = 2, .policy = &plain_ops,
                          .duration_ns = 1000 * US, .warmup_ns = 0, .seed = 1 };
    tl_run_result res;
    tl_err err = { 0 };
    assert_int_equal(tl_run(&cfg, &dev, &res, &err), 0);
    assert_int_equal(begins, 1);
    assert_int_equal(streams_after_begin, 0);
    assert_int_equal(timers_before_begin, 0);
    int served = 0;
    for (size_t k = 0; k < res.n_recs; k++)
        served += res.recs[k].job == 0;
    assert_int_equal(served, 2);
    tl_run_result_close(&res);
    dev.ops = inner_ops;
    tl_dev_close(&dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_training_closed_loop),
        cmocka_unit_test(test_host_runs_ahead_gpu_bound),
        cmocka_unit_test(test_graph_blocks_between_iterations),
        cmocka_unit_test(test_graph_larger_than_queue),
        cmocka_unit_test(test_inference_queueing),
        cmocka_unit_test(test_slow_phases),
        cmocka_unit_test(test_slow_phases_metric),
        cmocka_unit_test(test_cross_stream_event_wait),
        cmocka_unit_test(test_event_sync),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_deterministic_poisson),
        cmocka_unit_test(test_tiny_rate_no_arrivals),
        cmocka_unit_test(test_overload_refused),
        cmocka_unit_test(test_training_past_drain),
        cmocka_unit_test(test_begin_after_setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
