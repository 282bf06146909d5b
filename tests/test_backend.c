/* The hardware backend's host-side logic (runs everywhere): the kernel-kind
 * rule, register-variant choice, calibration arithmetic and its SQLite cache,
 * the MPS daemon's command lines and start/stop (with a stand-in daemon),
 * cleanup of children on exit and on signals, the watchdog. Then tally-run
 * itself: on a machine without a GPU it must refuse with a clear message; on
 * one with a GPU its selftest must pass (otherwise that test is skipped and
 * says why). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend.h"
#include "block_trace.h"
#include "tally/sim.h"
#include "worker.h"
#include "tally/trace.h"
#include "test_db.h"

/* ---- kernel kind ---- */

static void test_kind_rule_names(void **state)
{
    (void)state;
    assert_int_equal(tl_kernel_kind_for_name("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8"), TL_KIND_COMPUTE);
    assert_int_equal(tl_kernel_kind_for_name("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128>"), TL_KIND_COMPUTE);
    assert_int_equal(tl_kernel_kind_for_name("void implicit_convolve_sgemm<float, float, 1024>"), TL_KIND_COMPUTE);
    assert_int_equal(tl_kernel_kind_for_name("fmha_cutlassF_f32_aligned_64x64_rf_sm80"), TL_KIND_COMPUTE);
    assert_int_equal(tl_kernel_kind_for_name("SM90_XMMA_WGRAD_INDEXED"), TL_KIND_COMPUTE); /* case */
    assert_int_equal(tl_kernel_kind_for_name("void at::native::vectorized_elementwise_kernel<4>"), TL_KIND_MEMORY);
    assert_int_equal(tl_kernel_kind_for_name("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float>"), TL_KIND_MEMORY);
    assert_int_equal(tl_kernel_kind_for_name("void at::native::reduce_kernel<512, 1>"), TL_KIND_MEMORY);
    assert_int_equal(tl_kernel_kind_for_name("void cudnn::engines_precompiled::nchwToNhwcKernel"), TL_KIND_MEMORY);
    /* helpers inside GEMM libraries move data: memory despite "gemm"/"cublas" */
    assert_int_equal(tl_kernel_kind_for_name("void cutlass::gemm::kernel::splitKreduce_kernel"), TL_KIND_MEMORY);
    assert_int_equal(tl_kernel_kind_for_name("internal::gemvx::kernel<int, int, float>"), TL_KIND_MEMORY);
    assert_int_equal(tl_kernel_kind_for_name("void cublasLt::epilogue::impl::globalKernel<8, 32>"), TL_KIND_MEMORY);
    assert_int_equal(tl_kernel_kind_for_name(""), TL_KIND_MEMORY);
    assert_int_equal(tl_kernel_kind_for_name(NULL), TL_KIND_MEMORY);
    assert_string_equal(tl_kernel_kind_name(TL_KIND_COMPUTE), "compute");
    assert_string_equal(tl_kernel_kind_name(TL_KIND_MEMORY), "memory");
}

/* On a real ResNet-50 training trace, the GEMM/convolution kernels carry most
 * of the GPU time: the rule must call them compute. */
static void test_kind_rule_bundled_trace(void **state)
{
    (void)state;
    tl_trace t;
    tl_err err = {0};
    tl_trace_init(&t);
    int r = tl_trace_load(&t, "traces/bundled/h100/resnet50_train_b32.json.gz", NULL, &err);
    if (r < 0) {
        tl_trace_close(&t);
        skip(); /* the trace reader is another module's; its own tests cover it */
    }
    double compute = 0, total = 0;
    int n_compute = 0, n_memory = 0;
    for (uint32_t i = 0; i < t.n_iters; i++)
        for (uint32_t j = 0; j < t.iters[i].n_ops; j++) {
            const tl_op *op = &t.iters[i].ops[j];
            if (op->kind != TL_OP_KERNEL) continue;
            int k = tl_kernel_kind_for_name(tl_trace_op_name(&t, op));
            total += (double)op->dur_ns;
            if (k == TL_KIND_COMPUTE) { compute += (double)op->dur_ns; n_compute++; }
            else n_memory++;
        }
    tl_trace_close(&t);
    assert_true(n_compute > 0 && n_memory > 0);
    assert_true(compute / total > 0.3); /* convolutions and GEMMs: about 36% of the GPU time */
    assert_true(n_memory > n_compute);  /* but most launches are small data movers */
}

/* ---- register variants ---- */

static void test_pick_variant(void **state)
{
    (void)state;
    int regs[] = {32, 48, 64, 96, 128, 255};
    int maxthr[] = {1024, 1024, 1024, 640, 512, 256};
    /* closest register count */
    assert_int_equal(tl_pick_variant(regs, maxthr, 6, 32, 256, 65536, 256), 0);
    assert_int_equal(tl_pick_variant(regs, maxthr, 6, 72, 256, 65536, 256), 2);
    assert_int_equal(tl_pick_variant(regs, maxthr, 6, 168, 256, 65536, 256), 4);
    assert_int_equal(tl_pick_variant(regs, maxthr, 6, 250, 128, 65536, 256), 5);
    /* tie (40 is 8 from both 32 and 48): the lower count */
    assert_int_equal(tl_pick_variant(regs, maxthr, 6, 40, 128, 65536, 256), 0);
    /* 255 registers cannot run 512-thread blocks: next best that fits */
    assert_int_equal(tl_pick_variant(regs, maxthr, 6, 255, 512, 65536, 256), 4);
    /* 1024 threads: only <= 64 registers fit the 64K register file */
    assert_int_equal(tl_pick_variant(regs, maxthr, 6, 200, 1024, 65536, 256), 2);
    /* nothing fits */
    assert_int_equal(tl_pick_variant(regs, maxthr, 6, 32, 2048, 65536, 256), -1);
    assert_int_equal(tl_pick_variant(regs, maxthr, 6, 32, 0, 65536, 256), -1);
}

/* ---- calibration arithmetic ---- */

static void test_curve_add_sorted(void **state)
{
    (void)state;
    tl_calib_curve c = {0};
    tl_calib_curve_add(&c, 64, 5000, 0);
    tl_calib_curve_add(&c, 0, 1000, 0);
    tl_calib_curve_add(&c, 16, 2000, 0);
    tl_calib_curve_add(&c, 16, 2100, 0); /* replaces */
    assert_int_equal(c.n, 3);
    assert_int_equal(c.p[0].iters, 0);
    assert_int_equal(c.p[1].iters, 16);
    assert_int_equal(c.p[1].ns, 2100);
    assert_int_equal(c.p[2].iters, 64);
    for (uint32_t i = 1; i <= 40; i++) tl_calib_curve_add(&c, 100 + i, 10000 + i, 5000);
    assert_int_equal(c.n, TL_CALIB_MAX_POINTS);
    assert_int_equal(c.p[0].iters, 0); /* the floor is never dropped */
    for (int i = 1; i < c.n; i++) assert_true(c.p[i].iters > c.p[i - 1].iters);
    assert_int_equal(tl_calib_closest(&c, 2050)->iters, 16);
    assert_true(tl_calib_within(1020, 1000, 0.02));
    assert_false(tl_calib_within(1021, 1000, 0.02));
}

/* A stand-in GPU: time grows in waves (a step every 'wave' units) plus a
 * linear part, as a kernel of several waves of blocks does. */
typedef struct fake_gpu {
    tl_ns floor, per_iter;
    int measured;
} fake_gpu;

static tl_ns fake_time(fake_gpu *g, uint32_t iters)
{
    g->measured++;
    return g->floor + g->per_iter * (tl_ns)iters + (tl_ns)(iters / 50) * 100;
}

static uint32_t calibrate(fake_gpu *g, tl_calib_curve *c, tl_ns target, bool *ok)
{
    bool done = false;
    uint32_t it = 0;
    for (int step = 0; step < 20 && !done; step++) {
        it = tl_calib_next(c, target, 0.02, &done);
        if (!done) tl_calib_curve_add(c, it, fake_time(g, it), target);
    }
    *ok = done;
    return it;
}

static void test_calib_converges(void **state)
{
    (void)state;
    tl_ns targets[] = {2500, 3100, 10000, 123456, 5000000, 40000000};
    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
        fake_gpu g = {2000, 37, 0};
        tl_calib_curve c = {0};
        bool ok;
        uint32_t it = calibrate(&g, &c, targets[i], &ok);
        assert_true(ok);
        fake_gpu probe = g;
        tl_ns t = fake_time(&probe, it);
        /* within 2%, or the best a whole unit can do */
        assert_true(tl_calib_within(t, targets[i], 0.02) || llabs(t - targets[i]) <= 37 + 100);
        assert_true(g.measured <= 14);
    }
}

