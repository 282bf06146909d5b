/* tally-trace (traces/tracer/): the CUPTI injection tracer and its command.
 *
 * Everywhere: the command's usage and exit codes, a program that never
 * touches CUDA (no file, a message), and the committed capture of the test
 * program (traces/captured/testprog_steps.*), checked field by field against
 * the manifest the program printed while it was traced, then loaded with
 * tl_trace_load like the committed PyTorch traces.
 *
 * The lite host timeline (the default --host-timeline) without a GPU: the
 * tracer's reconstruction (traces/tracer/lite.c) and writer run on records
 * made up like CUPTI's for the test program's steps, and what they write is
 * checked call by call and loaded and replayed like a captured trace.
 *
 * Where a GPU is present (CUDA driver loads and sees a device): the test
 * program runs under the tracer again and every field is checked live, in
 * the lite mode (with both sources of synchronization records: launches at
 * their queued time, before their GPU start; waits that end after what they
 * waited for) and in the full mode, plus start/stop windows, crash and
 * SIGTERM (a valid file marked truncated), cudaDeviceReset, fork and gzip.
 * Without a GPU those tests SKIP and say why. A lite capture of the test
 * program committed as traces/captured/testprog_lite.* is checked the same way.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "tally/fidelity.h"
#include "tally/trace.h"

/* The tracer's sources are built by cuda.mk (only where nvcc and CUPTI
 * exist), not into libtally.a. These four do not use CUPTI's headers, so the
 * lite-mode tests compile them in. */
#include "../traces/tracer/hostcalls.c"
#include "../traces/tracer/lite.c"
#include "../traces/tracer/lite_sample.c"
#include "../traces/tracer/options.c"
#include "../traces/tracer/store.c"
#include "../traces/tracer/write.c"

#define CAPTURED "traces/captured/"
#define STEPS 6 /* iterations in the committed test-program capture */

/* ---- environment -------------------------------------------------------- */

static char build[1024];
static char tool[1200], lib[1200], prog[1200];
static char tmpdir[256];

static bool exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* Tracer binaries are built only where nvcc and CUPTI exist (cuda.mk). */
static bool have_tracer(void)
{
    return exists(tool) && exists(lib);
}

/* A GPU: the driver library loads, cuInit succeeds and sees a device. */
static bool have_gpu(char *why, size_t len)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, len, "no GPU: the CUDA driver (libcuda.so.1) is not installed");
        return false;
    }
    int (*cu_init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
    int (*cu_count)(int *) = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
    int n = 0, r = cu_init ? cu_init(0) : -1;
    if (r != 0 || !cu_count || cu_count(&n) != 0 || n < 1) {
        snprintf(why, len, "no GPU: cuInit returned %d, %d device(s)", r, n);
        return false;
    }
    return true;
}

static bool gpu_ready(void)
{
    char why[256];
    if (!have_tracer() || !exists(prog)) {
        print_message("SKIP: %s not built (needs nvcc and CUPTI)\n", tool);
        return false;
    }
    if (!have_gpu(why, sizeof why)) {
        print_message("SKIP: %s\n", why);
        return false;
    }
    return true;
}

/* Run argv with stdout/stderr to files; returns the wait status. */
static int run(char *const argv[], const char *out, const char *err_path)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || fe < 0)
            _exit(99);
        dup2(fo, 1);
        dup2(fe, 2);
        execv(argv[0], argv);
        _exit(98);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        assert_int_equal(errno, EINTR);
    return st;
}

static char *slurp(const char *path)
{
    char *buf = NULL;
    size_t len = 0;
    tl_err err;
    if (tl_read_file(path, &buf, &len, &err) < 0)
        return NULL;
    return buf;
}

static void path_in_tmp(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", tmpdir, name);
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    if (d)
        closedir(d);
    return n;
}

static void clear_dir(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
}

/* ---- the manifest the test program prints -------------------------------- */

typedef struct launch {
    int step;
    char name[64];
    int grid[3], block[3];
    int regs, static_smem, dynamic_smem;
    long long stream, ns;
} launch;

typedef struct manifest {
    launch l[512];
    int n;
    int copies_h2d, copies_d2h, memsets, stream_syncs, device_syncs, event_syncs, waits;
    long long stream_low, stream_high;
    int prio_least, prio_greatest;
} manifest;

static void read_manifest(const char *path, manifest *m)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    while (fgets(line, sizeof line, f)) {
        launch *l = &m->l[m->n];
        char kind[32];
        int step;
        if (m->n < 512 &&
            sscanf(line, "launch %d %63s %d,%d,%d %d,%d,%d %d %d %d %lld %lld", &l->step, l->name,
                   &l->grid[0], &l->grid[1], &l->grid[2], &l->block[0], &l->block[1],
                   &l->block[2], &l->regs, &l->static_smem, &l->dynamic_smem, &l->stream,
                   &l->ns) == 13)
            m->n++;
        else if (sscanf(line, "copy %d %31s", &step, kind) == 2)
            strcmp(kind, "HtoD") == 0 ? m->copies_h2d++ : m->copies_d2h++;
        else if (sscanf(line, "memset %d", &step) == 1)
            m->memsets++;
        else if (sscanf(line, "sync %d %31s", &step, kind) == 2) {
            if (!strcmp(kind, "stream"))
                m->stream_syncs++;
            else if (!strcmp(kind, "device"))
                m->device_syncs++;
            else if (!strcmp(kind, "event"))
                m->event_syncs++;
            else
                m->waits++;
        } else
            sscanf(line, "streams low=%lld high=%lld least=%d greatest=%d", &m->stream_low,
                   &m->stream_high, &m->prio_least, &m->prio_greatest);
    }
    fclose(f);
}

/* ---- checking a trace against the manifest ------------------------------- */

static long long jint(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        fail_msg("field '%s' missing or not an integer", key);
    return json_integer_value(v);
}

static const char *jstr(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        fail_msg("field '%s' missing or not a string", key);
    return json_string_value(v);
}

/* Load a written synthetic capture: n iterations marked step#N. */
static void load_steps(const char *path, tl_trace *t, uint32_t n)
{
    tl_trace_init(t);
    tl_trace_options lo = {.marker_prefix = "step#"};
    tl_err err;
    if (tl_trace_load(t, path, &lo, &err) < 0)
        fail_msg("tl_trace_load: %s", err.msg);
    assert_int_equal(t->n_iters, n);
}

/* Write store s as the lite tracer would at exit on an H100 (device
 * properties as the driver reports them), failing the test on an error. */
static int try_write_lite_h100(const tt_store *s, const tt_lite_stats *st, const tt_options *o,
                               bool latency_timestamps, const char *path, char *msg, size_t len)
{
    tt_device dev = {.ordinal = 0, .sms = 132, .max_threads_per_sm = 2048,
                     .max_threads_per_block = 1024, .max_blocks_per_sm = 32,
                     .regs_per_sm = 65536, .regs_per_block = 65536, .smem_per_sm = 233472,
                     .smem_per_block = 49152, .smem_per_block_optin = 232448,
                     .smem_reserved_per_block = 1024, .warp_size = 32, .cc_major = 9};
    snprintf(dev.name, sizeof dev.name, "NVIDIA H100 80GB HBM3");
    tt_trace_meta m = {.pid = 4242, .opts = o, .devices = &dev, .n_devices = 1,
                       .window_stop_ts = UINT64_MAX, .window_stop_corr = UINT32_MAX,
                       .end_reason = "exit", .lite = st, .latency_timestamps = latency_timestamps};
    return tt_write_trace(s, &m, path, msg, len);
}

static void write_lite_h100(const tt_store *s, const tt_lite_stats *st, const tt_options *o,
                            bool latency_timestamps, const char *path)
{
    char msg[512];
    if (try_write_lite_h100(s, st, o, latency_timestamps, path, msg, sizeof msg) < 0)
        fail_msg("%s", msg);
}

static json_t *load_json(const char *path)
{
    char *buf = slurp(path);
    if (!buf)
        fail_msg("%s: cannot read", path);
    json_error_t je;
    json_t *root = json_loads(buf, 0, &je);
    free(buf);
    if (!root)
        fail_msg("%s: line %d: %s", path, je.line, je.text);
    assert_string_equal(jstr(root, "format"), "tally-trace");
    assert_int_equal(jint(root, "version"), 1);
    assert_string_equal(jstr(root, "form"), "events");
    assert_true(json_is_array(json_object_get(root, "events")));
    assert_true(json_is_boolean(json_object_get(root, "truncated")));
    return root;
}

static bool is_tt_kernel(json_t *e, const char *name)
{
    const char *n = jstr(e, "name");
    size_t len = strlen(name);
    return strncmp(n, name, len) == 0 && n[len] == '(';
}

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* CUPTI reports the registers allocated per thread: what the compiler used
 * (cudaFuncGetAttributes), rounded up to 8, at least 16 (seen on the H100). */
static bool regs_match(long long traced, int compiled)
{
    int want = (compiled + 7) / 8 * 8;
    return traced == (want < 16 ? 16 : want);
}

/* The program's streams as CUPTI numbers them (cudaStreamGetId counts
 * differently): the stream of its first launch on each. */
typedef struct stream_map {
    long long from[8], to[8];
    int n;
} stream_map;

static long long map_stream(stream_map *sm, long long program_id, long long traced)
{
    for (int i = 0; i < sm->n; i++) {
        if (sm->from[i] == program_id) {
            if (traced >= 0 && sm->to[i] != traced)
                fail_msg("stream %lld traced as %lld and as %lld", program_id, sm->to[i], traced);
            return sm->to[i];
        }
        if (traced >= 0 && sm->to[i] == traced)
            fail_msg("streams %lld and %lld both traced as %lld", sm->from[i], program_id, traced);
    }
    if (traced < 0 || sm->n == 8)
        fail_msg("stream %lld: no launch on it", program_id);
    sm->from[sm->n] = program_id;
    sm->to[sm->n++] = traced;
    return traced;
}

/* Every field of every launch of the manifest, in launch order; the copies,
 * memsets, synchronizations, event records and waits with their streams. */
static void check_against_manifest(json_t *root, const manifest *m)
{
    json_t *events = json_object_get(root, "events");
    json_t *dev = json_object_get(root, "gpu");
    assert_non_null(dev);
    assert_true(strlen(jstr(dev, "name")) > 0);
    assert_true(jint(dev, "sms") > 0);
    assert_true(jint(dev, "cc_major") >= 7);
    assert_true(jint(dev, "regs_per_sm") >= 65536);
    assert_true(jint(dev, "smem_per_block_optin") >= jint(dev, "smem_per_block"));
    assert_true(jint(dev, "max_threads_per_sm") >= 1024);
    assert_int_equal(jint(dev, "warp_size"), 32);
    assert_int_equal(jint(dev, "stream_prio_greatest"), m->prio_greatest);
    json_t *full = json_array_get(json_object_get(root, "devices"), 0);
    assert_non_null(full);
    assert_int_equal(jint(full, "stream_prio_least"), m->prio_least);
    assert_int_equal(jint(full, "sms"), jint(dev, "sms"));

    /* launches: the k-th launch of a name is the k-th kernel of that name */
    size_t n = json_array_size(events);
    stream_map sm = {.n = 0};
    json_t **launch_of = calloc((size_t)m->n + 1, sizeof *launch_of);
    for (int i = 0; i < m->n; i++) {
        const launch *l = &m->l[i];
        int k = 0;
        for (int j = 0; j < i; j++)
            k += strcmp(m->l[j].name, l->name) == 0;
        json_t *e = NULL;
        for (size_t j = 0, seen = 0; j < n && !e; j++) {
            json_t *x = json_array_get(events, j);
            if (!strcmp(jstr(x, "type"), "kernel") && is_tt_kernel(x, l->name) && seen++ == (size_t)k)
                e = x;
        }
        if (!e)
            fail_msg("launch %d (%s, step %d) has no kernel record", i, l->name, l->step);
        launch_of[i] = e;
        json_t *grid = json_object_get(e, "grid"), *block = json_object_get(e, "block");
        for (int d = 0; d < 3; d++) {
            assert_int_equal(json_integer_value(json_array_get(grid, d)), l->grid[d]);
            assert_int_equal(json_integer_value(json_array_get(block, d)), l->block[d]);
        }
        if (!regs_match(jint(e, "regs"), l->regs))
            fail_msg("%s: %lld registers traced, %d compiled", l->name, jint(e, "regs"), l->regs);
        assert_int_equal(jint(e, "static_smem"), l->static_smem);
        assert_int_equal(jint(e, "dynamic_smem"), l->dynamic_smem);
        map_stream(&sm, l->stream, jint(e, "stream"));
        assert_int_equal(jint(e, "device"), 0);
        assert_true(jint(e, "context") > 0);
        long long dur = jint(e, "end_ns") - jint(e, "start_ns");
        /* it spins l->ns on the global timer (1 us resolution at worst) */
        if (dur < l->ns - 1000 || dur > l->ns + l->ns / 2 + 50000)
            fail_msg("%s step %d: traced %lld ns for a %lld ns spin", l->name, l->step, dur, l->ns);
    }
    long long low = map_stream(&sm, m->stream_low, -1), high = map_stream(&sm, m->stream_high, -1);

    /* stream priorities */
    bool saw_low = false, saw_high = false;
    json_t *si = json_object_get(root, "stream_info");
    for (size_t i = 0; i < json_array_size(si); i++) {
        json_t *x = json_array_get(si, i);
        if (jint(x, "stream") == low)
            saw_low = true, assert_int_equal(jint(x, "priority"), m->prio_least);
        if (jint(x, "stream") == high)
            saw_high = true, assert_int_equal(jint(x, "priority"), m->prio_greatest);
    }
    assert_true(saw_low && saw_high);

    /* API calls (by correlation id), copies, memsets */
    json_t **api_by_corr = calloc(1 << 20, sizeof *api_by_corr);
    long long main_tid = -1, record_event = -1, wait_event = -2;
    int h2d = 0, d2h = 0, memsets = 0, ssync = 0, dsync = 0, esync = 0, waits = 0, records = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(events, i);
        const char *type = jstr(e, "type");
        assert_true(jint(e, "end_ns") >= jint(e, "start_ns"));
        if (!strcmp(type, "api")) {
            long long c = jint(e, "corr");
            const char *name = jstr(e, "name");
            assert_true(c > 0 && c < (1 << 20));
            api_by_corr[c] = e;
            if (main_tid < 0)
                main_tid = jint(e, "tid");
            assert_int_equal(jint(e, "tid"), main_tid); /* one host thread */
            if (!strcmp(name, "cudaStreamSynchronize") && jint(e, "stream") == low)
                ssync++;
            else if (!strcmp(name, "cudaDeviceSynchronize"))
                dsync++, assert_null(json_object_get(e, "stream"));
            else if (!strcmp(name, "cudaEventSynchronize"))
                esync++, assert_int_equal(jint(e, "event"), record_event);
            else if (!strcmp(name, "cudaEventRecord") && jint(e, "stream") == low)
                records++, record_event = jint(e, "event");
            else if (!strcmp(name, "cudaStreamWaitEvent") && jint(e, "stream") == high)
                waits++, wait_event = jint(e, "event");
            assert_false(!strcmp(name, "cudaGetDevice")); /* queries are left out */
        } else if (!strcmp(type, "memcpy")) {
            if (jint(e, "bytes") != 4 << 20)
                continue;
            const char *k = jstr(e, "copy");
            if (!strcmp(k, "h2d"))
                h2d++, assert_string_equal(jstr(e, "src_kind"), "pageable");
            else if (!strcmp(k, "d2h"))
                d2h++, assert_string_equal(jstr(e, "dst_kind"), "pinned"),
                    assert_false(json_is_true(json_object_get(e, "to_pageable"))),
                    assert_int_equal(jint(e, "stream"), low);
            assert_true(jint(e, "end_ns") > jint(e, "start_ns"));
        } else if (!strcmp(type, "memset")) {
            if (jint(e, "bytes") == 1 << 20)
                memsets++, assert_int_equal(jint(e, "stream"), low);
        }
    }
    assert_int_equal(h2d, m->copies_h2d);
    assert_int_equal(d2h, m->copies_d2h);
    assert_int_equal(memsets, m->memsets);
    assert_int_equal(ssync, m->stream_syncs);
    assert_true(dsync >= m->device_syncs);
    assert_int_equal(esync, m->event_syncs);
    assert_int_equal(waits, m->waits);
    assert_int_equal(records, m->waits);
    assert_int_equal(wait_event, record_event); /* the wait names the recorded event */

    /* each kernel was launched by a cudaLaunchKernel of the same thread */
    for (int i = 0; i < m->n; i++) {
        json_t *e = launch_of[i];
        long long c = jint(e, "corr");
        assert_true(c > 0 && c < (1 << 20));
        json_t *api = api_by_corr[c];
        if (!api)
            fail_msg("%s step %d: no API call with correlation %lld", m->l[i].name, m->l[i].step, c);
        assert_non_null(strstr(jstr(api, "name"), "aunchKernel"));
        assert_true(jint(api, "start_ns") <= jint(e, "start_ns"));
    }
    free(api_by_corr);
    free(launch_of);
}

