/* Each policy's defining behaviour on the simulated H100, with tiny synthetic
 * jobs whose numbers are worked out by hand in the comments, plus every policy
 * on real bundled traces (no failure, no hang, work done).
 *
 * Unless a test says otherwise the simulator runs without contention
 * (model THREADS, alpha = 0), with its default launch latency (LAT below) and
 * no host round trip for work released from callbacks, so that kernel
 * times are exact: a kernel of W waves of dur_ns runs dur_ns / W per wave.
 * H100: 132 SMs, 2048 threads and 64K registers per SM; a 1024-thread block of
 * 32 registers fits twice per SM, a 256-thread one 8 times.
 * One TGS test uses the fake device of tests/support instead (launches that
 * reach the GPU late). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <stdio.h>
#include <unistd.h>

#include "fake_device.h"
#include "tally/policy.h"
#include "tally/runner.h"
#include "tally/sim.h"

#define US 1000LL
#define MS 1000000LL

static tl_ns LAT; /* the simulator's launch latency */

static char *strings[] = { "", "k" };
static int64_t one_stream[] = { 7 };

static tl_op kop(uint32_t blocks, uint32_t threads, tl_ns dur, tl_ns gap)
{
    tl_op o = { .kind = TL_OP_KERNEL, .stream = 0, .event = -1, .name = 1, .host_gap_ns = gap,
                .host_call_ns = 1 * US, .dur_ns = dur, .gpu_start_ns = -1,
                .grid = { blocks, 1, 1 }, .block = { threads, 1, 1 }, .regs = 32 };
    return o;
}

typedef struct job_def {
    tl_trace tr;
    tl_iteration it;
    tl_op ops[8];
    tl_ns arrivals[4];
} job_def;

static void make_job(job_def *d, tl_job_spec *spec, const char *name, int rank, tl_role role,
                     const tl_op *ops, uint32_t n, const tl_ns *arrivals, size_t n_arr)
{
    memset(d, 0, sizeof *d);
    memcpy(d->ops, ops, n * sizeof *ops);
    d->it.ops = d->ops;
    d->it.n_ops = n;
    d->it.traced_ns = 1 * MS;
    d->tr.iters = &d->it;
    d->tr.n_iters = 1;
    d->tr.strings = strings;
    d->tr.n_strings = 2;
    d->tr.streams = one_stream;
    d->tr.n_streams = 1;
    if (n_arr)
        memcpy(d->arrivals, arrivals, n_arr * sizeof *arrivals);
    memset(spec, 0, sizeof *spec);
    spec->name = name;
    spec->trace = &d->tr;
    spec->role = role;
    spec->priority = rank;
    spec->arrival = n_arr ? TL_ARRIVAL_FILE : TL_ARRIVAL_CLOSED;
    spec->arrival_times = d->arrivals;
    spec->n_arrival_times = n_arr;
}

/* Activity of contexts, from the simulator's hook: block groups running (not
 * paused) per context, and the SMs a context holds. */
typedef struct activity {
    int running[16];
    int max_concurrent_ctx;  /* most contexts running blocks at the same instant */
    int max_ctx_sms[16];
    int pauses;
} activity;

static void on_activity(void *arg, const tl_sim_activity *a)
{
    activity *act = arg;
    if (a->ctx < 0 || a->ctx >= 16)
        return;
    act->running[a->ctx] += a->kind == TL_SIM_RUN_START ? 1 : -1;
    if (a->ctx_sms > act->max_ctx_sms[a->ctx])
        act->max_ctx_sms[a->ctx] = a->ctx_sms;
    if (a->kind == TL_SIM_RUN_STOP && a->paused)
        act->pauses++;
    int n = 0;
    for (int c = 0; c < 16; c++)
        n += act->running[c] > 0;
    if (n > act->max_concurrent_ctx)
        act->max_concurrent_ctx = n;
}

/* The simulator's mps_order for the next runs: >= 0 sets it, -1 leaves the
 * GPU's default. */
static int g_mps_order = -1;

/* run_policy with the simulator's mps_client_priority set (>= 0) or left at
 * the GPU's default (-1). */
