/* Policies without a device: the registry, generic parameter parsing and its
 * error messages, and each policy's pure decision logic (Tally's configuration
 * chooser, TGS's rate controller, Herald's classifier and SLO guard,
 * PipeSwitch's switch cost, MPS's per-job cap). Every expected number is
 * worked out by hand in the comments. Behaviour on the simulator: see
 * tests/test_policy_sim.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tally/policy.h"
#include "tally/policy_util.h"

#define US 1000

static tl_gpu_props h100(void)
{
    tl_gpu_props g;
    tl_err err;
    assert_int_equal(tl_gpu_lookup("H100", &g, &err), 0);
    return g;
}

/* tl_policy_init never calls the device: a bare one will do. */
static tl_device bare_dev;
static tl_job one_job = { .id = 0, .name = "j0" };

static int init_with(const char *policy, const char *params_json, tl_err *err)
{
    const tl_policy_ops *ops = tl_policy_find(policy);
    assert_non_null(ops);
    json_t *params = NULL;
    if (params_json) {
        json_error_t je;
        params = json_loads(params_json, 0, &je);
        assert_non_null(params);
    }
    tl_policy p;
    memset(err, 0, sizeof *err);
    int r = tl_policy_init(&p, ops, params, &bare_dev, NULL, &one_job, 1, err);
    if (r == 0)
        tl_policy_close(&p);
    json_decref(params);
    return r;
}

/* ---- registry ---- */

static void test_registry_has_the_eight_policies(void **s)
{
    const char *names[] = { "priority-streams", "time-slicing", "mps", "mps-priority",
                            "herald", "tally", "tgs", "pipeswitch" };
    const tl_policy_ops *const *all = tl_policy_all();
    int n = 0;
    while (all[n])
        n++;
    assert_int_equal(n, 8);
    for (int i = 0; i < 8; i++) {
        const tl_policy_ops *ops = tl_policy_find(names[i]);
        assert_non_null(ops);
        assert_string_equal(ops->name, names[i]);
        assert_ptr_equal(all[i], ops); /* stable order */
        assert_non_null(ops->setup);
        assert_non_null(ops->submit);
        assert_non_null(ops->summary);
    }
    assert_ptr_equal(tl_policy_find("MPS_Priority"), tl_policy_find("mps-priority"));
    assert_null(tl_policy_find("mps-prio"));
    assert_null(tl_policy_find(""));
    assert_null(tl_policy_find(NULL));
}

/* ---- parameters ---- */

typedef struct test_state {
    int n;
    double x;
    bool flag;
    tl_ns wait;
    tl_param_list list;
} test_state;

static const tl_param_desc test_params[] = {
    { "n", TL_PARAM_INT, offsetof(test_state, n), 3, 1, 10, "an integer" },
    { "x", TL_PARAM_DOUBLE, offsetof(test_state, x), 0.5, 0, 1, "a fraction" },
    { "flag", TL_PARAM_BOOL, offsetof(test_state, flag), 1, 0, 1, "a switch" },
    { "wait_ms", TL_PARAM_NS_FROM_MS, offsetof(test_state, wait), 0.1, 0, 100, "a wait" },
    { "caps", TL_PARAM_DOUBLE_LIST, offsetof(test_state, list), 0, 1, 100, "per job" },
    { NULL },
};
static int test_setup(tl_policy *p, tl_err *e) { return 0; }
static void test_submit(tl_policy *p, tl_task *t) {}
static const tl_policy_ops test_ops = { .name = "testpol", .state_size = sizeof(test_state),
                                        .params = test_params, .setup = test_setup,
                                        .submit = test_submit };

static int parse(const char *json, test_state *out, tl_err *err)
{
    json_t *params = json ? json_loads(json, JSON_DECODE_ANY, NULL) : NULL;
    if (json)
        assert_non_null(params);
    tl_policy p;
    memset(err, 0, sizeof *err);
    int r = tl_policy_init(&p, &test_ops, params, &bare_dev, NULL, &one_job, 1, err);
    if (r == 0) {
        *out = *(test_state *)p.state;
        tl_policy_close(&p);
    }
    json_decref(params);
    return r;
}