/* The program's NVTX ranges step#first..step#last, each closed. */
static void check_markers(json_t *root, int first, int last)
{
    json_t *events = json_object_get(root, "events");
    int seen = 0;
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        if (strcmp(jstr(e, "type"), "marker") != 0 || !has_prefix(jstr(e, "name"), "step#"))
            continue;
        int step;
        assert_int_equal(sscanf(jstr(e, "name"), "step#%d", &step), 1);
        assert_int_equal(step, first + seen);
        assert_true(jint(e, "end_ns") > jint(e, "start_ns"));
        seen++;
    }
    assert_int_equal(seen, last - first + 1);
}

static int count_type(json_t *root, const char *type)
{
    json_t *events = json_object_get(root, "events");
    int n = 0;
    for (size_t i = 0; i < json_array_size(events); i++)
        n += strcmp(jstr(json_array_get(events, i), "type"), type) == 0;
    return n;
}

/* The tracer's own iteration ranges (iteration#N markers). */
static int count_iterations(json_t *root)
{
    json_t *events = json_object_get(root, "events");
    int n = 0;
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        n += !strcmp(jstr(e, "type"), "marker") && has_prefix(jstr(e, "name"), "iteration#");
    }
    return n;
}

/* tl_trace_load reads it: n iterations, each with the test program's 4 kernels. */
static void check_loads(const char *path, const char *marker, uint32_t n_iters, uint32_t kernels)
{
    tl_trace t;
    tl_trace_init(&t);
    tl_trace_options o = {.marker_prefix = marker};
    tl_err err;
    int r = tl_trace_load(&t, path, &o, &err);
    if (r < 0)
        fail_msg("tl_trace_load: %s", err.msg);
    assert_int_equal(t.n_iters, n_iters);
    for (uint32_t i = 0; i < t.n_iters; i++) {
        tl_iter_stats st;
        tl_iteration_stats(&t.iters[i], &st);
        assert_int_equal(st.kernels, kernels);
        assert_true(st.traced_ns > 0);
    }
    assert_true(t.has_gpu_props);
    assert_true(t.gpu.sms > 0);
    tl_trace_close(&t);
}

/* ---- the lite host timeline ------------------------------------------------ */

/* Clock skew allowed between a host time and the GPU time it must follow
 * (CUPTI puts GPU timestamps on the host clock). */
#define SKEW_NS 10000

static json_t *event_by_corr(json_t *events, const char *type, long long corr)
{
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        if (!strcmp(jstr(e, "type"), type) && json_integer_value(json_object_get(e, "corr")) == corr)
            return e;
    }
    return NULL;
}

static int cmp_pair(const void *a, const void *b)
{
    const long long *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static bool is_gpu_event(json_t *e)
{
    const char *t = jstr(e, "type");
    return !strcmp(t, "kernel") || !strcmp(t, "memcpy") || !strcmp(t, "memset");
}

/* Latest GPU end of the work issued before correlation id corr, on stream
 * (or on any stream when stream < 0); 0 if none. */
static long long awaited_end(json_t *events, long long stream, long long corr)
{
    long long end = 0;
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        if (!is_gpu_event(e) || jint(e, "corr") >= corr ||
            (stream >= 0 && jint(e, "stream") != stream))
            continue;
        if (jint(e, "end_ns") > end)
            end = jint(e, "end_ns");
    }
    return end;
}

/* A trace written with --host-timeline lite: the file says the host
 * timeline is rebuilt; every GPU record has its (estimated) call, made by
 * one thread, never after the GPU work it launched; launches start at their
 * queued time; a wait ends after the work it waited for; a blocking copy
 * holds its call until the copy ends. Returns the number of waits checked. */
/* all_queued: every launch has its recorded host time (queued timestamp,
 * or its call's own times with --launch-times callback). */
static int check_lite(json_t *root, bool all_queued)
{
    json_t *ht = json_object_get(root, "host_timeline");
    assert_non_null(ht);
    assert_string_equal(jstr(ht, "mode"), "lite");
    assert_true(json_is_true(json_object_get(ht, "reconstructed")));
    /* (captures made before --launch-times have no launch_times: queued) */
    json_t *lt = json_object_get(ht, "launch_times");
    bool callback = json_is_string(lt) && !strcmp(json_string_value(lt), "callback");
    if (all_queued && callback) { /* a callback timed every launch call */
        assert_false(json_is_true(json_object_get(ht, "latency_timestamps")));
        assert_int_equal(jint(ht, "launches_timed"), jint(ht, "launches"));
        assert_int_equal(jint(ht, "launches_queued"), 0);
    } else if (all_queued) { /* CUPTI gave every launch its queued timestamp */
        assert_true(json_is_true(json_object_get(ht, "latency_timestamps")));
        assert_int_equal(jint(ht, "launches_queued"), jint(ht, "launches"));
    }
    json_t *events = json_object_get(root, "events");
    size_t n = json_array_size(events);
    long long tid = -1;
    int waits = 0;
    /* one host thread: calls in correlation order (the order they were
     * made) start in time order, up to clock skew between the queued
     * timestamps and the synchronization records */
    long long(*order)[2] = calloc(n + 1, sizeof *order);
    size_t n_calls = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(events, i);
        if (!strcmp(jstr(e, "type"), "api"))
            order[n_calls][0] = jint(e, "corr"), order[n_calls++][1] = jint(e, "start_ns");
    }
    qsort(order, n_calls, sizeof *order, cmp_pair);
    for (size_t i = 1; i < n_calls; i++)
        if (order[i][1] + SKEW_NS < order[i - 1][1])
            fail_msg("call corr %lld starts at %lld ns, before call corr %lld (%lld ns)",
                     order[i][0], order[i][1], order[i - 1][0], order[i - 1][1]);
    free(order);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(events, i);
        if (is_gpu_event(e)) {
            json_t *api = event_by_corr(events, "api", jint(e, "corr"));
            if (!api)
                fail_msg("%s '%.40s' (corr %lld): no call", jstr(e, "type"), jstr(e, "name"),
                         jint(e, "corr"));
            if (jint(api, "start_ns") > jint(e, "start_ns"))
                fail_msg("%s '%.40s': call at %lld, after its GPU start %lld", jstr(e, "type"),
                         jstr(e, "name"), jint(api, "start_ns"), jint(e, "start_ns"));
            continue;
        }
        if (strcmp(jstr(e, "type"), "api") != 0)
            continue;
        /* rebuilt, or (callback) the timed call itself, with its callback id */
        if (!json_is_true(json_object_get(e, "estimated"))) {
            if (!callback)
                fail_msg("call corr %lld (%s) is not marked estimated", jint(e, "corr"),
                         jstr(e, "name"));
            assert_true(jint(e, "cbid") > 0);
        }
        if (tid < 0)
            tid = jint(e, "tid");
        assert_int_equal(jint(e, "tid"), tid);
        long long corr = jint(e, "corr"), start = jint(e, "start_ns"), end = jint(e, "end_ns");
        assert_true(end >= start);
        const char *name = jstr(e, "name");
        long long waited = -1;
        if (!strcmp(name, "cudaDeviceSynchronize")) {
            waited = awaited_end(events, -1, corr);
        } else if (!strcmp(name, "cudaStreamSynchronize")) {
            waited = awaited_end(events, jint(e, "stream"), corr);
        } else if (!strcmp(name, "cudaEventSynchronize")) {
            json_t *rec = NULL; /* the latest earlier record of the event */
            for (size_t j = 0; j < n; j++) {
                json_t *x = json_array_get(events, j);
                if (!strcmp(jstr(x, "type"), "api") && !strcmp(jstr(x, "name"), "cudaEventRecord") &&
                    jint(x, "event") == jint(e, "event") && jint(x, "corr") < corr &&
                    (!rec || jint(x, "corr") > jint(rec, "corr")))
                    rec = x;
            }
            assert_non_null(rec);
            waited = awaited_end(events, jint(rec, "stream"), jint(rec, "corr"));
        } else if (!strcmp(name, "cudaMemcpy")) {
            json_t *copy = event_by_corr(events, "memcpy", corr);
            assert_non_null(copy);
            /* A timed (exact) call from pageable memory to the device
             * returns once the data is staged, while the last DMA may
             * still run (CUDA's documented behaviour; 19-24 us before the
             * end of a 4 MiB copy on the H100): it waited for the copy's
             * start. A rebuilt one ends with its copy. */
            bool staged = !json_is_true(json_object_get(e, "estimated")) &&
                          !strcmp(jstr(copy, "copy"), "h2d");
            if (staged)
                waited = jint(copy, "start_ns");
            else if (strcmp(jstr(copy, "copy"), "d2d") != 0)
                waited = jint(copy, "end_ns");
        }
        if (waited < 0)
            continue;
        if (end + SKEW_NS < waited)
            fail_msg("%s (corr %lld) ended at %lld ns, before the GPU work it waited for (%lld)",
                     name, corr, end, waited);
        waits++;
    }
    return waits;
}

/* Records as CUPTI delivers them for the test program's steps (testprog.cu,
 * step()), with host times that the reconstruction must find: each step of
 * 1 ms starts at T (NVTX range "step#k", 705 us), and
 *   +10..210 us   cudaMemcpy H2D 4 MiB pageable (blocking; GPU 10..210)
 *   +215, +218    two launches on stream 13 (queued; GPU 220..270, 270..300)
 *   (no time)     cudaEventRecord on 13, event 5
 *   +223..224     cudaStreamWaitEvent 14 on event 5 (synchronization record)
 *   +226          launch on 14 (GPU 300..380)
 *   +229.4        launch on 15 queued 0.4 us after its GPU start 229.0 (skew)
 *   (no time)     cudaMemsetAsync on 13 (GPU 300..310), cudaMemcpyAsync D2H
 *                 4 MiB pinned on 13 (GPU 310..500)
 *   +232..301     cudaEventSynchronize event 5
 *   +302..501     cudaStreamSynchronize 13
 *   +706..708     cudaDeviceSynchronize, after the range
 * and one event-query record (synchronization type 0) the loader has no use for. */
#define US(x) ((uint64_t)((x) * 1000.0 + 0.5))
static const uint64_t T0 = 5000000000ULL;

static tt_rec *mk(tt_store *s, uint8_t type, uint32_t corr, uint64_t start, uint64_t end)
{
    tt_rec *r = tt_store_add(s);
    assert_non_null(r);
    r->type = type, r->corr = corr, r->start = start, r->end = end;
    r->stream = TT_NO_ID, r->id = TT_NO_ID, r->context = 1;
    return r;
}

static void mk_kernel(tt_store *s, uint32_t corr, uint32_t stream, uint64_t queued, uint64_t gpu0,
                      uint64_t gpu1, const char *name)
{
    tt_rec *r = mk(s, TT_R_KERNEL, corr, gpu0, gpu1);
    r->stream = stream, r->queued = queued, r->submitted = queued + 1500;
    r->grid[0] = 132, r->grid[1] = r->grid[2] = 1;
    r->block[0] = 128, r->block[1] = r->block[2] = 1;
    r->regs = 32;
    r->name = tt_intern(s, name);
}

static void mk_step(tt_store *s, int k)
{
    uint64_t T = T0 + (uint64_t)k * US(1000);
    uint32_t c = 100 + 20 * (uint32_t)k;
    char name[32];
    snprintf(name, sizeof name, "step#%d", k);
    tt_rec *m = mk(s, TT_R_MARKER, 0, T, T + US(705));
    m->name = tt_intern(s, name);
    tt_rec *r = mk(s, TT_R_MEMCPY, c + 1, T + US(10), T + US(210));
    r->sub = TT_COPY_HTOD, r->id = TT_MEM_PAGEABLE | TT_MEM_DEVICE << 8, r->bytes = 4 << 20;
    r->stream = 7;
    mk_kernel(s, c + 2, 13, T + US(215), T + US(220), T + US(270), "tt_spin_plain(long long, float*)");
    mk_kernel(s, c + 3, 13, T + US(218), T + US(270), T + US(300), "tt_spin_smem(long long, float*)");
    r = mk(s, TT_R_EVENT, c + 4, 0, 0);
    r->stream = 13, r->id = 5;
    r = mk(s, TT_R_SYNC, c + 5, T + US(223), T + US(224));
    r->sub = TT_SYNCT_STREAM_WAIT, r->stream = 14, r->id = 5;
    mk_kernel(s, c + 6, 14, T + US(226), T + US(300), T + US(380), "tt_spin_regs(long long, float*, int)");
    mk_kernel(s, c + 7, 15, T + US(229.4), T + US(229), T + US(240), "tt_spin_bigsmem(long long, float*)");
    r = mk(s, TT_R_MEMSET, c + 8, T + US(300), T + US(310));
    r->stream = 13, r->bytes = 1 << 20, r->flags = TT_RF_ASYNC;
    r = mk(s, TT_R_MEMCPY, c + 9, T + US(310), T + US(500));
    r->sub = TT_COPY_DTOH, r->id = TT_MEM_DEVICE | TT_MEM_PINNED << 8, r->bytes = 4 << 20;
    r->stream = 13, r->flags = TT_RF_ASYNC;
    r = mk(s, TT_R_SYNC, c + 10, T + US(232), T + US(301));
    r->sub = TT_SYNCT_EVENT, r->id = 5;
    r = mk(s, TT_R_SYNC, c + 11, T + US(302), T + US(501));
    r->sub = TT_SYNCT_STREAM, r->stream = 13;
    r = mk(s, TT_R_SYNC, c + 12, T + US(706), T + US(708));
    r->sub = TT_SYNCT_CONTEXT;
    mk(s, TT_R_SYNC, c + 13, T + US(709), T + US(709.5)); /* a query: type 0 */
}

/* The reconstructed call of correlation id corr (exactly one). */
static const tt_rec *call_of(const tt_store *s, uint32_t corr)
{
    const tt_rec *found = NULL;
    for (size_t i = 0; i < s->n; i++) {
        const tt_rec *r = tt_store_at(s, i);
        if (r->type == TT_R_API && r->corr == corr) {
            if (found)
                fail_msg("two calls with correlation id %u", corr);
            found = r;
        }
    }
    return found;
}

static const char *call_name_of(const tt_store *s, uint32_t corr)
{
    const tt_rec *r = call_of(s, corr);
    if (!r)
        fail_msg("no call with correlation id %u", corr);
    return s->strings[r->name];
}