static void run_policy_mcp(const char *policy, const char *params_json, tl_job_spec *jobs, int n,
                           tl_ns duration, bool contention, int mps_client_priority,
                           activity *act, tl_run_result *res)
{
    tl_gpu_props gpu;
    tl_err err = { 0 };
    assert_int_equal(tl_gpu_lookup("H100", &gpu, &err), 0);
    tl_sim_params sp;
    tl_sim_params_default(&sp, &gpu);
    if (!contention) {
        sp.contention.model = TL_CONTENTION_THREADS;
        sp.contention.alpha = 0;
    }
    sp.callback_launch_latency_ns = 0; /* released work starts at once: exact arithmetic */
    if (mps_client_priority >= 0)
        sp.mps_client_priority = mps_client_priority;
    if (g_mps_order >= 0)
        sp.mps_order = g_mps_order;
    LAT = sp.launch_latency_ns;
    tl_device dev;
    assert_int_equal(tl_sim_open(&dev, &gpu, &sp, &err), 0);
    if (act) {
        memset(act, 0, sizeof *act);
        tl_sim_set_activity_hook(&dev, on_activity, act);
    }
    json_t *params = params_json ? json_loads(params_json, 0, NULL) : NULL;
    if (params_json)
        assert_non_null(params);
    tl_run_config cfg = { .jobs = jobs, .n_jobs = n, .policy = tl_policy_find(policy),
                          .policy_params = params, .duration_ns = duration, .seed = 1,
                          .record_kernels = true };
    assert_non_null(cfg.policy);
    int r = tl_run(&cfg, &dev, res, &err);
    if (r < 0)
        print_error("%s: %s\n", policy, err.msg);
    assert_int_equal(r, 0);
    json_decref(params);
    tl_dev_close(&dev);
}

static void run_policy(const char *policy, const char *params_json, tl_job_spec *jobs, int n,
                       tl_ns duration, bool contention, activity *act, tl_run_result *res)
{
    run_policy_mcp(policy, params_json, jobs, n, duration, contention, -1, act, res);
}

/* The first record of job j (by start time) and how many it has. */
static const tl_kernel_record *first_of(const tl_run_result *res, int job, int *count)
{
    const tl_kernel_record *f = NULL;
    int n = 0;
    for (size_t i = 0; i < res->n_kernels; i++) {
        const tl_kernel_record *k = &res->kernels[i];
        if (k->job != job)
            continue;
        n++;
        if (!f || k->start_ns < f->start_ns)
            f = k;
    }
    if (count)
        *count = n;
    return f;
}

static void assert_near(tl_ns got, tl_ns want, tl_ns tol)
{
    if (got < want - tol || got > want + tol)
        fail_msg("got %lld, want %lld +- %lld", (long long)got, (long long)want, (long long)tol);
}

/* ---- priority-streams ---- */

/* Job 1 (rank 1) at t=0: L = 264 blocks x 1024 threads, 1000 us: one wave holding
 * every thread slot of every SM. Job 0 (rank 0) at 300 us: H = 132 x 1024,
 * 100 us. H has the greater priority but running blocks are never preempted:
 * H waits for L's blocks, starting when L ends (LAT + 1000 us) instead of at
 * 300 us + LAT; L runs undisturbed. */
static void test_priority_streams_never_stop_running_blocks(void **s)
{
    job_def d[2];
    tl_job_spec jobs[2];
    tl_op h = kop(132, 1024, 100 * US, 0), l = kop(264, 1024, 1000 * US, 0);
    tl_ns t_h = 300 * US, t_l = 0;
    make_job(&d[0], &jobs[0], "hp", 0, TL_ROLE_INFERENCE, &h, 1, &t_h, 1);
    make_job(&d[1], &jobs[1], "be", 1, TL_ROLE_INFERENCE, &l, 1, &t_l, 1);
    activity act;
    tl_run_result res;
    run_policy("priority-streams", NULL, jobs, 2, 5 * MS, false, &act, &res);
    const tl_kernel_record *kh = first_of(&res, 0, NULL), *kl = first_of(&res, 1, NULL);
    assert_non_null(kh);
    assert_non_null(kl);
    assert_near(kl->start_ns, LAT + 1 * US, 2 * US);     /* host call 1 us, then LAT */
    assert_near(kl->end_ns - kl->start_ns, 1000 * US, 1 * US);
    assert_int_equal(kl->blocks, 264);
    assert_true(kh->start_ns >= kl->end_ns);               /* compounded delay */
    assert_near(kh->end_ns - kh->start_ns, 100 * US, 1 * US);
    assert_int_equal(act.pauses, 0);
    assert_int_equal(act.max_concurrent_ctx, 1);          /* one shared context */
    tl_run_result_close(&res);
}

/* ---- time-slicing and mps ---- */

/* Two jobs, each one 5 ms kernel of one 32-thread block, both at t=0. In one
 * context each, time-sliced: never both resident at once, so the last one ends
 * after >= 10 ms of kernel time. Under mps both run at once: done by ~5 ms. */