static void test_params_defaults(void **s)
{
    test_state st;
    tl_err err;
    assert_int_equal(parse(NULL, &st, &err), 0);
    assert_int_equal(st.n, 3);
    assert_true(st.x == 0.5);
    assert_true(st.flag);
    assert_int_equal(st.wait, 100 * US); /* 0.1 ms */
    assert_int_equal(st.list.n, 0);
    assert_int_equal(parse("{}", &st, &err), 0);
    assert_int_equal(st.n, 3);
    assert_int_equal(parse("null", &st, &err), 0);
}

static void test_params_values(void **s)
{
    test_state st;
    tl_err err;
    assert_int_equal(parse("{\"n\": 10, \"x\": 1, \"flag\": false, \"wait_ms\": 0.0316,"
                           " \"caps\": [25, 75.5]}", &st, &err), 0);
    assert_int_equal(st.n, 10);
    assert_true(st.x == 1.0);
    assert_false(st.flag);
    assert_int_equal(st.wait, 31600);
    assert_int_equal(st.list.n, 2);
    assert_true(st.list.v[0] == 25 && st.list.v[1] == 75.5);
    /* an integral real is an integer */
    assert_int_equal(parse("{\"n\": 4.0}", &st, &err), 0);
    assert_int_equal(st.n, 4);
}

static void test_params_errors_name_policy_and_parameter(void **s)
{
    test_state st;
    tl_err err;
    assert_int_equal(parse("{\"nn\": 1}", &st, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "testpol"));
    assert_non_null(strstr(err.msg, "'nn'"));
    assert_non_null(strstr(err.msg, "known: n, x, flag, wait_ms, caps"));
    assert_null(strchr(err.msg, '\n'));

    assert_int_equal(parse("{\"n\": \"3\"}", &st, &err), TL_ETYPE);
    assert_non_null(strstr(err.msg, "testpol"));
    assert_non_null(strstr(err.msg, "'n'"));
    assert_non_null(strstr(err.msg, "integer"));
    assert_int_equal(parse("{\"n\": 2.5}", &st, &err), TL_ETYPE);
    assert_int_equal(parse("{\"flag\": 1}", &st, &err), TL_ETYPE);
    assert_non_null(strstr(err.msg, "'flag'"));
    assert_int_equal(parse("{\"x\": true}", &st, &err), TL_ETYPE);
    assert_int_equal(parse("{\"caps\": 50}", &st, &err), TL_ETYPE);
    assert_int_equal(parse("{\"caps\": [50, \"a\"]}", &st, &err), TL_ETYPE);
    assert_non_null(strstr(err.msg, "'caps'[1]"));

    assert_int_equal(parse("{\"n\": 11}", &st, &err), TL_ERANGE);
    assert_non_null(strstr(err.msg, "testpol"));
    assert_non_null(strstr(err.msg, "'n'"));
    assert_non_null(strstr(err.msg, "[1, 10]"));
    assert_int_equal(parse("{\"x\": -0.01}", &st, &err), TL_ERANGE);
    assert_int_equal(parse("{\"wait_ms\": 100.5}", &st, &err), TL_ERANGE);
    assert_int_equal(parse("{\"caps\": [50, 0]}", &st, &err), TL_ERANGE);
    assert_non_null(strstr(err.msg, "'caps'[1]"));

    assert_int_equal(parse("[1]", &st, &err), TL_ETYPE);
    assert_non_null(strstr(err.msg, "testpol"));
    /* the first error in key order, whatever the object's hashing */
    assert_int_equal(parse("{\"x\": 5, \"n\": 50}", &st, &err), TL_ERANGE);
    assert_non_null(strstr(err.msg, "'n'"));
}