static void test_calib_below_floor_and_reuse(void **state)
{
    (void)state;
    fake_gpu g = {2000, 37, 0};
    tl_calib_curve c = {0};
    bool ok;
    /* shorter than the empty kernel: zero units, after one measurement */
    assert_int_equal(calibrate(&g, &c, 1200, &ok), 0);
    assert_true(ok);
    assert_int_equal(g.measured, 1);
    /* a second target of the same shape starts from the curve */
    calibrate(&g, &c, 50000, &ok);
    int before = g.measured;
    uint32_t it = calibrate(&g, &c, 50500, &ok); /* within 2% of a known point */
    assert_true(ok);
    assert_int_equal(g.measured, before);
    assert_true(it > 0);
}

static void test_median(void **state)
{
    (void)state;
    tl_ns v[] = {5, 1, 4, 2, 3};
    assert_int_equal(tl_median_ns(v, 5), 3);
    assert_int_equal(tl_median_ns(v, 4), 3); /* (2 + 4) / 2 of {5,1,4,2} */
    assert_int_equal(tl_median_ns(v, 0), 0);
}

/* The replay's back-to-back gap from kernel times (tl_gap_summarize): five
 * kernels of 5 us, 6 us apart -> gap 6 us, kernel 5 us, period 11 us; a
 * batch whose ends were clamped to one instant (each "starts" before the one
 * before ended) is refused rather than summarized; too few kernels too. */
static void test_gap_summarize(void **state)
{
    (void)state;
    tl_ns st[5], en[5];
    for (int i = 0; i < 5; i++) {
        st[i] = 1000 + 11000 * (tl_ns)i;
        en[i] = st[i] + 5000;
    }
    tl_hw_gap g;
    tl_err err = {0};
    assert_int_equal(tl_gap_summarize(st, en, 5, &g, &err), 0);
    assert_int_equal(g.launches, 5);
    assert_int_equal(g.gap_ns, 6000);
    assert_int_equal(g.kernel_ns, 5000);
    assert_int_equal(g.period_ns, 11000);
    for (int i = 0; i < 5; i++) { /* clamped: every end = the poll time */
        en[i] = 100000;
        st[i] = en[i] - 5000;
    }
    assert_int_equal(tl_gap_summarize(st, en, 5, &g, &err), TL_EIO);
    assert_non_null(strstr(err.msg, "4 of 4 kernels start before"));
    assert_int_equal(g.launches, 0);
    assert_int_equal(tl_gap_summarize(st, en, 2, &g, &err), TL_EINVAL);
    assert_non_null(strstr(err.msg, "at least 3"));
}

/* ---- calibration cache ---- */

static char tmpdir[64];

static int make_tmpdir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tally-test-backend-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    return tl_test_remove_tree(tmpdir);
}

typedef struct rows { int n, nodes; tl_ns target; uint32_t iters; } rows;
static void count_row(void *arg, const tl_calib_key *k, tl_ns target, uint32_t iters, tl_ns measured)
{
    rows *r = arg;
    (void)measured;
    r->n++;
    r->nodes += k->node;
    r->target = target;
    r->iters = iters;
}

static void test_calib_db_roundtrip(void **state)
{
    (void)state;
    char path[160];
    snprintf(path, sizeof path, "%s/sub/dir/calib.sqlite", tmpdir); /* folders are created */
    tl_calib_db db;
    tl_err err = {0};
    assert_int_equal(tl_calib_db_open(&db, path, &err), 0);
    tl_calib_key k = {"NVIDIA H100 80GB HBM3", TL_KIND_MEMORY, 2, 1568 * 32, {256, 1, 1}, 4224};
    assert_int_equal(tl_calib_db_add_point(&db, &k, 0, 3000, &err), 0);
    assert_int_equal(tl_calib_db_add_point(&db, &k, 64, 9000, &err), 0);
    assert_int_equal(tl_calib_db_put(&db, &k, 71105, 700, 71000, &err), 0);
    tl_calib_db_close(&db);

    assert_int_equal(tl_calib_db_open(&db, path, &err), 0);
    tl_calib_curve c;
    assert_int_equal(tl_calib_db_load_curve(&db, &k, &c, &err), 0);
    assert_int_equal(c.n, 2);
    assert_int_equal(c.p[1].iters, 64);
    assert_int_equal(c.p[1].ns, 9000);
    uint32_t it = 0;
    tl_ns m = 0;
    bool found = false;
    assert_int_equal(tl_calib_db_get(&db, &k, 71105, &it, &m, &found, &err), 0);
    assert_true(found);
    assert_int_equal(it, 700);
    assert_int_equal(m, 71000);
    /* another GPU, variant or target is another key */
    tl_calib_key k2 = k;
    k2.gpu = "NVIDIA A100";
    assert_int_equal(tl_calib_db_get(&db, &k2, 71105, &it, &m, &found, &err), 0);
    assert_false(found);
    k2 = k;
    k2.variant = 3;
    assert_int_equal(tl_calib_db_load_curve(&db, &k2, &c, &err), 0);
    assert_int_equal(c.n, 0);
    assert_int_equal(tl_calib_db_get(&db, &k, 71106, &it, &m, &found, &err), 0);
    assert_false(found);
    rows r = {0};
    assert_int_equal(tl_calib_db_each(&db, "NVIDIA H100 80GB HBM3", count_row, &r, &err), 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.target, 71105);
    tl_calib_db_close(&db);
}

/* A kernel calibrated as a CUDA-graph node is another key: its points and
 * answers are kept apart from the same shape's as a launch (a node runs the
 * same work units faster), and bulk loading says which is which. */
static void test_calib_db_node_key(void **state)
{
    (void)state;
    char path[160];
    snprintf(path, sizeof path, "%s/node_calib.sqlite", tmpdir);
    tl_calib_db db;
    tl_err err = {0};
    assert_int_equal(tl_calib_db_open(&db, path, &err), 0);
    tl_calib_key k = {"NVIDIA H100 80GB HBM3", TL_KIND_COMPUTE, 1, 4096, {256, 1, 1}, 0};
    tl_calib_key kn = k;
    kn.node = 1;
    assert_int_equal(tl_calib_db_add_point(&db, &k, 100, 20000, &err), 0);
    assert_int_equal(tl_calib_db_add_point(&db, &kn, 100, 17500, &err), 0);
    assert_int_equal(tl_calib_db_add_point(&db, &kn, 120, 20500, &err), 0);
    assert_int_equal(tl_calib_db_put(&db, &k, 20000, 100, 20000, &err), 0);
    assert_int_equal(tl_calib_db_put(&db, &kn, 20000, 117, 20100, &err), 0);
    tl_calib_curve c;
    assert_int_equal(tl_calib_db_load_curve(&db, &k, &c, &err), 0);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.p[0].ns, 20000);
    assert_int_equal(tl_calib_db_load_curve(&db, &kn, &c, &err), 0);
    assert_int_equal(c.n, 2);
    assert_int_equal(c.p[0].ns, 17500);
    uint32_t it = 0;
    tl_ns m = 0;
    bool found = false;
    assert_int_equal(tl_calib_db_get(&db, &k, 20000, &it, &m, &found, &err), 0);
    assert_true(found);
    assert_int_equal(it, 100);
    assert_int_equal(tl_calib_db_get(&db, &kn, 20000, &it, &m, &found, &err), 0);
    assert_true(found);
    assert_int_equal(it, 117);
    assert_int_equal(m, 20100);
    rows r = {0};
    assert_int_equal(tl_calib_db_each(&db, "NVIDIA H100 80GB HBM3", count_row, &r, &err), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.nodes, 1);
    tl_calib_db_close(&db);
}