static void test_time_slicing_never_overlaps_contexts(void **s)
{
    job_def d[2];
    tl_job_spec jobs[2];
    tl_op k = kop(1, 32, 5 * MS, 0);
    tl_ns t0 = 0;
    make_job(&d[0], &jobs[0], "a", 0, TL_ROLE_INFERENCE, &k, 1, &t0, 1);
    make_job(&d[1], &jobs[1], "b", 1, TL_ROLE_INFERENCE, &k, 1, &t0, 1);
    activity act;
    tl_run_result res;
    run_policy("time-slicing", NULL, jobs, 2, 50 * MS, false, &act, &res);
    assert_int_equal(res.n_kernels, 2);
    tl_ns last = res.kernels[0].end_ns > res.kernels[1].end_ns ? res.kernels[0].end_ns
                                                                : res.kernels[1].end_ns;
    assert_true(last >= 10 * MS);
    assert_int_equal(act.max_concurrent_ctx, 1);
    assert_true(act.pauses > 0);
    tl_run_result_close(&res);

    run_policy("mps", NULL, jobs, 2, 50 * MS, false, &act, &res);
    assert_int_equal(res.n_kernels, 2);
    for (int i = 0; i < 2; i++)
        assert_true(res.kernels[i].end_ns <= 5 * MS + LAT + 2 * US);
    assert_int_equal(act.max_concurrent_ctx, 2);
    tl_run_result_close(&res);
}

/* Both jobs run K = 264 x 1024 threads, 1000 us alone (one full wave, 2 blocks
 * per SM). Job 0 capped at 25% (its own sm_percent) = 33 SMs: 264 / 66 = 4
 * waves, 4000 us; job 1 at the policy's 50% = 66 SMs: 2 waves, 2000 us. The
 * clients never hold more SMs than their caps. */
static void test_mps_never_exceeds_a_clients_cap(void **s)
{
    job_def d[2];
    tl_job_spec jobs[2];
    tl_op k = kop(264, 1024, 1000 * US, 0);
    tl_ns t0 = 0;
    make_job(&d[0], &jobs[0], "a", 0, TL_ROLE_INFERENCE, &k, 1, &t0, 1);
    make_job(&d[1], &jobs[1], "b", 1, TL_ROLE_INFERENCE, &k, 1, &t0, 1);
    jobs[0].sm_percent = 25;
    const char *policies[] = { "mps", "mps-priority" };
    for (int i = 0; i < 2; i++) {
        activity act;
        tl_run_result res;
        run_policy(policies[i], "{\"sm_percent\": 50}", jobs, 2, 20 * MS, false, &act, &res);
        const tl_kernel_record *a = first_of(&res, 0, NULL), *b = first_of(&res, 1, NULL);
        assert_true(a->avg_sms <= 33 + 1e-9);
        assert_true(b->avg_sms <= 66 + 1e-9);
        assert_true(act.max_ctx_sms[0] <= 33 && act.max_ctx_sms[1] <= 66);
        assert_near(a->end_ns - a->start_ns, 4000 * US, 2 * US);
        assert_near(b->end_ns - b->start_ns, 2000 * US, 2 * US);
        tl_run_result_close(&res);
    }
}


/* MPS clients' turns: the best-effort client (rank 1) at t=0 issues B1 and B2
 * on two streams, each 264 x 1024 threads, 1000 us (one full wave): B1 fills
 * the GPU, B2 waits. The high-priority client issues H (the same shape,
 * 100 us) at 300 us. When B1 ends at 1000 us:
 * - in arrival order of the head kernels (mps_order 0), B2 (waiting since 0)
 *   dispatches first, so H waits for B2 too (starts at 2000 us);
 * - at the H100's defaults (mps_order 1) the client that has placed blocks in
 *   the fewest dispatch rounds goes first: H's (none) before B's (one), so H
 *   starts at 1000 us, under mps and mps-priority alike (client priority is
 *   ignored there, measured);
 * - read strictly (mps_client_priority 1), client priority comes first even
 *   in arrival order: H (priority 0) at 1000 us, and B2 after it. */
static void test_mps_clients_turns_and_client_priority(void **s)
{
    job_def d[2];
    tl_job_spec jobs[2];
    static int64_t two_streams[] = { 7, 8 };
    tl_op h = kop(264, 1024, 100 * US, 0);
    tl_op b[2] = { kop(264, 1024, 1000 * US, 0), kop(264, 1024, 1000 * US, 0) };
    b[1].stream = 1;
    tl_ns t_h = 300 * US, t_b = 0;
    make_job(&d[0], &jobs[0], "hp", 0, TL_ROLE_INFERENCE, &h, 1, &t_h, 1);
    make_job(&d[1], &jobs[1], "be", 1, TL_ROLE_INFERENCE, b, 2, &t_b, 1);
    d[1].tr.streams = two_streams;
    d[1].tr.n_streams = 2;
    tl_run_result res;
    g_mps_order = 0;
    run_policy("mps", NULL, jobs, 2, 10 * MS, false, NULL, &res);
    assert_near(first_of(&res, 0, NULL)->start_ns, 2000 * US, 5 * US);
    tl_run_result_close(&res);
    run_policy("mps-priority", NULL, jobs, 2, 10 * MS, false, NULL, &res);
    assert_near(first_of(&res, 0, NULL)->start_ns, 2000 * US, 5 * US);
    tl_run_result_close(&res);
    run_policy_mcp("mps-priority", NULL, jobs, 2, 10 * MS, false, 1, NULL, &res);
    const tl_kernel_record *kh = first_of(&res, 0, NULL);
    assert_near(kh->start_ns, 1000 * US, 5 * US);
    for (size_t i = 0; i < res.n_kernels; i++)
        if (res.kernels[i].job == 1 && res.kernels[i].start_ns > 500 * US)
            assert_true(res.kernels[i].start_ns >= kh->end_ns); /* B2 after H */
    tl_run_result_close(&res);
    g_mps_order = -1; /* the H100's defaults */
    const char *both[] = { "mps", "mps-priority" };
    for (int p = 0; p < 2; p++) {
        run_policy(both[p], NULL, jobs, 2, 10 * MS, false, NULL, &res);
        kh = first_of(&res, 0, NULL);
        assert_near(kh->start_ns, 1000 * US, 5 * US);
        for (size_t i = 0; i < res.n_kernels; i++)
            if (res.kernels[i].job == 1 && res.kernels[i].start_ns > 500 * US)
                assert_true(res.kernels[i].start_ns >= kh->end_ns);
        tl_run_result_close(&res);
    }
}