static void test_lite_reconstruction(void **state)
{
    (void)state;
    enum { STEPS_L = 3 };
    tt_store s;
    tt_store_init(&s);
    for (int k = 0; k < STEPS_L; k++)
        mk_step(&s, k);
    size_t recorded = s.n;
    tt_lite_stats st;
    assert_int_equal(tt_lite_reconstruct(&s, 4242, &st), 0);
    /* 12 calls a step: the query and the markers get none */
    assert_int_equal(st.calls, 12 * STEPS_L);
    assert_int_equal(s.n, recorded + st.calls);
    assert_int_equal(st.launches, 4 * STEPS_L);
    assert_int_equal(st.launches_queued, 4 * STEPS_L);
    assert_int_equal(st.launches_clamped, STEPS_L);
    assert_int_equal(st.waits, 4 * STEPS_L);
    assert_int_equal(st.blocking_copies, STEPS_L);
    assert_int_equal(st.interpolated, 4 * STEPS_L); /* 2 copies, memset, event record */

    for (int k = 0; k < STEPS_L; k++) {
        uint64_t T = T0 + (uint64_t)k * US(1000);
        uint32_t c = 100 + 20 * (uint32_t)k;
        static const char *const names[] = {
            "cudaMemcpy",          "cudaLaunchKernel",     "cudaLaunchKernel",
            "cudaEventRecord",     "cudaStreamWaitEvent",  "cudaLaunchKernel",
            "cudaLaunchKernel",    "cudaMemsetAsync",      "cudaMemcpyAsync",
            "cudaEventSynchronize", "cudaStreamSynchronize", "cudaDeviceSynchronize"};
        for (uint32_t i = 0; i < 12; i++)
            assert_string_equal(call_name_of(&s, c + 1 + i), names[i]);
        assert_null(call_of(&s, c + 13));
        for (uint32_t i = 1; i <= 12; i++) {
            const tt_rec *a = call_of(&s, c + i);
            assert_int_equal(a->tid, 4242);
            assert_true(a->flags & TT_RF_ESTIMATED);
            assert_true(a->end >= a->start);
            if (i < 12) /* one thread: calls follow each other */
                assert_true(a->end <= call_of(&s, c + i + 1)->start || i == 1);
        }
        /* the blocking copy: within the step, before its copy, until its end */
        const tt_rec *a = call_of(&s, c + 1);
        assert_true(a->start >= T && a->start <= T + US(10));
        assert_int_equal(a->end, T + US(210));
        /* launches at their queued time, lasting submitted - queued (capped
         * by the next call); the skewed one at its GPU start */
        assert_int_equal(call_of(&s, c + 2)->start, T + US(215));
        assert_int_equal(call_of(&s, c + 2)->end, T + US(216.5));
        assert_int_equal(call_of(&s, c + 3)->start, T + US(218));
        assert_int_equal(call_of(&s, c + 6)->start, T + US(226));
        assert_int_equal(call_of(&s, c + 7)->start, T + US(229));
        /* the event record between its neighbours, ending as the wait starts */
        a = call_of(&s, c + 4);
        assert_true(a->start >= call_of(&s, c + 3)->end && a->end <= T + US(223));
        assert_int_equal(a->end - a->start, TT_LITE_CALL_NS);
        /* waits exactly as recorded */
        assert_int_equal(call_of(&s, c + 5)->start, T + US(223));
        assert_int_equal(call_of(&s, c + 5)->end, T + US(224));
        assert_int_equal(call_of(&s, c + 10)->end, T + US(301));
        assert_int_equal(call_of(&s, c + 11)->start, T + US(302));
        assert_int_equal(call_of(&s, c + 12)->end, T + US(708));
        /* memset and async copy between the last launch and the event sync */
        for (uint32_t i = 8; i <= 9; i++) {
            a = call_of(&s, c + i);
            assert_true(a->start >= call_of(&s, c + 7)->start && a->end <= T + US(232));
        }
    }

    /* Written as the library writes it, then read back and replayed. */
    char path[300];
    path_in_tmp(path, sizeof path, "lite.json");
    tt_options o;
    char msg[512];
    unsetenv("TALLY_TRACE_HOST_TIMELINE");
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    assert_int_equal(o.host_timeline, TT_HOST_LITE);
    assert_false(o.activities & (TT_ACT_RUNTIME | TT_ACT_DRIVER)); /* lite records no calls */
    write_lite_h100(&s, &st, &o, true, path);
    json_t *root = load_json(path);
    /* device, stream and event syncs and the blocking copy of each step */
    assert_int_equal(check_lite(root, true), 4 * STEPS_L);
    json_decref(root);

    tl_trace t;
    load_steps(path, &t, STEPS_L);
    tl_err err;
    for (uint32_t i = 0; i < t.n_iters; i++) {
        tl_iter_stats is;
        tl_iteration_stats(&t.iters[i], &is);
        assert_int_equal(is.kernels, 4);
        assert_int_equal(is.copies, 2);
        assert_int_equal(is.memsets, 1);
        /* the step lasts its NVTX range, 705 us, as traced; its host time is
         * what the calls leave out of their waits (FORMAT.md): gaps 23.5 us,
         * calls 11.5 us (launches 1.5, others 1, the waits after their
         * work), and the 204 us after the stream sync */
        assert_int_equal(is.traced_ns, US(705));
        assert_int_equal(is.host_ns, US(239));
        /* the blocking copy's call holds the host only until the copy ends */
        assert_true(t.iters[i].ops[0].kind == TL_OP_MEMCPY && t.iters[i].ops[0].blocking);
    }
    tl_fidelity f;
    if (tl_fidelity_check(&t, NULL, &f, &err) < 0)
        fail_msg("tl_fidelity_check: %s", err.msg);
    print_message("lite synthetic steps: traced %.1f us, replayed %.1f us (%+.2f%%)\n",
                  f.traced_iter_ns / 1e3, f.replay_iter_ns / 1e3, 100 * f.iter_err);
    assert_true(f.iter_err > -0.03 && f.iter_err < 0.03);
    tl_trace_close(&t);
    tt_lite_restore(&s, &st);
    tt_store_free(&s);
}

/* --latency-sample (lite_sample.c): mk_step's steps as --iteration-sync
 * device:1 sees them (a boundary after each device synchronize), with the
 * queued timestamps of step 0 only, as if sampled. Steps 1 and 3 made the
 * same calls: their launches get step 0's host times, measured from the
 * boundary or from the stream wait before them; step 3's stream wait
 * returned 4 us later, and its launches after it follow it, their offsets
 * halved (the host reached the event synchronize at +232 as in step 0, in
 * half the time since the wait: 2 us after it becomes 1; the launch on
 * stream 15, queued after its GPU start in step 0, stays at its own GPU
 * start). Step 2 made other calls (a kernel renamed): its launches keep no
 * host time and are placed between their neighbours. */
static void test_lite_latency_sample(void **state)
{
    (void)state;
    tt_store s;
    tt_store_init(&s);
    for (int k = 0; k < 4; k++) {
        size_t first = s.n;
        mk_step(&s, k);
        uint64_t T = T0 + (uint64_t)k * US(1000);
        /* the boundary: the previous step's device synchronize returned */
        tt_rec *b = mk(&s, TT_R_ITER, 100 + 20 * (uint32_t)k, T - US(292), 0);
        b->id = (uint32_t)k;
        for (size_t i = first; i < s.n; i++) {
            tt_rec *r = tt_store_at(&s, i);
            if (r->type == TT_R_KERNEL && k > 0)
                r->queued = r->submitted = 0;
            if (k == 2 && r->type == TT_R_KERNEL && r->corr == 100 + 20 * 2 + 3)
                r->name = tt_intern(&s, "another_kernel");
            if (k == 3 && r->type == TT_R_SYNC && r->sub == TT_SYNCT_STREAM_WAIT)
                r->end = T + US(228);
        }
    }
    assert_int_equal(tt_lite_copy_leads(&s), 8);
    for (int k = 1; k < 4; k++) {
        uint64_t T = T0 + (uint64_t)k * US(1000);
        uint32_t c = 100 + 20 * (uint32_t)k;
        for (size_t i = 0; i < s.n; i++) {
            const tt_rec *r = tt_store_at(&s, i);
            if (r->type != TT_R_KERNEL || r->corr < c || r->corr > c + 13)
                continue;
            if (k == 2) {
                assert_false(r->flags & TT_RF_LEAD_COPIED);
                assert_int_equal(r->queued, 0);
                continue;
            }
            assert_true(r->flags & TT_RF_LEAD_COPIED);
            assert_int_equal(r->submitted - r->queued, 1500); /* step 0's call */
            uint64_t want = r->corr == c + 2   ? T + US(215)
                            : r->corr == c + 3 ? T + US(218)
                            : r->corr == c + 6 ? T + US(k == 3 ? 229 : 226)
                                               : T + US(229); /* its GPU start */
            if (r->queued != want)
                fail_msg("step %d, launch %u: copied host time %llu, expected %llu", k,
                         r->corr - c, (unsigned long long)(r->queued - T),
                         (unsigned long long)(want - T));
        }
    }
    tt_lite_stats st;
    assert_int_equal(tt_lite_reconstruct(&s, 4242, &st), 0);
    assert_int_equal(st.launches, 16);
    assert_int_equal(st.launches_queued, 4);
    assert_int_equal(st.launches_copied, 8);
    assert_int_equal(call_of(&s, 100 + 20 + 2)->start, T0 + US(1000 + 215));
    assert_int_equal(call_of(&s, 100 + 60 + 6)->start, T0 + US(3000 + 229));
    /* step 2's first launch: placed late, just before the next call */
    assert_true(call_of(&s, 100 + 40 + 2)->start > T0 + US(2000 + 215));
    tt_lite_restore(&s, &st);
    tt_lite_uncopy_leads(&s);
    for (size_t i = 0; i < s.n; i++) {
        const tt_rec *r = tt_store_at(&s, i);
        assert_false(r->flags & TT_RF_LEAD_COPIED);
        if (r->type == TT_R_KERNEL && r->corr > 120)
            assert_int_equal(r->queued, 0);
    }
    tt_store_free(&s);
}

/* --record-every 2 as the writer sees it: steps 0, 2 and 4 recorded (mk_step's
 * records, a boundary before each, as --iteration-sync device:1 puts it when
 * the previous step's device synchronize returns), steps 1, 3 and 5 left out
 * (their boundary only, TT_ITER_SKIPPED, and no other record). The trace has
 * exactly the three recorded iterations, each from its boundary to the next
 * one (1 ms), with its 4 kernels, and replays as traced. */
static void test_record_every_writes_recorded_only(void **state)
{
    (void)state;
    tt_store s;
    tt_store_init(&s);
    for (int k = 0; k < 6; k++) {
        uint64_t T = T0 + (uint64_t)k * US(1000);
        if (k % 2 == 0)
            mk_step(&s, k);
        tt_rec *b = mk(&s, TT_R_ITER, 100 + 20 * (uint32_t)k, T - US(292), 0);
        b->id = (uint32_t)k;
        b->sub = k % 2 ? TT_ITER_SKIPPED : TT_ITER_RECORDED;
    }
    tt_lite_stats st;
    assert_int_equal(tt_lite_reconstruct(&s, 4242, &st), 0);
    char path[300];
    path_in_tmp(path, sizeof path, "record_every.json");
    tt_options o;
    char msg[512];
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    o.iter_sync = 1, o.iter_sync_kind = TT_SYNC_DEVICE, o.record_every = 2;
    write_lite_h100(&s, &st, &o, true, path);
    json_t *root = load_json(path);
    assert_int_equal(count_iterations(root), 3);
    assert_int_equal(jint(json_object_get(root, "options"), "record_every"), 2);
    json_decref(root);
    tl_trace t;
    tl_trace_init(&t);
    tl_trace_options lo = {.marker_prefix = "iteration#"};
    tl_err err;
    if (tl_trace_load(&t, path, &lo, &err) < 0)
        fail_msg("tl_trace_load: %s", err.msg);
    assert_int_equal(t.n_iters, 3);
    for (uint32_t i = 0; i < t.n_iters; i++) {
        tl_iter_stats is;
        tl_iteration_stats(&t.iters[i], &is);
        assert_int_equal(is.kernels, 4);
        assert_int_equal(is.traced_ns, US(1000));
    }
    tl_fidelity f;
    if (tl_fidelity_check(&t, NULL, &f, &err) < 0)
        fail_msg("tl_fidelity_check: %s", err.msg);
    assert_true(f.iter_err > -0.03 && f.iter_err < 0.03);
    tl_trace_close(&t);
    tt_lite_restore(&s, &st);
    tt_store_free(&s);
}

/* --launch-times callback: the launch (and copy, memset) calls' own host
 * entry and exit, recorded by callbacks (HOSTCALL records, hostcalls.c). */
static tt_rec *mk_hostcall(tt_store *s, uint32_t corr, uint64_t start, uint64_t end, int driver,
                           uint32_t cbid, const char *name, bool nested)
{
    tt_rec *r = mk(s, TT_R_HOSTCALL, corr, start, end);
    r->sub = (uint8_t)driver, r->id = cbid, r->name = tt_intern(s, name);
    r->flags = nested ? TT_RF_NESTED : 0;
    return r;
}

/* mk_step's records with the launches' queued timestamps gone and the calls
 * timed by callbacks instead: launches (all but c+6, when untimed_launch),
 * the memset and the async copy; not the blocking copy (left to be placed:
 * a mix, as when a call is not among the timed ones); one timed call with
 * no GPU record (a launch that failed). The launch on stream 15 returns at
 * +230.4 after entering at +229.6, past its GPU start +229.0 (clock skew). */
static void mk_timed_step(tt_store *s, int k, bool untimed_launch)
{
    size_t first = s->n;
    mk_step(s, k);
    for (size_t i = first; i < s->n; i++) {
        tt_rec *r = tt_store_at(s, i);
        if (r->type == TT_R_KERNEL)
            r->queued = r->submitted = 0;
    }
    uint64_t T = T0 + (uint64_t)k * US(1000);
    uint32_t c = 100 + 20 * (uint32_t)k;
    mk_hostcall(s, c + 2, T + US(215), T + US(217.2), 0, 211, "cudaLaunchKernel", false);
    mk_hostcall(s, c + 3, T + US(218), T + US(219), 1, 307, "cuLaunchKernel", false);
    if (!untimed_launch)
        mk_hostcall(s, c + 6, T + US(226), T + US(227.5), 0, 211, "cudaLaunchKernel", false);
    mk_hostcall(s, c + 7, T + US(229.6), T + US(230.4), 0, 430, "cudaLaunchKernelExC", false);
    mk_hostcall(s, c + 8, T + US(231.0), T + US(231.3), 0, 51, "cudaMemsetAsync", false);
    mk_hostcall(s, c + 9, T + US(231.4), T + US(231.8), 0, 41, "cudaMemcpyAsync", false);
    mk_hostcall(s, c + 14, T + US(709.6), T + US(709.8), 0, 211, "cudaLaunchKernel", false);
}