static void test_calib_db_bad_path(void **state)
{
    (void)state;
    char path[160];
    snprintf(path, sizeof path, "%s/file", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("not a database, and long enough to be noticed as such by sqlite.........", f);
    fclose(f);
    tl_calib_db db;
    tl_err err = {0};
    int r = tl_calib_db_open(&db, path, &err);
    assert_int_equal(r, TL_EDB);
    assert_non_null(strstr(err.msg, path));
    snprintf(path, sizeof path, "%s/file/below", tmpdir); /* a file where a folder should be */
    assert_int_equal(tl_calib_db_open(&db, path, &err), TL_EDB);
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(tl_calib_db_open(&db, "", &err), TL_EINVAL);
}

static void test_calib_default_path(void **state)
{
    (void)state;
    setenv("TALLY_CALIB_DB", "/x/y.sqlite", 1);
    char *p = tl_calib_default_path();
    assert_string_equal(p, "/x/y.sqlite");
    free(p);
    unsetenv("TALLY_CALIB_DB");
    setenv("XDG_CACHE_HOME", "/cache", 1);
    p = tl_calib_default_path();
    assert_string_equal(p, "/cache/tally/calib.sqlite");
    free(p);
    unsetenv("XDG_CACHE_HOME");
}

/* ---- MPS ---- */

static void test_mps_command_lines(void **state)
{
    (void)state;
    tl_mps m;
    tl_mps_layout(&m, "/usr/bin/nvidia-cuda-mps-control", "/tmp/tally-mps-abc");
    assert_string_equal(m.pipe_dir, "/tmp/tally-mps-abc/pipe");
    assert_string_equal(m.log_dir, "/tmp/tally-mps-abc/log");
    const char *argv[3];
    tl_mps_start_argv(&m, argv);
    assert_string_equal(argv[0], "/usr/bin/nvidia-cuda-mps-control");
    assert_string_equal(argv[1], "-d");
    assert_null(argv[2]);
    char env[6][320];
    assert_int_equal(tl_mps_daemon_env(&m, env, 6), 2);
    assert_string_equal(env[0], "CUDA_MPS_PIPE_DIRECTORY=/tmp/tally-mps-abc/pipe");
    assert_string_equal(env[1], "CUDA_MPS_LOG_DIRECTORY=/tmp/tally-mps-abc/log");
    int n = tl_mps_client_env(&m, 33.3, 1, env, 6);
    assert_int_equal(n, 4);
    assert_string_equal(env[2], "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=34"); /* rounded up */
    assert_string_equal(env[3], "CUDA_MPS_CLIENT_PRIORITY=1");
    n = tl_mps_client_env(&m, 0, 7, env, 6); /* no cap; priority is 0 or 1 */
    assert_int_equal(n, 3);
    assert_string_equal(env[2], "CUDA_MPS_CLIENT_PRIORITY=1");
    n = tl_mps_client_env(&m, 100, 0, env, 6);
    assert_int_equal(n, 3);
    assert_string_equal(env[2], "CUDA_MPS_CLIENT_PRIORITY=0");
}

static void test_mps_find_control_missing(void **state)
{
    (void)state;
    char out[256];
    tl_err err = {0};
    char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    setenv("PATH", tmpdir, 1);
    unsetenv("TALLY_MPS_CONTROL");
    /* The fixed fallbacks may hold a real one on a GPU machine. */
    if (access("/usr/bin/nvidia-cuda-mps-control", X_OK) != 0 &&
        access("/usr/local/nvidia/bin/nvidia-cuda-mps-control", X_OK) != 0 &&
        access("/usr/local/cuda/bin/nvidia-cuda-mps-control", X_OK) != 0) {
        assert_int_equal(tl_mps_find_control(out, sizeof out, &err), TL_ENODEV);
        assert_non_null(strstr(err.msg, "nvidia-cuda-mps-control not found"));
    }
    setenv("TALLY_MPS_CONTROL", "/nonexistent/nvidia-cuda-mps-control", 1);
    assert_int_equal(tl_mps_find_control(out, sizeof out, &err), TL_ENODEV);
    assert_non_null(strstr(err.msg, "/nonexistent/nvidia-cuda-mps-control"));
    unsetenv("TALLY_MPS_CONTROL");
    if (old) {
        setenv("PATH", old, 1);
        free(old);
    }
}

/* A stand-in for nvidia-cuda-mps-control: "-d" starts a background copy that
 * lives until "quit" arrives on a later invocation's stdin (or forever, when
 * stubborn). Its process name starts with nvidia-cuda-mps, like the real one. */
static void write_fake_control(const char *path, bool stubborn)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "#!/bin/sh\n"
            "if [ \"$1\" = -d ]; then\n"
            "  touch \"$CUDA_MPS_PIPE_DIRECTORY/control\"\n"
            "  \"$0\" serve </dev/null >/dev/null 2>&1 &\n"
            "  exit 0\n"
            "fi\n"
            "if [ \"$1\" = serve ]; then\n"
            "  while [ ! -e \"$CUDA_MPS_PIPE_DIRECTORY/quit\" ]; do sleep 0.02; done\n"
            "  exit 0\n"
            "fi\n"
            "read cmd\n"
            "[ \"$cmd\" = quit ] && %s\n"
            "exit 0\n",
            stubborn ? "true" : "touch \"$CUDA_MPS_PIPE_DIRECTORY/quit\"");
    fclose(f);
    chmod(path, 0755);
}

static void run_fake_daemon(bool stubborn)
{
    char ctl[160], root[200];
    snprintf(ctl, sizeof ctl, "%s/nvidia-cuda-mps-control", tmpdir);
    write_fake_control(ctl, stubborn);
    snprintf(root, sizeof root, "%s/mps-%d", tmpdir, stubborn);
    tl_mps m;
    tl_mps_layout(&m, ctl, root);
    tl_err err = {0};
    assert_int_equal(tl_mps_start(&m, &err), 0);
    assert_true(m.running);
    assert_true(tl_mps_count_processes(&m) >= 1);
    tl_mps_stop(&m);
    assert_false(m.running);
    assert_int_equal(tl_mps_count_processes(&m), 0); /* nothing of it left */
    struct stat st;
    assert_int_not_equal(stat(root, &st), 0);           /* its folders are gone */
    tl_mps_stop(&m);                                    /* twice is harmless */
}

static void test_mps_start_stop(void **state)
{
    (void)state;
    run_fake_daemon(false);
}

static void test_mps_stop_kills_stubborn_daemon(void **state)
{
    (void)state;
    run_fake_daemon(true);
}

static void test_mps_start_failure_message(void **state)
{
    (void)state;
    char ctl[160], root[200];
    snprintf(ctl, sizeof ctl, "%s/failing-control", tmpdir);
    FILE *f = fopen(ctl, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\nexit 3\n", f);
    fclose(f);
    chmod(ctl, 0755);
    snprintf(root, sizeof root, "%s/mps-fail", tmpdir);
    tl_mps m;
    tl_mps_layout(&m, ctl, root);
    tl_err err = {0};
    assert_int_equal(tl_mps_start(&m, &err), TL_ENODEV);
    assert_non_null(strstr(err.msg, "exit status 3"));
    assert_false(m.running);
}

/* ---- children and signals ---- */

static void test_procs_cleanup_kills_children(void **state)
{
    (void)state;
    pid_t kid = fork();
    assert_true(kid >= 0);
    if (kid == 0) {
        for (;;) pause();
    }
    tl_procs_add(kid);
    assert_int_equal(tl_procs_count(), 1);
    tl_procs_cleanup();
    assert_int_equal(tl_procs_count(), 0);
    assert_int_equal(kill(kid, 0), -1); /* reaped: no such process */
    assert_int_equal(errno, ESRCH);
}

/* SIGTERM to a process that installed the handlers: its registered child dies
 * with it. */
static void test_procs_signal_cleanup(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t helper = fork();
    assert_true(helper >= 0);
    if (helper == 0) {
        tl_procs_install();
        pid_t kid = fork();
        if (kid == 0) {
            for (;;) pause();
        }
        tl_procs_add(kid);
        ssize_t w = write(fds[1], &kid, sizeof kid);
        (void)w;
        raise(SIGTERM);
        _exit(99); /* not reached */
    }
    close(fds[1]);
    pid_t kid = 0;
    assert_int_equal(read(fds[0], &kid, sizeof kid), (ssize_t)sizeof kid);
    close(fds[0]);
    int st = 0;
    assert_int_equal(waitpid(helper, &st, 0), helper);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGTERM); /* re-raised after cleanup */
    assert_int_equal(kill(kid, 0), -1);
    assert_int_equal(errno, ESRCH);
}

/* ---- watchdog ---- */

static void test_watchdog_rule(void **state)
{
    (void)state;
    tl_ns s = TL_NS_PER_S;
    assert_false(tl_watchdog_expired(10 * s, 0, false, 5 * s)); /* nothing in flight */
    assert_false(tl_watchdog_expired(4 * s, 0, true, 5 * s));
    assert_false(tl_watchdog_expired(5 * s, 0, true, 5 * s));
    assert_true(tl_watchdog_expired(5 * s + 1, 0, true, 5 * s));
    assert_false(tl_watchdog_expired(100 * s, 0, true, 0)); /* disabled */
}