static void test_every_policy_parses_defaults_and_rejects_bad_params(void **s)
{
    tl_err err;
    for (const tl_policy_ops *const *o = tl_policy_all(); *o; o++) {
        assert_int_equal(init_with((*o)->name, NULL, &err), 0);
        assert_int_equal(init_with((*o)->name, "{}", &err), 0);
        assert_int_equal(init_with((*o)->name, "{\"no_such_param\": 1}", &err), TL_EUNKNOWN);
        assert_non_null(strstr(err.msg, (*o)->name));
        assert_non_null(strstr(err.msg, "no_such_param"));
        /* every declared parameter: its default is inside its range and documented */
        for (const tl_param_desc *d = (*o)->params; d && d->name; d++) {
            if (d->type != TL_PARAM_DOUBLE_LIST)
                assert_true(d->def >= d->min && d->def <= d->max);
            assert_non_null(d->doc);
        }
    }
    assert_int_equal(init_with("tally", "{\"preempt_bound_ms\": 0.05, \"ptb\": false}", &err), 0);
    assert_int_equal(init_with("tally", "{\"preempt_bound_ms\": 0}", &err), TL_ERANGE);
    assert_non_null(strstr(err.msg, "policy tally: parameter 'preempt_bound_ms'"));
    assert_int_equal(init_with("tally", "{\"ptb\": \"yes\"}", &err), TL_ETYPE);
    assert_non_null(strstr(err.msg, "policy tally: parameter 'ptb'"));
    assert_int_equal(init_with("tgs", "{\"decrease\": 1.5}", &err), TL_ERANGE);
    assert_non_null(strstr(err.msg, "policy tgs: parameter 'decrease'"));
    assert_int_equal(init_with("tgs", "{\"history\": 2.5}", &err), TL_ETYPE);
    assert_int_equal(init_with("mps", "{\"sm_percents\": [50, 101]}", &err), TL_ERANGE);
    assert_non_null(strstr(err.msg, "policy mps: parameter 'sm_percents'[1]"));
    assert_int_equal(init_with("mps-priority", "{\"sm_percent\": 0}", &err), TL_ERANGE);
    assert_int_equal(init_with("herald", "{\"slo_guard\": 2}", &err), TL_ERANGE);
    assert_int_equal(init_with("pipeswitch", "{\"startup_ms\": -1}", &err), TL_ERANGE);
    assert_int_equal(init_with("pipeswitch", "{\"groups\": \"4\"}", &err), TL_ETYPE);
    assert_int_equal(init_with("time-slicing", "{\"x\": 1}", &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "known: none"));
}

/* ---- helpers ---- */

static void test_stream_priority_by_rank(void **s)
{
    tl_device dev = { .gpu = h100() }; /* greatest -5 */
    tl_policy p = { .dev = &dev };
    assert_int_equal(tl_policy_stream_priority(&p, 0), -5);
    assert_int_equal(tl_policy_stream_priority(&p, 1), -4);
    assert_int_equal(tl_policy_stream_priority(&p, 5), 0);
    assert_int_equal(tl_policy_stream_priority(&p, 9), 0);
    assert_int_equal(tl_policy_stream_priority(&p, -3), -5);
}

static void test_task_queue_is_fifo_across_growth(void **s)
{
    tl_task tasks[100];
    tl_task_queue q;
    tl_task_queue_init(&q);
    assert_null(tl_task_queue_pop(&q));
    int next_out = 0;
    for (int i = 0; i < 100; i++) {
        tl_task_queue_push(&q, &tasks[i]);
        if (i % 3 == 2) /* interleave pops so the ring wraps while growing */
            assert_ptr_equal(tl_task_queue_pop(&q), &tasks[next_out++]);
    }
    assert_ptr_equal(tl_task_queue_peek(&q), &tasks[next_out]);
    while (next_out < 100)
        assert_ptr_equal(tl_task_queue_pop(&q), &tasks[next_out++]);
    assert_int_equal(q.len, 0);
    tl_task_queue_close(&q);
}

static void test_high_priority_is_the_smallest_rank(void **s)
{
    tl_job jobs[3] = { { .id = 0, .priority = 2 }, { .id = 1, .priority = 1 },
                       { .id = 2, .priority = 1 } };
    tl_policy p = { .jobs = jobs, .n_jobs = 3 };
    assert_false(tl_policy_job_is_high(&p, &jobs[0]));
    assert_true(tl_policy_job_is_high(&p, &jobs[1]));
    assert_true(tl_policy_job_is_high(&p, &jobs[2]));
}