static void test_lite_callback_times(void **state)
{
    (void)state;
    enum { STEPS_L = 3 };
    tt_store s;
    tt_store_init(&s);
    for (int k = 0; k < STEPS_L; k++)
        mk_timed_step(&s, k, true);
    tt_lite_stats st;
    assert_int_equal(tt_lite_reconstruct(&s, 4242, &st), 0);
    assert_int_equal(st.calls, 12 * STEPS_L); /* the failed launch has none */
    assert_int_equal(st.launches, 4 * STEPS_L);
    assert_int_equal(st.launches_timed, 3 * STEPS_L);
    assert_int_equal(st.launches_queued, 0);
    assert_int_equal(st.launches_clamped, STEPS_L);
    assert_int_equal(st.copies_timed, 2 * STEPS_L);
    assert_int_equal(st.host_calls_unused, STEPS_L);
    /* placed: the blocking copy, the event record, the untimed launch */
    assert_int_equal(st.interpolated, 3 * STEPS_L);
    for (int k = 0; k < STEPS_L; k++) {
        uint64_t T = T0 + (uint64_t)k * US(1000);
        uint32_t c = 100 + 20 * (uint32_t)k;
        /* timed calls: exactly as recorded, named as called, not estimated */
        static const struct {
            uint32_t d;
            double start, end;
            const char *name;
            int driver;
            uint32_t cbid;
        } timed[] = {{2, 215, 217.2, "cudaLaunchKernel", 0, 211},
                     {3, 218, 219, "cuLaunchKernel", 1, 307},
                     {7, 229, 230.4, "cudaLaunchKernelExC", 0, 430}, /* at its GPU start */
                     {8, 231.0, 231.3, "cudaMemsetAsync", 0, 51},
                     {9, 231.4, 231.8, "cudaMemcpyAsync", 0, 41}};
        for (size_t i = 0; i < sizeof timed / sizeof timed[0]; i++) {
            const tt_rec *a = call_of(&s, c + timed[i].d);
            assert_non_null(a);
            assert_int_equal(a->start, T + US(timed[i].start));
            assert_int_equal(a->end, T + US(timed[i].end));
            assert_false(a->flags & TT_RF_ESTIMATED);
            assert_string_equal(s.strings[a->name], timed[i].name);
            assert_int_equal(a->sub, timed[i].driver);
            assert_int_equal(a->id, timed[i].cbid);
            assert_int_equal(a->tid, 4242);
        }
        assert_null(call_of(&s, c + 14)); /* a timed call with no GPU work: dropped */
        /* the untimed launch: estimated, between the wait before it and the
         * timed launch after it, ending where that one starts */
        const tt_rec *a = call_of(&s, c + 6);
        assert_true(a->flags & TT_RF_ESTIMATED);
        assert_string_equal(s.strings[a->name], "cudaLaunchKernel");
        assert_true(a->start >= T + US(224));
        assert_int_equal(a->end, T + US(229));
        /* the untimed blocking copy: estimated, ending with its copy; the
         * event record between the launches and the wait */
        a = call_of(&s, c + 1);
        assert_true(a->flags & TT_RF_ESTIMATED);
        assert_true(a->start >= T && a->start <= T + US(10));
        assert_int_equal(a->end, T + US(210));
        a = call_of(&s, c + 4);
        assert_true(a->start >= T + US(219) && a->end <= T + US(223));
        /* waits as recorded */
        assert_int_equal(call_of(&s, c + 5)->start, T + US(223));
        assert_int_equal(call_of(&s, c + 11)->end, T + US(501));
    }

    /* written: the file says where launch times came from; timed calls
     * carry their callback id and no "estimated"; it loads and replays */
    char path[300];
    path_in_tmp(path, sizeof path, "lite_callback.json");
    tt_options o;
    char msg[512];
    unsetenv("TALLY_TRACE_LAUNCH_TIMES");
    unsetenv("TALLY_TRACE_QUEUED_TIMES");
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    o.launch_times = TT_LAUNCH_CALLBACK;
    write_lite_h100(&s, &st, &o, false, path);
    json_t *root = load_json(path);
    json_t *ht = json_object_get(root, "host_timeline");
    assert_string_equal(jstr(ht, "launch_times"), "callback");
    assert_true(has_prefix(jstr(ht, "launch_start"), "exact"));
    assert_int_equal(jint(ht, "launches_timed"), 3 * STEPS_L);
    assert_int_equal(jint(ht, "copies_timed"), 2 * STEPS_L);
    assert_int_equal(jint(ht, "host_calls_unused"), STEPS_L);
    assert_string_equal(jstr(json_object_get(root, "options"), "launch_times"), "callback");
    assert_false(json_is_true(json_object_get(json_object_get(root, "options"), "queued_times")));
    json_t *events = json_object_get(root, "events");
    int exact = 0;
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        if (strcmp(jstr(e, "type"), "api") != 0 || json_is_true(json_object_get(e, "estimated")))
            continue;
        exact++;
        if (!strcmp(jstr(e, "name"), "cuLaunchKernel"))
            assert_string_equal(jstr(e, "api"), "driver"), assert_int_equal(jint(e, "cbid"), 307);
    }
    assert_int_equal(exact, 5 * STEPS_L);
    assert_true(check_lite(root, false) >= 4 * STEPS_L);
    json_decref(root);
    tl_trace t;
    load_steps(path, &t, STEPS_L);
    tl_err err;
    for (uint32_t i = 0; i < t.n_iters; i++) {
        tl_iter_stats is;
        tl_iteration_stats(&t.iters[i], &is);
        assert_int_equal(is.kernels, 4);
        assert_int_equal(is.traced_ns, US(705));
    }
    tl_fidelity f;
    if (tl_fidelity_check(&t, NULL, &f, &err) < 0)
        fail_msg("tl_fidelity_check: %s", err.msg);
    assert_true(f.iter_err > -0.03 && f.iter_err < 0.03);
    tl_trace_close(&t);
    unlink(path);
    tt_lite_restore(&s, &st);
    tt_store_free(&s);

    /* Nested calls: a timed call made inside another carries the outer
     * call's times and name (hostcalls.c); whichever id the GPU record
     * has, its call gets them, and the other record is dropped. A lone
     * HOSTCALL id twice (not expected): the outer call's own record wins.
     * Queued launches mix with timed ones. */
    tt_store_init(&s);
    const uint64_t T = T0;
    mk_kernel(&s, 10, 7, 0, T + US(100), T + US(110), "a");
    mk_hostcall(&s, 10, T + US(50), T + US(55), 0, 211, "cudaLaunchKernel", false);
    mk_hostcall(&s, 11, T + US(50), T + US(55), 0, 211, "cudaLaunchKernel", true);
    mk_kernel(&s, 21, 7, 0, T + US(110), T + US(120), "b"); /* carries the nested id */
    mk_hostcall(&s, 20, T + US(60), T + US(66), 0, 211, "cudaLaunchKernel", false);
    mk_hostcall(&s, 21, T + US(60), T + US(66), 0, 211, "cudaLaunchKernel", true);
    mk_kernel(&s, 30, 7, 0, T + US(120), T + US(130), "c");
    mk_hostcall(&s, 30, T + US(72), T + US(73), 1, 307, "cuLaunchKernel", true);
    mk_hostcall(&s, 30, T + US(70), T + US(71), 0, 211, "cudaLaunchKernel", false);
    mk_kernel(&s, 40, 7, T + US(80), T + US(130), T + US(140), "d"); /* queued */
    mk_kernel(&s, 50, 7, 0, T + US(140), T + US(150), "e");
    mk_hostcall(&s, 50, T + US(151), T + US(152), 0, 211, "cudaLaunchKernel", false); /* skew */
    assert_int_equal(tt_lite_reconstruct(&s, 4242, &st), 0);
    assert_int_equal(st.launches, 5);
    assert_int_equal(st.launches_timed, 4);
    assert_int_equal(st.launches_queued, 1);
    assert_int_equal(st.launches_clamped, 1);
    assert_int_equal(st.host_calls_unused, 3);
    assert_int_equal(st.calls, 5);
    const tt_rec *a = call_of(&s, 10);
    assert_int_equal(a->start, T + US(50));
    assert_int_equal(a->end, T + US(55));
    assert_null(call_of(&s, 11));
    a = call_of(&s, 21);
    assert_int_equal(a->start, T + US(60));
    assert_int_equal(a->end, T + US(66));
    assert_string_equal(s.strings[a->name], "cudaLaunchKernel");
    assert_null(call_of(&s, 20));
    a = call_of(&s, 30);
    assert_int_equal(a->start, T + US(70));
    assert_int_equal(a->end, T + US(71));
    assert_int_equal(a->sub, 0);
    a = call_of(&s, 40);
    assert_int_equal(a->start, T + US(80));
    assert_true(a->flags & TT_RF_ESTIMATED);
    a = call_of(&s, 50); /* entered after its GPU start: moved back to it */
    assert_int_equal(a->start, T + US(140));
    assert_int_equal(a->end, T + US(152));
    tt_lite_restore(&s, &st);
    tt_store_free(&s);
}

/* The per-thread log the handler appends to (hostcalls.c), driven as the
 * callbacks would drive it. */
static void hc_call(tt_hc_log *log, tt_hc_thread *th, int driver, uint32_t cbid, uint32_t corr,
                    uint64_t t)
{
    if (tt_hc_enter(th, corr) && tt_hc_exit(th))
        tt_hc_add(log, th, driver, cbid, corr, t, t + 100);
}

static int by_entry_corr(const void *a, const void *b)
{
    const tt_hc_entry *x = a, *y = b;
    return x->corr < y->corr ? -1 : x->corr > y->corr;
}

typedef struct hc_worker {
    tt_hc_log *log;
    uint32_t first, n;
} hc_worker;

static void *hc_work(void *p)
{
    hc_worker *w = p;
    tt_hc_thread th = {0};
    for (uint32_t i = 0; i < w->n; i++)
        hc_call(w->log, &th, 0, 211, w->first + i, 1000 * (uint64_t)(w->first + i));
    return NULL;
}

static void *hc_try_lock(void *p)
{
    tt_hc_log *log = p;
    if (tt_hc_lock(log, 20) == 0) {
        tt_hc_unlock(log);
        return NULL;
    }
    return log;
}

static void test_hostcalls_log(void **state)
{
    (void)state;
    tt_hc_log log;
    assert_int_equal(tt_hc_init(&log, 0), 0);
    tt_hc_thread th = {0};
    /* a runtime launch that makes a timed driver launch inside: one start
     * stamp (the outer one), the inner call recorded with the outer call's
     * times, callback id and API */
    assert_true(tt_hc_enter(&th, 10));
    assert_false(tt_hc_enter(&th, 11)); /* nested: not stamped */
    assert_false(tt_hc_exit(&th));      /* its exit: nothing recorded */
    assert_true(tt_hc_exit(&th));       /* the outer call returns */
    tt_hc_add(&log, &th, 0, 211, 10, 5000, 5600);
    /* a lone driver launch; a runtime launch whose nested driver launch
     * carries its own id (CUDA 13 on the H100): one entry; then 3000 more
     * calls (past a buffer's 1024) */
    hc_call(&log, &th, 1, 307, 12, 7000);
    assert_true(tt_hc_enter(&th, 13));
    assert_false(tt_hc_enter(&th, 13));
    assert_false(tt_hc_exit(&th));
    assert_true(tt_hc_exit(&th));
    tt_hc_add(&log, &th, 0, 211, 13, 8000, 8500);
    for (uint32_t i = 0; i < 3000; i++)
        hc_call(&log, &th, 0, 211, 100 + i, 10000 + 1000 * (uint64_t)i);
    tt_hc_collect(&log, 0);
    assert_int_equal(log.n, 3004);
    assert_int_equal(log.lost, 0);
    qsort(log.all, log.n, sizeof *log.all, by_entry_corr);
    const tt_hc_entry *e = log.all;
    assert_int_equal(e[0].corr, 10);
    assert_int_equal(e[0].start, 5000);
    assert_int_equal(e[0].end, 5600);
    assert_int_equal(e[0].flags, 0);
    assert_int_equal(e[1].corr, 11);
    assert_int_equal(e[1].flags, TT_RF_NESTED);
    assert_int_equal(e[1].start, 5000);
    assert_int_equal(e[1].end, 5600);
    assert_int_equal(e[1].cbid, 211);
    assert_int_equal(e[1].driver, 0);
    assert_int_equal(e[2].corr, 12);
    assert_int_equal(e[2].driver, 1);
    assert_int_equal(e[2].cbid, 307);
    assert_int_equal(e[3].corr, 13);
    assert_int_equal(e[3].flags, 0);
    assert_int_equal(e[3].start, 8000);
    for (uint32_t i = 0; i < 3000; i++) {
        assert_int_equal(e[4 + i].corr, 100 + i);
        assert_int_equal(e[4 + i].start, 10000 + 1000 * (uint64_t)i);
    }
    /* collecting again adds nothing; the window start drops what is before it */
    tt_hc_collect(&log, 0);
    assert_int_equal(log.n, 3004);
    tt_hc_collect(&log, 100);
    assert_int_equal(log.n, 3000);

    /* threads: each its own buffer, collected while they run; a buffer is
     * handed back when its thread ends (4 at a time, then 4 more: at most
     * 5 buffers for 9 threads, the main one's included) */
    for (int round = 0; round < 2; round++) {
        pthread_t tids[4];
        hc_worker w[4];
        for (int i = 0; i < 4; i++) {
            w[i] = (hc_worker){.log = &log, .first = 100000 * (uint32_t)(1 + i + 4 * round),
                               .n = 5000};
            assert_int_equal(pthread_create(&tids[i], NULL, hc_work, &w[i]), 0);
        }
        for (int i = 0; i < 20; i++)
            tt_hc_collect(&log, 0);
        for (int i = 0; i < 4; i++)
            pthread_join(tids[i], NULL);
    }
    tt_hc_collect(&log, 0);
    assert_int_equal(log.n, 3000 + 8 * 5000);
    size_t n_bufs = 0;
    for (tt_hc_buf *b = log.bufs; b; b = b->next)
        n_bufs++;
    if (n_bufs > 5) /* (fewer when a thread ended before the next began) */
        fail_msg("%zu buffers for 9 threads, at most 5 at a time", n_bufs);
    qsort(log.all, log.n, sizeof *log.all, by_entry_corr);
    for (size_t i = 0; i < 8 * 5000; i++) { /* every call once */
        uint32_t want = 100000 * (uint32_t)(1 + i / 5000) + (uint32_t)(i % 5000);
        assert_int_equal(log.all[3000 + i].corr, want);
        assert_int_equal(log.all[3000 + i].start, 1000 * (uint64_t)want);
    }
    tt_hc_free(&log);

    /* the writer's bounded wait: a thread stopped inside the lock does not
     * hold the writer forever */
    assert_int_equal(tt_hc_init(&log, 0), 0);
    assert_int_equal(tt_hc_lock(&log, 1000), 0);
    pthread_t holder;
    assert_int_equal(pthread_create(&holder, NULL, hc_try_lock, &log), 0);
    void *got = NULL;
    pthread_join(holder, &got);
    assert_ptr_equal(got, (void *)&log); /* it gave up */
    tt_hc_unlock(&log);
    tt_hc_free(&log);

    /* the memory guard: past max, entries are counted as lost */
    assert_int_equal(tt_hc_init(&log, 1500), 0);
    memset(&th, 0, sizeof th);
    for (uint32_t i = 0; i < 2000; i++)
        hc_call(&log, &th, 0, 211, 1 + i, 1000 * (uint64_t)(i + 1));
    tt_hc_collect(&log, 0);
    assert_int_equal(log.n, 1500);
    assert_int_equal(log.lost, 500);
    tt_hc_free(&log);
}

/* --sync-records completion: waits known by their end only, placed by lite.c
 * among calls known by their queued time or their GPU work. */
static tt_rec *mk_completion(tt_store *s, int type, uint32_t stream, uint64_t end)
{
    tt_rec *r = mk(s, TT_R_SYNC, 0, 0, end);
    r->sub = (uint8_t)type, r->stream = stream, r->flags = TT_RF_END_ONLY;
    return r;
}

static void test_lite_completions(void **state)
{
    (void)state;
    tt_store s;
    tt_store_init(&s);
    const uint64_t T = T0;
    mk_kernel(&s, 10, 7, T + US(0), T + US(5), T + US(100), "a");
    mk_kernel(&s, 12, 7, T + US(2), T + US(100), T + US(200), "b");
    /* the host waited for the device from its last launch on */
    size_t w1 = s.n;
    mk_completion(&s, TT_SYNCT_CONTEXT, TT_NO_ID, T + US(210));
    mk_kernel(&s, 20, 7, T + US(300), T + US(305), T + US(400), "c");
    tt_rec *r = mk(&s, TT_R_MEMSET, 21, T + US(400), T + US(410)); /* no host time */
    r->stream = 7, r->flags = TT_RF_ASYNC, r->bytes = 64;
    /* a kernel on another stream still running when stream 7 is synchronized */
    mk_kernel(&s, 23, 9, T + US(301), T + US(302), T + US(900), "other");
    size_t w2 = s.n;
    mk_completion(&s, TT_SYNCT_STREAM, 7, T + US(415));
    mk_kernel(&s, 25, 7, T + US(1000), T + US(1005), T + US(1100), "d");
    /* returned 100 us after the work it waited for: the host came late */
    size_t w3 = s.n;
    mk_completion(&s, TT_SYNCT_STREAM, 7, T + US(1200));
    mk_kernel(&s, 27, 7, T + US(1300), T + US(1305), T + US(1400), "e");
    mk_kernel(&s, 30, 7, T + US(2000), T + US(2001), T + US(2050), "f");
    size_t g31 = s.n;
    mk_kernel(&s, 31, 7, T + US(2100), T + US(2101), T + US(2150), "g");
    /* between 30 and 31 by time, with no correlation id free there: what
     * CUPTI gives when it traces no synchronize call (it numbered only the
     * calls that made GPU work; the H100 run of test_gpu_completions). The
     * ids from 31 on move up by two. */
    size_t w4a = s.n;
    mk_completion(&s, TT_SYNCT_STREAM, 7, T + US(2055));
    size_t w4b = s.n;
    mk_completion(&s, TT_SYNCT_CONTEXT, TT_NO_ID, T + US(2060));
    size_t w5 = s.n; /* after everything: the next id */
    mk_completion(&s, TT_SYNCT_CONTEXT, TT_NO_ID, T + US(3000));

    tt_lite_stats st;
    assert_int_equal(tt_lite_reconstruct(&s, 1, &st), 0);
    assert_int_equal(st.waits_inferred, 6);
    assert_int_equal(st.waits_unplaced, 0);
    assert_int_equal(st.waits, 6);
    assert_int_equal(st.corr_moved, 1);
    assert_int_equal(tt_lite_corr(&st, 30), 30);
    assert_int_equal(tt_lite_corr(&st, 31), 33);
    assert_int_equal(tt_store_at(&s, w4a)->corr, 31);
    assert_int_equal(tt_store_at(&s, w4b)->corr, 32);
    assert_string_equal(call_name_of(&s, 31), "cudaStreamSynchronize");
    assert_string_equal(call_name_of(&s, 32), "cudaDeviceSynchronize");
    assert_int_equal(tt_store_at(&s, g31)->corr, 33); /* the kernel follows its call */
    assert_string_equal(call_name_of(&s, 33), "cudaLaunchKernel");
    assert_int_equal(call_of(&s, 33)->start, T + US(2100));
    assert_int_equal(call_of(&s, 32)->end, T + US(2060));
    /* placed after the call before them, with the first free id */
    assert_int_equal(tt_store_at(&s, w1)->corr, 13);
    /* after the other stream's launch (its call came first), though its
     * kernel ran on past the synchronize of stream 7 */
    assert_int_equal(tt_store_at(&s, w2)->corr, 24);
    assert_int_equal(tt_store_at(&s, w3)->corr, 26);
    assert_int_equal(tt_store_at(&s, w5)->corr, 34);
    assert_string_equal(call_name_of(&s, 13), "cudaDeviceSynchronize");
    assert_string_equal(call_name_of(&s, 24), "cudaStreamSynchronize");
    /* the first wait starts where the launch before it ended (submitted) */
    assert_int_equal(call_of(&s, 13)->start, T + US(3.5));
    assert_int_equal(call_of(&s, 13)->end, T + US(210));
    assert_int_equal(tt_store_at(&s, w1)->start, T + US(3.5)); /* the writer's join */
    /* after the launch before it */
    assert_int_equal(call_of(&s, 24)->start, call_of(&s, 23)->end);
    /* the late one: just before its end */
    assert_int_equal(call_of(&s, 26)->start, T + US(1199));
    assert_int_equal(call_of(&s, 34)->end, T + US(3000));
    /* every call starts after the previous one ended (one thread) */
    uint32_t order[] = {10, 12, 13, 20, 21, 23, 24, 25, 26, 27, 30, 31, 32, 33, 34};
    for (size_t i = 1; i < sizeof order / sizeof order[0]; i++)
        if (call_of(&s, order[i])->start < call_of(&s, order[i - 1])->start)
            fail_msg("call %u starts before call %u", order[i], order[i - 1]);

    /* after the write: CUPTI's ids back; placed afresh when written again
     * (after a cudaDeviceReset, at exit) */
    size_t n = s.n;
    tt_lite_restore(&s, &st);
    tt_store_truncate(&s, n - st.calls);
    assert_int_equal(tt_store_at(&s, g31)->corr, 31);
    assert_int_equal(tt_store_at(&s, w4a)->corr, 0);
    assert_int_equal(tt_lite_corr(&st, 31), 31);
    assert_int_equal(tt_lite_reconstruct(&s, 1, &st), 0);
    assert_int_equal(st.waits_inferred, 6);
    assert_int_equal(tt_store_at(&s, w3)->corr, 26);
    assert_int_equal(tt_store_at(&s, w4b)->corr, 32);
    assert_int_equal(tt_store_at(&s, g31)->corr, 33);
    tt_lite_restore(&s, &st);
    tt_store_free(&s);
}