/* ---- GPU clock offset correction (clock_fix.c) ---- */

/* Host time = stamp - offset. Offset 1000 us here; every figure in ns. */
static void test_clock_offset_moves_both_ways(void **state)
{
    (void)state;
    const tl_ns off = 1000000, seen = 500000;
    /* kernels [100, 200] and [250, 400] us on the host clock, handed to the GPU
     * at 90 and 95 us, seen at 500 us: consistent, no move */
    tl_clock_sample k[3] = {
        {.start_gt = 1100000, .end_gt = 1200000, .submitted_ns = 90000},
        {.start_gt = 1250000, .end_gt = 1400000, .submitted_ns = 95000},
    };
    assert_int_equal(tl_clock_offset_move(k, 2, off, seen), 0);
    /* an end 3 us after the host saw it (the offset is too low): raise by the
     * largest excess */
    k[1].end_gt = 1503000;
    k[2] = (tl_clock_sample){.start_gt = 1300000, .end_gt = 1501000, .submitted_ns = 95000};
    assert_int_equal(tl_clock_offset_move(k, 3, off, seen), 3000);
    /* starts 7 and 12 us before their launch calls (the clocks drifted: the
     * offset is too high): lower by the largest shortfall */
    k[1].end_gt = 1400000;
    k[2] = (tl_clock_sample){.start_gt = 1083000, .end_gt = 1090000, .submitted_ns = 95000};
    k[0].submitted_ns = 107000;
    assert_int_equal(tl_clock_offset_move(k, 3, off, seen), -12000);
    /* both at once: the end bound wins (raising moves starts later as well) */
    k[1].end_gt = 1502000;
    assert_int_equal(tl_clock_offset_move(k, 3, off, seen), 2000);
    /* what bounds nothing: no end stamp, no start stamp, no submission time,
     * a discrepancy over 1 ms (not clock error) */
    tl_clock_sample odd[4] = {
        {.start_gt = 1100000, .end_gt = 0, .submitted_ns = 900000},
        {.start_gt = 0, .end_gt = 1200000, .submitted_ns = 900000},
        {.start_gt = 1100000, .end_gt = 1200000, .submitted_ns = 0},
        {.start_gt = 1100000, .end_gt = 2600000, .submitted_ns = 1200000},
    };
    assert_int_equal(tl_clock_offset_move(odd, 4, off, seen), 0);
    assert_int_equal(tl_clock_offset_move(odd, 0, off, seen), 0);
}

/* ---- context workers' messages (worker_ipc.c) ---- */

/* Two ends of a socket pair as a worker's parent side and the worker. */
static void worker_pair(tl_worker *parent, tl_worker *child)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
    memset(parent, 0, sizeof *parent);
    memset(child, 0, sizeof *child);
    parent->fd = sv[0];
    child->fd = sv[1];
}

static void worker_unpair(tl_worker *a, tl_worker *b)
{
    close(a->fd);
    close(b->fd);
    free(a->inbox);
    free(b->inbox);
}

/* A graph job's batch travels as GRAPH messages of up to TL_W_BULK launches
 * and completions come back in DONES messages: only the used entries travel,
 * and every entry arrives intact. */
static void test_worker_bulk_messages_keep_their_entries(void **state)
{
    (void)state;
    static tl_wmsg m, got;
    tl_worker parent, child;
    worker_pair(&parent, &child);
    memset(&m, 0, sizeof m);
    m.type = TL_W_GRAPH;
    m.stream = 2;
    m.n = 3;
    m.last = 1;
    for (uint32_t i = 0; i < m.n; i++) {
        m.u.node[i].id = 100 + i;
        m.u.node[i].launch.end = 1000 * (i + 1);
        m.u.node[i].launch.iters = 7;
    }
    /* header + 3 entries, not the whole struct */
    assert_int_equal(tl_wmsg_len(&m), offsetof(tl_wmsg, u) + 3 * sizeof m.u.node[0]);
    assert_true(tl_wmsg_len(&m) < sizeof m / 8);
    assert_int_equal(tl_worker_send(&parent, &m), 0);
    memset(&got, 0xff, sizeof got);
    assert_int_equal(tl_worker_recv(&child, &got), 1);
    assert_int_equal(got.type, TL_W_GRAPH);
    assert_int_equal(got.stream, 2);
    assert_int_equal(got.n, 3);
    assert_int_equal(got.last, 1);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(got.u.node[i].id, 100 + i);
        assert_int_equal(got.u.node[i].launch.end, 1000 * (i + 1));
        assert_int_equal(got.u.node[i].launch.iters, 7);
    }
    /* a full DONES message back */
    memset(&m, 0, sizeof m);
    m.type = TL_W_DONES;
    m.n = TL_W_BULK;
    for (uint32_t i = 0; i < m.n; i++) {
        m.u.done[i].id = i + 1;
        m.u.done[i].end_gt = 5000 + i;
    }
    assert_int_equal(tl_worker_send(&child, &m), 0);
    assert_int_equal(tl_worker_recv(&parent, &got), 1);
    assert_int_equal(got.type, TL_W_DONES);
    assert_int_equal(got.n, TL_W_BULK);
    assert_int_equal(got.u.done[TL_W_BULK - 1].id, TL_W_BULK);
    assert_int_equal(got.u.done[TL_W_BULK - 1].end_gt, 5000 + TL_W_BULK - 1);
    /* a header-only message is the header's length; nothing more waits */
    memset(&m, 0, offsetof(tl_wmsg, u));
    m.type = TL_W_RETREAT;
    m.id = 9;
    assert_int_equal(tl_wmsg_len(&m), offsetof(tl_wmsg, u));
    assert_int_equal(tl_worker_send(&parent, &m), 0);
    assert_int_equal(tl_worker_recv(&child, &got), 1);
    assert_int_equal(got.type, TL_W_RETREAT);
    assert_int_equal(got.id, 9);
    assert_int_equal(tl_worker_recv(&child, &got), 0);
    worker_unpair(&parent, &child);
}

/* More entries than a message holds is refused, not sent cut; a message whose
 * length does not match its type and count is dropped by the receiver, and
 * the next good one still arrives. */
static void test_worker_malformed_messages_are_refused_or_dropped(void **state)
{
    (void)state;
    static tl_wmsg m, got;
    tl_worker parent, child;
    worker_pair(&parent, &child);
    memset(&m, 0, sizeof m);
    m.type = TL_W_DONES;
    m.n = TL_W_BULK + 1;
    assert_int_equal(tl_wmsg_len(&m), 0);
    assert_int_equal(tl_worker_send(&child, &m), TL_EINVAL);
    /* a DONES claiming 5 entries with only 2 sent: dropped */
    m.n = 5;
    ssize_t cut = (ssize_t)(offsetof(tl_wmsg, u) + 2 * sizeof m.u.done[0]);
    assert_int_equal(send(child.fd, &m, (size_t)cut, 0), cut);
    /* a stub shorter than the header: dropped */
    assert_int_equal(send(child.fd, &m, 8, 0), 8);
    m.n = 1;
    m.u.done[0].id = 77;
    assert_int_equal(tl_worker_send(&child, &m), 0);
    assert_int_equal(tl_worker_recv(&parent, &got), 1);
    assert_int_equal(got.n, 1);
    assert_int_equal(got.u.done[0].id, 77);
    assert_int_equal(tl_worker_recv(&parent, &got), 0);
    /* the other end gone: an error, not a message */
    close(child.fd);
    child.fd = -1;
    assert_true(tl_worker_recv(&parent, &got) < 0);
    close(parent.fd);
}

/* A process whose GPU work never completes is ended with status 70 (and its
 * children with it). */
static void test_watchdog_ends_hung_run(void **state)
{
    (void)state;
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        alarm(20); /* belt and braces: never hang the test suite */
        tl_watchdog *w;
        tl_err err = {0};
        if (tl_watchdog_start(&w, 100 * TL_NS_PER_MS, &err) < 0) _exit(1);
        tl_watchdog_kick(w, true); /* work in flight ... that never completes */
        for (;;) pause();
    }
    int st = 0;
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 70);
}

/* ---- tally-run ---- */