/* ---- setup: contexts and streams, seen through a spy device ---- */

typedef struct spy {
    tl_ctx_config ctx[16];
    int n_ctx;
    struct { tl_ctx_id ctx; int prio; } stream[64];
    int n_stream;
} spy;
static spy the_spy;

static int spy_ctx(tl_device *d, const tl_ctx_config *c, tl_ctx_id *o, tl_err *e)
{
    the_spy.ctx[the_spy.n_ctx] = *c;
    *o = the_spy.n_ctx++;
    return 0;
}
static int spy_stream(tl_device *d, tl_ctx_id c, int prio, tl_stream_id *o, tl_err *e)
{
    the_spy.stream[the_spy.n_stream].ctx = c;
    the_spy.stream[the_spy.n_stream].prio = prio;
    *o = the_spy.n_stream++;
    return 0;
}
static int spy_timer(tl_device *d, tl_ns at, tl_timer_cb cb, void *arg) { return 0; }
static tl_ns spy_now(tl_device *d) { return 0; }
static const tl_device_ops spy_ops = { .name = "spy", .ctx_create = spy_ctx,
                                       .stream_create = spy_stream, .timer = spy_timer,
                                       .now = spy_now };

/* Two jobs: rank 0 (inference) and rank 1 (training), 2 trace streams each. */
static void spy_setup(const char *policy, const char *params_json, tl_job *jobs)
{
    static char *strs[] = { "" };
    static int64_t streams[] = { 7, 8 };
    static tl_trace tr = { .strings = strs, .n_strings = 1, .streams = streams, .n_streams = 2 };
    jobs[0] = (tl_job){ .id = 0, .name = "inf", .role = TL_ROLE_INFERENCE, .priority = 0,
                        .trace = &tr };
    jobs[1] = (tl_job){ .id = 1, .name = "train", .role = TL_ROLE_TRAINING, .priority = 1,
                        .trace = &tr };
    memset(&the_spy, 0, sizeof the_spy);
    tl_device dev = { .ops = &spy_ops, .gpu = h100() };
    json_t *params = params_json ? json_loads(params_json, 0, NULL) : NULL;
    tl_policy p;
    tl_err err;
    assert_int_equal(tl_policy_init(&p, tl_policy_find(policy), params, &dev, NULL, jobs, 2, &err), 0);
    assert_int_equal(tl_policy_setup(&p, &err), 0);
    tl_policy_close(&p);
    json_decref(params);
}