/* ---- the lite variants on real captures ------------------------------------ */

/* What the H100 captures are turned back into: the records CUPTI gave for
 * them, as the tracer kept them, under one of the lite mode's variants. */
enum {
    V_RECORDED = 0,        /* as traced: queued launch times, exact waits */
    V_COMPLETIONS = 1 << 0, /* --sync-records completion: stream/device waits
                              known by their end only; event syncs, stream
                              waits and event records not seen */
    V_NO_QUEUED = 1 << 1,  /* --queued-times off: no launch host times */
};

static int kind_from(const char *name, const char *(*fn)(unsigned), int n)
{
    for (int k = 1; k <= n; k++)
        if (!strcmp(fn((unsigned)k), name))
            return k;
    return 0;
}

static const char *copy_name_of(unsigned k) { return copy_kind_name(k); }
static const char *mem_name_of(unsigned k) { return mem_kind_name(k); }

/* A real wait of the capture: its correlation id and end; with
 * completions, the ids (as renumbered, below) of the calls around it. */
typedef struct real_wait {
    long long corr, end;
    uint32_t prev, next; /* 0: none */
} real_wait;

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/* Call c's id when only the calls with GPU work (ids gpu[0..n), sorted) were
 * numbered, consecutively from the first; gpu NULL: c itself. */
static uint32_t dense_id(const long long *gpu, size_t n, long long c)
{
    const long long *p = gpu && c > 0 ? bsearch(&c, gpu, n, sizeof *gpu, cmp_ll) : NULL;
    return p ? (uint32_t)(gpu[0] + (p - gpu)) : (uint32_t)c;
}

/* Records from a lite trace (times shifted by T0: 0 means unknown). Waits
 * the variant keeps as completions are listed in waits (*n_waits). With
 * completions, CUPTI traces no API call, and numbers only the calls that
 * make GPU work: the calls' ids are renumbered so, consecutive from the
 * first (the captures were made with the synchronize calls traced, which
 * took ids of their own). */
static void store_from_trace(json_t *root, tt_store *s, unsigned variant, real_wait *waits,
                             int *n_waits)
{
    json_t *events = json_object_get(root, "events");
    size_t n = json_array_size(events);
    long long max_corr = 0;
    long long *gpu = calloc(n + 1, sizeof *gpu); /* ids of the calls with GPU work */
    size_t n_gpu = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(events, i), *c = json_object_get(e, "corr");
        if (json_is_integer(c) && json_integer_value(c) > max_corr)
            max_corr = json_integer_value(c);
        const char *type = jstr(e, "type");
        if (json_is_integer(c) && json_integer_value(c) > 0 &&
            (!strcmp(type, "kernel") || !strcmp(type, "memcpy") || !strcmp(type, "memset")))
            gpu[n_gpu++] = json_integer_value(c);
    }
    qsort(gpu, n_gpu, sizeof *gpu, cmp_ll);
    size_t u = 0;
    for (size_t i = 0; i < n_gpu; i++)
        if (!u || gpu[u - 1] != gpu[i])
            gpu[u++] = gpu[i];
    n_gpu = u;
    bool dense = (variant & V_COMPLETIONS) && n_gpu;
    /* renumbered: the k-th call with GPU work gets gpu[0] + k */
#define DENSE(c) dense_id(dense ? gpu : NULL, n_gpu, c)
    json_t **api = calloc((size_t)max_corr + 1, sizeof *api);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(events, i);
        if (!strcmp(jstr(e, "type"), "api"))
            api[jint(e, "corr")] = e;
    }
    *n_waits = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(events, i);
        const char *type = jstr(e, "type");
        long long corr = json_integer_value(json_object_get(e, "corr"));
        uint64_t t0 = T0 + (uint64_t)jint(e, "start_ns"), t1 = T0 + (uint64_t)jint(e, "end_ns");
        if (!strcmp(type, "kernel")) {
            tt_rec *r = mk(s, TT_R_KERNEL, DENSE(corr), t0, t1);
            r->stream = (uint32_t)jint(e, "stream");
            json_t *g = json_object_get(e, "grid"), *b = json_object_get(e, "block");
            for (int d = 0; d < 3; d++) {
                r->grid[d] = (int32_t)json_integer_value(json_array_get(g, d));
                r->block[d] = (int32_t)json_integer_value(json_array_get(b, d));
            }
            r->regs = (uint16_t)jint(e, "regs");
            r->static_smem = (int32_t)jint(e, "static_smem");
            r->dynamic_smem = (int32_t)jint(e, "dynamic_smem");
            r->name = tt_intern(s, jstr(e, "name"));
            json_t *a = api[corr];
            if (a && !(variant & V_NO_QUEUED)) { /* the call was its queued..submitted */
                r->queued = T0 + (uint64_t)jint(a, "start_ns");
                r->submitted = T0 + (uint64_t)jint(a, "end_ns");
            }
        } else if (!strcmp(type, "memcpy") || !strcmp(type, "memset")) {
            bool copy = !strcmp(type, "memcpy");
            tt_rec *r = mk(s, copy ? TT_R_MEMCPY : TT_R_MEMSET, DENSE(corr), t0, t1);
            r->stream = (uint32_t)jint(e, "stream");
            r->bytes = (uint64_t)jint(e, "bytes");
            json_t *a = api[corr];
            if (a && strstr(jstr(a, "name"), "Async"))
                r->flags = TT_RF_ASYNC;
            if (copy) {
                r->sub = (uint8_t)kind_from(jstr(e, "copy_kind"), copy_name_of, 10);
                r->id = (uint32_t)kind_from(jstr(e, "src_kind"), mem_name_of, 7) |
                        (uint32_t)kind_from(jstr(e, "dst_kind"), mem_name_of, 7) << 8;
            }
        } else if (!strcmp(type, "marker")) {
            tt_rec *r = mk(s, TT_R_MARKER, 0, t0, t1);
            r->name = tt_intern(s, jstr(e, "name"));
            r->domain = tt_intern(s, jstr(e, "domain"));
        } else if (!strcmp(type, "api")) {
            const char *name = jstr(e, "name");
            json_t *st = json_object_get(e, "stream"), *ev = json_object_get(e, "event");
            int sync = !strcmp(name, "cudaDeviceSynchronize")   ? TT_SYNCT_CONTEXT
                       : !strcmp(name, "cudaStreamSynchronize") ? TT_SYNCT_STREAM
                       : !strcmp(name, "cudaEventSynchronize")  ? TT_SYNCT_EVENT
                       : !strcmp(name, "cudaStreamWaitEvent")   ? TT_SYNCT_STREAM_WAIT
                                                                : 0;
            bool record = !strcmp(name, "cudaEventRecord");
            bool seen = !(variant & V_COMPLETIONS) ||
                        sync == TT_SYNCT_CONTEXT || sync == TT_SYNCT_STREAM;
            if (!(sync || record) || !seen)
                continue;
            tt_rec *r = mk(s, record ? TT_R_EVENT : TT_R_SYNC, (uint32_t)corr, t0, t1);
            r->sub = (uint8_t)sync;
            if (json_is_integer(st))
                r->stream = (uint32_t)json_integer_value(st);
            if (json_is_integer(ev))
                r->id = (uint32_t)json_integer_value(ev);
            if (record)
                r->start = r->end = 0; /* CUDA_EVENT records carry no host time */
            if (sync && (variant & V_COMPLETIONS)) {
                r->corr = 0, r->start = 0, r->flags = TT_RF_END_ONLY;
                real_wait *w = &waits[(*n_waits)++];
                w->corr = corr;
                w->end = (long long)t1;
                size_t k = 0; /* the first call with GPU work after it */
                while (k < n_gpu && gpu[k] < corr) /* (few waits: a scan will do) */
                    k++;
                w->prev = k ? (uint32_t)(gpu[0] + (long long)k - 1) : 0;
                w->next = k < n_gpu ? (uint32_t)(gpu[0] + (long long)k) : 0;
            }
        }
    }
#undef DENSE
    free(gpu);
    json_t *si = json_object_get(root, "stream_info");
    for (size_t i = 0; i < json_array_size(si); i++) {
        json_t *x = json_array_get(si, i);
        tt_rec *r = mk(s, TT_R_STREAM, 0, 0, 0);
        r->stream = (uint32_t)jint(x, "stream");
        r->static_smem = (int32_t)jint(x, "priority");
        r->id = (uint32_t)jint(x, "flags");
    }
    free(api);
}

/* Rebuild the host calls of a capture under a variant, write, load and
 * replay it alone: the replay's error against the trace's own iteration
 * time. With completions, each inferred wait must sit where the real one
 * was (between the same two recorded calls) and end when it ended. */
typedef struct variant_result {
    double iter_err; /* replay / traced - 1 */
    double host_ms;  /* host time per iteration (gaps and calls, not waits) */
    double lead_us;  /* mean time from a launch's call to its kernel's GPU start */
} variant_result;

static variant_result replay_variant(const char *capture, const char *marker, unsigned variant)
{
    json_t *root = load_json(capture);
    tt_store s;
    tt_store_init(&s);
    real_wait *waits = calloc(json_array_size(json_object_get(root, "events")) + 1, sizeof *waits);
    int n_waits = 0;
    store_from_trace(root, &s, variant, waits, &n_waits);
    json_decref(root);
    tt_lite_stats st;
    assert_int_equal(tt_lite_reconstruct(&s, 4242, &st), 0);
    if (variant & V_NO_QUEUED)
        assert_int_equal(st.launches_queued, 0);
    else
        assert_int_equal(st.launches_queued, st.launches);
    if (variant & V_COMPLETIONS) {
        assert_int_equal(st.waits_inferred, n_waits);
        assert_int_equal(st.waits_unplaced, 0);
        /* a wait between two calls had no id free: room was made */
        bool inside = false;
        for (int w = 0; w < n_waits; w++)
            inside = inside || (waits[w].prev && waits[w].next);
        if (inside)
            assert_true(st.corr_moved > 0);
        /* calls (the reconstructed ones) by correlation id */
        uint32_t *placed = calloc((size_t)n_waits + 1, sizeof *placed); /* their ids */
        size_t n_placed = 0;
        for (size_t i = 0; i < s.n; i++) {
            const tt_rec *x = tt_store_at(&s, i);
            if (x->type == TT_R_SYNC && (x->flags & TT_RF_END_ONLY) && x->corr)
                placed[n_placed++] = x->corr;
        }
        qsort(placed, n_placed, sizeof *placed, cmp_corr);
        size_t n_calls = 0;
        long long(*calls)[2] = calloc(s.n + 1, sizeof *calls); /* corr, end or -end (wait) */
        for (size_t i = 0; i < s.n; i++) {
            const tt_rec *r = tt_store_at(&s, i);
            if (r->type != TT_R_API)
                continue;
            bool inferred = bsearch(&r->corr, placed, n_placed, sizeof *placed, cmp_corr) != NULL;
            calls[n_calls][0] = r->corr;
            calls[n_calls++][1] = inferred ? -(long long)r->end : (long long)r->end;
        }
        qsort(calls, n_calls, sizeof *calls, cmp_pair);
        for (int w = 0; w < n_waits; w++) {
            /* the inferred wait with this end; the calls that are not
             * inferred waits around it must be those around the real one */
            size_t k = 0;
            while (k < n_calls && calls[k][1] != -waits[w].end)
                k++;
            if (k == n_calls)
                fail_msg("%s: no inferred wait ends at the real wait's end (corr %lld)", capture,
                         waits[w].corr);
            size_t a = k, b = k;
            while (a > 0 && calls[a - 1][1] < 0)
                a--;
            while (b + 1 < n_calls && calls[b + 1][1] < 0)
                b++;
            /* the calls around it, as moved to make room for the waits */
            long long lo = a ? calls[a - 1][0] : 0, hi = b + 1 < n_calls ? calls[b + 1][0] : 0;
            long long want_lo = waits[w].prev ? tt_lite_corr(&st, waits[w].prev) : 0;
            long long want_hi = waits[w].next ? tt_lite_corr(&st, waits[w].next) : 0;
            if (lo != want_lo || hi != want_hi)
                fail_msg("%s: the wait of corr %lld was placed between calls %lld and %lld, "
                         "not %lld and %lld", capture, waits[w].corr, lo, hi, want_lo, want_hi);
        }
        free(calls);
        free(placed);
    }
    free(waits);

    /* how far ahead of the GPU the host launched */
    uint64_t *call_at = calloc(1u << 22, sizeof *call_at); /* by correlation id */
    double lead = 0;
    size_t n_lead = 0;
    for (size_t i = 0; i < s.n; i++) {
        const tt_rec *r = tt_store_at(&s, i);
        if (r->type == TT_R_API && r->corr < (1u << 22))
            call_at[r->corr] = r->start;
    }
    for (size_t i = 0; i < s.n; i++) {
        const tt_rec *r = tt_store_at(&s, i);
        if (r->type == TT_R_KERNEL && r->corr < (1u << 22) && call_at[r->corr])
            lead += (double)(r->start - call_at[r->corr]), n_lead++;
    }
    free(call_at);

    char path[300];
    path_in_tmp(path, sizeof path, "variant.json");
    tt_options o;
    char msg[512];
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    if (variant & V_COMPLETIONS)
        o.sync_records = TT_SYNCREC_COMPLETION;
    o.launch_times = variant & V_NO_QUEUED ? TT_LAUNCH_OFF : TT_LAUNCH_QUEUED;
    write_lite_h100(&s, &st, &o, !(variant & V_NO_QUEUED), path);
    tt_lite_restore(&s, &st);
    tt_store_free(&s);
    if (!(variant & V_COMPLETIONS) && st.calls < 1000) { /* the lite checks (quadratic) */
        json_t *w = load_json(path);
        check_lite(w, !(variant & V_NO_QUEUED));
        json_decref(w);
    }

    tl_trace t;
    tl_trace_init(&t);
    tl_trace_options lo = {.marker_prefix = marker};
    tl_err err;
    if (tl_trace_load(&t, path, &lo, &err) < 0)
        fail_msg("%s: tl_trace_load: %s", capture, err.msg);
    tl_fidelity f;
    if (tl_fidelity_check(&t, NULL, &f, &err) < 0)
        fail_msg("%s: tl_fidelity_check: %s", capture, err.msg);
    variant_result res = {.iter_err = f.iter_err, .lead_us = n_lead ? lead / n_lead / 1e3 : 0};
    for (uint32_t i = 0; i < t.n_iters; i++) {
        tl_iter_stats is;
        tl_iteration_stats(&t.iters[i], &is);
        res.host_ms += is.host_ns / 1e6 / t.n_iters;
    }
    tl_trace_close(&t);
    unlink(path);
    return res;
}