/* ---- tally ---- */

/* TALLY_TALLY_LOG of a run of one best-effort kernel B (132000 x 256): its choice,
 * logged once (choices are cached): the original ("whole", not chosen) and each
 * candidate, exactly one chosen, and that one transformed (the test below shows B
 * running sliced or as PTB). Removes the file. */
static void check_tally_log(const char *log_path)
{
    FILE *f = fopen(log_path, "r");
    assert_non_null(f);
    char line[1024];
    int runs = 0, whole = 0, cands = 0, chosen = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') {
            runs++;
            continue;
        }
        assert_non_null(strstr(line, ",132000x1x1,256x1x1,"));
        size_t n = strlen(line);
        bool pick = n >= 2 && line[n - 2] == '1';
        if (strstr(line, ",whole,")) {
            whole++;
            assert_false(pick);
        } else {
            cands++;
            chosen += pick;
        }
    }
    fclose(f);
    unlink(log_path);
    assert_int_equal(runs, 1);
    assert_int_equal(whole, 1);
    assert_true(cands >= 2);
    assert_int_equal(chosen, 1);
}

/* Best-effort (rank 1) at t=0: B = 132000 blocks x 256 threads, 2.5 ms alone:
 * 8 per SM = 1056 resident, 125 waves of 20 us. High priority (rank 0) at
 * 1 ms: H = 132 x 1024, 50 us. Tally runs B sliced or as PTB (each logical
 * block 20 us < the 31.6 us bound); at the arrival it stops slices / makes the
 * workers retreat, so every best-effort launch running at 1 ms ends within
 * the bound, and B resumes only after H and 0.1 ms of idleness, from where it
 * stopped: all 132000 logical blocks, each run once. The choice is logged
 * (TALLY_TALLY_LOG, check_tally_log). */
static void test_tally_preempts_within_the_bound_and_conserves_blocks(void **s)
{
    char log_path[] = "/tmp/tally-test-tally-XXXXXX";
    int fd = mkstemp(log_path);
    assert_true(fd >= 0);
    close(fd);
    setenv("TALLY_TALLY_LOG", log_path, 1);
    job_def d[2];
    tl_job_spec jobs[2];
    tl_op h = kop(132, 1024, 50 * US, 0), b = kop(132000, 256, 2500 * US, 0);
    tl_ns t_h = 1 * MS, t_b = 0;
    make_job(&d[0], &jobs[0], "hp", 0, TL_ROLE_INFERENCE, &h, 1, &t_h, 1);
    make_job(&d[1], &jobs[1], "be", 1, TL_ROLE_INFERENCE, &b, 1, &t_b, 1);
    tl_run_result res;
    run_policy("tally", NULL, jobs, 2, 20 * MS, false, NULL, &res);
    unsetenv("TALLY_TALLY_LOG");
    check_tally_log(log_path);
    const tl_kernel_record *kh = first_of(&res, 0, NULL);
    assert_non_null(kh);
    const tl_ns bound = 31600;
    uint64_t blocks = 0;
    int be_launches = 0, ran_across = 0;
    for (size_t i = 0; i < res.n_kernels; i++) {
        const tl_kernel_record *k = &res.kernels[i];
        if (k->job != 1)
            continue;
        be_launches++;
        blocks += k->blocks;
        if (k->start_ns < t_h && k->end_ns > t_h) {
            ran_across++;
            if (k->end_ns > t_h + bound)
                fail_msg("best-effort launch ran %lld ns past the arrival",
                         (long long)(k->end_ns - t_h));
        }
        /* nothing of B starts while H is pending or running, nor within 0.1 ms after */
        if (k->start_ns >= t_h && k->start_ns < kh->end_ns + 100 * US)
            fail_msg("best-effort launch started at %lld", (long long)k->start_ns);
    }
    assert_int_equal(ran_across, 1);
    assert_true(be_launches > 1);      /* transformed: sliced or relaunched */
    assert_int_equal(blocks, 132000);  /* conserved */
    /* H itself waited at most for the bound (B's blocks draining) */
    assert_true(kh->start_ns <= t_h + 1 * US + LAT + bound);
    tl_run_result_close(&res);
}