static void test_setup_contexts_and_streams(void **s)
{
    tl_job jobs[2];
    /* priority-streams: one shared context; streams at -5 (rank 0) and -4 (rank 1) */
    spy_setup("priority-streams", NULL, jobs);
    assert_int_equal(the_spy.n_ctx, 1);
    assert_int_equal(the_spy.ctx[0].kind, TL_CTX_TIMESLICED);
    assert_int_equal(the_spy.ctx[0].job, -1);
    assert_int_equal(the_spy.n_stream, 4);
    assert_int_equal(the_spy.stream[0].prio, -5);
    assert_int_equal(the_spy.stream[1].prio, -5);
    assert_int_equal(the_spy.stream[2].prio, -4);
    assert_int_equal(the_spy.stream[3].ctx, 0);
    /* time-slicing: a context per job, each owned by its job */
    spy_setup("time-slicing", NULL, jobs);
    assert_int_equal(the_spy.n_ctx, 2);
    assert_int_equal(the_spy.ctx[0].kind, TL_CTX_TIMESLICED);
    assert_int_equal(the_spy.ctx[1].job, 1);
    assert_int_equal(the_spy.stream[2].ctx, 1);
    /* mps: MPS clients with the caps of the list, client priority 0 */
    jobs[1].sm_percent = 0;
    spy_setup("mps", "{\"sm_percents\": [60, 40]}", jobs);
    assert_int_equal(the_spy.n_ctx, 2);
    assert_int_equal(the_spy.ctx[0].kind, TL_CTX_MPS);
    assert_true(the_spy.ctx[0].sm_percent == 60 && the_spy.ctx[1].sm_percent == 40);
    assert_int_equal(the_spy.ctx[1].mps_priority, 0);
    /* more caps than jobs: a mistake in the spec, refused at setup */
    {
        tl_device dev = { .ops = &spy_ops, .gpu = h100() };
        json_t *params = json_loads("{\"sm_percents\": [60, 40, 30]}", 0, NULL);
        tl_policy p;
        tl_err err;
        assert_int_equal(tl_policy_init(&p, tl_policy_find("mps"), params, &dev, NULL, jobs, 2, &err), 0);
        assert_int_equal(tl_policy_setup(&p, &err), TL_ERANGE);
        assert_non_null(strstr(err.msg, "sm_percents has 3 values for 2 jobs"));
        tl_policy_close(&p);
        json_decref(params);
    }
    /* mps-priority: best-effort client at priority 1 (below normal) */
    spy_setup("mps-priority", "{\"sm_percent\": 50}", jobs);
    assert_int_equal(the_spy.ctx[0].mps_priority, 0);
    assert_int_equal(the_spy.ctx[1].mps_priority, 1);
    assert_true(the_spy.ctx[0].sm_percent == 50 && the_spy.ctx[1].sm_percent == 50);
    /* tally, herald: one shared context; high priority at -5, best-effort at 0 */
    const char *shared[] = { "tally", "herald" };
    for (int i = 0; i < 2; i++) {
        spy_setup(shared[i], NULL, jobs);
        assert_int_equal(the_spy.n_ctx, 1);
        assert_int_equal(the_spy.stream[0].prio, -5);
        assert_int_equal(the_spy.stream[2].prio, 0);
        assert_int_equal(the_spy.stream[3].prio, 0);
    }
    /* tgs: a context per job (containers); MPS clients on request */
    spy_setup("tgs", NULL, jobs);
    assert_int_equal(the_spy.n_ctx, 2);
    assert_int_equal(the_spy.ctx[1].kind, TL_CTX_TIMESLICED);
    spy_setup("tgs", "{\"mps\": true}", jobs);
    assert_int_equal(the_spy.ctx[1].kind, TL_CTX_MPS);
    /* pipeswitch: one context, a loader stream besides the jobs' streams */
    spy_setup("pipeswitch", NULL, jobs);
    assert_int_equal(the_spy.n_ctx, 1);
    assert_int_equal(the_spy.n_stream, 5);
}

/* ---- mps ---- */

static void test_mps_cap_resolution(void **s)
{
    tl_param_list list = { .n = 2, .v = { 30, 40 } };
    tl_job j0 = { .id = 0 }, j1 = { .id = 1, .sm_percent = 55 }, j2 = { .id = 2 };
    assert_true(tl_mps_job_sm_percent(&j0, &list, 100) == 30); /* from the list */
    assert_true(tl_mps_job_sm_percent(&j1, &list, 100) == 55); /* the job's own wins */
    assert_true(tl_mps_job_sm_percent(&j2, &list, 70) == 70);  /* past the list: default */
    assert_true(tl_mps_job_sm_percent(&j2, NULL, 0) == 100);   /* nothing: uncapped */
}

/* ---- herald ---- */

static tl_op kern(uint32_t blocks, uint32_t threads, tl_ns dur)
{
    tl_op o = { .kind = TL_OP_KERNEL, .event = -1, .grid = { blocks, 1, 1 },
                .block = { threads, 1, 1 }, .regs = 32, .dur_ns = dur };
    return o;
}