static int run_tally(const char *args, char *out, size_t cap)
{
    const char *build = getenv("TALLY_BUILD") ? getenv("TALLY_BUILD") : "build";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "ASAN_OPTIONS=detect_leaks=0:protect_shadow_gap=0 %s/tally-run %s 2>&1", build, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool have_tally_run(void)
{
    const char *build = getenv("TALLY_BUILD") ? getenv("TALLY_BUILD") : "build";
    char path[256];
    snprintf(path, sizeof path, "%s/tally-run", build);
    return access(path, X_OK) == 0;
}

static bool machine_has_gpu(void) { return access("/proc/driver/nvidia/version", F_OK) == 0; }

static void test_tally_run_refuses_without_gpu(void **state)
{
    (void)state;
    if (!have_tally_run()) {
        print_message("tally-run not built here (no nvcc): skipped\n");
        skip();
    }
    if (machine_has_gpu()) {
        print_message("this machine has an NVIDIA driver: the no-GPU refusal is not testable here\n");
        skip();
    }
    char out[4096];
    int st = run_tally("info", out, sizeof out);
    assert_int_equal(st, 69); /* EX_UNAVAILABLE */
    assert_non_null(strstr(out, "no usable GPU"));
    st = run_tally("run -J trace=traces/bundled/h100/vit_b16_infer_b1.json.gz,role=inference,load=0.5 "
                   "-p priority-streams -t 1", out, sizeof out);
    assert_int_equal(st, 69);
    assert_non_null(strstr(out, "no usable GPU"));
    /* --keep-context is an option of run (not a usage error) */
    st = run_tally("run --keep-context -J trace=traces/bundled/h100/vit_b16_infer_b1.json.gz,role=training "
                   "-p mps -t 1", out, sizeof out);
    assert_int_equal(st, 69);
    /* the spec is read first: its mistakes are reported without a GPU */
    st = run_tally("run -J trace=traces/bundled/h100/vit_b16_infer_b1.json.gz,role=training -p nope -t 1", out,
                   sizeof out);
    assert_int_equal(st, 64);
    assert_non_null(strstr(out, "unknown policy 'nope'"));
    st = run_tally("run -J trace=traces/bundled/h100/vit_b16_infer_b1.json.gz -p mps -t 1", out, sizeof out);
    assert_int_equal(st, 64); /* the option's mistake: it exited 65, "missing 'role'" */
    assert_non_null(strstr(out, "no role=inference or role=training"));
}

/* The inputs are checked before the GPU is looked for: on a machine without
 * one, a missing trace said "no usable GPU" (69), not that the trace is
 * missing (66). Holds with or without a GPU. */
static void test_tally_run_inputs_before_gpu(void **state)
{
    (void)state;
    if (!have_tally_run()) {
        print_message("tally-run not built here (no nvcc): skipped\n");
        skip();
    }
    char out[4096], args[512], bad[256];
    const char *missing = "/nonexistent-tally-trace.json.gz";
    snprintf(args, sizeof args, "run -J trace=%s,role=training -p mps -t 1", missing);
    assert_int_equal(run_tally(args, out, sizeof out), 66); /* EX_NOINPUT */
    assert_non_null(strstr(out, missing));
    assert_null(strstr(out, "no usable GPU"));
    snprintf(args, sizeof args, "fidelity traces/bundled/h100/vit_b16_infer_b1.json.gz %s", missing);
    assert_int_equal(run_tally(args, out, sizeof out), 66);
    assert_non_null(strstr(out, missing));
    snprintf(args, sizeof args, "calibrate %s", missing);
    assert_int_equal(run_tally(args, out, sizeof out), 66);
    assert_non_null(strstr(out, missing));
    /* a trace that is not one: a data error (65) */
    snprintf(bad, sizeof bad, "%s/not-a-trace.json", tmpdir);
    FILE *f = fopen(bad, "w");
    assert_non_null(f);
    fputs("{", f);
    fclose(f);
    snprintf(args, sizeof args, "fidelity %s", bad);
    assert_int_equal(run_tally(args, out, sizeof out), 65); /* EX_DATAERR */
    snprintf(args, sizeof args, "run -J trace=%s,role=training -p mps -t 1", bad);
    assert_int_equal(run_tally(args, out, sizeof out), 65);
    /* no trace at all is the usage's mistake */
    assert_int_equal(run_tally("fidelity", out, sizeof out), 64);
    assert_non_null(strstr(out, "give at least one trace"));
}

static void test_tally_run_usage(void **state)
{
    (void)state;
    if (!have_tally_run()) skip();
    char out[8192];
    assert_int_equal(run_tally("--help", out, sizeof out), 0);
    assert_non_null(strstr(out, "Usage: tally-run"));
    assert_non_null(strstr(out, "--keep-context"));
    assert_int_equal(run_tally("frobnicate", out, sizeof out), 64);
    assert_non_null(strstr(out, "unknown command"));
    assert_int_equal(run_tally("--calib-tol 3", out, sizeof out), 64);
    /* crowding: in the usage; its fit comes with the measurement only */
    assert_int_equal(run_tally("--help", out, sizeof out), 0);
    assert_non_null(strstr(out, "tally-run crowding"));
    assert_int_equal(run_tally("crowding --fit x.csv", out, sizeof out), 64);
    assert_non_null(strstr(out, "--fit is not supported"));
    assert_int_equal(run_tally("crowding extra", out, sizeof out), 64);
    /* jitter needs no GPU; its bad values are usage errors */
    assert_int_equal(run_tally("jitter -q -t 0.02", out, sizeof out), 0);
    assert_non_null(strstr(out, "host jitter: spin"));
    assert_non_null(strstr(out, "context switches"));
    assert_int_equal(run_tally("jitter -q -t 0.02 --sleep-us 500", out, sizeof out), 0);
    assert_non_null(strstr(out, "oversleep: p50"));
    assert_int_equal(run_tally("jitter -t 0", out, sizeof out), 64);
    assert_non_null(strstr(out, "--duration 0"));
    assert_int_equal(run_tally("jitter --sleep-us -5", out, sizeof out), 64);
    assert_int_equal(run_tally("jitter --timer-slack-ns 0", out, sizeof out), 64);
    assert_int_equal(run_tally("jitter extra", out, sizeof out), 64);
    /* --csv in folders not there yet: made, as for the results database; one
     * under a file cannot be: exit 73 naming it */
    char args[600], csv[400];
    snprintf(csv, sizeof csv, "%s/jnew/sub/j.csv", tmpdir);
    snprintf(args, sizeof args, "jitter -q -t 0.02 --csv %s", csv);
    assert_int_equal(run_tally(args, out, sizeof out), 0);
    assert_int_equal(access(csv, F_OK), 0);
    snprintf(args, sizeof args, "jitter -q -t 0.02 --csv %s/x/j.csv", csv);
    assert_int_equal(run_tally(args, out, sizeof out), 73); /* EX_CANTCREAT */
    assert_non_null(strstr(out, "j.csv/x: cannot create folder"));
    /* the carveout diagnostic's value is checked before any GPU work */
    assert_int_not_equal(run_tally("info", out, sizeof out), 64);
    setenv("TALLY_SYNTH_CARVEOUT", "150", 1);
    assert_int_equal(run_tally("info", out, sizeof out), 64);
    assert_non_null(strstr(out, "TALLY_SYNTH_CARVEOUT='150'"));
    setenv("TALLY_SYNTH_CARVEOUT", "5x", 1);
    assert_int_equal(run_tally("info", out, sizeof out), 64);
    unsetenv("TALLY_SYNTH_CARVEOUT");
    /* so is the block trace's */
    setenv("TALLY_BLOCK_TRACE", tmpdir, 1);
    setenv("TALLY_BLOCK_TRACE_MAX", "0", 1);
    assert_int_equal(run_tally("info", out, sizeof out), 64);
    assert_non_null(strstr(out, "TALLY_BLOCK_TRACE_MAX='0'"));
    unsetenv("TALLY_BLOCK_TRACE_MAX");
    char btdir[600];
    snprintf(btdir, sizeof btdir, "%s/x", csv); /* under the file j.csv */
    setenv("TALLY_BLOCK_TRACE", btdir, 1);
    assert_int_equal(run_tally("info", out, sizeof out), 73);
    assert_non_null(strstr(out, "TALLY_BLOCK_TRACE: "));
    assert_non_null(strstr(out, "j.csv/x: cannot create folder"));
    unsetenv("TALLY_BLOCK_TRACE");
}

/* The host-stall probe: its counts agree with its own CSV, sleeps are counted
 * as oversleeps, and bad arguments are refused by name. */
static void test_host_jitter(void **state)
{
    (void)state;
    tl_err err = {0};
    tl_jitter_result j;
    char path[] = "/tmp/tally_jitter_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *csv = fdopen(fd, "w+");
    /* spin 30 ms; a threshold of 1 ns makes every read after the first a stall */
    assert_int_equal(tl_host_jitter(30 * TL_NS_PER_MS, 0, 1, csv, &j, &err), 0);
    assert_true(j.duration_ns >= 30 * TL_NS_PER_MS);
    assert_true(j.reads > 10);
    assert_true(j.stalls <= j.reads);
    assert_true(j.max_ns >= 0 && j.max_at_ns >= j.start_ns);
    assert_true(j.stalled_ns <= j.duration_ns);
    assert_true(j.over_1ms >= j.over_10ms && j.over_100us >= j.over_1ms && j.stalls >= j.over_100us);
    rewind(csv);
    char line[128];
    assert_non_null(fgets(line, sizeof line, csv));
    assert_string_equal(line, "start_mono_ns,gap_ns\n");
    uint64_t lines = 0;
    long long at, gap, total = 0;
    while (fgets(line, sizeof line, csv)) {
        assert_int_equal(sscanf(line, "%lld,%lld", &at, &gap), 2);
        assert_true(at >= j.start_ns && gap >= 1);
        total += gap;
        lines++;
    }
    assert_true(lines == j.stalls);
    assert_true(total == j.stalled_ns);
    fclose(csv);
    unlink(path);
    /* sleep 2 ms at a time for 20 ms: 10 sleeps or fewer, each an oversleep >= 0 */
    assert_int_equal(tl_host_jitter(20 * TL_NS_PER_MS, 2 * TL_NS_PER_MS, 10 * TL_NS_PER_US, NULL, &j, &err), 0);
    assert_true(j.reads >= 1 && j.reads <= 10);
    assert_true(j.sleep_p50_ns >= 0 && j.sleep_p50_ns <= j.sleep_p99_ns && j.sleep_p99_ns <= j.max_ns);
    assert_true(j.duration_ns >= (tl_ns)j.reads * 2 * TL_NS_PER_MS);
    assert_int_equal(j.nvcsw >= 1, 1); /* a sleep gives the CPU up */
    /* refused */
    assert_int_equal(tl_host_jitter(0, 0, 1, NULL, &j, &err), TL_EINVAL);
    assert_non_null(strstr(err.msg, "duration"));
    assert_int_equal(tl_host_jitter(TL_JITTER_MAX_DURATION_NS + 1, 0, 1, NULL, &j, &err), TL_EINVAL);
    assert_int_equal(tl_host_jitter(TL_NS_PER_MS, -1, 1, NULL, &j, &err), TL_EINVAL);
    assert_non_null(strstr(err.msg, "sleep"));
    assert_int_equal(tl_host_jitter(TL_NS_PER_MS, 0, 0, NULL, &j, &err), TL_EINVAL);
    assert_non_null(strstr(err.msg, "threshold"));
}

/* The clock summary over a window: a dip of two samples under 90% of the
 * window's highest SM clock (from its first sample to the first one back), the
 * idle reason left out, samples outside the window ignored; an empty window. */
static void test_gpu_clock_summary(void **state)
{
    (void)state;
    tl_gpu_sample s[8] = {
        {0, 1000, 2600, 0, 500000, 50},                     /* before the window */
        {10, 1980, 2619, 0x1, 300000, 40},
        {20, 1980, 2619, 0, 600000, 45},
        {30, 1200, 2619, 0x4, 700000, 47},                  /* dip: software power cap */
        {40, 1700, 2619, 0x4, 690000, 48},                  /* still under 1782 */
        {50, 1980, 2619, 0, 650000, 46},                    /* back: the dip lasted 20 */
        {60, 1980, 2619, 0, 640000, 46},
        {70, 900, 1000, 0x8, 100000, 90},                   /* after the window */
    };
    tl_gpu_clock_summary g;
    tl_gpu_clock_summarize(s, 8, 10, 60, &g);
    assert_int_equal(g.samples, 6);
    assert_int_equal(g.sm_min_mhz, 1200);
    assert_int_equal(g.sm_max_mhz, 1980);
    assert_int_equal(g.mem_min_mhz, 2619);
    assert_float_equal(g.sm_mean_mhz, (1980 * 4 + 1200 + 1700) / 6.0, 1e-9);
    assert_int_equal(g.reasons, 0x4);
    assert_int_equal(g.power_max_mw, 700000);
    assert_int_equal(g.temp_max_c, 48);
    assert_int_equal(g.dip_samples, 2);
    assert_int_equal(g.dip_longest_ns, 20);
    /* a dip that lasts to the window's end counts to its last sample */
    tl_gpu_clock_summarize(s, 8, 10, 40, &g);
    assert_int_equal(g.dip_samples, 2);
    assert_int_equal(g.dip_longest_ns, 10);
    tl_gpu_clock_summarize(s, 8, 100, 200, &g);
    assert_int_equal(g.samples, 0);
    assert_int_equal(g.dip_samples, 0);
    /* without NVML the sampler refuses by name; with it, it samples */
    tl_gpu_sampler *gs;
    tl_err err = {0};
    int r = tl_gpu_sampler_start(&gs, NULL, 0, 0, &err);
    assert_int_equal(r, TL_EINVAL);
    r = tl_gpu_sampler_start(&gs, NULL, 0, 5 * TL_NS_PER_MS, &err);
    if (r == TL_ENODEV) {
        assert_null(gs);
        assert_non_null(strstr(err.msg, "GPU sampler"));
        print_message("no NVML GPU here (%s): the sampler's reads are not tested\n", err.msg);
        return;
    }
    assert_int_equal(r, 0);
    struct timespec ts = {0, 30 * 1000000L};
    nanosleep(&ts, NULL);
    tl_gpu_sample *got;
    size_t n;
    tl_gpu_sampler_stop(gs, &got, &n);
    assert_true(n >= 2 && got[0].sm_mhz > 0);
    free(got);
}

static void test_gpu_selftest(void **state)
{
    (void)state;
    if (!have_tally_run()) {
        print_message("tally-run not built here (no nvcc): GPU tests skipped\n");
        skip();
    }
    if (!machine_has_gpu()) {
        print_message("no NVIDIA GPU on this machine: GPU tests skipped\n");
        skip();
    }
    static char out[16384];
    char args[256];
    snprintf(args, sizeof args, "selftest --calib-db %s/selftest-calib.sqlite", tmpdir);
    int st = run_tally(args, out, sizeof out);
    print_message("%s", out);
    if (st == 69) {
        print_message("tally-run found no usable GPU: GPU tests skipped\n");
        skip();
    }
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "ALL CHECKS PASSED"));
}