/* After untransformed_after_ms of high-priority idleness best-effort kernels
 * run whole: the second B (a new request at 5 ms) is a single launch. */
static void test_tally_runs_untransformed_after_long_idleness(void **s)
{
    job_def d[2];
    tl_job_spec jobs[2];
    tl_op h = kop(132, 1024, 50 * US, 0), b = kop(132000, 256, 2500 * US, 0);
    tl_ns t_h = 30 * MS, t_b[2] = { 0, 5 * MS };
    make_job(&d[0], &jobs[0], "hp", 0, TL_ROLE_INFERENCE, &h, 1, &t_h, 1);
    make_job(&d[1], &jobs[1], "be", 1, TL_ROLE_INFERENCE, &b, 1, t_b, 2);
    tl_run_result res;
    run_policy("tally", "{\"untransformed_after_ms\": 1}", jobs, 2, 40 * MS, false, NULL, &res);
    int whole = 0;
    for (size_t i = 0; i < res.n_kernels; i++) {
        const tl_kernel_record *k = &res.kernels[i];
        if (k->job == 1 && k->start_ns >= 5 * MS) {
            assert_int_equal(k->blocks, 132000);
            assert_false(k->ptb);
            whole++;
        }
    }
    assert_int_equal(whole, 1);
    tl_run_result_close(&res);
}

/* ---- herald ---- */

/* Inference (rank 0), one request at 1 ms: L1 = 10 x 128 threads, 300 us
 * (light: footprint 0.5%), then, 150 us of host time later, H = 1320 x 256,
 * 200 us (heavy: footprint ~1), queued behind L1 on the same stream.
 * Training (rank 1, closed loop): kernels of 132 x 256 threads, 50 us.
 * While L1 runs training shares the GPU (training kernels overlap L1), even
 * after H is issued (~1.15 ms), until L1 is within the 50 us lookahead of its
 * expected end (1.25 ms); then training is held: none starts while H runs. */
static void test_herald_shares_light_and_holds_heavy(void **s)
{
    job_def d[2];
    tl_job_spec jobs[2];
    tl_op inf[2] = { kop(10, 128, 300 * US, 0), kop(1320, 256, 200 * US, 150 * US) };
    tl_op tr = kop(132, 256, 50 * US, 0);
    tl_ns t_i = 1 * MS;
    make_job(&d[0], &jobs[0], "inf", 0, TL_ROLE_INFERENCE, inf, 2, &t_i, 1);
    make_job(&d[1], &jobs[1], "train", 1, TL_ROLE_TRAINING, &tr, 1, NULL, 0);
    tl_run_result res;
    run_policy("herald", "{\"train_inflight\": 1}", jobs, 2, 3 * MS, false, NULL, &res);
    const tl_kernel_record *l1 = NULL, *hv = NULL;
    for (size_t i = 0; i < res.n_kernels; i++) {
        const tl_kernel_record *k = &res.kernels[i];
        if (k->job == 0 && k->blocks == 10)
            l1 = k;
        if (k->job == 0 && k->blocks == 1320)
            hv = k;
    }
    assert_non_null(l1);
    assert_non_null(hv);
    int beside_light = 0;
    for (size_t i = 0; i < res.n_kernels; i++) {
        const tl_kernel_record *k = &res.kernels[i];
        if (k->job != 1)
            continue;
        if (k->start_ns < l1->end_ns && k->end_ns > l1->start_ns)
            beside_light++;
        if (k->start_ns >= hv->start_ns && k->start_ns < hv->end_ns)
            fail_msg("training kernel started at %lld during the heavy op [%lld, %lld]",
                     (long long)k->start_ns, (long long)hv->start_ns, (long long)hv->end_ns);
    }
    assert_true(beside_light >= 2);
    int after_issue = 0;
    for (size_t i = 0; i < res.n_kernels; i++) {
        const tl_kernel_record *k = &res.kernels[i];
        if (k->job == 1 && k->start_ns >= 1155 * US && k->start_ns <= l1->end_ns - 50 * US)
            after_issue++;
    }
    assert_true(after_issue >= 1);
    tl_run_result_close(&res);
}

/* The same request with an SLO of 400 us, while its solo time is ~650 us: at
 * risk from its first op, so the whole request has the GPU in time: no
 * training kernel starts between its first start and its last end. */