/* The H100 lite captures (activity-record waits, queued launch times)
 * rebuilt as each lite variant would have rebuilt them, then replayed
 * alone: within 3% of the traced iteration time as recorded, and with
 * completions for the PyTorch jobs (one stream, no event waits: what that
 * mode can see; the test program's cross-stream event waits are lost
 * there, its figure is printed). Every inferred wait is checked to sit
 * where the real one was. A solo replay hardly depends on where a wait
 * starts, nor on launch times when the GPU is the bottleneck: the figures
 * without queued times are printed, not judged. */
static void test_lite_variants_on_captures(void **state)
{
    (void)state;
    static const struct {
        const char *file, *marker;
        bool event_waits; /* waits that completions cannot see */
    } caps[] = {
        {CAPTURED "testprog_lite.json.gz", "step#", true},
        {CAPTURED "resnet50_train_b32_lite.json.gz", NULL, false},
        {CAPTURED "bert_infer_b1_lite.json.gz", NULL, false},
        /* the default's (waits from callbacks; the run of 2026-11-23). Its
         * ResNet-50 capture is not here: replayed alone it is -3.27%, the
         * simulator dispatching a stream's back-to-back kernels with no gap
         * where the H100 left ~2.3 us under CUPTI's latency timestamps
         * (experiments/results/tracer/README.md) */
        {CAPTURED "testprog_callback.json.gz", "step#", true},
        {CAPTURED "bert_infer_b1_callback.json.gz", NULL, false},
    };
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        variant_result rec = replay_variant(caps[i].file, caps[i].marker, V_RECORDED);
        variant_result cmp = replay_variant(caps[i].file, caps[i].marker, V_COMPLETIONS);
        variant_result noq = replay_variant(caps[i].file, caps[i].marker, V_NO_QUEUED);
        variant_result both =
            replay_variant(caps[i].file, caps[i].marker, V_NO_QUEUED | V_COMPLETIONS);
        print_message("%s: replay error / host ms per iteration / mean launch lead us:\n"
                      "  recorded %+.2f%% / %.3f / %.1f; completions %+.2f%% / %.3f / %.1f;\n"
                      "  no queued times %+.2f%% / %.3f / %.1f; both %+.2f%% / %.3f / %.1f\n",
                      caps[i].file, 100 * rec.iter_err, rec.host_ms, rec.lead_us,
                      100 * cmp.iter_err, cmp.host_ms, cmp.lead_us, 100 * noq.iter_err,
                      noq.host_ms, noq.lead_us, 100 * both.iter_err, both.host_ms, both.lead_us);
        assert_true(rec.iter_err > -0.03 && rec.iter_err < 0.03);
        if (!caps[i].event_waits) {
            assert_true(cmp.iter_err > -0.03 && cmp.iter_err < 0.03);
            /* the waits hold the host as before: host time within 3% too */
            assert_true(fabs(cmp.host_ms / rec.host_ms - 1) < 0.03);
        }
    }
}

/* A real --sync-records completion capture (the H100 run of 2026-11-23,
 * made before waits could move ids: 29 of its 30 device synchronizes were
 * left out, for want of a free correlation id). Its GPU records carry
 * CUPTI's ids as that mode gets them, consecutive; the synchronizes' ends
 * survive as the iteration boundaries (--iteration-sync device:1 counts
 * completions; a boundary is the completion's own time) and as the one
 * wait placed. Rebuilt from those: every wait placed, before the first
 * launch of the next step, with room made among the real ids; one sync per
 * iteration; the host time per step no longer holds the waits. */
static void test_completion_capture_rebuilt(void **state)
{
    (void)state;
    const char *cap = CAPTURED "resnet50_train_b32_completion.json.gz";
    json_t *root = load_json(cap);
    json_t *ht = json_object_get(root, "host_timeline");
    assert_int_equal(jint(ht, "waits_unplaced"), 29); /* as captured */
    tt_store s;
    tt_store_init(&s);
    size_t n_ev = json_array_size(json_object_get(root, "events"));
    real_wait *waits = calloc(n_ev + 1, sizeof *waits);
    int n_waits = 0;
    store_from_trace(root, &s, V_COMPLETIONS, waits, &n_waits);
    assert_int_equal(n_waits, 1); /* the placed one: the stop boundary's */
    /* the boundaries: a completion each, but the first (the wait that
     * ended the step before the window, whose calls are not in the file) */
    size_t n_rec = s.n;
    uint64_t first = UINT64_MAX;
    for (size_t i = 0; i < n_rec; i++) {
        const tt_rec *r = tt_store_at(&s, i);
        if (r->type == TT_R_MARKER && has_prefix(s.strings[r->name], "iteration#") &&
            r->start < first)
            first = r->start;
    }
    int n_marks = 0;
    for (size_t i = 0; i < n_rec; i++) {
        const tt_rec *r = tt_store_at(&s, i);
        if (r->type == TT_R_MARKER && has_prefix(s.strings[r->name], "iteration#") &&
            r->start > first) {
            uint64_t end = r->start;
            mk_completion(&s, TT_SYNCT_CONTEXT, TT_NO_ID, end);
            n_marks++;
        }
    }
    assert_int_equal(n_marks, 19);
    json_decref(root);

    tt_lite_stats st;
    assert_int_equal(tt_lite_reconstruct(&s, 4242, &st), 0);
    assert_int_equal(st.waits_inferred, 20);
    assert_int_equal(st.waits_unplaced, 0);
    assert_true(st.corr_moved > 0);
    /* each wait: after every call that started before its end, before
     * every call that started after it (by id), the other waits aside */
    uint32_t *wait_ids = calloc(s.n + 1, sizeof *wait_ids);
    size_t n_wait_ids = 0;
    for (size_t i = 0; i < s.n; i++) {
        const tt_rec *r = tt_store_at(&s, i);
        if (r->type == TT_R_SYNC && (r->flags & TT_RF_END_ONLY)) {
            assert_true(r->corr != 0);
            wait_ids[n_wait_ids++] = r->corr;
        }
    }
    qsort(wait_ids, n_wait_ids, sizeof *wait_ids, cmp_corr);
    size_t n_calls = 0;
    long long(*calls)[2] = calloc(s.n + 1, sizeof *calls); /* corr, start */
    for (size_t i = 0; i < s.n; i++) {
        const tt_rec *r = tt_store_at(&s, i);
        if (r->type == TT_R_API &&
            !bsearch(&r->corr, wait_ids, n_wait_ids, sizeof *wait_ids, cmp_corr))
            calls[n_calls][0] = r->corr, calls[n_calls++][1] = (long long)r->start;
    }
    for (size_t i = 0; i < s.n; i++) {
        const tt_rec *r = tt_store_at(&s, i);
        if (!(r->type == TT_R_SYNC && (r->flags & TT_RF_END_ONLY)))
            continue;
        assert_non_null(call_of(&s, r->corr));
        for (size_t j = 0; j < n_calls; j++) {
            bool before = calls[j][0] < r->corr;
            if (before && calls[j][1] >= (long long)r->end)
                fail_msg("call %lld starts after the wait (corr %u) ended", calls[j][0], r->corr);
            if (!before && calls[j][1] < (long long)r->end)
                fail_msg("call %lld, after the wait (corr %u), started before it ended",
                         calls[j][0], r->corr);
        }
    }
    free(wait_ids);
    free(calls);
    free(waits);

    char path[300];
    path_in_tmp(path, sizeof path, "completion_rebuilt.json");
    tt_options o;
    char msg[512];
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    o.sync_records = TT_SYNCREC_COMPLETION;
    write_lite_h100(&s, &st, &o, true, path);
    tt_lite_restore(&s, &st);
    tt_store_free(&s);

    tl_trace_options lo = {.marker_prefix = "iteration#"};
    tl_err err;
    double host_ms[2] = {0, 0}, traced_ms = 0, busy_ms = 0;
    for (int f = 0; f < 2; f++) {
        tl_trace t;
        tl_trace_init(&t);
        if (tl_trace_load(&t, f ? path : cap, &lo, &err) < 0)
            fail_msg("tl_trace_load: %s", err.msg);
        assert_int_equal(t.n_iters, 20);
        for (uint32_t i = 0; i < t.n_iters; i++) {
            tl_iter_stats is;
            tl_iteration_stats(&t.iters[i], &is);
            assert_int_equal(is.kernels, 725);
            if (f) /* the wait that ends the step */
                assert_int_equal(is.syncs, 1);
            host_ms[f] += is.host_ns / 1e6 / t.n_iters;
            if (f)
                traced_ms += is.traced_ns / 1e6 / t.n_iters,
                    busy_ms += is.gpu_busy_ns / 1e6 / t.n_iters;
        }
        if (f) {
            tl_fidelity fid;
            if (tl_fidelity_check(&t, NULL, &fid, &err) < 0)
                fail_msg("tl_fidelity_check: %s", err.msg);
            print_message("%s rebuilt: host %.3f ms per step (as captured %.3f), traced %.3f, "
                          "GPU busy %.3f; replay %+.2f%%; %llu calls moved\n",
                          cap, host_ms[1], host_ms[0], traced_ms, busy_ms, 100 * fid.iter_err,
                          (unsigned long long)st.corr_moved);
        }
        tl_trace_close(&t);
    }
    unlink(path);
    /* the waits (the GPU's last ~2 ms of each step) are no longer host time */
    assert_true(host_ms[1] < host_ms[0] - 1.0);
}