/* tl_calib_proportional (tally-run contention, crowding): a probe whose time
 * is 100 ns a unit plus 5 us converges within 3% of 1 ms; a failing probe's
 * error comes back. */
static int linear_probe(void *arg, uint32_t iters, double *ns, tl_err *err)
{
    int *calls = arg;
    (*calls)++;
    if (*calls > 100)
        return tl_errf(err, TL_EIO, "probe failed");
    *ns = 100.0 * iters + 5000.0;
    return 0;
}

static void test_calib_proportional(void **state)
{
    (void)state;
    int calls = 0;
    uint32_t it = 0;
    double got = 0;
    tl_err err = {0};
    assert_int_equal(tl_calib_proportional(linear_probe, &calls, 1 * TL_NS_PER_MS, &it, &got, &err), 0);
    assert_true(fabs(got / 1e6 - 1) < 0.03);
    assert_float_equal(got, 100.0 * it + 5000.0, 1e-9);
    assert_true(calls >= 2 && calls <= 8);
    calls = 100;
    assert_int_equal(tl_calib_proportional(linear_probe, &calls, 1 * TL_NS_PER_MS, &it, &got, &err),
                     TL_EIO);
    assert_non_null(strstr(err.msg, "probe failed"));
}

/* ---- crowding fit (tally-run crowding's block times) ---- */

/* The H100's compute points of experiments/results/hw/session13/crowding/
 * crowding.csv (tally-run crowding, session 13): the fit is the simulator's
 * crowding_warps, 4.74. Points made by the rule itself give their ws back;
 * a kind without points gets 0; bad points are refused by index. */