static void test_herald_slo_guard_holds_training(void **s)
{
    job_def d[2];
    tl_job_spec jobs[2];
    tl_op inf[2] = { kop(10, 128, 300 * US, 0), kop(1320, 256, 200 * US, 150 * US) };
    tl_op tr = kop(132, 256, 50 * US, 0);
    tl_ns t_i = 1 * MS;
    make_job(&d[0], &jobs[0], "inf", 0, TL_ROLE_INFERENCE, inf, 2, &t_i, 1);
    make_job(&d[1], &jobs[1], "train", 1, TL_ROLE_TRAINING, &tr, 1, NULL, 0);
    jobs[0].slo_ns = 400 * US;
    tl_run_result res;
    run_policy("herald", "{\"train_inflight\": 1}", jobs, 2, 3 * MS, false, NULL, &res);
    tl_ns first = INT64_MAX, last = 0;
    for (size_t i = 0; i < res.n_kernels; i++)
        if (res.kernels[i].job == 0) {
            if (res.kernels[i].start_ns < first)
                first = res.kernels[i].start_ns;
            if (res.kernels[i].end_ns > last)
                last = res.kernels[i].end_ns;
        }
    for (size_t i = 0; i < res.n_kernels; i++) {
        const tl_kernel_record *k = &res.kernels[i];
        if (k->job == 1 && k->start_ns >= first && k->start_ns < last)
            fail_msg("training kernel started at %lld inside the request [%lld, %lld]",
                     (long long)k->start_ns, (long long)first, (long long)last);
    }
    tl_run_result_close(&res);
}


/* Two requests arrive together at 1 ms, each 100 us of host time then one
 * light 300 us kernel; SLO 500 us. The second waits for the first: between
 * the first's end (~1.4 ms) and the second's kernel (~1.5 ms) no request is in
 * progress, but the waiting one's SLO is at risk (its 400 us solo estimate on
 * top of 400 us already waited), so training stays held in that gap too. */
static void test_herald_guards_a_queued_request(void **s)
{
    job_def d[2];
    tl_job_spec jobs[2];
    tl_op inf = kop(10, 128, 300 * US, 100 * US);
    tl_op tr = kop(132, 256, 50 * US, 0);
    tl_ns t_i[2] = { 1 * MS, 1 * MS };
    make_job(&d[0], &jobs[0], "inf", 0, TL_ROLE_INFERENCE, &inf, 1, t_i, 2);
    make_job(&d[1], &jobs[1], "train", 1, TL_ROLE_TRAINING, &tr, 1, NULL, 0);
    jobs[0].slo_ns = 500 * US;
    tl_run_result res;
    run_policy("herald", "{\"train_inflight\": 1}", jobs, 2, 3 * MS, false, NULL, &res);
    const tl_kernel_record *k1 = NULL, *k2 = NULL;
    for (size_t i = 0; i < res.n_kernels; i++)
        if (res.kernels[i].job == 0) {
            if (!k1 || res.kernels[i].start_ns < k1->start_ns)
                k2 = k1, k1 = &res.kernels[i];
            else if (!k2 || res.kernels[i].start_ns < k2->start_ns)
                k2 = &res.kernels[i];
        }
    assert_non_null(k2);
    assert_true(k2->start_ns >= k1->end_ns + 100 * US); /* the host gap of request 2 */
    for (size_t i = 0; i < res.n_kernels; i++) {
        const tl_kernel_record *k = &res.kernels[i];
        if (k->job == 1 && k->start_ns >= k1->end_ns && k->start_ns < k2->start_ns)
            fail_msg("training kernel started at %lld between the requests [%lld, %lld]",
                     (long long)k->start_ns, (long long)k1->end_ns, (long long)k2->start_ns);
    }
    tl_run_result_close(&res);
}

/* ---- tgs ---- */

/* Best-effort alone (the high-priority job's only request comes late): its
 * launches follow slow start. Window 1 ms, initial rate 0.1 of the GPU's
 * time: 100 us of kernel time in the first window, then each window doubles
 * the rate (no high-priority observation: no drop): 200, 400, 800 us. With
 * 100 us kernels that is 1, 2, 4, 8 launches in the first four windows, each
 * batch running back to back from the window's start. */
static void test_tgs_slow_start_paces_best_effort_launches(void **s)
{
    job_def d[2];
    tl_job_spec jobs[2];
    tl_op h = kop(1, 32, 10 * US, 0), b = kop(1, 32, 100 * US, 0);
    tl_ns t_h = 50 * MS;
    make_job(&d[0], &jobs[0], "hp", 0, TL_ROLE_INFERENCE, &h, 1, &t_h, 1);
    make_job(&d[1], &jobs[1], "be", 1, TL_ROLE_TRAINING, &b, 1, NULL, 0);
    tl_run_result res;
    run_policy("tgs", "{\"window_ms\": 1, \"initial_rate\": 0.1, \"ssthresh\": 4}", jobs, 2,
               4 * MS + 500 * US, false, NULL, &res);
    const tl_kernel_record *f = first_of(&res, 1, NULL);
    assert_non_null(f);
    /* the window timer was armed at the first submit, ~LAT before f starts */
    tl_ns t0 = f->start_ns - LAT;
    int per_window[4] = { 0 };
    for (size_t i = 0; i < res.n_kernels; i++) {
        const tl_kernel_record *k = &res.kernels[i];
        if (k->job != 1)
            continue;
        tl_ns w = (k->start_ns - t0) / MS;
        if (w >= 0 && w < 4)
            per_window[w]++;
    }
    assert_int_equal(per_window[0], 1);
    assert_int_equal(per_window[1], 2);
    assert_int_equal(per_window[2], 4);
    assert_int_equal(per_window[3], 8);
    tl_run_result_close(&res);
}