static void test_herald_footprint_and_classes(void **s)
{
    tl_gpu_props g = h100(); /* 132 SMs x 2048 threads = 270336 thread slots */
    /* 132 x 1024 threads, 2 resident per SM: all 132 resident, 135168 / 270336 = 0.5 */
    tl_op a = kern(132, 1024, 100 * US);
    assert_float_equal(tl_herald_footprint(&g, &a), 0.5, 1e-12);
    /* 1000 x 256, 8 per SM (1056 slots): all resident, 256000 / 270336 */
    tl_op b = kern(1000, 256, 100 * US);
    assert_float_equal(tl_herald_footprint(&g, &b), 256000.0 / 270336.0, 1e-12);
    /* 5000 x 256: capped at 1056 resident blocks = the whole GPU */
    tl_op c = kern(5000, 256, 100 * US);
    assert_float_equal(tl_herald_footprint(&g, &c), 1.0, 1e-12);
    /* 10 x 128: 1280 / 270336 */
    tl_op d = kern(10, 128, 500 * US);
    assert_float_equal(tl_herald_footprint(&g, &d), 1280.0 / 270336.0, 1e-12);

    assert_true(tl_herald_is_heavy(&g, &a, 0.5, 20 * US));
    assert_true(tl_herald_is_heavy(&g, &b, 0.5, 20 * US));
    assert_false(tl_herald_is_heavy(&g, &d, 0.5, 20 * US)); /* long but small */
    tl_op e = kern(5000, 256, 5 * US);
    assert_false(tl_herald_is_heavy(&g, &e, 0.5, 20 * US)); /* big but too short */
    tl_op copy = { .kind = TL_OP_MEMCPY, .event = -1, .bytes = 1 << 20, .dur_ns = 1000 * US };
    assert_false(tl_herald_is_heavy(&g, &copy, 0, 0));
    assert_true(tl_herald_footprint(&g, &copy) == 0);
}

static void test_herald_slo_guard(void **s)
{
    /* SLO 10 ms, guard 0.8: at risk from elapsed + remaining = 8 ms */
    assert_false(tl_herald_slo_at_risk(5000 * US, 2999 * US, 10000 * US, 0.8));
    assert_true(tl_herald_slo_at_risk(5000 * US, 3000 * US, 10000 * US, 0.8));
    assert_true(tl_herald_slo_at_risk(12000 * US, 0, 10000 * US, 0.8));
    assert_false(tl_herald_slo_at_risk(1000000 * US, 0, 0, 0.8)); /* no SLO */
}

/* ---- tally ---- */

static void test_tally_candidates(void **s)
{
    tl_gpu_props g = h100();
    tl_tally_config c[TL_TALLY_MAX_CANDIDATES];
    /* 1320 blocks of 256 threads, 32 regs: occupancy 8/SM; 1536 / 256 = 6 blocks
     * per SM at most: PTB 1..6 and slices of 132, 264, ... 792 blocks. */
    tl_op k = kern(1320, 256, 1000 * US);
    int n = tl_tally_candidates(&g, &k, c, TL_TALLY_MAX_CANDIDATES);
    assert_int_equal(n, 12);
    assert_int_equal(c[0].mode, TL_TALLY_PTB);
    assert_int_equal(c[0].blocks_per_sm, 1);
    assert_int_equal(c[1].mode, TL_TALLY_SLICE);
    assert_int_equal(c[1].slice_blocks, 132);
    assert_int_equal(c[1].n_slices, 10);
    assert_int_equal(c[11].mode, TL_TALLY_SLICE);
    assert_int_equal(c[11].blocks_per_sm, 6);
    assert_int_equal(c[11].slice_blocks, 792);
    assert_int_equal(c[11].n_slices, 2); /* ceil(1320 / 792) */
    /* 1024-thread blocks: only 1 per SM (1536 / 1024) */
    tl_op big = kern(1000, 1024, 1000 * US);
    assert_int_equal(tl_tally_candidates(&g, &big, c, TL_TALLY_MAX_CANDIDATES), 2);
    /* no more blocks than SMs: no candidates */
    tl_op small = kern(132, 256, 1000 * US);
    assert_int_equal(tl_tally_candidates(&g, &small, c, TL_TALLY_MAX_CANDIDATES), 0);
    /* the output bound is respected */
    assert_int_equal(tl_tally_candidates(&g, &k, c, 5), 4);
}