static void test_crowding_fit(void **state)
{
    (void)state;
    const tl_crowding_point h100[] = {
        {TL_KIND_COMPUTE, 2, 32, 1, 1, 1.000},  {TL_KIND_COMPUTE, 2, 32, 1, 2, 1.000},
        {TL_KIND_COMPUTE, 2, 32, 1, 4, 1.677},  {TL_KIND_COMPUTE, 2, 32, 1, 8, 3.364},
        {TL_KIND_COMPUTE, 2, 32, 1, 16, 6.741}, {TL_KIND_COMPUTE, 2, 32, 1, 32, 13.494},
        {TL_KIND_COMPUTE, 8, 8, 1, 1, 1.000},   {TL_KIND_COMPUTE, 8, 8, 1, 2, 2.003},
        {TL_KIND_COMPUTE, 8, 8, 1, 4, 3.999},   {TL_KIND_COMPUTE, 8, 8, 1, 8, 7.993}};
    tl_crowding_result r;
    tl_err err = {0};
    assert_int_equal(tl_crowding_fit(h100, 10, &r, &err), 0);
    assert_float_equal(r.ws[TL_KIND_COMPUTE], 4.74, 0.005);
    assert_true(r.rmse[TL_KIND_COMPUTE] < 0.01);
    assert_int_equal(r.n[TL_KIND_COMPUTE], 10);
    assert_int_equal(r.n[TL_KIND_MEMORY], 0);
    assert_float_equal(r.ws[TL_KIND_MEMORY], 0, 0);
    tl_crowding_point p[6];
    for (int i = 0; i < 6; i++) {
        int k = 1 << i;
        p[i] = (tl_crowding_point){TL_KIND_MEMORY, 2, 32, 1, k, tl_sim_crowding(9.5, 2, 1, k)};
    }
    assert_int_equal(tl_crowding_fit(p, 6, &r, &err), 0);
    assert_float_equal(r.ws[TL_KIND_MEMORY], 9.5, 1e-9);
    p[4].k = 64; /* more blocks than the occupancy */
    assert_int_equal(tl_crowding_fit(p, 6, &r, &err), TL_EINVAL);
    assert_non_null(strstr(err.msg, "point 4"));
    p[4].k = 16;
    p[2].ratio = 0;
    assert_int_equal(tl_crowding_fit(p, 6, &r, &err), TL_EINVAL);
    assert_int_equal(tl_crowding_fit(p, 0, &r, &err), TL_EINVAL);
}

/* ---- contention fit (the simulator's formula fitted to co-run slowdowns) ---- */

static void test_contention_fit_recovers_parameters(void **state)
{
    (void)state;
    /* points made by the formula itself, one of them beyond the cap */
    const double alpha = 1.7, cap = 2.2;
    tl_contention_point p[8];
    const double fs[8] = {0.125, 0.25, 0.5, 0.75, 0.125, 0.25, 0.5, 0.75};
    for (int i = 0; i < 8; i++)
        p[i] = (tl_contention_point){i % 2, (i / 2) % 2, 0.125, fs[i], tl_contention_threads_slowdown(alpha, cap, fs[i])};
    tl_contention_result r;
    tl_err err = {0};
    assert_int_equal(tl_contention_fit(p, 8, &r, &err), 0);
    assert_float_equal(r.alpha, alpha, 0.0011);
    assert_float_equal(r.max_slowdown, cap, 0.0011);
    assert_true(r.capped);
    assert_true(r.rmse < 1e-3);
    /* no point reaches a cap: none is invented (cap = 1 + alpha, "no cap") */
    for (int i = 0; i < 8; i++)
        p[i].slowdown = 1 + 0.8 * p[i].f;
    assert_int_equal(tl_contention_fit(p, 8, &r, &err), 0);
    assert_float_equal(r.alpha, 0.8, 0.0011);
    assert_false(r.capped);
    assert_float_equal(r.max_slowdown, 1 + r.alpha, 1e-9);
    /* no slowdown at all */
    for (int i = 0; i < 8; i++)
        p[i].slowdown = 1.0;
    assert_int_equal(tl_contention_fit(p, 8, &r, &err), 0);
    assert_float_equal(r.alpha, 0, 1e-9);
    assert_float_equal(tl_contention_threads_slowdown(0.5, 2.0, 0), 1.0, 0);
    assert_float_equal(tl_contention_threads_slowdown(0.5, 1.1, 1.0), 1.1, 0);
    /* bad input */
    assert_int_equal(tl_contention_fit(p, 1, &r, &err), TL_EMISSING);
    p[3].f = 1.5;
    assert_int_equal(tl_contention_fit(p, 8, &r, &err), TL_ERANGE);
    assert_non_null(strstr(err.msg, "point 3"));
}

/* The KINDS fit recovers known parameters: memory-memory points made from
 * 1 + 2 f^1.5 / fs^0.5 on a grid of shares, and starved points whose victim
 * (2 ms alone) did 0.01, 0.02 and 0.04 of the other's 20 ms co-run of work
 * beside it: median 0.02. Fewer than 3 memory points is an error. */
static void test_contention_fit_kinds(void **state)
{
    (void)state;
    tl_contention_point p[16];
    int n = 0;
    double fs[] = {0.125, 0.25, 0.5}, fo[] = {0.125, 0.25, 0.5};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            p[n++] = (tl_contention_point){TL_KIND_MEMORY, TL_KIND_MEMORY, fs[i], fo[j],
                                           1 + 2 * pow(fo[j], 1.5) / pow(fs[i], 0.5)};
    double done[] = {0.01, 0.02, 0.04};
    for (int i = 0; i < 3; i++) {
        double solo = 2e6, other = 20e6, corun = other + solo - done[i] * other;
        p[n++] = (tl_contention_point){TL_KIND_COMPUTE, TL_KIND_COMPUTE, 0.125, 0.125, corun / solo,
                                       false, true, solo, corun, other};
    }
    tl_contention_kinds_result r;
    tl_err err = {0};
    assert_int_equal(tl_contention_fit_kinds(p, n, &r, &err), 0);
    assert_float_equal(r.mem_p, 1.5, 1e-9);
    assert_float_equal(r.mem_q, 0.5, 1e-9);
    assert_float_equal(r.mem_alpha, 2.0, 1e-9);
    assert_true(r.rmse < 1e-9);
    assert_int_equal(r.n_mem, 9);
    assert_int_equal(r.n_starved, 3);
    assert_float_equal(r.starved_rate, 0.02, 1e-9);
    assert_int_equal(tl_contention_fit_kinds(p + 7, n - 7, &r, &err), TL_EMISSING);
    assert_non_null(strstr(err.msg, "memory-memory"));
}

static void test_contention_csv(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof path, "%s/contention.csv", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "# comment\n"
               "victim_kind,victim_threads_per_sm,f_self,other_kind,other_threads_per_sm,f_other,"
               "victim_order,solo_ns,corun_ns,slowdown,other_solo_ns,other_corun_ns,overlap,"
               "victim_iters,other_iters\n"
               "compute,256,0.125,memory,1024,0.5,second,2000000,2200000,1.1,20000000,20000000,1.000,10,20\n"
               "memory,512,0.25,compute,256,0.125,first,2000000,2100000,1.05,20000000,20000000,1.000,10,20\n"
               "memory,256,0.125,memory,256,0.125,second,2000000,2400000,1.2,20000000,20000000,1.000,10,20\n"
               /* made no progress until the other ended: serialized */
               "compute,256,0.125,compute,256,0.125,second,2000000,21000000,10.5,20000000,20000000,0.950,10,20\n");
    fclose(f);
    tl_contention_point *p;
    int n;
    tl_err err = {0};
    assert_int_equal(tl_contention_read_csv(path, &p, &n, &err), 0);
    assert_int_equal(n, 4);
    assert_int_equal(p[0].kind, TL_KIND_COMPUTE);
    assert_int_equal(p[0].other_kind, TL_KIND_MEMORY);
    assert_float_equal(p[0].f, 0.5, 0);
    assert_false(p[0].older);
    assert_true(p[1].older);
    assert_float_equal(p[1].f_self, 0.25, 0);
    assert_float_equal(p[1].slowdown, 1.05, 0);
    assert_false(p[2].serialized);
    assert_true(p[3].serialized);
    /* the rule: the victim outlasted 90% of the other's solo time, whatever the order */
    assert_true(tl_contention_serialized(18e6, 20e6));
    assert_false(tl_contention_serialized(17e6, 20e6));
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    tl_contention_result r;
    assert_int_equal(tl_contention_report(mem, p, n, &r, &err), 0);
    fclose(mem);
    assert_int_equal(r.n, 3); /* the serialized point is left out */
    assert_non_null(strstr(buf, "4 points, 1 serialized"));
    assert_non_null(strstr(buf, "compute   0.125 memory    0.500 second     1.100"));
    assert_non_null(strstr(buf, "10.500"));
    assert_non_null(strstr(buf, "serialized\n"));
    free(buf);
    free(p);
    /* a line that is not a measurement names its line */
    f = fopen(path, "a");
    fprintf(f, "compute,256,oops\n");
    fclose(f);
    assert_int_equal(tl_contention_read_csv(path, &p, &n, &err), TL_EFORMAT);
    assert_non_null(strstr(err.msg, ":7:"));
    assert_null(p);
    /* a header without a needed column */
    f = fopen(path, "w");
    fprintf(f, "victim_kind,f_self\ncompute,0.5\n");
    fclose(f);
    assert_int_equal(tl_contention_read_csv(path, &p, &n, &err), TL_EFORMAT);
    assert_non_null(strstr(err.msg, "other_kind"));
    snprintf(path, sizeof path, "%s/no-such.csv", tmpdir);
    assert_int_equal(tl_contention_read_csv(path, &p, &n, &err), TL_EIO);
}