/* TGS's high-priority wall time runs from when a task could start: on a device
 * whose launches reach the GPU 40 us after their call (the CUDA backend's graph
 * jobs: their ops go at their graph's launch, after the host issued them all),
 * not from the call. Fake device (tests/support): streams run each op for its
 * duration, nothing else. Three requests of three 10 us kernels, 1 ms apart:
 * each request's kernels run [T+40, T+70] back to back, so wall = solo = 30 us
 * a request (from the call it would be 70). The controller's window record
 * (TALLY_TGS_LOG) says so. */
static void test_tgs_wall_time_starts_at_submission(void **s)
{
    char log_path[] = "/tmp/tally-test-tgs-XXXXXX";
    int fd = mkstemp(log_path);
    assert_true(fd >= 0);
    close(fd);
    setenv("TALLY_TGS_LOG", log_path, 1);
    job_def d;
    tl_job_spec job;
    tl_op k[3] = { kop(1, 32, 10 * US, 0), kop(1, 32, 10 * US, 0), kop(1, 32, 10 * US, 0) };
    tl_ns arrivals[3] = { 0, 1 * MS, 2 * MS };
    make_job(&d, &job, "hp", 0, TL_ROLE_INFERENCE, k, 3, arrivals, 3);
    tl_gpu_props gpu;
    tl_err err = { 0 };
    assert_int_equal(tl_gpu_lookup("H100", &gpu, &err), 0);
    tl_device dev;
    tl_fake_device_open(&dev, &gpu);
    tl_fake_device_set_submit_lag(&dev, 40 * US);
    json_t *params = json_loads("{\"window_ms\": 0.5}", 0, NULL);
    tl_run_config cfg = { .jobs = &job, .n_jobs = 1, .policy = tl_policy_find("tgs"),
                          .policy_params = params, .duration_ns = 3 * MS, .seed = 1 };
    tl_run_result res;
    int r = tl_run(&cfg, &dev, &res, &err);
    unsetenv("TALLY_TGS_LOG");
    json_decref(params);
    tl_dev_close(&dev);
    if (r < 0)
        print_error("tgs: %s\n", err.msg);
    assert_int_equal(r, 0);
    assert_int_equal(res.n_recs, 3);
    tl_run_result_close(&res);
    /* time_ns,hp_solo_ns,hp_wall_ns,... per window; '#' lines start runs */
    FILE *f = fopen(log_path, "r");
    assert_non_null(f);
    char line[512];
    double solo = 0, wall = 0;
    while (fgets(line, sizeof line, f)) {
        double t, so, wa;
        if (line[0] != '#' && sscanf(line, "%lf,%lf,%lf", &t, &so, &wa) == 3) {
            solo += so;
            wall += wa;
        }
    }
    fclose(f);
    unlink(log_path);
    assert_true(solo == 90.0 * US);
    assert_true(wall == 90.0 * US);
}

/* ---- pipeswitch ---- */

/* Training (rank 1, closed loop, model 0 bytes): kernels of 100 us. Inference
 * (rank 0, model 100 MB) at 10 ms: one 50 us kernel. Start-up 5 ms, 10 groups
 * at 50 GB/s: the first 10 MB take 200 us. The training kernel running at
 * 10 ms finishes (kernel boundary); then 5.2 ms of switching; then the
 * inference kernel (plus LAT). Back to training costs 5 ms more (no bytes).
 * Kernels of the two jobs never overlap. */
static void test_pipeswitch_charges_the_switch_cost(void **s)
{
    job_def d[2];
    tl_job_spec jobs[2];
    tl_op h = kop(132, 256, 50 * US, 0), t = kop(132, 256, 100 * US, 0);
    tl_ns t_h = 10 * MS;
    make_job(&d[0], &jobs[0], "inf", 0, TL_ROLE_INFERENCE, &h, 1, &t_h, 1);
    make_job(&d[1], &jobs[1], "train", 1, TL_ROLE_TRAINING, &t, 1, NULL, 0);
    jobs[0].model_bytes = 100000000;
    tl_run_result res;
    run_policy("pipeswitch", NULL, jobs, 2, 25 * MS, false, NULL, &res);
    const tl_kernel_record *kh = first_of(&res, 0, NULL);
    assert_non_null(kh);
    tl_ns before = 0, after = INT64_MAX;
    for (size_t i = 0; i < res.n_kernels; i++) {
        const tl_kernel_record *k = &res.kernels[i];
        if (k->job != 1)
            continue;
        if (k->start_ns < kh->start_ns && k->end_ns > before)
            before = k->end_ns;
        if (k->start_ns > kh->start_ns && k->start_ns < after)
            after = k->start_ns;
        assert_true(k->end_ns <= kh->start_ns || k->start_ns >= kh->end_ns);
    }
    assert_true(before >= 10 * MS);              /* training was running at the arrival */
    assert_true(before <= 10 * MS + 100 * US);   /* and stopped at the kernel boundary */
    assert_near(kh->start_ns - before, 5200 * US + LAT, 5 * US);
    assert_near(after - kh->end_ns, 5000 * US + LAT, 5 * US);
    tl_run_result_close(&res);
}