/* The three modes and their options, as the library reads them. */
static void test_host_timeline_options(void **state)
{
    (void)state;
    int mode = -1, how = -1;
    assert_int_equal(tt_parse_host_timeline("lite", &mode), 0);
    assert_int_equal(mode, TT_HOST_LITE);
    assert_int_equal(tt_parse_host_timeline("full", &mode), 0);
    assert_int_equal(mode, TT_HOST_FULL);
    assert_int_equal(tt_parse_host_timeline("none", &mode), 0);
    assert_int_equal(mode, TT_HOST_NONE);
    assert_int_equal(tt_parse_host_timeline("Lite", &mode), -1);
    assert_int_equal(tt_parse_sync_records("callback", &how), 0);
    assert_int_equal(how, TT_SYNCREC_CALLBACK);
    assert_int_equal(tt_parse_sync_records("completion", &how), 0);
    assert_int_equal(how, TT_SYNCREC_COMPLETION);
    assert_int_equal(tt_parse_sync_records("activity", &how), 0);
    assert_int_equal(how, TT_SYNCREC_ACTIVITY);
    assert_string_equal(tt_sync_records_name(TT_SYNCREC_COMPLETION), "completion");
    assert_int_equal(tt_parse_sync_records("cb", &how), -1);
    bool on = false;
    assert_int_equal(tt_parse_on_off("on", &on), 0);
    assert_true(on);
    assert_int_equal(tt_parse_on_off("0", &on), 0);
    assert_false(on);
    assert_int_equal(tt_parse_on_off("yes", &on), -1);
    int lt = -1;
    assert_int_equal(tt_parse_launch_times("queued", &lt), 0);
    assert_int_equal(lt, TT_LAUNCH_QUEUED);
    assert_int_equal(tt_parse_launch_times("callback", &lt), 0);
    assert_int_equal(lt, TT_LAUNCH_CALLBACK);
    assert_int_equal(tt_parse_launch_times("off", &lt), 0);
    assert_int_equal(lt, TT_LAUNCH_OFF);
    assert_int_equal(tt_parse_launch_times("on", &lt), -1);
    assert_int_equal(tt_parse_launch_times("callbacks", &lt), -1);
    assert_string_equal(tt_launch_times_name(TT_LAUNCH_CALLBACK), "callback");

    tt_options o;
    char msg[512];
    /* the defaults: lite, waits from callbacks, queued launch times */
    unsetenv("TALLY_TRACE_HOST_TIMELINE");
    unsetenv("TALLY_TRACE_SYNC_RECORDS");
    unsetenv("TALLY_TRACE_QUEUED_TIMES");
    unsetenv("TALLY_TRACE_LAUNCH_TIMES");
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    assert_int_equal(o.host_timeline, TT_HOST_LITE);
    assert_int_equal(o.sync_records, TT_SYNCREC_CALLBACK);
    assert_int_equal(o.launch_times, TT_LAUNCH_QUEUED);
    setenv("TALLY_TRACE_QUEUED_TIMES", "off", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    assert_int_equal(o.launch_times, TT_LAUNCH_OFF);
    setenv("TALLY_TRACE_QUEUED_TIMES", "maybe", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "TALLY_TRACE_QUEUED_TIMES"));
    setenv("TALLY_TRACE_QUEUED_TIMES", "on", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    assert_int_equal(o.launch_times, TT_LAUNCH_QUEUED);
    unsetenv("TALLY_TRACE_QUEUED_TIMES");
    /* --launch-times: its variable, and over the old one when both are set */
    setenv("TALLY_TRACE_LAUNCH_TIMES", "callback", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    assert_int_equal(o.launch_times, TT_LAUNCH_CALLBACK);
    assert_int_equal(o.host_timeline, TT_HOST_LITE);
    assert_false(o.activities & (TT_ACT_RUNTIME | TT_ACT_DRIVER)); /* no API activity */
    setenv("TALLY_TRACE_QUEUED_TIMES", "on", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    assert_int_equal(o.launch_times, TT_LAUNCH_CALLBACK);
    setenv("TALLY_TRACE_LAUNCH_TIMES", "off", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    assert_int_equal(o.launch_times, TT_LAUNCH_OFF);
    unsetenv("TALLY_TRACE_QUEUED_TIMES");
    setenv("TALLY_TRACE_LAUNCH_TIMES", "queued", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    assert_int_equal(o.launch_times, TT_LAUNCH_QUEUED);
    setenv("TALLY_TRACE_LAUNCH_TIMES", "cupti", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "TALLY_TRACE_LAUNCH_TIMES"));
    assert_non_null(strstr(msg, "cupti"));
    unsetenv("TALLY_TRACE_LAUNCH_TIMES");
    setenv("TALLY_TRACE_HOST_TIMELINE", "full", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    assert_int_equal(o.activities, TT_ACT_DEFAULT); /* every call but queries */
    setenv("TALLY_TRACE_HOST_TIMELINE", "none", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    assert_false(o.activities & (TT_ACT_API | TT_ACT_SYNC | TT_ACT_EVENT));
    assert_true(o.activities & TT_ACT_KERNEL);
    setenv("TALLY_TRACE_HOST_TIMELINE", "partial", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "TALLY_TRACE_HOST_TIMELINE"));
    unsetenv("TALLY_TRACE_HOST_TIMELINE");
    setenv("TALLY_TRACE_SYNC_RECORDS", "activity", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    assert_int_equal(o.host_timeline, TT_HOST_LITE);
    assert_int_equal(o.sync_records, TT_SYNCREC_ACTIVITY);
    assert_true(o.activities & TT_ACT_SYNC);
    setenv("TALLY_TRACE_SYNC_RECORDS", "completion", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    assert_int_equal(o.sync_records, TT_SYNCREC_COMPLETION);
    setenv("TALLY_TRACE_SYNC_RECORDS", "polling", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "TALLY_TRACE_SYNC_RECORDS"));
    unsetenv("TALLY_TRACE_SYNC_RECORDS");
}

/* Integer options and their variables took what strtoll takes: a leading
 * space or '+' (" 2", "+2"). Digits alone now, as in every command. */
static void test_integer_options(void **state)
{
    (void)state;
    int64_t n = 0;
    int kind;
    assert_int_equal(tt_parse_iter_sync("device:3", &n, &kind), 0);
    assert_int_equal(n, 3);
    assert_int_equal(kind, TT_SYNC_DEVICE);
    static const char *const bad[] = {"device: 3", "+3", " 3", "stream:+1", "3 ", "0", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(tt_parse_iter_sync(bad[i], &n, &kind), -1);
    tt_options o;
    char msg[512];
    setenv("TALLY_TRACE_RECORD_EVERY", "2", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    assert_int_equal(o.record_every, 2);
    setenv("TALLY_TRACE_RECORD_EVERY", " 2", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "TALLY_TRACE_RECORD_EVERY=' 2' is not an integer"));
    setenv("TALLY_TRACE_RECORD_EVERY", "+2", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "TALLY_TRACE_RECORD_EVERY='+2' is not an integer"));
    setenv("TALLY_TRACE_RECORD_EVERY", "0", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "TALLY_TRACE_RECORD_EVERY='0' is out of range (expected an integer >= 1)"));
    unsetenv("TALLY_TRACE_RECORD_EVERY");
    /* seconds: decimals as every option reads them; strtod took space, hex, inf */
    setenv("TALLY_TRACE_STOP_SECONDS", "2.5", 1);
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    assert_true(o.stop_seconds == 2.5);
    static const char *const bad_s[] = {" 2", "0x2", "inf", "nan", "-1", "2s"};
    for (size_t i = 0; i < sizeof bad_s / sizeof bad_s[0]; i++) {
        setenv("TALLY_TRACE_STOP_SECONDS", bad_s[i], 1);
        assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), -1);
        assert_non_null(strstr(msg, "TALLY_TRACE_STOP_SECONDS"));
    }
    unsetenv("TALLY_TRACE_STOP_SECONDS");
}

/* The library wrote into a folder that had to be there: -o runs/%p/t.json
 * (tally-trace cannot make a folder named after a pid it does not know yet)
 * or the library used without tally-trace failed at exit, the trace lost. It
 * makes the folder now, and names the one it cannot make. */
static void test_write_makes_folder(void **state)
{
    (void)state;
    tt_store s;
    tt_store_init(&s);
    mk_step(&s, 0);
    tt_lite_stats st;
    assert_int_equal(tt_lite_reconstruct(&s, 4242, &st), 0);
    tt_options o;
    char msg[512], path[300];
    assert_int_equal(tt_options_from_env(&o, msg, sizeof msg), 0);
    path_in_tmp(path, sizeof path, "runs/4242/t.json");
    write_lite_h100(&s, &st, &o, true, path);
    json_decref(load_json(path));
    path_in_tmp(path, sizeof path, "in-the-way");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    path_in_tmp(path, sizeof path, "in-the-way/4242/t.json");
    assert_int_equal(try_write_lite_h100(&s, &st, &o, true, path, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "in-the-way/4242: cannot create folder"));
    tt_lite_restore(&s, &st);
    tt_store_free(&s);
}

/* ---- tests that need no GPU ---------------------------------------------- */

static void test_usage(void **state)
{
    (void)state;
    if (!have_tracer()) {
        print_message("SKIP: %s not built (needs nvcc and CUPTI)\n", tool);
        skip();
    }
    char out[300], err[300];
    path_in_tmp(out, sizeof out, "out.txt");
    path_in_tmp(err, sizeof err, "err.txt");

    char *help[] = {tool, "--help", NULL};
    int st = run(help, out, err);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char *text = slurp(out);
    assert_non_null(strstr(text, "Usage: tally-trace"));
    assert_non_null(strstr(text, "--stop-after-iterations"));
    assert_non_null(strstr(text, "--host-timeline MODE"));
    assert_non_null(strstr(text, "--sync-records HOW"));
    assert_non_null(strstr(text, "--queued-times on|off"));
    assert_non_null(strstr(text, "--launch-times HOW"));
    assert_non_null(strstr(text, "--latency-sample N"));
    assert_non_null(strstr(text, "--record-every N"));
    free(text);

    char *version[] = {tool, "--version", NULL};
    st = run(version, out, err);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    text = slurp(out);
    assert_non_null(strstr(text, "tally-trace "));
    free(text);

    char *cases[][8] = {
        {tool, "--bogus", "--", "/bin/true", NULL},
        {tool, NULL},
        {tool, "--activities", "kernel,nonsense", "--", "/bin/true", NULL},
        {tool, "--iteration-sync", "0", "--", "/bin/true", NULL},
        {tool, "--stop-after-iterations", "3", "--", "/bin/true", NULL}, /* no method */
        {tool, "--iteration-sync", "1", "--iteration-kernel", "k", NULL},
        {tool, "--host-timeline", "partial", "--", "/bin/true", NULL},
        {tool, "--sync-records", "polling", "--", "/bin/true", NULL},
        {tool, "--queued-times", "maybe", "--", "/bin/true", NULL},
        {tool, "--launch-times", "sometimes", "--", "/bin/true", NULL},
        {tool, "--launch-times", NULL},
        {tool, "--latency-sample", "0", "--iteration-sync", "1", "--", "/bin/true", NULL},
        {tool, "--latency-sample", "10", "--", "/bin/true", NULL}, /* no --iteration-sync */
        {tool, "--latency-sample", "10", "--iteration-marker", "step#", "--", "/bin/true", NULL},
        {tool, "--latency-sample", "4", "--launch-times", "off", "--iteration-sync", "1", NULL},
        {tool, "--record-every", "0", "--iteration-sync", "1", "--", "/bin/true", NULL},
        {tool, "--record-every", "5", "--", "/bin/true", NULL}, /* no boundaries seen live */
        {tool, "--record-every", "5", "--iteration-kernel", "k", "--", "/bin/true", NULL},
        {tool, "--record-every", "5", "--latency-sample", "5", "--iteration-sync", "1", NULL},
        /* a leading space or '+' (strtoll took them) */
        {tool, "--record-every", "+2", "--iteration-sync", "1", "--", "/bin/true", NULL},
        {tool, "--stop-after-iterations", " 3", "--iteration-sync", "1", "--", "/bin/true", NULL},
        {tool, "--buffer-size", " 8M", "--", "/bin/true", NULL},
        {tool, "--buffer-size", "+8192", "--", "/bin/true", NULL},
        /* seconds as every decimal option reads them (strtod took these) */
        {tool, "--start-after-seconds", " 1", "--", "/bin/true", NULL},
        {tool, "--stop-after-seconds", "0x10", "--", "/bin/true", NULL},
        {tool, "--stop-after-seconds", "inf", "--", "/bin/true", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        st = run(cases[i], out, err);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 64)
            fail_msg("case %zu: expected exit 64 (EX_USAGE), got status %d", i, st);
    }
    char *missing[] = {tool, "--", "/nonexistent/program", NULL};
    st = run(missing, out, err);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 127);
    /* an output folder that cannot be made is said before the program runs */
    char in_the_way[300], pat[400];
    path_in_tmp(in_the_way, sizeof in_the_way, "usage-file");
    FILE *f = fopen(in_the_way, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(pat, sizeof pat, "%s/sub/t-%%p.json", in_the_way);
    char *nodir[] = {tool, "-o", pat, "--", "/bin/true", NULL};
    st = run(nodir, out, err);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 73);
    text = slurp(err);
    assert_non_null(strstr(text, "usage-file/sub: cannot create folder"));
    free(text);
    /* one that is missing is made, as far as it does not depend on the pid
     * (the library makes runs/PID when it writes) */
    char made[300];
    path_in_tmp(made, sizeof made, "usage-new/runs");
    snprintf(pat, sizeof pat, "%s/%%p/t.json", made);
    char *newdir[] = {tool, "-o", pat, "--", "/bin/true", NULL};
    st = run(newdir, out, err);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    struct stat sb;
    assert_int_equal(stat(made, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));

    /* what reaches the program's environment (the library reads it there):
     * --launch-times and its old spelling --queued-times, the last one
     * given winning; a stale TALLY_TRACE_QUEUED_TIMES is not passed on */
    static const struct {
        const char *a1, *v1, *a2, *v2, *want;
    } lt[] = {
        {NULL, NULL, NULL, NULL, "queued"},
        {"--launch-times", "callback", NULL, NULL, "callback"},
        {"--queued-times", "off", NULL, NULL, "off"},
        {"--queued-times", "off", "--launch-times", "callback", "callback"},
        {"--launch-times", "callback", "--queued-times", "on", "queued"},
    };
    setenv("TALLY_TRACE_QUEUED_TIMES", "off", 1);
    for (size_t i = 0; i < sizeof lt / sizeof lt[0]; i++) {
        char *argv[12];
        int k = 0;
        argv[k++] = tool, argv[k++] = "-q";
        if (lt[i].a1)
            argv[k++] = (char *)lt[i].a1, argv[k++] = (char *)lt[i].v1;
        if (lt[i].a2)
            argv[k++] = (char *)lt[i].a2, argv[k++] = (char *)lt[i].v2;
        argv[k++] = "--", argv[k++] = "/bin/sh", argv[k++] = "-c";
        argv[k++] = "echo \"$TALLY_TRACE_LAUNCH_TIMES/${TALLY_TRACE_QUEUED_TIMES-unset}\"";
        argv[k] = NULL;
        st = run(argv, out, err);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        text = slurp(out);
        char want[64];
        snprintf(want, sizeof want, "%s/unset\n", lt[i].want);
        if (strcmp(text, want) != 0)
            fail_msg("case %zu: the program saw '%s', expected '%s'", i, text, want);
        free(text);
    }
    unsetenv("TALLY_TRACE_QUEUED_TIMES");
}

/* A program that never initializes CUDA: exit status kept, no file, a message. */
static void test_program_without_cuda(void **state)
{
    (void)state;
    if (!have_tracer()) {
        print_message("SKIP: %s not built (needs nvcc and CUPTI)\n", tool);
        skip();
    }
    char dir[300], pat[400], out[300], err[300];
    path_in_tmp(dir, sizeof dir, "nocuda");
    mkdir(dir, 0755);
    snprintf(pat, sizeof pat, "%s/t-%%p.json", dir);
    path_in_tmp(out, sizeof out, "out.txt");
    path_in_tmp(err, sizeof err, "err.txt");
    char *argv[] = {tool, "-o", pat, "--", "/bin/sh", "-c", "exit 3", NULL};
    int st = run(argv, out, err);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 3);
    assert_int_equal(count_files(dir), 0);
    char *text = slurp(err);
    assert_non_null(strstr(text, "never initialized CUDA"));
    free(text);
}

/* The committed capture of the test program, field by field. */
static void test_committed_testprog_trace(void **state)
{
    (void)state;
    manifest m;
    read_manifest(CAPTURED "testprog_steps.manifest", &m);
    assert_int_equal(m.n, 4 * STEPS);
    json_t *root = load_json(CAPTURED "testprog_steps.json.gz");
    assert_false(json_is_true(json_object_get(root, "truncated")));
    assert_string_equal(jstr(root, "end"), "exit");
    check_against_manifest(root, &m);
    check_markers(root, 0, STEPS - 1);
    json_decref(root);
}

/* The lite captures of the test program (traces/tracer/run_device.sh's
 * testprog_lite.json.gz + .manifest, renamed), checked field by field. */
static void test_committed_lite_trace(void **state)
{
    (void)state;
    /* waits from SYNCHRONIZATION records (build ad47eeb), from callbacks
     * (the default since 2cf8579) */
    static const char *caps[][2] = {
        {CAPTURED "testprog_lite.json.gz", CAPTURED "testprog_lite.manifest"},
        {CAPTURED "testprog_callback.json.gz", CAPTURED "testprog_callback.manifest"},
    };
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        manifest m;
        read_manifest(caps[i][1], &m);
        assert_int_equal(m.n, 4 * STEPS);
        json_t *root = load_json(caps[i][0]);
        assert_false(json_is_true(json_object_get(root, "truncated")));
        check_against_manifest(root, &m);
        assert_true(check_lite(root, true) >= 4 * STEPS);
        check_markers(root, 0, STEPS - 1);
        json_decref(root);
        check_loads(caps[i][0], "step#", STEPS, 4);
    }
}

/* What the simulator gets: iterations and kernels of the committed captures. */
static void test_committed_traces_load(void **state)
{
    (void)state;
    check_loads(CAPTURED "testprog_steps.json.gz", "step#", STEPS, 4);

    /* full and lite host timelines of the same job: 20 training steps were
     * recorded (--stop-after-iterations 20), the same kernels each */
    const char *resnet[] = {CAPTURED "resnet50_train_b32.json.gz",
                            CAPTURED "resnet50_train_b32_lite.json.gz",
                            CAPTURED "resnet50_train_b32_callback.json.gz",
                            CAPTURED "resnet50_train_b32_completion.json.gz"};
    uint32_t k_first = 0;
    for (size_t f = 0; f < sizeof resnet / sizeof resnet[0]; f++) {
        tl_trace t;
        tl_trace_init(&t);
        tl_err err;
        if (tl_trace_load(&t, resnet[f], NULL, &err) < 0)
            fail_msg("%s", err.msg);
        assert_int_equal(t.n_iters, 20);
        uint32_t k0 = 0;
        for (uint32_t i = 0; i < t.n_iters; i++) {
            tl_iter_stats st;
            tl_iteration_stats(&t.iters[i], &st);
            if (i == 0)
                k0 = st.kernels;
            assert_int_equal(st.kernels, k0); /* the same step every time */
        }
        assert_true(k0 > 100);
        if (f == 0)
            k_first = k0;
        assert_int_equal(k0, k_first);
        tl_trace_close(&t);
    }
}

/* ---- tests on the GPU ---------------------------------------------------- */

static int trace_prog(const char *out_json, const char *manifest_out, char *const extra[],
                      char *const mode[])
{
    char *argv[32];
    int n = 0;
    argv[n++] = tool;
    argv[n++] = "-o";
    argv[n++] = (char *)out_json;
    for (int i = 0; extra && extra[i]; i++)
        argv[n++] = extra[i];
    argv[n++] = "--";
    argv[n++] = prog;
    for (int i = 0; mode[i]; i++)
        argv[n++] = mode[i];
    argv[n] = NULL;
    char err[300];
    path_in_tmp(err, sizeof err, "tracer.err");
    return run(argv, manifest_out, err);
}

/* trace_prog that must succeed: a failure names its status and where the
 * tracer's messages went. */
static void trace_prog_ok(const char *out_json, const char *manifest_out, char *const extra[],
                          char *const mode[])
{
    int st = trace_prog(out_json, manifest_out, extra, mode);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char err[300];
        path_in_tmp(err, sizeof err, "tracer.err");
        fail_msg("tally-trace -o %s -- %s %s: status %d (messages in %s)", out_json, prog,
                 mode[0] ? mode[0] : "", st, err);
    }
}

/* --launch-times callback on the GPU: every launch of the manifest has its
 * call timed by the callbacks (not estimated, a callback id, an API), which
 * entered before its kernel started (none moved back for clock skew) and
 * returned after it entered; the copies and memsets were timed too, the
 * synchronous H2D copy's call returning after its copy started. Every timed
 * call was claimed by its GPU work (the nested driver callbacks of runtime
 * launches carry the runtime call's id and add nothing). */
static void check_timed_launches(json_t *root, const manifest *m)
{
    json_t *ht = json_object_get(root, "host_timeline");
    assert_string_equal(jstr(ht, "launch_times"), "callback");
    assert_false(json_is_true(json_object_get(ht, "latency_timestamps")));
    assert_int_equal(jint(ht, "launches_timed"), jint(ht, "launches"));
    assert_true(jint(ht, "launches") >= m->n);
    assert_int_equal(jint(ht, "launches_clamped"), 0);
    assert_int_equal(jint(ht, "host_calls_lost"), 0);
    assert_int_equal(jint(ht, "host_calls_unused"), 0);
    /* per step: cudaMemcpy H2D, cudaMemsetAsync, cudaMemcpyAsync D2H */
    assert_true(jint(ht, "copies_timed") >= m->copies_h2d + m->copies_d2h + m->memsets);
    json_t *events = json_object_get(root, "events");
    int kernels = 0, copies = 0;
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        const char *type = jstr(e, "type");
        bool kernel = !strcmp(type, "kernel");
        if (!kernel && strcmp(type, "memcpy") != 0 && strcmp(type, "memset") != 0)
            continue;
        json_t *api = event_by_corr(events, "api", jint(e, "corr"));
        if (!api)
            fail_msg("%s '%.40s' (corr %lld): no call", type, jstr(e, "name"), jint(e, "corr"));
        if (json_is_true(json_object_get(api, "estimated")))
            fail_msg("%s '%.40s' (corr %lld): its call %s is estimated, not timed", type,
                     jstr(e, "name"), jint(e, "corr"), jstr(api, "name"));
        assert_true(jint(api, "cbid") > 0);
        assert_true(jint(api, "end_ns") >= jint(api, "start_ns"));
        if (jint(api, "start_ns") > jint(e, "start_ns"))
            fail_msg("%s '%.40s': call entered at %lld, after its GPU start %lld", type,
                     jstr(e, "name"), jint(api, "start_ns"), jint(e, "start_ns"));
        if (kernel) {
            assert_non_null(strstr(jstr(api, "name"), "aunchKernel"));
            kernels++;
        } else {
            assert_non_null(strstr(jstr(api, "name"), !strcmp(type, "memset") ? "Memset" : "Memcpy"));
            copies++;
            /* from pageable memory: the call returns once its data is
             * staged, before the last DMA ends (check_lite) */
            if (!strcmp(jstr(api, "name"), "cudaMemcpy") && !strcmp(jstr(e, "copy"), "h2d")) {
                if (jint(api, "end_ns") + SKEW_NS < jint(e, "start_ns"))
                    fail_msg("cudaMemcpy (corr %lld) returned at %lld, before its copy started "
                             "(%lld)", jint(e, "corr"), jint(api, "end_ns"), jint(e, "start_ns"));
                print_message("cudaMemcpy H2D 4 MiB pageable (corr %lld): returned %.1f us "
                              "before its copy ended\n", jint(e, "corr"),
                              (jint(e, "end_ns") - jint(api, "end_ns")) / 1e3);
            }
        }
    }
    assert_true(kernels >= m->n);
    assert_true(copies >= m->copies_h2d + m->copies_d2h + m->memsets);
}

