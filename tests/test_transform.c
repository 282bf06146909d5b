/* What-if transformations (core/transform.c) and what the simulator makes of
 * a graph job:
 * 1. tl_trace_as_graph on the bundled MobileNetV3 trace: host gaps, call times
 *    and tails become 0, every op is marked graph, and each iteration's
 *    traced_ns is its GPU-busy time plus graph_gap_ns between consecutive ops
 *    of its busiest stream (its solo capacity, what "load" is a fraction of);
 *    the mark survives tl_trace_write_json and the loader.
 * 2. The simulator starts a graph op graph_gap_ns after the op before it, and
 *    a plain one stream_gap_ns after.
 * 3. The converted job replayed alone: one request takes its traced_ns.
 * 4. tl_trace_scale_grid multiplies grids and refuses one past 2^31-1.
 * 5. The host's graph launch time: the first op of each graph (a run of
 *    kernels and memsets on one stream) waits launch_ns + node_ns per op,
 *    the others none; a copy ends a graph. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tally/policy.h"
#include "tally/runner.h"
#include "tally/sim.h"
#include "tally/trace.h"
#include "tally/transform.h"

#define US 1000LL
#define MOBILENET "traces/bundled/h100/mobilenetv3_infer_b1.json.gz"

static void load_ok(tl_trace *t, const char *path)
{
    tl_err e = {0};
    tl_trace_init(t);
    if (tl_trace_load(t, path, NULL, &e) < 0)
        fail_msg("%s: %s", path, e.msg);
}

static bool is_gpu(const tl_op *op)
{
    return op->kind == TL_OP_KERNEL || op->kind == TL_OP_MEMCPY || op->kind == TL_OP_MEMSET;
}

static void test_as_graph(void **state)
{
    (void)state;
    tl_trace t;
    load_ok(&t, MOBILENET);
    assert_true(t.n_iters > 0);
    const tl_ns gap = 830;
    const tl_graph_launch gl = {.gap_ns = gap};
    tl_trace_as_graph(&t, &gl);
    for (uint32_t i = 0; i < t.n_iters; i++) {
        const tl_iteration *it = &t.iters[i];
        uint32_t per[64] = {0}, busiest = 0;
        assert_true(t.n_streams <= 64);
        for (uint32_t k = 0; k < it->n_ops; k++) {
            const tl_op *op = &it->ops[k];
            assert_int_equal(op->host_gap_ns, 0);
            assert_int_equal(op->host_call_ns, 0);
            assert_int_equal(op->graph, 1);
            if (is_gpu(op) && ++per[op->stream] > busiest)
                busiest = per[op->stream];
        }
        assert_int_equal(it->tail_host_ns, 0);
        assert_true(busiest > 100); /* ~200 kernels on one stream */
        assert_int_equal(it->traced_ns, it->traced_busy_ns + (tl_ns)(busiest - 1) * gap);
    }
    /* the mark survives the writer and the loader */
    char path[] = "/tmp/tally-test-transform-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    tl_err e = {0};
    if (tl_trace_write_json(&t, path, &e) < 0)
        fail_msg("%s", e.msg);
    tl_trace back;
    load_ok(&back, path);
    unlink(path);
    assert_int_equal(back.n_iters, t.n_iters);
    for (uint32_t i = 0; i < back.n_iters; i++)
        for (uint32_t k = 0; k < back.iters[i].n_ops; k++)
            assert_int_equal(back.iters[i].ops[k].graph, 1);
    tl_trace_close(&back);
    tl_trace_close(&t);
    /* a plain trace's ops are not marked */
    load_ok(&t, MOBILENET);
    for (uint32_t k = 0; k < t.iters[0].n_ops; k++)
        assert_int_equal(t.iters[0].ops[k].graph, 0);
    tl_trace_close(&t);
}

static tl_launch_id last_end_id;
static tl_ns ends[4], starts[4];
static void on_done(void *arg, const tl_launch_result *r)
{
    int i = (int)(intptr_t)arg;
    starts[i] = r->start_ns;
    ends[i] = r->end_ns;
    last_end_id = r->id;
}

static void test_sim_graph_gap(void **state)
{
    (void)state;
    tl_gpu_props g;
    tl_sim_params p;
    tl_err e = {0};
    assert_int_equal(tl_gpu_lookup("H100", &g, &e), 0);
    tl_sim_params_default(&p, &g);
    assert_int_equal(p.graph_gap_ns, 830);
    assert_true(p.graph_gap_ns < p.stream_gap_ns);
    tl_device d;
    assert_int_equal(tl_sim_open(&d, &g, &p, &e), 0);
    tl_ctx_config cc = {.kind = TL_CTX_TIMESLICED, .job = 0};
    tl_ctx_id c;
    tl_stream_id s;
    assert_int_equal(tl_dev_ctx_create(&d, &cc, &c, &e), 0);
    assert_int_equal(tl_dev_stream_create(&d, c, 0, &s, &e), 0);
    tl_op ops[4];
    memset(ops, 0, sizeof ops);
    for (int i = 0; i < 4; i++) {
        ops[i].kind = TL_OP_KERNEL;
        ops[i].grid[0] = ops[i].grid[1] = ops[i].grid[2] = 1;
        ops[i].block[0] = 128, ops[i].block[1] = ops[i].block[2] = 1;
        ops[i].regs = 32;
        ops[i].dur_ns = 10 * US;
        ops[i].event = -1;
        ops[i].graph = i >= 2; /* two plain ops, then two of a graph */
    }
    for (int i = 0; i < 4; i++) {
        tl_kernel_desc k = {.op = &ops[i], .job = 0};
        assert_int_equal(tl_dev_launch(&d, s, &k, on_done, (void *)(intptr_t)i, NULL), 0);
    }
    assert_int_equal(tl_dev_run(&d, -1, &e), 0);
    tl_dev_close(&d);
    assert_int_equal(starts[0], 0);
    assert_int_equal(starts[1], ends[0] + p.stream_gap_ns);
    assert_int_equal(starts[2], ends[1] + p.graph_gap_ns);
    assert_int_equal(starts[3], ends[2] + p.graph_gap_ns);
}