/* TALLY_BLOCK_TRACE's host side: its variables (defaults, bad values named),
 * the window rule (launches enqueued inside the first window_us of every
 * period are traced, until the records run out), and the CSV the GPU's
 * records become (a block never written is left out). */
static void test_block_trace(void **state)
{
    (void)state;
    tl_btrace_conf c;
    char msg[256];
    unsetenv("TALLY_BLOCK_TRACE");
    assert_int_equal(tl_btrace_env(&c, msg, sizeof msg), 0);
    setenv("TALLY_BLOCK_TRACE", tmpdir, 1);
    assert_int_equal(tl_btrace_env(&c, msg, sizeof msg), 1);
    assert_int_equal(c.max_records, 4194304);
    assert_int_equal(c.window_ns, 5000000);
    assert_int_equal(c.period_ns, 250000000);
    setenv("TALLY_BLOCK_TRACE_WINDOW_US", "+5", 1);
    assert_int_equal(tl_btrace_env(&c, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "TALLY_BLOCK_TRACE_WINDOW_US='+5'"));
    setenv("TALLY_BLOCK_TRACE_WINDOW_US", "3000", 1);
    setenv("TALLY_BLOCK_TRACE_PERIOD_MS", "2", 1);
    assert_int_equal(tl_btrace_env(&c, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "longer than TALLY_BLOCK_TRACE_PERIOD_MS=2"));
    setenv("TALLY_BLOCK_TRACE_WINDOW_US", "1000", 1);
    setenv("TALLY_BLOCK_TRACE_PERIOD_MS", "10", 1);
    setenv("TALLY_BLOCK_TRACE_MAX", "10", 1);
    assert_int_equal(tl_btrace_env(&c, msg, sizeof msg), 1);
    unsetenv("TALLY_BLOCK_TRACE_WINDOW_US");
    unsetenv("TALLY_BLOCK_TRACE_PERIOD_MS");
    unsetenv("TALLY_BLOCK_TRACE_MAX");

    tl_btrace b;
    tl_btrace_init(&b, &c);
    tl_btrace_launch l = {.kind = 1, .variant = 2, .threads = 256, .iters = 7, .grid = 4, .begin = 100};
    assert_int_equal(tl_btrace_claim(&b, &l, 20000000 + 999999), 0);   /* inside: 0.999 ms into a period */
    assert_int_equal(tl_btrace_claim(&b, &l, 20000000 + 1000000), -1); /* the window's end: outside */
    assert_int_equal(tl_btrace_claim(&b, &l, 35000000), -1);
    assert_int_equal(tl_btrace_claim(&b, &l, 40000000), 4);
    assert_int_equal(tl_btrace_claim(&b, &l, 40000001), -1); /* 8 used of 10: no room for 4 more */
    assert_int_equal(b.skipped, 1);
    l.grid = 2;
    l.workers = 2;
    assert_int_equal(tl_btrace_claim(&b, &l, 40000002), 8);
    assert_int_equal(b.n, 3);
    assert_int_equal(b.used, 10);

    tl_block_rec recs[10];
    memset(recs, 0, sizeof recs);
    for (int i = 0; i < 10; i++) recs[i] = (tl_block_rec){.start_gt = 1000 + i, .dur_ns = 50 + i, .sm = 131 - i};
    recs[5].start_gt = 0; /* launch 1's block 1 never ran */
    recs[9].dur_ns = 0xffffffffu;
    char path[600];
    snprintf(path, sizeof path, "%s/bt.csv", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(tl_btrace_write_csv(&b, recs, f), 0);
    fclose(f);
    char buf[4096];
    f = fopen(path, "r");
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_string_equal(buf,
        "launch,kind,variant,threads,smem,iters,grid,begin,workers,enqueue_ns,block,sm,start_gt,dur_ns\n"
        "0,1,2,256,0,7,4,100,0,20999999,0,131,1000,50\n"
        "0,1,2,256,0,7,4,100,0,20999999,1,130,1001,51\n"
        "0,1,2,256,0,7,4,100,0,20999999,2,129,1002,52\n"
        "0,1,2,256,0,7,4,100,0,20999999,3,128,1003,53\n"
        "1,1,2,256,0,7,4,100,0,40000000,0,127,1004,54\n"
        "1,1,2,256,0,7,4,100,0,40000000,2,125,1006,56\n"
        "1,1,2,256,0,7,4,100,0,40000000,3,124,1007,57\n"
        "2,1,2,256,0,7,2,100,2,40000002,0,123,1008,58\n"
        "2,1,2,256,0,7,2,100,2,40000002,1,122,1009,4294967295\n");

    /* saved under folders not made yet, named by run, process and instance */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/bt/deep", tmpdir);
    b.conf.dir = dir;
    setenv("TALLY_BLOCK_TRACE_RUN", "7", 1);
    assert_int_equal(tl_btrace_save(&b, recs), 0);
    char want[700];
    tl_btrace_path(&b, want, sizeof want); /* the next instance's name */
    char *k = strrchr(want, '-');
    assert_non_null(k);
    strcpy(k, "-1.csv"); /* this process's first */
    snprintf(path, sizeof path, "%s/bt/deep/blocks-run7-pid%ld-", tmpdir, (long)getpid());
    assert_int_equal(strncmp(want, path, strlen(path)), 0);
    f = fopen(want, "r");
    assert_non_null(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "2,1,2,256,0,7,2,100,2,40000002,1,122,1009,4294967295\n"));
    /* a folder that cannot be made: -1, nothing written */
    snprintf(dir, sizeof dir, "%s/bt.csv/x", tmpdir);
    assert_int_equal(tl_btrace_save(&b, recs), -1);
    unsetenv("TALLY_BLOCK_TRACE_RUN");
    unsetenv("TALLY_BLOCK_TRACE");
    tl_btrace_close(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kind_rule_names),
        cmocka_unit_test(test_kind_rule_bundled_trace),
        cmocka_unit_test(test_pick_variant),
        cmocka_unit_test(test_curve_add_sorted),
        cmocka_unit_test(test_calib_converges),
        cmocka_unit_test(test_calib_below_floor_and_reuse),
        cmocka_unit_test(test_median),
        cmocka_unit_test(test_gap_summarize),
        cmocka_unit_test(test_host_jitter),
        cmocka_unit_test(test_gpu_clock_summary),
        cmocka_unit_test(test_calib_db_roundtrip),
        cmocka_unit_test(test_calib_db_node_key),
        cmocka_unit_test(test_calib_db_bad_path),
        cmocka_unit_test(test_calib_default_path),
        cmocka_unit_test(test_mps_command_lines),
        cmocka_unit_test(test_mps_find_control_missing),
        cmocka_unit_test(test_mps_start_stop),
        cmocka_unit_test(test_mps_stop_kills_stubborn_daemon),
        cmocka_unit_test(test_mps_start_failure_message),
        cmocka_unit_test(test_procs_cleanup_kills_children),
        cmocka_unit_test(test_procs_signal_cleanup),
        cmocka_unit_test(test_watchdog_rule),
        cmocka_unit_test(test_contention_fit_recovers_parameters),
        cmocka_unit_test(test_crowding_fit),
        cmocka_unit_test(test_calib_proportional),
        cmocka_unit_test(test_contention_fit_kinds),
        cmocka_unit_test(test_contention_csv),
        cmocka_unit_test(test_clock_offset_moves_both_ways),
        cmocka_unit_test(test_block_trace),
        cmocka_unit_test(test_worker_bulk_messages_keep_their_entries),
        cmocka_unit_test(test_worker_malformed_messages_are_refused_or_dropped),
        cmocka_unit_test(test_watchdog_ends_hung_run),
        cmocka_unit_test(test_tally_run_refuses_without_gpu),
        cmocka_unit_test(test_tally_run_inputs_before_gpu),
        cmocka_unit_test(test_tally_run_usage),
        cmocka_unit_test(test_gpu_selftest),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