/* Four steps of the test program under one host-timeline mode (host_opt:
 * NULL = the default), every field checked against the manifest. */
static void every_field(const char *host_opt, const char *sync_opt, const char *launch_opt,
                        const char *want_mode)
{
    char json[300], man[300];
    path_in_tmp(json, sizeof json, "steps.json");
    path_in_tmp(man, sizeof man, "steps.manifest");
    char *extra[10] = {"--iteration-marker", "step#"};
    int k = 2;
    if (host_opt)
        extra[k++] = "--host-timeline", extra[k++] = (char *)host_opt;
    if (sync_opt)
        extra[k++] = "--sync-records", extra[k++] = (char *)sync_opt;
    if (launch_opt)
        extra[k++] = "--launch-times", extra[k++] = (char *)launch_opt;
    extra[k] = NULL;
    char *mode[] = {"steps", "4", NULL};
    trace_prog_ok(json, man, extra, mode);
    manifest m;
    read_manifest(man, &m);
    assert_int_equal(m.n, 16);
    json_t *root = load_json(json);
    assert_false(json_is_true(json_object_get(root, "truncated")));
    assert_string_equal(jstr(json_object_get(root, "host_timeline"), "mode"), want_mode);
    check_against_manifest(root, &m);
    if (!strcmp(want_mode, "lite")) {
        /* per step: the blocking copy, event, stream and device syncs */
        int waits = check_lite(root, true);
        if (waits < 4 * 4)
            fail_msg("%d waits checked, expected at least 16", waits);
    }
    if (launch_opt && !strcmp(launch_opt, "callback"))
        check_timed_launches(root, &m);
    check_markers(root, 0, 3);
    assert_int_equal(count_iterations(root), 4);
    json_decref(root);
    check_loads(json, "step#", 4, 4);
    check_loads(json, NULL, 4, 4); /* the tracer's iteration# ranges */
}

static void test_gpu_every_field(void **state)
{
    (void)state;
    if (!gpu_ready())
        skip();
    every_field(NULL, NULL, NULL, "lite");          /* the default: waits from callbacks */
    every_field("lite", "activity", NULL, "lite");  /* waits from CUPTI activity records */
    every_field(NULL, NULL, "callback", "lite");    /* launch times from callbacks */
    every_field("full", NULL, NULL, "full");        /* every API call recorded */
}

/* --sync-records completion on the GPU: no API callback at all; stream and
 * device synchronizes from CUPTI's synchronize domain, each placed where its
 * real call was (between the launches around it), ending after the work it
 * waited for; event synchronizes, stream waits and event records are not
 * seen. Then --iteration-sync counted from those completions: the same
 * window as test_gpu_window's. */
static void test_gpu_completions(void **state)
{
    (void)state;
    if (!gpu_ready())
        skip();
    char json[300], man[300];
    path_in_tmp(json, sizeof json, "completion.json");
    path_in_tmp(man, sizeof man, "completion.manifest");
    char *extra[] = {"--iteration-marker", "step#", "--sync-records", "completion", NULL};
    char *mode[] = {"steps", "4", NULL};
    trace_prog_ok(json, man, extra, mode);
    manifest m;
    read_manifest(man, &m);
    json_t *root = load_json(json);
    json_t *ht = json_object_get(root, "host_timeline");
    assert_true(has_prefix(jstr(ht, "waits_from"), "inferred"));
    assert_int_equal(jint(ht, "waits_unplaced"), 0);
    assert_int_equal(jint(ht, "launches_queued"), jint(ht, "launches"));
    json_t *events = json_object_get(root, "events");
    int ssync = 0, dsync = 0;
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        if (strcmp(jstr(e, "type"), "api") != 0)
            continue;
        const char *name = jstr(e, "name");
        assert_null(strstr(name, "Event")); /* not seen in this mode */
        long long corr = jint(e, "corr"), waited = -1;
        if (!strcmp(name, "cudaStreamSynchronize"))
            ssync++, waited = awaited_end(events, jint(e, "stream"), corr);
        else if (!strcmp(name, "cudaDeviceSynchronize"))
            dsync++, waited = awaited_end(events, -1, corr);
        if (waited >= 0 && jint(e, "end_ns") + SKEW_NS < waited)
            fail_msg("%s (corr %lld) ends at %lld, before the work it waited for (%lld)", name,
                     corr, jint(e, "end_ns"), waited);
        /* the launch after a wait was queued after it ended */
        json_t *next = NULL;
        for (size_t j = 0; j < json_array_size(events); j++) {
            json_t *x = json_array_get(events, j);
            if (!strcmp(jstr(x, "type"), "api") && jint(x, "corr") > corr &&
                !strcmp(jstr(x, "name"), "cudaLaunchKernel") &&
                (!next || jint(x, "corr") < jint(next, "corr")))
                next = x;
        }
        if (waited >= 0 && next && jint(next, "start_ns") + SKEW_NS < jint(e, "end_ns"))
            fail_msg("%s (corr %lld) ends after the next launch starts", name, corr);
    }
    if (ssync != m.stream_syncs || dsync < m.device_syncs)
        fail_msg("completions: %d stream and %d device synchronizes seen; the program made %d "
                 "and %d", ssync, dsync, m.stream_syncs, m.device_syncs);
    check_markers(root, 0, 3);
    json_decref(root);
    check_loads(json, "step#", 4, 4);

    char *by_sync[] = {"--sync-records", "completion", "--iteration-sync", "device:1",
                       "--start-after-iterations", "3", "--stop-after-iterations", "3", NULL};
    char *seven[] = {"steps", "7", NULL};
    trace_prog_ok(json, man, by_sync, seven);
    root = load_json(json);
    assert_string_equal(jstr(root, "end"), "stop-after-iterations");
    check_markers(root, 2, 4);
    assert_int_equal(count_type(root, "kernel"), 12);
    assert_int_equal(count_iterations(root), 3);
    json_decref(root);
}

/* --latency-sample 2 on the GPU: CUPTI's queued timestamps turned off and
 * on again at iteration boundaries while the program runs (documented as a
 * setting for before CUDA starts): sampled iterations' launches have CUPTI's
 * times, the others' were copied from them, each at most its GPU start, and
 * the trace still loads as its 6 steps. */
static void test_gpu_latency_sample(void **state)
{
    (void)state;
    if (!gpu_ready())
        skip();
    char json[300], man[300];
    path_in_tmp(json, sizeof json, "sample.json");
    path_in_tmp(man, sizeof man, "sample.manifest");
    char *extra[] = {"--iteration-sync", "device:1", "--latency-sample", "2",
                     "--start-after-iterations", "1", "--stop-after-iterations", "6", NULL};
    char *mode[] = {"steps", "8", NULL};
    trace_prog_ok(json, man, extra, mode);
    json_t *root = load_json(json);
    json_t *ht = json_object_get(root, "host_timeline");
    long long launches = jint(ht, "launches"), queued = jint(ht, "launches_queued"),
              copied = jint(ht, "launches_copied");
    print_message("latency sample 2: %lld launches, %lld queued, %lld copied\n", launches,
                  queued, copied);
    assert_int_equal(jint(json_object_get(root, "options"), "latency_sample"), 2);
    /* 4 kernels a step; iterations 1, 3, 5 sampled (the timestamps came
     * back on after each unsampled one), 2, 4, 6 copied */
    assert_true(copied >= 12);
    assert_true(queued >= 12);
    json_t *events = json_object_get(root, "events");
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        if (strcmp(jstr(e, "type"), "api") != 0 || strcmp(jstr(e, "name"), "cudaLaunchKernel"))
            continue;
        for (size_t j = 0; j < json_array_size(events); j++) {
            json_t *k = json_array_get(events, j);
            if (!strcmp(jstr(k, "type"), "kernel") && jint(k, "corr") == jint(e, "corr") &&
                jint(e, "start_ns") > jint(k, "start_ns"))
                fail_msg("launch %lld starts after its kernel", jint(e, "corr"));
        }
    }
    json_decref(root);
    check_loads(json, NULL, 6, 4);
}

/* --record-every 2 on the GPU: CUPTI's GPU activity kinds turned off and on
 * again at the boundaries while the program runs: the trace holds iterations
 * 1, 3 and 5 of the window only, whole (4 kernels each), and none between;
 * with boundaries from synchronizes and from the program's NVTX ranges (whose
 * ranges of the iterations left out stay in the file, empty: the loader
 * splitting on them, "step#", drops those). */
static void test_gpu_record_every(void **state)
{
    (void)state;
    if (!gpu_ready())
        skip();
    char json[300], man[300];
    path_in_tmp(json, sizeof json, "every.json");
    path_in_tmp(man, sizeof man, "every.manifest");
    char *by_sync[] = {"--iteration-sync", "device:1", "--record-every", "2",
                       "--start-after-iterations", "1", "--stop-after-iterations", "6", NULL};
    char *by_marker[] = {"--iteration-marker", "step#", "--record-every", "2",
                         "--start-after-iterations", "1", "--stop-after-iterations", "6", NULL};
    char **extra[] = {by_sync, by_marker};
    char *mode[] = {"steps", "8", NULL};
    for (int k = 0; k < 2; k++) {
        trace_prog_ok(json, man, extra[k], mode);
        json_t *root = load_json(json);
        assert_int_equal(count_iterations(root), 3);
        print_message("record every 2 (%s): %d kernels in the file\n", extra[k][0],
                      count_type(root, "kernel"));
        assert_int_equal(count_type(root, "kernel"), 12);
        json_decref(root);
        check_loads(json, NULL, 3, 4);
        if (k == 1)
            check_loads(json, "step#", 3, 4);
    }
}

/* Skip two iterations, keep three: exactly steps 2..4 are in the file. */
static void test_gpu_window(void **state)
{
    (void)state;
    if (!gpu_ready())
        skip();
    char json[300], man[300];
    path_in_tmp(json, sizeof json, "window.json");
    path_in_tmp(man, sizeof man, "window.manifest");
    char *extra[] = {"--iteration-marker", "step#", "--start-after-iterations", "2",
                     "--stop-after-iterations", "3", NULL};
    char *mode[] = {"steps", "7", NULL};
    trace_prog_ok(json, man, extra, mode);
    json_t *root = load_json(json);
    assert_false(json_is_true(json_object_get(root, "truncated")));
    assert_string_equal(jstr(root, "end"), "stop-after-iterations");
    check_markers(root, 2, 4);
    assert_int_equal(count_type(root, "kernel"), 12);
    assert_int_equal(count_iterations(root), 3);
    json_decref(root);

    /* the same window found by kernel name and by synchronize count */
    char *by_kernel[] = {"--iteration-kernel", "tt_spin_plain", "--start-after-iterations", "2",
                         "--stop-after-iterations", "3", NULL};
    trace_prog_ok(json, man, by_kernel, mode);
    root = load_json(json);
    assert_int_equal(count_type(root, "kernel"), 12);
    json_decref(root);
    char *by_sync[] = {"--iteration-sync", "device:1", "--start-after-iterations", "3",
                       "--stop-after-iterations", "3", NULL};
    trace_prog_ok(json, man, by_sync, mode);
    root = load_json(json);
    /* iteration 0 runs to the setup's device synchronize: steps are 1.. */
    check_markers(root, 2, 4);
    assert_int_equal(count_type(root, "kernel"), 12);
    json_decref(root);
}

/* Crashes and SIGTERM: the program's status is kept, the file is valid and
 * says it is truncated, and holds the iterations that completed. */
static void test_gpu_signals(void **state)
{
    (void)state;
    if (!gpu_ready())
        skip();
    static const struct {
        const char *mode;
        int sig;
        const char *name;
    } cases[] = {{"crash", SIGSEGV, "SIGSEGV"}, {"abort", SIGABRT, "SIGABRT"},
                 {"sigterm", SIGTERM, "SIGTERM"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[300], man[300];
        path_in_tmp(json, sizeof json, "sig.json");
        path_in_tmp(man, sizeof man, "sig.manifest");
        unlink(json);
        char *mode[] = {(char *)cases[i].mode, NULL};
        int st = trace_prog(json, man, NULL, mode);
        bool status_ok = (WIFSIGNALED(st) && WTERMSIG(st) == cases[i].sig) ||
                         (WIFEXITED(st) && WEXITSTATUS(st) == 128 + cases[i].sig);
        if (!status_ok)
            fail_msg("%s: status %d, expected death by %s", cases[i].mode, st, cases[i].name);
        json_t *root = load_json(json);
        assert_true(json_is_true(json_object_get(root, "truncated")));
        assert_non_null(strstr(jstr(root, "truncation_reason"), cases[i].name));
        assert_true(count_type(root, "kernel") >= 8); /* two whole steps */
        char end[64];
        snprintf(end, sizeof end, "signal %s", cases[i].name);
        assert_string_equal(jstr(root, "end"), end);
        json_decref(root);
    }
}

/* cudaDeviceReset in the middle, fork of a CUDA-free child, gzip. */
static void test_gpu_reset_fork_gzip(void **state)
{
    (void)state;
    if (!gpu_ready())
        skip();
    char dir[300], json[400], man[300];
    path_in_tmp(dir, sizeof dir, "multi");
    mkdir(dir, 0755);
    clear_dir(dir);
    path_in_tmp(man, sizeof man, "multi.manifest");

    snprintf(json, sizeof json, "%s/reset.json", dir);
    char *reset[] = {"reset", NULL};
    trace_prog_ok(json, man, NULL, reset);
    json_t *root = load_json(json);
    assert_false(json_is_true(json_object_get(root, "truncated")));
    assert_int_equal(count_type(root, "kernel"), 16); /* 2 steps before, 2 after */
    json_decref(root);
    unlink(json);

    snprintf(json, sizeof json, "%s/fork-%%p.json", dir);
    char *fork_mode[] = {"fork", NULL};
    trace_prog_ok(json, man, NULL, fork_mode);
    assert_int_equal(count_files(dir), 1); /* the parent's only */
    clear_dir(dir);

    snprintf(json, sizeof json, "%s/gz.json", dir);
    char *gz[] = {"--gzip", NULL};
    char *steps[] = {"steps", "2", NULL};
    trace_prog_ok(json, man, gz, steps);
    snprintf(json, sizeof json, "%s/gz.json.gz", dir);
    root = load_json(json);
    assert_int_equal(count_type(root, "kernel"), 8);
    json_decref(root);
    clear_dir(dir);
}

/* ---- setup ----------------------------------------------------------------- */

static int setup(void **state)
{
    (void)state;
    const char *b = getenv("TALLY_BUILD");
    snprintf(build, sizeof build, "%s", b && *b ? b : "build");
    snprintf(tool, sizeof tool, "%s/tally-trace", build);
    snprintf(lib, sizeof lib, "%s/libtally_trace.so", build);
    snprintf(prog, sizeof prog, "%s/tracer_testprog", build);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tally_test_tracer_XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char sub[300];
    path_in_tmp(sub, sizeof sub, "nocuda");
    clear_dir(sub);
    rmdir(sub);
    path_in_tmp(sub, sizeof sub, "multi");
    clear_dir(sub);
    rmdir(sub);
    clear_dir(tmpdir);
    rmdir(tmpdir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage),
        cmocka_unit_test(test_program_without_cuda),
        cmocka_unit_test(test_committed_testprog_trace),
        cmocka_unit_test(test_committed_traces_load),
        cmocka_unit_test(test_lite_reconstruction),
        cmocka_unit_test(test_lite_callback_times),
        cmocka_unit_test(test_lite_latency_sample),
        cmocka_unit_test(test_record_every_writes_recorded_only),
        cmocka_unit_test(test_hostcalls_log),
        cmocka_unit_test(test_lite_completions),
        cmocka_unit_test(test_lite_variants_on_captures),
        cmocka_unit_test(test_completion_capture_rebuilt),
        cmocka_unit_test(test_host_timeline_options),
        cmocka_unit_test(test_integer_options),
        cmocka_unit_test(test_write_makes_folder),
        cmocka_unit_test(test_committed_lite_trace),
        cmocka_unit_test(test_gpu_every_field),
        cmocka_unit_test(test_gpu_completions),
        cmocka_unit_test(test_gpu_latency_sample),
        cmocka_unit_test(test_gpu_record_every),
        cmocka_unit_test(test_gpu_window),
        cmocka_unit_test(test_gpu_signals),
        cmocka_unit_test(test_gpu_reset_fork_gzip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