/* A graph job alone on the simulated H100, requests rare enough (load 0.05)
 * never to queue: on average a request takes the traced_ns the transform
 * gave it (the GPU-busy time plus the gaps) after the host's graph launch
 * time, within 2%. */
static void test_graph_job_alone(void **state)
{
    (void)state;
    tl_trace t;
    load_ok(&t, MOBILENET);
    tl_gpu_props g;
    tl_sim_params p;
    tl_err e = {0};
    assert_int_equal(tl_gpu_lookup("H100", &g, &e), 0);
    tl_sim_params_default(&p, &g);
    const tl_graph_launch gl = tl_sim_params_graph_launch(&p);
    tl_trace_as_graph(&t, &gl);
    long double want = 0; /* the host's launch call, then the GPU's time */
    for (uint32_t i = 0; i < t.n_iters; i++)
        want += t.iters[i].ops[0].host_gap_ns + t.iters[i].traced_ns;
    want /= t.n_iters;
    tl_job_spec job = {.name = "g", .trace = &t, .role = TL_ROLE_INFERENCE,
                       .arrival = TL_ARRIVAL_POISSON_LOAD, .load = 0.05};
    tl_run_config cfg = {.jobs = &job, .n_jobs = 1, .policy = tl_policy_find("time-slicing"),
                         .duration_ns = 2000 * 1000 * US, .seed = 1};
    tl_device d;
    assert_int_equal(tl_sim_open(&d, &g, &p, &e), 0);
    tl_run_result res;
    assert_int_equal(tl_run(&cfg, &d, &res, &e), 0);
    tl_dev_close(&d);
    assert_true(res.n_recs > 10);
    long double got = 0;
    for (size_t k = 0; k < res.n_recs; k++)
        got += res.recs[k].end_ns - res.recs[k].start_ns;
    got /= res.n_recs;
    print_message("graph job alone: %.1f us per request, expected (launch + traced_ns) %.1f us\n", (double)got / 1e3,
                  (double)want / 1e3);
    assert_true(got > want * 0.98L && got < want * 1.02L);
    tl_run_result_close(&res);
    tl_trace_close(&t);
}

static void test_scale_grid(void **state)
{
    (void)state;
    tl_trace t;
    load_ok(&t, MOBILENET);
    uint32_t before = 0;
    const tl_op *k0 = NULL;
    for (uint32_t k = 0; k < t.iters[0].n_ops && !k0; k++)
        if (t.iters[0].ops[k].kind == TL_OP_KERNEL)
            k0 = &t.iters[0].ops[k];
    assert_non_null(k0);
    before = k0->grid[0];
    tl_ns dur = k0->dur_ns;
    tl_err e = {0};
    assert_int_equal(tl_trace_scale_grid(&t, 10, &e), 0);
    assert_int_equal(k0->grid[0], before * 10);
    assert_int_equal(k0->dur_ns, dur);
    /* past 2^31-1: refused, naming the op, nothing changed */
    assert_int_equal(tl_trace_scale_grid(&t, 0x7fffffffu, &e), TL_ERANGE);
    assert_non_null(strstr(e.msg, "grid.x"));
    assert_int_equal(k0->grid[0], before * 10);
    tl_trace_close(&t);
}

/* MobileNetV3's iterations are ~200 kernels on one stream: one graph each.
 * With op 10 of iteration 0 made a copy, that iteration is two graphs (ops
 * 0-9 and 11-end) around the copy. */
static void test_graph_launch_time(void **state)
{
    (void)state;
    tl_trace t;
    load_ok(&t, MOBILENET);
    assert_true(t.n_iters > 1 && t.iters[0].n_ops > 20);
    tl_iteration *it0 = &t.iters[0];
    for (uint32_t k = 0; k < it0->n_ops; k++)
        assert_int_equal(it0->ops[k].kind, TL_OP_KERNEL);
    it0->ops[10].kind = TL_OP_MEMCPY;
    it0->ops[10].copy_kind = TL_COPY_H2D;
    it0->ops[10].bytes = 4096;
    const tl_graph_launch gl = {.gap_ns = 830, .launch_ns = 3000, .node_ns = 40};
    tl_trace_as_graph(&t, &gl);
    uint32_t n0 = it0->n_ops;
    assert_int_equal(it0->ops[0].host_gap_ns, 3000 + 10 * 40);
    assert_int_equal(it0->ops[10].host_gap_ns, 0);
    assert_int_equal(it0->ops[11].host_gap_ns, 3000 + (tl_ns)(n0 - 11) * 40);
    for (uint32_t k = 1; k < n0; k++)
        if (k != 11)
            assert_int_equal(it0->ops[k].host_gap_ns, 0);
    const tl_iteration *it1 = &t.iters[1];
    assert_int_equal(it1->ops[0].host_gap_ns, 3000 + (tl_ns)it1->n_ops * 40);
    for (uint32_t k = 1; k < it1->n_ops; k++)
        assert_int_equal(it1->ops[k].host_gap_ns, 0);
    tl_trace_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_as_graph),
        cmocka_unit_test(test_sim_graph_gap),
        cmocka_unit_test(test_graph_job_alone),
        cmocka_unit_test(test_scale_grid),
        cmocka_unit_test(test_graph_launch_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