static void test_tally_latency_estimates(void **s)
{
    tl_gpu_props g = h100();
    tl_op k = kern(1320, 256, 1000 * US);
    /* PTB with 2 workers/SM = 264 workers: ceil(1320 / 264) = 5 rounds;
     * 1000 us / 5 / 2 = 100 us; speed 900 / 1000 */
    tl_tally_config ptb = { .mode = TL_TALLY_PTB, .blocks_per_sm = 2, .time_ns = 1000 * US };
    tl_tally_estimate(&ptb, &g, &k, 900 * US);
    assert_int_equal(ptb.latency_ns, 100 * US);
    assert_float_equal(ptb.speed, 0.9, 1e-12);
    /* 10 slices of 132 blocks in 1100 us: 110 us each */
    tl_tally_config sl = { .mode = TL_TALLY_SLICE, .blocks_per_sm = 1, .slice_blocks = 132,
                           .n_slices = 10, .time_ns = 1100 * US };
    tl_tally_estimate(&sl, &g, &k, 1000 * US);
    assert_int_equal(sl.latency_ns, 110 * US);
    assert_float_equal(sl.speed, 1000.0 / 1100.0, 1e-12);
}

static void test_tally_choose_sweeps_the_threshold(void **s)
{
    tl_tally_config c[3] = {
        { .mode = TL_TALLY_PTB, .time_ns = 1, .speed = 0.95, .latency_ns = 50 * US },
        { .mode = TL_TALLY_SLICE, .time_ns = 1, .speed = 0.85, .latency_ns = 20 * US },
        { .mode = TL_TALLY_PTB, .time_ns = 1, .speed = 0.5, .latency_ns = 10 * US },
    };
    /* bound 30 us: thresholds 1.0 and 0.9 find nothing within it (c0 is 50 us);
     * at 0.8 c1 qualifies */
    assert_int_equal(tl_tally_choose(c, 3, 500 * US, 30 * US), 1);
    /* bound 60 us: c0 at 0.9 */
    assert_int_equal(tl_tally_choose(c, 3, 500 * US, 60 * US), 0);
    /* bound 12 us: only c2, found at threshold 0.5 */
    assert_int_equal(tl_tally_choose(c, 3, 500 * US, 12 * US), 2);
    /* bound 5 us: nothing ever qualifies: the least latency */
    assert_int_equal(tl_tally_choose(c, 3, 500 * US, 5 * US), 2);
    /* ... and among latencies within 10% of the least, the fastest: c0 at
     * 10.5 us and speed 0.95 beats c2 at 10 us and 0.5; c1 (11.5 us) is out */
    c[0].latency_ns = 10500;
    c[1].latency_ns = 11500;
    c[1].speed = 0.99;
    assert_int_equal(tl_tally_choose(c, 3, 500 * US, 5 * US), 0);
    c[0].latency_ns = 50 * US;
    c[1].latency_ns = 20 * US;
    c[1].speed = 0.85;
    /* a kernel already within the bound runs as it is */
    assert_int_equal(tl_tally_choose(c, 3, 30 * US, 30 * US), -1);
    assert_int_equal(tl_tally_choose(c, 0, 500 * US, 30 * US), -1);
    /* equal speed: the first in scan order */
    c[1].speed = 0.95;
    c[1].latency_ns = 10 * US;
    assert_int_equal(tl_tally_choose(c, 3, 500 * US, 60 * US), 0);
}

/* ---- tgs ---- */