/* ---- determinism ---- */

static void test_tally_is_deterministic(void **s)
{
    job_def d[2];
    tl_job_spec jobs[2];
    tl_op h = kop(132, 1024, 50 * US, 0), b = kop(132000, 256, 2500 * US, 0);
    tl_ns t_h[2] = { 1 * MS, 3200 * US }, t_b = 0;
    make_job(&d[0], &jobs[0], "hp", 0, TL_ROLE_INFERENCE, &h, 1, t_h, 2);
    make_job(&d[1], &jobs[1], "be", 1, TL_ROLE_INFERENCE, &b, 1, &t_b, 1);
    tl_run_result r1, r2;
    run_policy("tally", NULL, jobs, 2, 10 * MS, true, NULL, &r1);
    run_policy("tally", NULL, jobs, 2, 10 * MS, true, NULL, &r2);
    assert_int_equal(r1.n_kernels, r2.n_kernels);
    for (size_t i = 0; i < r1.n_kernels; i++) {
        assert_int_equal(r1.kernels[i].start_ns, r2.kernels[i].start_ns);
        assert_int_equal(r1.kernels[i].end_ns, r2.kernels[i].end_ns);
        assert_int_equal(r1.kernels[i].blocks, r2.kernels[i].blocks);
    }
    tl_run_result_close(&r1);
    tl_run_result_close(&r2);
}

/* ---- every policy on real traces ---- */

static void test_every_policy_on_bundled_traces(void **s)
{
    tl_trace inf, tr;
    tl_err err;
    tl_trace_init(&inf);
    tl_trace_init(&tr);
    if (tl_trace_load(&inf, "traces/bundled/h100/resnet50_infer_b8.json.gz", NULL, &err) < 0 ||
        tl_trace_load(&tr, "traces/bundled/h100/resnet50_train_b32_steps.json.gz", NULL, &err) < 0)
        fail_msg("%s", err.msg);
    tl_job_spec jobs[2] = {
        { .name = "resnet50-infer", .trace = &inf, .role = TL_ROLE_INFERENCE, .priority = 0,
          .slo_ns = 50 * MS, .arrival = TL_ARRIVAL_POISSON_LOAD, .load = 0.5,
          .model_bytes = 100000000 },
        { .name = "resnet50-train", .trace = &tr, .role = TL_ROLE_TRAINING, .priority = 1,
          .model_bytes = 100000000 },
    };
    for (const tl_policy_ops *const *o = tl_policy_all(); *o; o++) {
        tl_run_result res;
        run_policy((*o)->name, NULL, jobs, 2, 300 * MS, true, NULL, &res);
        int reqs = 0, iters = 0;
        for (size_t i = 0; i < res.n_recs; i++) {
            if (res.recs[i].job == 0)
                reqs++;
            else
                iters++;
            assert_true(res.recs[i].end_ns >= res.recs[i].start_ns);
        }
        if (reqs == 0 || (iters == 0 && strcmp((*o)->name, "pipeswitch") != 0))
            fail_msg("%s: %d requests, %d iterations", (*o)->name, reqs, iters);
        tl_run_result_close(&res);
    }
    tl_trace_close(&inf);
    tl_trace_close(&tr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_priority_streams_never_stop_running_blocks),
        cmocka_unit_test(test_time_slicing_never_overlaps_contexts),
        cmocka_unit_test(test_mps_never_exceeds_a_clients_cap),
        cmocka_unit_test(test_mps_clients_turns_and_client_priority),
        cmocka_unit_test(test_tally_preempts_within_the_bound_and_conserves_blocks),
        cmocka_unit_test(test_tally_runs_untransformed_after_long_idleness),
        cmocka_unit_test(test_herald_shares_light_and_holds_heavy),
        cmocka_unit_test(test_herald_slo_guard_holds_training),
        cmocka_unit_test(test_herald_guards_a_queued_request),
        cmocka_unit_test(test_tgs_slow_start_paces_best_effort_launches),
        cmocka_unit_test(test_tgs_wall_time_starts_at_submission),
        cmocka_unit_test(test_pipeswitch_charges_the_switch_cost),
        cmocka_unit_test(test_tally_is_deterministic),
        cmocka_unit_test(test_every_policy_on_bundled_traces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