static void test_tgs_controller_scripted(void **s)
{
    tl_tgs_ctl c;
    /* initial 1/ms, ssthresh 8, +1, x0.5, tolerance 10%, rates in [0.25, 100], 2 windows */
    tl_tgs_ctl_init(&c, 1, 8, 1, 0.5, 0.1, 0.25, 100, 2);
    assert_int_equal(tl_tgs_ctl_update(&c, false, 0), TL_TGS_SLOW_START);
    assert_float_equal(c.rate, 2, 1e-12);
    assert_int_equal(tl_tgs_ctl_update(&c, true, 100), TL_TGS_SLOW_START); /* no history yet */
    assert_float_equal(c.rate, 4, 1e-12);
    assert_int_equal(tl_tgs_ctl_update(&c, true, 100), TL_TGS_SLOW_START);
    assert_float_equal(c.rate, 8, 1e-12);
    /* at ssthresh: additive increase; 91 >= 0.9 x 100 is no drop */
    assert_int_equal(tl_tgs_ctl_update(&c, true, 91), TL_TGS_INCREASE);
    assert_float_equal(c.rate, 9, 1e-12);
    /* 89 < 90: multiplicative decrease, ssthresh = 4.5 */
    assert_int_equal(tl_tgs_ctl_update(&c, true, 89), TL_TGS_DECREASE);
    assert_float_equal(c.rate, 4.5, 1e-12);
    assert_float_equal(c.ssthresh, 4.5, 1e-12);
    /* the recent best is over the last 2 windows: {91, 89} -> 91; 85 < 81.9? no */
    assert_float_equal(tl_tgs_ctl_best(&c), 91, 1e-12);
    assert_int_equal(tl_tgs_ctl_update(&c, true, 85), TL_TGS_INCREASE);
    assert_float_equal(c.rate, 5.5, 1e-12);
    /* no observation (high priority idle): counts as no drop */
    assert_int_equal(tl_tgs_ctl_update(&c, false, 0), TL_TGS_INCREASE);
    assert_float_equal(c.rate, 6.5, 1e-12);
    /* a collapse: decreases down to the floor 0.25 and stays there */
    double expect[] = { 3.25, 1.625, 0.8125, 0.40625, 0.25, 0.25 };
    tl_tgs_ctl_init(&c, 5.5, 4.5, 1, 0.5, 0.1, 0.25, 100, 8); /* +1: 6.5 */
    tl_tgs_ctl_update(&c, true, 100);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(tl_tgs_ctl_update(&c, true, 10), TL_TGS_DECREASE);
        assert_float_equal(c.rate, expect[i], 1e-12);
    }
    /* the ceiling */
    tl_tgs_ctl_init(&c, 60, 1000, 1, 0.5, 0.1, 0.25, 100, 8);
    tl_tgs_ctl_update(&c, false, 0);
    assert_float_equal(c.rate, 100, 1e-12);
}

/* ---- pipeswitch ---- */

static void test_pipeswitch_switch_cost(void **s)
{
    tl_pipeswitch_cost c;
    /* 100 MB in 10 groups at 50 GB/s (50 bytes/ns): first group 10 MB = 200 us,
     * the rest 90 MB = 1.8 ms overlapped; 5 ms start-up: 5.2 ms charged */
    tl_pipeswitch_switch_cost(100000000, 10, 50, 5000 * US, &c);
    assert_int_equal(c.first_bytes, 10000000);
    assert_int_equal(c.first_ns, 200 * US);
    assert_int_equal(c.rest_bytes, 90000000);
    assert_int_equal(c.rest_ns, 1800 * US);
    assert_int_equal(c.critical_ns, 5200 * US);
    /* uneven split: the first group rounds up */
    tl_pipeswitch_switch_cost(10, 3, 50, 0, &c);
    assert_int_equal(c.first_bytes, 4);
    assert_int_equal(c.rest_bytes, 6);
    /* unknown model size: start-up only */
    tl_pipeswitch_switch_cost(0, 10, 50, 5000 * US, &c);
    assert_int_equal(c.critical_ns, 5000 * US);
    assert_int_equal(c.rest_bytes, 0);
    assert_int_equal(tl_pcie_ns(1000, 0), 40); /* unknown bandwidth: 25 GB/s */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry_has_the_eight_policies),
        cmocka_unit_test(test_params_defaults),
        cmocka_unit_test(test_params_values),
        cmocka_unit_test(test_params_errors_name_policy_and_parameter),
        cmocka_unit_test(test_every_policy_parses_defaults_and_rejects_bad_params),
        cmocka_unit_test(test_stream_priority_by_rank),
        cmocka_unit_test(test_task_queue_is_fifo_across_growth),
        cmocka_unit_test(test_high_priority_is_the_smallest_rank),
        cmocka_unit_test(test_setup_contexts_and_streams),
        cmocka_unit_test(test_mps_cap_resolution),
        cmocka_unit_test(test_herald_footprint_and_classes),
        cmocka_unit_test(test_herald_slo_guard),
        cmocka_unit_test(test_tally_candidates),
        cmocka_unit_test(test_tally_latency_estimates),
        cmocka_unit_test(test_tally_choose_sweeps_the_threshold),
        cmocka_unit_test(test_tgs_controller_scripted),
        cmocka_unit_test(test_pipeswitch_switch_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
