/* Tests of the trace module (traces/), and of core/common.c and core/rng.c.
 *
 * The same small hand-made timeline exists as a Kineto trace
 * (tests/data/kineto_small.json), as our flat events form
 * (tests/data/flat_small.json) and as an Nsight Systems export built here;
 * every reader must give the numbers worked out by hand in FORMAT.md's
 * definitions. Then the bundled real traces, then bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>
#include <zlib.h>

#include "tally/common.h"
#include "tally/rng.h"
#include "tally/trace.h"
#include "tally/transform.h"
#include "test_db.h"
#include "../traces/internal.h" /* tl_trace_check, tl_read_file_max */

#define US 1000LL
#define H100 "traces/bundled/h100/"
#define EXT "traces/bundled/external/"

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
    static char buf[4][512];
    static int k;
    char *p = buf[k++ % 4];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(text, 1, strlen(text), f);
    fclose(f);
}

static void write_gz(const char *path, const char *data, size_t n)
{
    gzFile g = gzopen(path, "wb");
    assert_non_null(g);
    assert_int_equal(gzwrite(g, data, (unsigned)n), (int)n);
    gzclose(g);
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    b[len] = 0;
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* Load must fail with code and a message containing want. */
static void expect_fail(const char *path, const tl_trace_options *o, int code, const char *want)
{
    tl_trace t;
    tl_trace_init(&t);
    tl_err e;
    tl_err_clear(&e);
    int r = tl_trace_load(&t, path, o, &e);
    if (r != code || !strstr(e.msg, want) || strchr(e.msg, '\n'))
        fail_msg("%s: got %d '%s', want %d '%s'", path, r, e.msg, code, want);
    assert_int_equal(t.n_iters, 0);
    tl_trace_close(&t);
}

static void load_ok(tl_trace *t, const char *path, const tl_trace_options *o)
{
    tl_trace_init(t);
    tl_err e;
    tl_err_clear(&e);
    int r = tl_trace_load(t, path, o, &e);
    if (r != 0)
        fail_msg("%s: %s", path, e.msg);
}

static uint32_t count_kind(const tl_iteration *it, int kind)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < it->n_ops; i++)
        n += it->ops[i].kind == kind;
    return n;
}

static bool ops_equal(const tl_op *a, const tl_op *b)
{
    return a->kind == b->kind && a->sync_kind == b->sync_kind && a->copy_kind == b->copy_kind &&
           a->blocking == b->blocking && a->stream == b->stream && a->event == b->event &&
           a->host_gap_ns == b->host_gap_ns && a->host_call_ns == b->host_call_ns &&
           a->dur_ns == b->dur_ns && a->gpu_start_ns == b->gpu_start_ns &&
           memcmp(a->grid, b->grid, sizeof a->grid) == 0 &&
           memcmp(a->block, b->block, sizeof a->block) == 0 && a->regs == b->regs &&
           a->static_smem + a->dynamic_smem == b->static_smem + b->dynamic_smem &&
           a->bytes == b->bytes;
}

/* Same timeline: iterations, ops (names compared as text), streams. */
static void assert_same_timeline(const tl_trace *a, const tl_trace *b, bool same_names)
{
    assert_int_equal(a->n_iters, b->n_iters);
    assert_int_equal(a->n_streams, b->n_streams);
    for (int s = 0; s < a->n_streams; s++)
        assert_int_equal(a->streams[s], b->streams[s]);
    for (uint32_t i = 0; i < a->n_iters; i++) {
        const tl_iteration *x = &a->iters[i], *y = &b->iters[i];
        assert_int_equal(x->n_ops, y->n_ops);
        assert_int_equal(x->start_ns, y->start_ns);
        assert_int_equal(x->tail_host_ns, y->tail_host_ns);
        assert_int_equal(x->traced_ns, y->traced_ns);
        assert_int_equal(x->traced_busy_ns, y->traced_busy_ns);
        for (uint32_t k = 0; k < x->n_ops; k++) {
            if (!ops_equal(&x->ops[k], &y->ops[k]))
                fail_msg("iteration %u op %u differs", i, k);
            if (same_names || x->ops[k].kind == TL_OP_KERNEL)
                assert_string_equal(tl_trace_op_name(a, &x->ops[k]),
                                    tl_trace_op_name(b, &y->ops[k]));
        }
    }
}

/* ---- core/common.c, core/rng.c ------------------------------------------------ */

static void test_errors_and_exit_codes(void **state)
{
    (void)state;
    tl_err e;
    assert_int_equal(tl_errf(&e, TL_ERANGE, "x.json: line\nbreak %d", 7), TL_ERANGE);
    assert_int_equal(e.code, TL_ERANGE);
    assert_string_equal(e.msg, "x.json: line break 7"); /* always one line */
    tl_err_clear(&e);
    assert_int_equal(e.code, 0);
    assert_string_equal(e.msg, "");
    assert_int_equal(tl_errf(NULL, TL_EIO, "ignored"), TL_EIO);
    assert_int_equal(tl_exit_code(TL_OK), 0);
    assert_int_equal(tl_exit_code(TL_EIO), EX_NOINPUT);
    assert_int_equal(tl_exit_code(TL_EFORMAT), EX_DATAERR);
    assert_int_equal(tl_exit_code(TL_EMISSING), EX_DATAERR);
    assert_int_equal(tl_exit_code(TL_ERANGE), EX_DATAERR);
    assert_int_equal(tl_exit_code(TL_ETYPE), EX_DATAERR);
    assert_int_equal(tl_exit_code(TL_EUNKNOWN), EX_USAGE);
    assert_int_equal(tl_exit_code(TL_ENOMEM), EX_OSERR);
    assert_int_equal(tl_exit_code(TL_EDB), EX_CANTCREAT);
    assert_int_equal(tl_exit_code(TL_ENODEV), EX_UNAVAILABLE);
    assert_int_equal(tl_exit_code(TL_EINVAL), EX_SOFTWARE);
    for (int c = 0; c >= TL_ETYPE; c--)
        assert_true(strlen(tl_strerror(c)) > 0);
}

/* Integers as every integer option reads them: digits and a leading '-',
 * nothing else (strtoll alone takes " 5" and "+5"); the range is the caller's. */
static void test_parse_int64(void **state)
{
    (void)state;
    long long v = 0;
    assert_int_equal(tl_parse_int64("0", 0, 10, &v), 0);
    assert_true(v == 0);
    assert_int_equal(tl_parse_int64("-7", -10, 10, &v), 0);
    assert_true(v == -7);
    assert_int_equal(tl_parse_int64("007", 0, 10, &v), 0);
    assert_true(v == 7);
    assert_int_equal(tl_parse_int64("9223372036854775807", 0, LLONG_MAX, &v), 0);
    assert_true(v == LLONG_MAX);
    static const char *const not_int[] = { " 5", "+5", "5 ", "\t5", "", "-", "+", "0x10", "1e3",
                                           "5.0", "5k", "--5", "- 5" };
    for (size_t i = 0; i < sizeof not_int / sizeof not_int[0]; i++) {
        v = 42;
        assert_int_equal(tl_parse_int64(not_int[i], -100, 100, &v), TL_ETYPE);
        assert_true(v == 42); /* untouched */
    }
    assert_int_equal(tl_parse_int64(NULL, 0, 10, &v), TL_ETYPE);
    assert_int_equal(tl_parse_int64("11", 0, 10, &v), TL_ERANGE);
    assert_int_equal(tl_parse_int64("-1", 0, 10, &v), TL_ERANGE);
    assert_int_equal(tl_parse_int64("9223372036854775808", 0, LLONG_MAX, &v), TL_ERANGE);
    assert_int_equal(tl_parse_int64("-9223372036854775809", LLONG_MIN, 0, &v), TL_ERANGE);
    assert_true(v == 42);
    assert_string_equal(tl_parse_int64_what(TL_ETYPE), "not an integer");
    assert_string_equal(tl_parse_int64_what(TL_ERANGE), "out of range");
}

static void test_rng(void **state)
{
    (void)state;
    tl_rng a, b;
    tl_rng_init(&a, 42);
    tl_rng_init(&b, 42);
    for (int i = 0; i < 1000; i++)
        assert_true(tl_rng_next(&a) == tl_rng_next(&b));
    tl_rng_init(&b, 43);
    assert_true(tl_rng_next(&a) != tl_rng_next(&b));
    /* splitmix64(0) seeds and the first xoshiro256** output, from the
     * reference C implementation. */
    tl_rng_init(&a, 0);
    assert_true(a.s[0] == 0xe220a8397b1dcdafULL);
    double sum = 0;
    for (int i = 0; i < 100000; i++) {
        double u = tl_rng_uniform(&a);
        assert_true(u >= 0.0 && u < 1.0);
        sum += u;
    }
    assert_true(sum / 100000 > 0.49 && sum / 100000 < 0.51);
    double m = 0;
    for (int i = 0; i < 100000; i++)
        m += tl_rng_exponential(&a, 2.0);
    assert_true(m / 100000 > 1.95 && m / 100000 < 2.05);
    assert_true(tl_rng_derive_seed(1, 0, 0) != tl_rng_derive_seed(1, 0, 1));
    assert_true(tl_rng_derive_seed(1, 0, 1) != tl_rng_derive_seed(1, 1, 0));
    assert_true(tl_rng_derive_seed(1, 2, 3) == tl_rng_derive_seed(1, 2, 3));
}

/* ---- tl_read_file -------------------------------------------------------------- */

static void test_read_file_gzip(void **state)
{
    (void)state;
    const char *text = "{\"hello\": [1, 2, 3]}\n";
    write_gz(tmp_path("a.json.gz"), text, strlen(text));
    char *buf;
    size_t n;
    tl_err e;
    assert_int_equal(tl_read_file(tmp_path("a.json.gz"), &buf, &n, &e), 0);
    assert_int_equal(n, strlen(text));
    assert_memory_equal(buf, text, n);
    free(buf);
    /* plain files come back as they are */
    write_text(tmp_path("a.json"), text);
    assert_int_equal(tl_read_file(tmp_path("a.json"), &buf, &n, &e), 0);
    assert_string_equal(buf, text);
    free(buf);
}

/* A trace's digest is of its decoded bytes (zlib's CRC-32 and the count):
 * gzipped at another level it is the same trace, one byte changed another. */
static void test_trace_digest(void **state)
{
    (void)state;
    size_t n;
    char *text = slurp("tests/data/kineto_small.json", &n);
    tl_trace plain, gz;
    load_ok(&plain, "tests/data/kineto_small.json", NULL);
    assert_int_equal(plain.digest.bytes, n);
    assert_int_equal(plain.digest.crc, (uint32_t)crc32(0, (const Bytef *)text, (uInt)n));
    const char *levels[] = { "wb1", "wb9" };
    for (int i = 0; i < 2; i++) {
        gzFile g = gzopen(tmp_path("digest.json.gz"), levels[i]);
        assert_non_null(g);
        assert_int_equal(gzwrite(g, text, (unsigned)n), (int)n);
        gzclose(g);
        load_ok(&gz, tmp_path("digest.json.gz"), NULL);
        assert_int_equal(gz.digest.crc, plain.digest.crc);
        assert_int_equal(gz.digest.bytes, plain.digest.bytes);
        tl_trace_close(&gz);
    }
    /* the last newline a space: the same timeline, other bytes */
    assert_int_equal(text[n - 1], '\n');
    text[n - 1] = ' ';
    write_gz(tmp_path("digest.json.gz"), text, n);
    load_ok(&gz, tmp_path("digest.json.gz"), NULL);
    assert_int_equal(gz.digest.bytes, n);
    assert_int_not_equal(gz.digest.crc, plain.digest.crc);
    char a[TL_DIGEST_TEXT], b[TL_DIGEST_TEXT];
    tl_digest_text(&plain.digest, a);
    tl_digest_text(&gz.digest, b);
    assert_string_not_equal(a, b);
    assert_int_equal(strncmp(a, "crc32:", 6), 0);
    tl_trace_close(&gz);
    tl_trace_close(&plain);
    free(text);
}

static void test_truncated_gzip(void **state)
{
    (void)state;
    size_t n;
    char *data = slurp("tests/data/kineto_small.json", &n);
    write_gz(tmp_path("full.json.gz"), data, n);
    free(data);
    char *gz = slurp(tmp_path("full.json.gz"), &n);
    FILE *f = fopen(tmp_path("cut.json.gz"), "wb");
    fwrite(gz, 1, n / 2, f);
    fclose(f);
    expect_fail(tmp_path("cut.json.gz"), NULL, TL_EFORMAT, "cut.json.gz: truncated gzip stream");
    /* corrupt deflate data (bytes flipped after the header) */
    for (size_t i = 20; i < 60 && i < n; i++)
        gz[i] ^= 0x5a;
    f = fopen(tmp_path("bad.json.gz"), "wb");
    fwrite(gz, 1, n, f);
    fclose(f);
    expect_fail(tmp_path("bad.json.gz"), NULL, TL_EFORMAT, "bad.json.gz: corrupt gzip stream");
    free(gz);
    /* the bundled fixture, cut by hand */
    expect_fail("tests/data/truncated.json.gz", NULL, TL_EFORMAT, "truncated gzip stream");
}

static void test_missing_and_empty_file(void **state)
{
    (void)state;
    expect_fail("tests/data/no_such_file.json", NULL, TL_EIO,
                "tests/data/no_such_file.json: cannot open");
    /* an empty path is named as such, not as "tally-sim: : cannot open" (fuzzing) */
    expect_fail("", NULL, TL_EIO, "'': an empty path names no file");
    write_text(tmp_path("empty.json"), "");
    expect_fail(tmp_path("empty.json"), NULL, TL_EFORMAT, "empty.json: empty file");
    write_text(tmp_path("blank.json"), "  \n ");
    expect_fail(tmp_path("blank.json"), NULL, TL_EFORMAT, "blank.json: empty file");
}

/* ---- the hand-made timeline ------------------------------------------------------ */

/* Values worked out by hand from tests/data/kineto_small.json (µs there). */
static void check_small(const tl_trace *t)
{
    assert_int_equal(t->n_iters, 2);
    assert_int_equal(t->split, TL_SPLIT_MARKERS);
    assert_int_equal(t->n_streams, 2);
    assert_int_equal(t->streams[0], 7);
    assert_int_equal(t->streams[1], 8);
    assert_int_equal(t->n_unlinked, 1);  /* k1 of step 2 has no API call */
    assert_int_equal(t->n_precapture, 1); /* k0: correlation 5, below every call's */
    assert_int_equal(t->n_outside, 1);   /* the launch after the last step */
    assert_int_equal(t->n_unresolved, 0);
    assert_true(t->has_gpu_props);
    assert_int_equal(t->gpu.sms, 132);

    /* Step 1: marker [100, 200). */
    const tl_iteration *a = &t->iters[0];
    assert_int_equal(a->start_ns, 0);
    assert_int_equal(a->n_ops, 5);
    const tl_op *o = a->ops;
    assert_int_equal(o[0].kind, TL_OP_KERNEL);
    assert_string_equal(tl_trace_op_name(t, &o[0]), "k1");
    assert_int_equal(o[0].host_gap_ns, 10 * US); /* 110 - marker start 100 */
    assert_int_equal(o[0].host_call_ns, 5 * US);
    assert_int_equal(o[0].gpu_start_ns, 20 * US);
    assert_int_equal(o[0].dur_ns, 20 * US);
    assert_int_equal(o[0].grid[0], 4);
    assert_int_equal(o[0].block[0], 128);
    assert_int_equal(o[0].regs, 32);
    assert_int_equal(o[0].static_smem + o[0].dynamic_smem, 1024);
    /* k2 is launched by another thread at 113, overlapping the first call
     * (110-115): it counts from 115, so no gap and 3 µs of call. */
    assert_int_equal(o[1].host_gap_ns, 0);
    assert_int_equal(o[1].host_call_ns, 3 * US);
    assert_int_equal(o[1].gpu_start_ns, 40 * US);
    /* D2H into pageable memory blocks: call 125-160, copy ends at 155. */
    assert_int_equal(o[2].kind, TL_OP_MEMCPY);
    assert_int_equal(o[2].copy_kind, TL_COPY_D2H);
    assert_true(o[2].blocking);
    assert_int_equal(o[2].bytes, 4096);
    assert_int_equal(o[2].host_gap_ns, 7 * US);
    assert_int_equal(o[2].host_call_ns, 5 * US);
    /* stream sync 165-170 when the stream was idle since 155: all call time. */
    assert_int_equal(o[3].kind, TL_OP_SYNC);
    assert_int_equal(o[3].sync_kind, TL_SYNC_STREAM);
    assert_int_equal(o[3].stream, 0);
    assert_int_equal(o[3].gpu_start_ns, -1);
    assert_int_equal(o[3].host_gap_ns, 5 * US);
    assert_int_equal(o[3].host_call_ns, 5 * US);
    /* cudaPeekAtLastError (171-172) is host time inside k3's gap. */
    assert_int_equal(o[4].host_gap_ns, 5 * US);
    assert_int_equal(a->tail_host_ns, 20 * US);   /* 200 - 180 */
    assert_int_equal(a->traced_ns, 100 * US);      /* max(200, 195) - 100 */
    assert_int_equal(a->traced_busy_ns, 45 * US); /* [120,155] + [185,195] */

    /* Step 2: marker [200, 300). */
    const tl_iteration *b = &t->iters[1];
    assert_int_equal(b->start_ns, 100 * US);
    assert_int_equal(b->n_ops, 6);
    o = b->ops;
    assert_int_equal(o[0].kind, TL_OP_KERNEL); /* unlinked: issued at its GPU start 210 */
    assert_int_equal(o[0].host_gap_ns, 10 * US);
    assert_int_equal(o[0].host_call_ns, 0);
    assert_int_equal(o[1].kind, TL_OP_EVENT_RECORD);
    assert_int_equal(o[1].stream, 0);
    assert_true(o[1].event >= 0);
    assert_int_equal(o[1].host_gap_ns, 12 * US);
    assert_int_equal(o[2].kind, TL_OP_STREAM_WAIT);
    assert_int_equal(o[2].stream, 1);
    assert_int_equal(o[2].event, o[1].event);
    assert_int_equal(o[3].kind, TL_OP_KERNEL);
    assert_int_equal(o[3].stream, 1);
    assert_int_equal(o[3].block[1], 2);
    /* device sync 229-270 waits for k4 (ends 260): 10 µs after it. */
    assert_int_equal(o[4].kind, TL_OP_SYNC);
    assert_int_equal(o[4].sync_kind, TL_SYNC_DEVICE);
    assert_int_equal(o[4].host_gap_ns, 1 * US);
    assert_int_equal(o[4].host_call_ns, 10 * US);
    /* the memset of duration 0 lasts 1 ns */
    assert_int_equal(o[5].kind, TL_OP_MEMSET);
    assert_int_equal(o[5].dur_ns, 1);
    assert_int_equal(o[5].bytes, 512);
    assert_int_equal(b->tail_host_ns, 28 * US);
    assert_int_equal(b->traced_ns, 100 * US);
    assert_int_equal(b->traced_busy_ns, 40 * US + 1);

    tl_iter_stats st;
    tl_iteration_stats(a, &st);
    assert_int_equal(st.kernels, 3);
    assert_int_equal(st.copies, 1);
    assert_int_equal(st.syncs, 1);
    assert_int_equal(st.gpu_busy_ns, 45 * US);
    assert_int_equal(st.host_ns, (10 + 5 + 0 + 3 + 7 + 5 + 5 + 5 + 5 + 5 + 20) * US);
}

static void test_kineto_definitions(void **state)
{
    (void)state;
    tl_trace t;
    load_ok(&t, "tests/data/kineto_small.json", NULL);
    assert_string_equal(t.format, "kineto");
    assert_int_equal(t.n_zero_dur, 1);
    check_small(&t);
    /* the same file gzipped */
    size_t n;
    char *data = slurp("tests/data/kineto_small.json", &n);
    write_gz(tmp_path("small.json.gz"), data, n);
    free(data);
    tl_trace g;
    load_ok(&g, tmp_path("small.json.gz"), NULL);
    assert_same_timeline(&t, &g, true);
    tl_trace_close(&g);
    tl_trace_close(&t);
}

static void test_flat_events_form(void **state)
{
    (void)state;
    tl_trace k, f;
    load_ok(&k, "tests/data/kineto_small.json", NULL);
    load_ok(&f, "tests/data/flat_small.json", NULL);
    assert_string_equal(f.format, "tally");
    check_small(&f);
    assert_same_timeline(&k, &f, false);
    /* the partial "gpu" object was completed from the device table */
    assert_int_equal(f.gpu.sms, 132);
    assert_int_equal(f.gpu.max_threads_per_sm, 2048);
    tl_trace_close(&k);
    tl_trace_close(&f);
}

static void test_skip_iterations(void **state)
{
    (void)state;
    tl_trace_options o = {.skip_iterations = 1};
    tl_trace t;
    load_ok(&t, "tests/data/kineto_small.json", &o);
    assert_int_equal(t.n_iters, 1);
    assert_int_equal(t.iters[0].n_ops, 6);
    assert_int_equal(t.n_outside, 1 + 5);
    tl_trace_close(&t);
    o.skip_iterations = 2;
    expect_fail("tests/data/kineto_small.json", &o, TL_ERANGE, "skip_iterations 2 leaves no iteration");
    o.skip_iterations = -1;
    expect_fail("tests/data/kineto_small.json", &o, TL_EINVAL, "skip_iterations");
}

static void test_marker_prefix_option(void **state)
{
    (void)state;
    /* A prefix nothing matches: no markers, so the kernel sequence decides. */
    tl_trace_options o = {.marker_prefix = "Epoch#"};
    tl_trace t;
    load_ok(&t, "tests/data/kineto_small.json", &o);
    assert_int_not_equal(t.split, TL_SPLIT_MARKERS);
    tl_trace_close(&t);
}

/* ---- our own format: round trip and errors --------------------------------------- */

static void roundtrip(const char *path)
{
    tl_trace a, b;
    load_ok(&a, path, NULL);
    tl_err e;
    assert_int_equal(tl_trace_write_json(&a, tmp_path("rt.json"), &e), 0);
    load_ok(&b, tmp_path("rt.json"), NULL);
    assert_string_equal(b.format, "tally");
    assert_same_timeline(&a, &b, true);
    assert_int_equal(a.n_strings, b.n_strings);
    for (uint32_t i = 0; i < a.n_strings; i++)
        assert_string_equal(a.strings[i], b.strings[i]);
    assert_int_equal(a.has_gpu_props, b.has_gpu_props);
    assert_memory_equal(&a.gpu, &b.gpu, sizeof a.gpu);
    assert_int_equal(a.split, b.split);
    assert_int_equal(a.truncated, b.truncated);
    assert_int_equal(a.n_unlinked, b.n_unlinked);
    assert_int_equal(a.n_precapture, b.n_precapture);
    assert_int_equal(a.n_zero_dur, b.n_zero_dur);
    assert_int_equal(a.n_unresolved, b.n_unresolved);
    assert_int_equal(a.n_outside, b.n_outside);
    assert_int_equal(a.n_inferred, b.n_inferred);
    assert_int_equal(a.n_untraced, b.n_untraced);
    /* and it is stable: writing the loaded copy gives the same bytes */
    assert_int_equal(tl_trace_write_json(&b, tmp_path("rt2.json"), &e), 0);
    size_t n1, n2;
    char *x = slurp(tmp_path("rt.json"), &n1), *y = slurp(tmp_path("rt2.json"), &n2);
    /* only "source" differs (kineto -> tally) */
    assert_true(n1 == n2 || labs((long)n1 - (long)n2) <= 8);
    free(x);
    free(y);
    tl_trace_close(&a);
    tl_trace_close(&b);
}

static void test_tally_roundtrip(void **state)
{
    (void)state;
    roundtrip("tests/data/kineto_small.json");
    roundtrip(H100 "resnet50_train_b32_steps.json.gz");
    roundtrip(EXT "a100_event_sync_3streams.json.gz");
    roundtrip(EXT "v100_train_1stream_ns.json.gz");
    /* inferred dependencies and untraced graph time survive too */
    roundtrip(EXT "a100_train_5streams.json.gz");
}

/* A tally-trace file of one iteration holding ops (JSON objects, comma-separated)
 * in tmp_path(name). */
static void write_ops(const char *name, const char *ops)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "{\"format\":\"tally-trace\",\"version\":1,\"streams\":[7],"
             "\"strings\":[\"\",\"k\"],\"iterations\":[{\"start_ns\":0,\"tail_host_ns\":0,"
             "\"traced_ns\":100,\"traced_busy_ns\":50,\"ops\":[%s]}]}", ops);
    write_text(tmp_path(name), buf);
}

static void test_tally_bad_input(void **state)
{
    (void)state;
    write_ops("good.json", "{\"kind\":\"kernel\",\"name\":1,\"stream\":0,\"host_gap_ns\":0,\"host_call_ns\":5,"
              "\"gpu_start_ns\":10,\"dur_ns\":50,\"grid\":[1,1,1],\"block\":[32,1,1]}");
    tl_trace t;
    load_ok(&t, tmp_path("good.json"), NULL);
    assert_int_equal(t.n_iters, 1);
    assert_false(t.has_gpu_props);
    tl_trace_close(&t);

    /* a key given twice is malformed: the last one won ('dur_ns' 50 read as 9) */
    write_ops("dupkey.json", "{\"kind\":\"kernel\",\"name\":1,\"stream\":0,\"host_gap_ns\":0,\"host_call_ns\":5,"
              "\"gpu_start_ns\":10,\"dur_ns\":50,\"dur_ns\":9,\"grid\":[1,1,1],\"block\":[32,1,1]}");
    expect_fail(tmp_path("dupkey.json"), NULL, TL_EFORMAT,
                "dupkey.json: malformed JSON at line 1, column 265: duplicate object key near '\"dur_ns\"'");
    write_text(tmp_path("v2.json"), "{\"format\":\"tally-trace\",\"version\":2,\"iterations\":[]}");
    expect_fail(tmp_path("v2.json"), NULL, TL_EFORMAT,
                "v2.json: tally-trace version 2 is not supported (this build reads version 1)");
    write_text(tmp_path("nov.json"), "{\"format\":\"tally-trace\",\"iterations\":[]}");
    expect_fail(tmp_path("nov.json"), NULL, TL_EMISSING, "missing 'version'");
    /* a GPU neither named (to look it up) nor described: refused by name, in
     * both forms (found by a mutation fuzz: the simulator refused it later,
     * without the file's name) */
    write_text(tmp_path("gpu_noname.json"), "{\"format\":\"tally-trace\",\"version\":1,"
                                             "\"gpu\":{\"model\":\"H100\"},\"iterations\":[]}");
    expect_fail(tmp_path("gpu_noname.json"), NULL, TL_ERANGE,
                "gpu_noname.json: gpu: gpu '?': sms out of range (0) (no 'name' to look the GPU up by)");
    write_text(tmp_path("gpu_noname_ev.json"), "{\"format\":\"tally-trace\",\"version\":1,"
                                                "\"gpu\":{\"sms\":0,\"name\":\"Mystery\"},\"events\":[]}");
    expect_fail(tmp_path("gpu_noname_ev.json"), NULL, TL_ERANGE, "gpu_noname_ev.json: gpu: gpu 'Mystery': sms out of range (0)");

    write_ops("zero.json", "{\"kind\":\"kernel\",\"name\":1,\"stream\":0,\"host_gap_ns\":0,\"host_call_ns\":5,"
              "\"gpu_start_ns\":10,\"dur_ns\":0,\"grid\":[1,1,1],\"block\":[32,1,1]}");
    expect_fail(tmp_path("zero.json"), NULL, TL_ERANGE,
                "zero.json: iterations[0].ops[0] (kernel 'k'): 'dur_ns' is 0");
    write_ops("neg.json", "{\"kind\":\"kernel\",\"name\":1,\"stream\":0,\"host_gap_ns\":0,\"host_call_ns\":5,"
              "\"gpu_start_ns\":10,\"dur_ns\":-4,\"grid\":[1,1,1],\"block\":[32,1,1]}");
    expect_fail(tmp_path("neg.json"), NULL, TL_ERANGE, "'dur_ns' is -4");
    write_ops("grid0.json", "{\"kind\":\"kernel\",\"name\":1,\"stream\":0,\"host_gap_ns\":0,\"host_call_ns\":5,"
              "\"gpu_start_ns\":10,\"dur_ns\":5,\"grid\":[1,0,1],\"block\":[32,1,1]}");
    expect_fail(tmp_path("grid0.json"), NULL, TL_ERANGE, "grid[1] is 0");
    write_ops("wait.json", "{\"kind\":\"stream_wait\",\"name\":0,\"stream\":0,\"event\":0,\"host_gap_ns\":0,"
              "\"host_call_ns\":5}");
    expect_fail(tmp_path("wait.json"), NULL, TL_ERANGE,
                "event 0 is not recorded earlier in this iteration");
    write_ops("kind.json", "{\"kind\":\"warp\",\"name\":0,\"host_gap_ns\":0,\"host_call_ns\":5}");
    /* a bad value in the file is a data error (exit 65), not a usage error */
    expect_fail(tmp_path("kind.json"), NULL, TL_ERANGE, "unknown kind 'warp'");
    write_ops("stream.json", "{\"kind\":\"kernel\",\"name\":1,\"stream\":5,\"host_gap_ns\":0,\"host_call_ns\":5,"
              "\"gpu_start_ns\":10,\"dur_ns\":5,\"grid\":[1,1,1],\"block\":[32,1,1]}");
    expect_fail(tmp_path("stream.json"), NULL, TL_ERANGE, "'stream' is 5");
    write_text(tmp_path("both.json"),
               "{\"format\":\"tally-trace\",\"version\":1,\"iterations\":[],\"events\":[]}");
    expect_fail(tmp_path("both.json"), NULL, TL_EFORMAT, "has both 'iterations' and 'events'");
    /* flat form: zero-duration GPU work is refused in our own format */
    write_text(tmp_path("flat0.json"),
               "{\"format\":\"tally-trace\",\"version\":1,\"events\":[{\"type\":\"kernel\","
               "\"name\":\"k\",\"stream\":7,\"start_ns\":10,\"end_ns\":10,\"grid\":[1,1,1],"
               "\"block\":[1,1,1],\"regs\":8}]}");
    expect_fail(tmp_path("flat0.json"), NULL, TL_ERANGE,
                "flat0.json: events[0] (kernel 'k'): duration is 0 ns (must be > 0)");
    write_text(tmp_path("flatk.json"),
               "{\"format\":\"tally-trace\",\"version\":1,\"events\":[{\"type\":\"kernel\","
               "\"name\":\"k\",\"stream\":7,\"start_ns\":10,\"end_ns\":20,\"block\":[1,1,1],"
               "\"regs\":8}]}");
    expect_fail(tmp_path("flatk.json"), NULL, TL_EMISSING, "events[0] (kernel 'k'): missing 'grid'");
    write_text(tmp_path("flatnone.json"),
               "{\"format\":\"tally-trace\",\"version\":1,\"events\":[{\"type\":\"api\","
               "\"name\":\"cudaMalloc\",\"start_ns\":10,\"end_ns\":20}]}");
    expect_fail(tmp_path("flatnone.json"), NULL, TL_EMISSING, "no GPU kernels");
}

/* ---- Nsight Systems ------------------------------------------------------------- */

/* The small timeline as nsys would export it (times in ns, ids via StringIds).
 * with_optional adds MEMCPY, MEMSET, SYNCHRONIZATION, CUDA_EVENT, NVTX and
 * TARGET_INFO_GPU; without them only the three required tables exist. */
static void make_nsys_db(const char *path, bool with_optional, const char *extra_sql)
{
    unlink(path);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    tl_test_exec_sql(db,
             "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
             "INSERT INTO StringIds VALUES (1,'k1'),(2,'k2'),(3,'k3'),(4,'k4'),(5,'k0'),"
             "(10,'cudaLaunchKernel_v7000'),(11,'cudaMemcpyAsync_v3020'),"
             "(12,'cudaStreamSynchronize_v3020'),(13,'cudaPeekAtLastError_v3020'),"
             "(14,'cudaEventRecord_v3020'),(15,'cudaStreamWaitEvent_v3020'),"
             "(16,'cudaDeviceSynchronize_v3020'),(17,'cudaMemsetAsync_v3020'),"
             "(20,'ProfilerStep#1'),(21,'ProfilerStep#2');"
             "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT "
             "NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT "
             "NULL, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, "
             "shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig "
             "INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER "
             "NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, "
             "blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory "
             "INTEGER NOT NULL, localMemoryPerThread INTEGER, localMemoryTotal INTEGER, gridId "
             "INTEGER, sharedMemoryExecuted INTEGER);"
             "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start,end,deviceId,contextId,streamId,"
             "correlationId,globalPid,demangledName,shortName,registersPerThread,gridX,gridY,"
             "gridZ,blockX,blockY,blockZ,staticSharedMemory,dynamicSharedMemory) VALUES "
             "(120000,140000,0,1,7,11,100,1,1,32,4,1,1,128,1,1,0,1024),"
             "(140000,150000,0,1,7,12,100,2,2,64,8,2,1,256,1,1,0,0),"
             "(185000,195000,0,1,7,20,100,3,3,16,1,1,1,32,1,1,0,49152),"
             "(210000,220000,0,1,7,109,100,1,1,32,4,1,1,128,1,1,0,1024),"
             "(230000,260000,0,1,8,17,100,4,4,40,2,1,1,64,2,1,0,2048),"
             "(316000,326000,0,1,7,21,100,1,1,32,4,1,1,128,1,1,0,1024),"
             "(101000,102000,0,1,7,5,100,5,5,8,1,1,1,32,1,1,0,0);"
             "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT "
             "NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId "
             "INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);"
             "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES "
             "(110000,115000,1,1,11,10,0,NULL),(113000,118000,1,2,12,10,0,NULL),"
             "(125000,160000,1,1,13,11,0,NULL),(165000,170000,1,1,14,12,0,NULL),"
             "(171000,172000,1,1,50,13,0,NULL),(175000,180000,1,1,20,10,0,NULL),"
             "(222000,223000,1,1,15,14,0,NULL),(224000,225000,1,1,16,15,0,NULL),"
             "(226000,228000,1,1,17,10,0,NULL),(229000,270000,1,1,18,16,0,NULL),"
             "(271000,272000,1,1,19,17,0,NULL),(310000,315000,1,1,21,10,0,NULL);");
    if (with_optional)
        tl_test_exec_sql(db,
                 "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER "
                 "NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId "
                 "INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT "
                 "NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, "
                 "dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId "
                 "INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER);"
                 "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start,end,deviceId,contextId,streamId,"
                 "correlationId,globalPid,bytes,copyKind,srcKind,dstKind) VALUES "
                 "(150000,155000,0,1,7,13,100,4096,2,3,1);"
                 "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER "
                 "NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId "
                 "INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value INTEGER NOT "
                 "NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);"
                 "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (275000,275000,0,1,7,19,100,0,512,"
                 "NULL,3);"
                 "CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end "
                 "INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, "
                 "streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, syncType "
                 "INTEGER NOT NULL, eventId INTEGER NOT NULL);"
                 "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES "
                 "(165000,170000,0,1,7,14,100,3,-1),(224000,225000,0,1,8,16,100,2,3),"
                 "(229000,270000,0,1,-1,18,100,4,-1);"
                 "CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT (deviceId INTEGER, contextId "
                 "INTEGER, streamId INTEGER, correlationId INTEGER, eventId INTEGER);"
                 "INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (0,1,7,15,3);"
                 "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType "
                 "INTEGER NOT NULL, rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, "
                 "globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, "
                 "uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, "
                 "int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);"
                 "INSERT INTO NVTX_EVENTS (start,end,eventType,text,globalTid,textId) VALUES "
                 "(100000,200000,59,NULL,1,20),(200000,300000,59,'ProfilerStep#2',1,NULL),"
                 "(150000,NULL,34,'a mark',1,NULL);"
                 "CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT NOT NULL, "
                 "busLocation TEXT, isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, "
                 "memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER, pwGpuId INTEGER, "
                 "uuid TEXT, luid INTEGER, chipName TEXT, computeMajor INTEGER, computeMinor "
                 "INTEGER, maxThreadsPerBlock INTEGER, maxBlocksPerSm INTEGER, "
                 "maxRegistersPerBlock INTEGER, maxRegistersPerSm INTEGER, threadsPerWarp "
                 "INTEGER, maxShmemPerBlock INTEGER, maxShmemPerBlockOptin INTEGER, "
                 "maxShmemPerSm INTEGER, maxWarpsPerSm INTEGER);"
                 "INSERT INTO TARGET_INFO_GPU VALUES (0,'NVIDIA H100 80GB HBM3','0000:19:00.0',1,"
                 "52428800,85017493504,3352320000000,1980000000,132,0,'GPU-x',0,'GH100',9,0,1024,"
                 "32,65536,65536,32,49152,232448,233472,64);");
    if (extra_sql)
        tl_test_exec_sql(db, extra_sql);
    sqlite3_close(db);
}

static void test_nsys_reader(void **state)
{
    (void)state;
    const char *db = tmp_path("small.sqlite");
    make_nsys_db(db, true, NULL);
    tl_trace n, k;
    load_ok(&n, db, NULL);
    load_ok(&k, "tests/data/kineto_small.json", NULL);
    assert_string_equal(n.format, "nsys");
    check_small(&n);
    assert_same_timeline(&k, &n, false);
    assert_string_equal(n.gpu.name, "NVIDIA H100 80GB HBM3");
    assert_int_equal(n.gpu.smem_per_block_optin, 232448);
    assert_int_equal(n.gpu.max_threads_per_sm, 2048);
    assert_int_equal(n.n_zero_dur, 1);
    tl_trace_close(&n);
    /* tl_trace_load_nsys directly, and gzipped */
    tl_err e;
    tl_trace_init(&n);
    assert_int_equal(tl_trace_load_nsys(&n, db, NULL, &e), 0);
    tl_trace_close(&n);
    size_t len;
    char *bytes = slurp(db, &len);
    write_gz(tmp_path("small.sqlite.gz"), bytes, len);
    free(bytes);
    load_ok(&n, tmp_path("small.sqlite.gz"), NULL);
    assert_same_timeline(&k, &n, false);
    tl_trace_close(&n);
    tl_trace_close(&k);
}

static void test_nsys_optional_tables(void **state)
{
    (void)state;
    /* Only KERNEL, RUNTIME and StringIds: no markers, no copies, no GPU info. */
    const char *db = tmp_path("min.sqlite");
    make_nsys_db(db, false, NULL);
    tl_trace t;
    load_ok(&t, db, NULL);
    assert_false(t.has_gpu_props);
    /* k1 k2 k3 k1 k4 k1 has no period and there are no markers */
    assert_int_equal(t.split, TL_SPLIT_WHOLE);
    assert_int_equal(t.n_iters, 1);
    assert_int_equal(count_kind(&t.iters[0], TL_OP_KERNEL), 6);
    /* without copy records the memcpy call is host time; both syncs stay */
    assert_int_equal(count_kind(&t.iters[0], TL_OP_MEMCPY), 0);
    assert_int_equal(count_kind(&t.iters[0], TL_OP_SYNC), 2);
    /* the stream wait has no event information: host time, counted */
    assert_int_equal(count_kind(&t.iters[0], TL_OP_STREAM_WAIT), 0);
    assert_int_equal(t.n_unresolved, 1);
    tl_trace_close(&t);
}

static void test_nsys_bad_input(void **state)
{
    (void)state;
    const char *db = tmp_path("bad.sqlite");
    make_nsys_db(db, false, "DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME;");
    expect_fail(db, NULL, TL_EFORMAT,
                "bad.sqlite: not an Nsight Systems export with CUDA trace (no table "
                "CUPTI_ACTIVITY_KIND_RUNTIME;");
    make_nsys_db(db, false, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN gridY;");
    expect_fail(db, NULL, TL_EMISSING, "table CUPTI_ACTIVITY_KIND_KERNEL has no column 'gridY'");
    make_nsys_db(db, false, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 0 WHERE rowid = 3;");
    expect_fail(db, NULL, TL_ERANGE, "CUPTI_ACTIVITY_KIND_KERNEL row 3 ('k3'): gridX is 0");
    make_nsys_db(db, false, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET blockX = 'many' WHERE rowid = 2;");
    expect_fail(db, NULL, TL_ETYPE, "row 2 ('k2'): blockX must be an integer");
    make_nsys_db(db, false, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 5 WHERE rowid = 1;");
    expect_fail(db, NULL, TL_ERANGE, "row 1 ('k1'): end is before start");
    make_nsys_db(db, false, "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL;");
    expect_fail(db, NULL, TL_EMISSING, "no GPU kernels");
    /* a GPU row the device table cannot complete (corrupt: no name or an unknown
     * one, no smCount, no compute capability to take a known GPU's from) */
    make_nsys_db(db, true, "UPDATE TARGET_INFO_GPU SET name = 'Mystery', smCount = NULL, "
                            "computeMajor = NULL;");
    expect_fail(db, NULL, TL_ERANGE,
                "bad.sqlite: device properties: gpu 'Mystery': sms out of range (0)");
    make_nsys_db(db, true, "UPDATE TARGET_INFO_GPU SET name = '', smCount = 0, computeMajor = 0;");
    expect_fail(db, NULL, TL_ERANGE, "bad.sqlite: device properties: gpu '?': sms out of range "
                                     "(0) (no GPU name to look it up by)");
    /* string ids StringIds does not hold: a sync call would be dropped, a
     * marker lost, a kernel named '' */
    make_nsys_db(db, true, "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = 999 WHERE rowid = 4;");
    expect_fail(db, NULL, TL_EFORMAT,
                "bad.sqlite: CUPTI_ACTIVITY_KIND_RUNTIME row 4: nameId 999 names no string in StringIds");
    make_nsys_db(db, true, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 998, "
                            "shortName = 999 WHERE rowid = 2;");
    expect_fail(db, NULL, TL_EFORMAT,
                "CUPTI_ACTIVITY_KIND_KERNEL row 2: demangledName 998 names no string in StringIds");
    make_nsys_db(db, true, "UPDATE NVTX_EVENTS SET textId = 999 WHERE rowid = 1;");
    expect_fail(db, NULL, TL_EFORMAT, "NVTX_EVENTS row 1: textId 999 names no string in StringIds");
    /* a range that ends before it starts was dropped, and its iteration's ops with it */
    make_nsys_db(db, true, "UPDATE NVTX_EVENTS SET end = start - 1 WHERE rowid = 2;");
    expect_fail(db, NULL, TL_ERANGE, "NVTX_EVENTS row 2 ('ProfilerStep#2'): range ends before it "
                                     "starts (end 199999 < start 200000)");
    /* an id given twice read every kernel named by it twice */
    make_nsys_db(db, false, "CREATE TABLE S2 (id INTEGER, value TEXT); INSERT INTO S2 SELECT * "
                            "FROM StringIds; INSERT INTO S2 VALUES (1, 'k1 again'); DROP TABLE "
                            "StringIds; ALTER TABLE S2 RENAME TO StringIds;");
    expect_fail(db, NULL, TL_EFORMAT, "bad.sqlite: StringIds has id 1 more than once");
    /* a view in place of a table: one WITH RECURSIVE never ended (fuzz round 26) */
    make_nsys_db(db, false, "ALTER TABLE StringIds RENAME TO S0; CREATE VIEW stringids AS WITH "
                            "RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x "
                            "AS id, 'k' || x AS value FROM c;");
    expect_fail(db, NULL, TL_EFORMAT, "bad.sqlite: StringIds is a view, not a table");
    make_nsys_db(db, false, "ALTER TABLE StringIds RENAME COLUMN value TO v;");
    expect_fail(db, NULL, TL_EMISSING, "bad.sqlite: table StringIds has no column 'value'");
    /* kernels of two GPUs were replayed together on one (fuzzing) */
    make_nsys_db(db, false, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 1 WHERE rowid = 2;");
    expect_fail(db, NULL, TL_EFORMAT, "bad.sqlite: kernels ran on 2 devices (0, 1): Tally "
                                      "replays one GPU's work");
    /* a shortName that StringIds holds still names the kernel */
    make_nsys_db(db, false, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 999 WHERE rowid = 2;");
    tl_trace ok;
    load_ok(&ok, db, NULL);
    tl_trace_close(&ok);
    /* maxWarpsPerSm times threadsPerWarp past an int (UBSan: signed overflow) */
    make_nsys_db(db, true, "UPDATE TARGET_INFO_GPU SET maxWarpsPerSm = 2000000000;");
    expect_fail(db, NULL, TL_ERANGE, "bad.sqlite: device properties: gpu 'NVIDIA H100 80GB "
                                     "HBM3': max_warps_per_sm 2000000000 warps of 32 threads");
    /* a corrupt database: right header, garbage pages */
    size_t len;
    make_nsys_db(db, false, NULL);
    char *bytes = slurp(db, &len);
    for (size_t i = 100; i < len; i++)
        bytes[i] = (char)(i * 31);
    FILE *f = fopen(db, "wb");
    fwrite(bytes, 1, len, f);
    fclose(f);
    free(bytes);
    expect_fail(db, NULL, TL_EFORMAT, "bad.sqlite: not a readable SQLite database");
    /* not a database at all */
    tl_trace t;
    tl_trace_init(&t);
    tl_err e;
    assert_int_equal(tl_trace_load_nsys(&t, "tests/data/kineto_small.json", NULL, &e), TL_EFORMAT);
    assert_non_null(strstr(e.msg, "not an SQLite database"));
}

/* Names from an nsys export are any bytes. Ill-formed UTF-8 that a lead
 * byte's test passed (0xf8.., an overlong 0xe0 80 80, a surrogate 0xed a0 80,
 * past U+10FFFF 0xf4 90..) was written as it was, and the converted file
 * could not be read back (jansson: "unable to decode byte"). Each byte of it
 * is '?' now; well-formed 2-, 3- and 4-byte characters are kept. */
static void test_tally_write_bad_utf8(void **state)
{
    (void)state;
    const char *db = tmp_path("utf8.sqlite");
    make_nsys_db(db, false, "UPDATE StringIds SET value = CAST(X'6BF880806B' AS TEXT) WHERE id = 1;"
                            "UPDATE StringIds SET value = CAST(X'6BE080806B' AS TEXT) WHERE id = 2;"
                            "UPDATE StringIds SET value = CAST(X'6BEDA080F49080806B' AS TEXT) "
                            "WHERE id = 3;"
                            "UPDATE StringIds SET value = CAST(X'CEB1E282ACF09F9880' AS TEXT) "
                            "WHERE id = 4;");
    tl_trace a, b;
    load_ok(&a, db, NULL);
    tl_err e;
    assert_int_equal(tl_trace_write_json(&a, tmp_path("utf8.json"), &e), 0);
    load_ok(&b, tmp_path("utf8.json"), NULL);
    assert_int_equal(a.n_iters, b.n_iters);
    for (uint32_t i = 0; i < a.n_iters; i++)
        assert_int_equal(a.iters[i].n_ops, b.iters[i].n_ops);
    const char *want[] = {"k???k", "k???????k", "\xce\xb1\xe2\x82\xac\xf0\x9f\x98\x80"};
    int found[3] = {0};
    for (uint32_t i = 0; i < b.n_strings; i++)
        for (int k = 0; k < 3; k++)
            found[k] += !strcmp(b.strings[i], want[k]);
    assert_int_equal(found[0], 2);
    assert_int_equal(found[1], 1);
    assert_int_equal(found[2], 1);
    tl_trace_close(&a);
    tl_trace_close(&b);
}

/* The one UTF-8 rule of the trace writer and of plot labels (tl_utf8_len):
 * the labels' copy took any lead byte with continuation bytes behind it. */
static void test_utf8_len(void **state)
{
    (void)state;
    static const struct { const char *s; int n; } cases[] = {
        { "a", 1 }, { "\xce\xb1", 2 }, { "\xe2\x82\xac", 3 }, { "\xf0\x9f\x98\x80", 4 },
        { "\xf4\x8f\xbf\xbf", 4 },                    /* U+10FFFF */
        { "\xc1\xbf", 0 }, { "\xe0\x80\x80", 0 },       /* overlong */
        { "\xed\xa0\x80", 0 },                         /* a surrogate */
        { "\xf4\x90\x80\x80", 0 }, { "\xf8\x80\x80", 0 }, /* past U+10FFFF */
        { "\x80", 0 }, { "\xe2\x82", 0 },                /* a stray or cut sequence */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (tl_utf8_len((const unsigned char *)cases[i].s) != cases[i].n)
            fail_msg("case %zu: %d, want %d", i, tl_utf8_len((const unsigned char *)cases[i].s),
                     cases[i].n);
}

/* ---- Kineto bad input --------------------------------------------------------------- */

static void test_kineto_bad_input(void **state)
{
    (void)state;
    expect_fail("tests/data/bad_syntax.json", NULL, TL_EFORMAT,
                "bad_syntax.json: malformed JSON at line 4, column");
    expect_fail("tests/data/bad_missing_grid.json", NULL, TL_EMISSING,
                "bad_missing_grid.json: event 2 (kernel 'gemm_kernel'): missing 'grid'");
    expect_fail("tests/data/bad_zero_grid.json", NULL, TL_ERANGE,
                "bad_zero_grid.json: event 1 (kernel 'k'): grid[0] is 0 (must be >= 1)");
    expect_fail("tests/data/bad_negative_block.json", NULL, TL_ERANGE,
                "event 1 (kernel 'k'): block[2] is -1 (must be >= 1)");
    expect_fail("tests/data/bad_huge_grid.json", NULL, TL_ERANGE,
                "event 1 (kernel 'k'): grid[0] is 2147483648 (at most 2147483647)");
    expect_fail("tests/data/bad_threads.json", NULL, TL_ERANGE,
                "event 1 (kernel 'k'): block has 2048 threads (at most 1024)");
    expect_fail("tests/data/bad_negative_dur.json", NULL, TL_ERANGE,
                "event 1 (kernel 'k'): 'dur' is negative");
    expect_fail("tests/data/bad_types.json", NULL, TL_ETYPE,
                "event 1 (kernel 'k'): 'grid' must be an array of 1 to 3 integers");
    expect_fail("tests/data/bad_ts_type.json", NULL, TL_ETYPE,
                "event 0 (API call 'cudaLaunchKernel'): 'ts' must be a number");
    expect_fail("tests/data/bad_regs.json", NULL, TL_ERANGE,
                "event 1 (kernel 'k'): 'registers per thread' is 300 (must be in 0..255)");
    expect_fail("tests/data/no_kernels.json", NULL, TL_EMISSING, "no_kernels.json: no GPU kernels");
    /* an API call's correlation of the wrong type: refused as a kernel's is, not
     * read as none (which unlinked the call from its kernel; fuzzing) */
    write_text(tmp_path("corr_type.json"),
               "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
               "\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":5,\"args\":{\"correlation\":\"4\"}},"
               "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":20,\"dur\":3,"
               "\"args\":{\"device\":0,\"stream\":7,\"correlation\":4,\"grid\":[1,1,1],\"block\":[32,1,1],"
               "\"registers per thread\":16,\"shared memory\":0}}]}");
    expect_fail(tmp_path("corr_type.json"), NULL, TL_ETYPE,
                "corr_type.json: event 0 (API call 'cudaLaunchKernel'): 'correlation' must be an integer");
    /* its one kernel is backlog from before the capture (correlation id below every
     * call's), so dropped: refused, not read as an empty iteration (a mutation fuzz) */
    write_text(tmp_path("precap.json"),
               "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
               "\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":5,\"args\":{\"correlation\":11}},"
               "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":3,"
               "\"args\":{\"device\":0,\"stream\":7,\"correlation\":4,\"grid\":[1,1,1],\"block\":[32,1,1],"
               "\"registers per thread\":16,\"shared memory\":0}}]}");
    expect_fail(tmp_path("precap.json"), NULL, TL_EMISSING,
                "precap.json: no GPU kernels in the trace once the 1 launched before the capture are dropped");
    /* two kernels of one stream starting against their launch order: by 5 s, a broken
     * timestamp (refused, naming both); by 50 us, two host threads racing (read) */
    const char *order_fmt =
        "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
        "\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":5,\"args\":{\"correlation\":11}},"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
        "\"pid\":1,\"tid\":2,\"ts\":20,\"dur\":5,\"args\":{\"correlation\":12}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"first\",\"pid\":0,\"tid\":7,\"ts\":%s,\"dur\":3,"
        "\"args\":{\"device\":0,\"stream\":7,\"correlation\":11,\"grid\":[1,1,1],\"block\":[32,1,1],"
        "\"registers per thread\":16,\"shared memory\":0}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"second\",\"pid\":0,\"tid\":7,\"ts\":100,\"dur\":3,"
        "\"args\":{\"device\":0,\"stream\":7,\"correlation\":12,\"grid\":[1,1,1],\"block\":[32,1,1],"
        "\"registers per thread\":16,\"shared memory\":0}}]}";
    char order_json[2048];
    snprintf(order_json, sizeof order_json, order_fmt, "5000100");
    write_text(tmp_path("order.json"), order_json);
    expect_fail(tmp_path("order.json"), NULL, TL_EFORMAT,
                "order.json: on stream 7, 'first' (correlation 11) starts 5.000 s after 'second' (correlation 12), "
                "which was launched after it");
    snprintf(order_json, sizeof order_json, order_fmt, "150");
    write_text(tmp_path("order.json"), order_json);
    tl_trace ot;
    tl_trace_init(&ot);
    tl_err oe;
    assert_int_equal(tl_trace_load(&ot, tmp_path("order.json"), NULL, &oe), 0);
    tl_trace_close(&ot);
    /* a key given twice inside an event: refused at the key, not the last one read
     * (it was: 'dur' 3 read as 900) */
    write_text(tmp_path("dup_dur.json"),
               "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
               "\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":5,\"args\":{\"correlation\":4}},\n"
               "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":20,\"dur\":3,\"dur\":900,"
               "\"args\":{\"device\":0,\"stream\":7,\"correlation\":4,\"grid\":[1,1,1],\"block\":[32,1,1],"
               "\"registers per thread\":16,\"shared memory\":0}}]}");
    expect_fail(tmp_path("dup_dur.json"), NULL, TL_EFORMAT,
                "dup_dur.json: malformed JSON at line 2, column");
    expect_fail(tmp_path("dup_dur.json"), NULL, TL_EFORMAT, "duplicate object key near '\"dur\"'");
    expect_fail("tests/data/not_a_trace.json", NULL, TL_EMISSING, "no 'traceEvents' array");
    /* kernels of two GPUs were replayed together on one, streams of one id
     * merged (fuzzing) */
    size_t dn;
    char *ddata = slurp("tests/data/kineto_small.json", &dn);
    char *dev = strstr(strstr(ddata, "\"name\": \"k1\""), "\"device\": 0");
    assert_non_null(dev);
    dev[10] = '3';
    write_text(tmp_path("two_gpus.json"), ddata);
    free(ddata);
    expect_fail(tmp_path("two_gpus.json"), NULL, TL_EFORMAT,
                "two_gpus.json: kernels ran on 2 devices (0, 3): Tally replays one GPU's work");
    /* deviceProperties of a GPU the device table does not know, without numSms
     * and computeMajor (nothing to complete it from) */
    size_t kn;
    char *kdata = slurp("tests/data/kineto_small.json", &kn);
    char *ks = strstr(kdata, "\"numSms\": 132");
    assert_non_null(ks);
    memcpy(ks, "\"numSmz\"", 8);
    char *kcc = strstr(kdata, "\"computeMajor\"");
    assert_non_null(kcc);
    memcpy(kcc, "\"computeMajoz\"", 14);
    char *kname = strstr(kdata, "NVIDIA H100 80GB HBM3");
    assert_non_null(kname);
    memcpy(kname, "Mystery Accelerator 1", 21);
    write_text(tmp_path("gpu_nosms.json"), kdata);
    free(kdata);
    expect_fail(tmp_path("gpu_nosms.json"), NULL, TL_ERANGE,
                "gpu_nosms.json: device properties: gpu 'Mystery Accelerator 1': sms out of range (0)");
    /* the whole bad set under gzip too: the error still names the event */
    size_t n;
    char *data = slurp("tests/data/bad_missing_grid.json", &n);
    write_gz(tmp_path("bad_missing_grid.json.gz"), data, n);
    free(data);
    expect_fail(tmp_path("bad_missing_grid.json.gz"), NULL, TL_EMISSING,
                "event 2 (kernel 'gemm_kernel'): missing 'grid'");
    /* a truncated (but not gzipped) JSON file */
    data = slurp("tests/data/kineto_small.json", &n);
    data[n / 2] = 0;
    write_text(tmp_path("half.json"), data);
    free(data);
    expect_fail(tmp_path("half.json"), NULL, TL_EFORMAT, "half.json: malformed JSON at line");
}

static void test_kineto_old_format(void **state)
{
    (void)state;
    /* Old Kineto: capitalized categories, "tid": "stream 7", integer µs, and a
     * bare inf bandwidth for a zero-duration copy (pytorch/kineto#105). */
    tl_trace t;
    load_ok(&t, "tests/data/kineto_old_inf.json", NULL);
    assert_int_equal(t.n_iters, 1);
    assert_int_equal(t.split, TL_SPLIT_WHOLE);
    const tl_iteration *it = &t.iters[0];
    assert_int_equal(it->n_ops, 2);
    assert_int_equal(it->ops[0].kind, TL_OP_MEMCPY);
    assert_int_equal(it->ops[0].copy_kind, TL_COPY_H2D);
    assert_false(it->ops[0].blocking);
    assert_int_equal(it->ops[0].dur_ns, 1);
    assert_int_equal(it->ops[0].host_call_ns, 30 * US);
    assert_int_equal(it->ops[1].kind, TL_OP_KERNEL);
    assert_int_equal(it->ops[1].host_gap_ns, 10 * US);
    assert_int_equal(it->ops[1].dur_ns, 4 * US);
    assert_int_equal(t.n_zero_dur, 1);
    assert_false(t.has_gpu_props);
    tl_trace_close(&t);
    /* inf stays invalid in our own format */
    write_text(tmp_path("inf.json"), "{\"format\":\"tally-trace\",\"version\":1,\"x\":inf}");
    expect_fail(tmp_path("inf.json"), NULL, TL_EFORMAT, "malformed JSON");
}

/* Host threads named by strings ("tid": "main") are hashed to ids: the hash
 * wraps (unsigned), it does not overflow (UBSan found it with any string tid
 * on an API event), and the two named threads stay two threads. */
static void test_kineto_string_tid(void **state)
{
    (void)state;
    size_t n;
    char *data = slurp("tests/data/kineto_small.json", &n);
    char *out = malloc(2 * n + 1), *o = out;
    for (const char *p = data; *p;) {
        if (!strncmp(p, "\"pid\": 1, \"tid\": 1,", 19)) {
            o += sprintf(o, "\"pid\": 1, \"tid\": \"main\",");
            p += 19;
        } else if (!strncmp(p, "\"pid\": 1, \"tid\": 2,", 19)) {
            o += sprintf(o, "\"pid\": 1, \"tid\": \"worker thread\",");
            p += 19;
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    assert_null(strstr(out, "\"pid\": 1, \"tid\": 1,"));
    write_text(tmp_path("string_tid.json"), out);
    free(out);
    free(data);
    tl_trace t;
    load_ok(&t, tmp_path("string_tid.json"), NULL);
    check_small(&t);
    tl_trace_close(&t);
}

/* ---- the bundled real traces ---------------------------------------------------------- */

static const char *const bundled[] = {
    H100 "mobilenetv3_infer_b1.json.gz",  H100 "resnet50_infer_b8.json.gz",
    H100 "resnet50_train_b32.json.gz",    H100 "resnet50_train_b32_steps.json.gz",
    H100 "vit_b16_infer_b1.json.gz",      EXT "a100_event_sync_3streams.json.gz",
    EXT "a100_train_3streams.json.gz",    EXT "a100_train_5streams.json.gz",
    EXT "v100_train_1stream_ns.json.gz",
};

/* Plausibility of every iteration of a real trace. */
static void check_plausible(const tl_trace *t)
{
    assert_true(t->n_iters >= 1);
    assert_true(t->has_gpu_props);
    assert_true(t->gpu.sms > 0);
    assert_true(t->n_streams >= 1);
    for (uint32_t i = 0; i < t->n_iters; i++) {
        const tl_iteration *it = &t->iters[i];
        tl_iter_stats st;
        tl_iteration_stats(it, &st);
        assert_true(st.kernels > 0);
        assert_true(it->traced_busy_ns > 0);
        assert_true(it->traced_busy_ns <= it->traced_ns);
        assert_true(st.host_ns <= it->traced_ns);
        assert_true(it->tail_host_ns >= 0);
        if (i > 0)
            assert_true(it->start_ns > t->iters[i - 1].start_ns);
        tl_ns busy_sum = 0;
        for (uint32_t k = 0; k < it->n_ops; k++) {
            const tl_op *op = &it->ops[k];
            assert_true(op->host_gap_ns >= 0 && op->host_call_ns >= 0);
            assert_true(op->stream >= 0 && op->stream < t->n_streams);
            if (op->kind <= TL_OP_MEMSET) {
                assert_true(op->dur_ns > 0);
                assert_true(op->gpu_start_ns >= 0);
                busy_sum += op->dur_ns;
            } else {
                assert_int_equal(op->gpu_start_ns, -1);
            }
            if (op->kind == TL_OP_KERNEL) {
                assert_true(tl_op_blocks(op) >= 1);
                assert_true(tl_op_threads(op) >= 1 && tl_op_threads(op) <= 1024);
            }
        }
        assert_true(it->traced_busy_ns <= busy_sum);
    }
}

static void test_bundled_all_load(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bundled / sizeof bundled[0]; i++) {
        tl_trace t;
        load_ok(&t, bundled[i], NULL);
        assert_string_equal(t.format, "kineto");
        check_plausible(&t);
        /* info prints without trouble */
        FILE *devnull = fopen("/dev/null", "w");
        tl_trace_print_info(devnull, &t);
        fclose(devnull);
        tl_trace_close(&t);
    }
}

/* n iterations by method, every one with the same kernel count k. */
static void expect_split(const char *path, const tl_trace_options *o, tl_split_method m,
                         uint32_t n, uint32_t first_equal, uint32_t k)
{
    tl_trace t;
    load_ok(&t, path, o);
    if (t.split != m || t.n_iters != n)
        fail_msg("%s: split %s into %u iterations, want %s into %u", path,
                 tl_split_method_name(t.split), t.n_iters, tl_split_method_name(m), n);
    for (uint32_t i = first_equal; i < t.n_iters; i++)
        assert_int_equal(count_kind(&t.iters[i], TL_OP_KERNEL), k);
    tl_trace_close(&t);
}

static void test_bundled_splits(void **state)
{
    (void)state;
    /* ProfilerStep#N markers */
    expect_split(H100 "vit_b16_infer_b1.json.gz", NULL, TL_SPLIT_MARKERS, 8, 0, 150);
    expect_split(H100 "mobilenetv3_infer_b1.json.gz", NULL, TL_SPLIT_MARKERS, 8, 0, 204);
    expect_split(H100 "resnet50_train_b32_steps.json.gz", NULL, TL_SPLIT_MARKERS, 4, 0, 726);
    expect_split(EXT "a100_train_3streams.json.gz", NULL, TL_SPLIT_MARKERS, 6, 0, 1428);
    expect_split(EXT "v100_train_1stream_ns.json.gz", NULL, TL_SPLIT_MARKERS, 5, 0, 870);
    expect_split(EXT "a100_train_5streams.json.gz", NULL, TL_SPLIT_MARKERS, 5, 0, 1075);
    /* no markers: the period of the kernel-name sequence */
    expect_split(H100 "resnet50_infer_b8.json.gz", NULL, TL_SPLIT_PERIOD, 10, 0, 232);
    expect_split(H100 "resnet50_train_b32.json.gz", NULL, TL_SPLIT_PERIOD, 3, 0, 726);
    /* one kernel repeated on 3 streams is no iteration structure */
    expect_split(EXT "a100_event_sync_3streams.json.gz", NULL, TL_SPLIT_WHOLE, 1, 0, 3);
    /* markers can be ignored by asking for a prefix nobody uses */
    tl_trace_options o = {.marker_prefix = "NoSuchMarker"};
    expect_split(H100 "vit_b16_infer_b1.json.gz", &o, TL_SPLIT_PERIOD, 8, 0, 150);
    /* skip the warm-up */
    o = (tl_trace_options){.skip_iterations = 3};
    expect_split(H100 "vit_b16_infer_b1.json.gz", &o, TL_SPLIT_MARKERS, 5, 0, 150);
}

static void test_start_kernel_split(void **state)
{
    (void)state;
    tl_trace t;
    load_ok(&t, H100 "resnet50_infer_b8.json.gz", NULL);
    /* the first kernel whose name matches exactly one kernel of a pass */
    char first[512] = "";
    const tl_iteration *it = &t.iters[0];
    for (uint32_t k = 0; k < it->n_ops && !first[0]; k++) {
        if (it->ops[k].kind != TL_OP_KERNEL)
            continue;
        const char *name = tl_trace_op_name(&t, &it->ops[k]);
        uint32_t matches = 0;
        for (uint32_t j = 0; j < it->n_ops; j++)
            matches += it->ops[j].kind == TL_OP_KERNEL &&
                       strstr(tl_trace_op_name(&t, &it->ops[j]), name) != NULL;
        if (matches == 1)
            snprintf(first, sizeof first, "%s", name);
    }
    assert_true(first[0] != '\0');
    tl_trace_close(&t);
    /* that name occurs once in each of the 10 passes: iterations run from
     * one occurrence to the next, the last one to the end of the trace */
    tl_trace_options o = {.iteration_start_kernel = first};
    load_ok(&t, H100 "resnet50_infer_b8.json.gz", &o);
    assert_int_equal(t.split, TL_SPLIT_USER);
    assert_int_equal(t.n_iters, 10);
    for (uint32_t i = 0; i + 1 < t.n_iters; i++)
        assert_int_equal(count_kind(&t.iters[i], TL_OP_KERNEL), 232);
    assert_true(count_kind(&t.iters[9], TL_OP_KERNEL) < 232);
    assert_true(t.n_outside > 0);
    tl_trace_close(&t);
    o.iteration_start_kernel = "no_kernel_has_this_name";
    expect_fail(H100 "resnet50_infer_b8.json.gz", &o, TL_EUNKNOWN,
                "no kernel name contains 'no_kernel_has_this_name'");
    /* given, it beats the trace's markers too (it was silently ignored) */
    o.iteration_start_kernel = "k";
    load_ok(&t, "tests/data/kineto_small.json", &o);
    assert_int_equal(t.split, TL_SPLIT_USER);
    tl_trace_close(&t);
}

static void test_bundled_figures(void **state)
{
    (void)state;
    tl_trace t;
    /* Eager batch-1 inference is host-bound: the GPU idles most of the time. */
    const char *host_bound[] = {H100 "vit_b16_infer_b1.json.gz", H100 "mobilenetv3_infer_b1.json.gz"};
    for (int f = 0; f < 2; f++) {
        load_ok(&t, host_bound[f], NULL);
        for (uint32_t i = 0; i < t.n_iters; i++)
            assert_true(t.iters[i].traced_busy_ns * 2 < t.iters[i].traced_ns);
        assert_non_null(strstr(t.gpu.name, "H100"));
        assert_int_equal(t.gpu.sms, 132);
        tl_trace_close(&t);
    }
    /* ResNet-50 training at batch 32: the GPU is busy ~19 ms per step. */
    load_ok(&t, H100 "resnet50_train_b32_steps.json.gz", NULL);
    for (uint32_t i = 1; i < t.n_iters; i++) {
        assert_true(t.iters[i].traced_busy_ns > 15 * TL_NS_PER_MS);
        assert_true(t.iters[i].traced_busy_ns < 25 * TL_NS_PER_MS);
    }
    /* 18 kernels of the unprofiled step before were still running: dropped */
    assert_int_equal(t.n_precapture, 18);
    assert_int_equal(t.n_unlinked, 0);
    tl_trace_close(&t);
    /* V100: ns-precision timestamps survive (not rounded to µs). */
    load_ok(&t, EXT "v100_train_1stream_ns.json.gz", NULL);
    assert_non_null(strstr(t.gpu.name, "V100"));
    assert_int_equal(t.gpu.sms, 80);
    uint32_t sub_us = 0;
    for (uint32_t k = 0; k < t.iters[1].n_ops; k++)
        sub_us += t.iters[1].ops[k].dur_ns % 1000 != 0;
    assert_true(sub_us > t.iters[1].n_ops / 2);
    tl_trace_close(&t);
    /* Cross-stream event waits are kept: record on one stream, wait on another. */
    load_ok(&t, EXT "a100_event_sync_3streams.json.gz", NULL);
    assert_int_equal(t.n_streams, 3);
    const tl_iteration *it = &t.iters[0];
    int rec = -1, wait = -1;
    for (uint32_t k = 0; k < it->n_ops; k++) {
        if (it->ops[k].kind == TL_OP_EVENT_RECORD)
            rec = (int)k;
        if (it->ops[k].kind == TL_OP_STREAM_WAIT)
            wait = (int)k;
    }
    assert_true(rec >= 0 && wait > rec);
    assert_int_equal(it->ops[rec].event, it->ops[wait].event);
    assert_int_not_equal(it->ops[rec].stream, it->ops[wait].stream);
    assert_int_equal(count_kind(it, TL_OP_SYNC), 1);
    tl_trace_close(&t);
}

static void test_deterministic(void **state)
{
    (void)state;
    tl_trace a, b;
    load_ok(&a, EXT "a100_train_5streams.json.gz", NULL);
    load_ok(&b, EXT "a100_train_5streams.json.gz", NULL);
    assert_same_timeline(&a, &b, true);
    assert_int_equal(a.n_unlinked, b.n_unlinked);
    assert_int_equal(a.n_unresolved, b.n_unresolved);
    tl_trace_close(&a);
    tl_trace_close(&b);
}

static void test_print_info(void **state)
{
    (void)state;
    tl_trace t;
    load_ok(&t, "tests/data/kineto_small.json", NULL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tl_trace_print_info(f, &t);
    fclose(f);
    assert_non_null(strstr(buf, "format:      kineto"));
    assert_non_null(strstr(buf, "NVIDIA H100 80GB HBM3, 132 SMs"));
    assert_non_null(strstr(buf, "streams:     2 (CUDA ids: 7 8)"));
    assert_non_null(strstr(buf, "iterations:  2 (split by markers)"));
    assert_non_null(strstr(buf, "launched before the capture"));
    assert_non_null(strstr(buf, "1 GPU ops without API call"));
    assert_non_null(strstr(buf, "mean/iter:   2.5 kernels"));
    assert_non_null(strstr(buf, "gpu_busy_ms"));
    free(buf);
    tl_trace_close(&t);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tally_test_traces_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return tl_test_remove_tree(tmpdir);
}

/* The traced back-to-back gap: a tally-trace capture without CUPTI latency
 * timestamps shows the H100's own ~1.15 us (where the simulator's default
 * comes from), one with them ~2.3 us; a trace with one op per stream has no
 * pairs. */
static void test_back_to_back_gap(void **state)
{
    (void)state;
    tl_trace t;
    uint64_t pairs = 0;
    load_ok(&t, "traces/captured/resnet50_train_b32.json.gz", NULL);
    tl_ns g = tl_trace_back_to_back_gap(&t, &pairs);
    assert_true(pairs > 10000);
    assert_true(g >= 1050 && g <= 1250);
    tl_trace_close(&t);
    load_ok(&t, "traces/captured/resnet50_train_b32_callback.json.gz", NULL);
    g = tl_trace_back_to_back_gap(&t, &pairs);
    assert_true(pairs > 10000);
    assert_true(g >= 2000 && g <= 2600);
    tl_trace_close(&t);
    /* a made-up trace: two streams, one kernel each: no pairs, gap 0 */
    tl_op ops[2];
    memset(ops, 0, sizeof ops);
    for (int k = 0; k < 2; k++) {
        ops[k].kind = TL_OP_KERNEL;
        ops[k].stream = k;
        ops[k].gpu_start_ns = 0;
        ops[k].dur_ns = 1000;
        ops[k].event = -1;
    }
    tl_iteration it = {.ops = ops, .n_ops = 2};
    tl_trace m;
    memset(&m, 0, sizeof m);
    m.iters = &it;
    m.n_iters = 1;
    m.n_streams = 2;
    assert_int_equal(tl_trace_back_to_back_gap(&m, &pairs), 0);
    assert_int_equal(pairs, 0);
}

/* ---- limits on bad input (found by an audit) ---------------------------------------- */

/* One-iteration trace of our own format: streams, then the ops. */
static void write_iter_trace(const char *path, const char *streams, const char *tail_ns,
                             const char *ops)
{
    char *buf = malloc(8192);
    snprintf(buf, 8192,
             "{\"format\":\"tally-trace\",\"version\":1,\"streams\":%s,\"strings\":[\"\",\"k\"],"
             "\"iterations\":[{\"start_ns\":0,\"tail_host_ns\":%s,\"traced_ns\":1000,"
             "\"traced_busy_ns\":1000,\"ops\":[%s]}]}",
             streams, tail_ns, ops);
    write_text(path, buf);
    free(buf);
}

#define KOP(grid, gap, call, dur)                                                              \
    "{\"kind\":\"kernel\",\"name\":1,\"stream\":0,\"host_gap_ns\":" gap ",\"host_call_ns\":"  \
    call ",\"gpu_start_ns\":0,\"dur_ns\":" dur ",\"grid\":" grid ",\"block\":[32,1,1],"        \
    "\"regs\":8}"

/* A kernel's blocks (grid x*y*z) are capped at TL_TRACE_MAX_BLOCKS in every reader:
 * a grid of 2^61 blocks, valid per dimension, made the simulator spin for ever. */
static void test_grid_block_cap(void **state)
{
    (void)state;
    assert_true(TL_TRACE_MAX_BLOCKS == (1ULL << 32));
    /* exactly the cap (2^22 x 2^10) loads; 1024 blocks more do not */
    write_iter_trace(tmp_path("cap.json"), "[7]", "0", KOP("[4194304,1024,1]", "0", "5", "50"));
    tl_trace t;
    load_ok(&t, tmp_path("cap.json"), NULL);
    assert_true(tl_op_blocks(&t.iters[0].ops[0]) == TL_TRACE_MAX_BLOCKS);
    tl_trace_close(&t);
    write_iter_trace(tmp_path("cap1.json"), "[7]", "0", KOP("[4194305,1024,1]", "0", "5", "50"));
    expect_fail(tmp_path("cap1.json"), NULL, TL_ERANGE,
                "cap1.json: iterations[0].ops[0] (kernel 'k'): grid [4194305,1024,1] has "
                "4294968320 blocks (at most 4294967296)");
    write_iter_trace(tmp_path("huge.json"), "[7]", "0",
                     KOP("[2147483647,65535,16384]", "0", "5", "50"));
    expect_fail(tmp_path("huge.json"), NULL, TL_ERANGE,
                "grid [2147483647,65535,16384] has 2305807823767879680 blocks");
    /* the largest grid CUDA allows in one dimension is still fine */
    write_iter_trace(tmp_path("x31.json"), "[7]", "0", KOP("[2147483647,2,1]", "0", "5", "50"));
    load_ok(&t, tmp_path("x31.json"), NULL);
    tl_trace_close(&t);
    /* flat events form */
    write_text(tmp_path("flatgrid.json"),
               "{\"format\":\"tally-trace\",\"version\":1,\"events\":[{\"type\":\"kernel\","
               "\"name\":\"k\",\"stream\":7,\"start_ns\":10,\"end_ns\":20,"
               "\"grid\":[2147483647,65535,65535],\"block\":[1,1,1],\"regs\":8}]}");
    expect_fail(tmp_path("flatgrid.json"), NULL, TL_ERANGE,
                "flatgrid.json: events[0] (kernel 'k'): grid [2147483647,65535,65535] has "
                "9223090559730712575 blocks (at most 4294967296)");
    /* Kineto */
    write_text(tmp_path("kingrid.json"),
               "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
               "\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":5,\"args\":{\"correlation\":11}},"
               "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":20,\"dur\":3,"
               "\"args\":{\"device\":0,\"stream\":7,\"correlation\":11,\"grid\":[2147483647,65535,16384],"
               "\"block\":[32,1,1],\"registers per thread\":16,\"shared memory\":0}}]}");
    expect_fail(tmp_path("kingrid.json"), NULL, TL_ERANGE,
                "kingrid.json: event 1 (kernel 'k'): grid [2147483647,65535,16384] has "
                "2305807823767879680 blocks (at most 4294967296)");
    /* Nsight Systems */
    const char *db = tmp_path("grid.sqlite");
    make_nsys_db(db, false,
                 "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 2147483647, gridY = 65535, "
                 "gridZ = 65535 WHERE rowid = 3;");
    expect_fail(db, NULL, TL_ERANGE,
                "grid.sqlite: CUPTI_ACTIVITY_KIND_KERNEL row 3 ('k3'): grid 2147483647x65535x65535 "
                "has 9223090559730712575 blocks (at most 4294967296)");
    /* tl_trace_scale_grid keeps to the same cap, leaving the trace as it was */
    write_iter_trace(tmp_path("sg.json"), "[7]", "0", KOP("[65536,65535,1]", "0", "5", "50"));
    load_ok(&t, tmp_path("sg.json"), NULL);
    tl_err e;
    tl_err_clear(&e);
    assert_int_equal(tl_trace_scale_grid(&t, 2, &e), TL_ERANGE);
    assert_non_null(strstr(e.msg, "sg.json: iteration 0 op 0: grid [65536,65535,1] with x times 2 "
                              "has more than 4294967296 blocks"));
    assert_int_equal(t.iters[0].ops[0].grid[0], 65536);
    assert_int_equal(tl_trace_scale_grid(&t, 1, &e), 0);
    tl_trace_close(&t);
    write_iter_trace(tmp_path("sg.json"), "[7]", "0", KOP("[32768,32768,2]", "0", "5", "50"));
    load_ok(&t, tmp_path("sg.json"), NULL);
    assert_int_equal(tl_trace_scale_grid(&t, 2, &e), 0); /* 2^31 x 2: exactly the cap */
    assert_true(tl_op_blocks(&t.iters[0].ops[0]) == TL_TRACE_MAX_BLOCKS);
    tl_trace_close(&t);
}

/* Each iteration's host time and GPU time must add up to at most TL_TRACE_MAX_NS:
 * per-op values under the per-field limit overflowed int64 when summed. */
static void test_iteration_time_sums(void **state)
{
    (void)state;
    assert_true(TL_TRACE_MAX_NS == INT64_MAX / 4);
    /* the audit's file: 4 ops of host_gap_ns 2^61 - 1 (the per-field limit) */
#define BIG "2305843009213693951"
    write_iter_trace(tmp_path("gap4.json"), "[7]", "0",
                     KOP("[1,1,1]", BIG, "1000", "1000") "," KOP("[1,1,1]", BIG, "1000", "1000") ","
                     KOP("[1,1,1]", BIG, "1000", "1000") "," KOP("[1,1,1]", BIG, "1000", "1000"));
    expect_fail(tmp_path("gap4.json"), NULL, TL_ERANGE,
                "gap4.json: iteration 0 op 0 (kernel 'k'): the iteration's host time "
                "(host_gap_ns + host_call_ns of ops 0..0) is over 2305843009213693951 ns");
    /* 2^60 each: the second op goes over */
#define HALF "1152921504606846976"
    write_iter_trace(tmp_path("gap2.json"), "[7]", "0",
                     KOP("[1,1,1]", HALF, "0", "1000") "," KOP("[1,1,1]", HALF, "1", "1000"));
    expect_fail(tmp_path("gap2.json"), NULL, TL_ERANGE,
                "gap2.json: iteration 0 op 1 (kernel 'k'): the iteration's host time "
                "(host_gap_ns + host_call_ns of ops 0..1) is over");
    /* exactly the limit loads ... */
    write_iter_trace(tmp_path("gapmax.json"), "[7]", "0",
                     KOP("[1,1,1]", HALF, "0", "1000") "," KOP("[1,1,1]", "1152921504606846974", "1", "1000"));
    tl_trace t;
    load_ok(&t, tmp_path("gapmax.json"), NULL);
    tl_iter_stats st;
    tl_iteration_stats(&t.iters[0], &st);
    assert_true(st.host_ns == TL_TRACE_MAX_NS);
    tl_trace_close(&t);
    /* ... but not with a tail on top */
    write_iter_trace(tmp_path("gaptail.json"), "[7]", "1",
                     KOP("[1,1,1]", HALF, "0", "1000") "," KOP("[1,1,1]", "1152921504606846974", "1", "1000"));
    expect_fail(tmp_path("gaptail.json"), NULL, TL_ERANGE,
                "gaptail.json: iteration 0: host time (host_gap_ns + host_call_ns of its ops, "
                "plus tail_host_ns 1) is over 2305843009213693951 ns");
    /* GPU time: one op lasts at most TL_TRACE_MAX_OP_NS (the simulator's bound;
     * the iteration's sum is then guarded too, past 2306 such ops) */
    write_iter_trace(tmp_path("dur.json"), "[7]", "0",
                     KOP("[1,1,1]", "0", "0", "1000") "," KOP("[1,1,1]", "0", "0", HALF));
    expect_fail(tmp_path("dur.json"), NULL, TL_ERANGE,
                "dur.json: iteration 0 op 1 (kernel 'k'): lasts 1152921504606846976 ns (at most "
                "1000000000000000, 11.6 days)");
    write_iter_trace(tmp_path("durmax.json"), "[7]", "0", KOP("[1,1,1]", "0", "0", "1000000000000000"));
    load_ok(&t, tmp_path("durmax.json"), NULL);
    tl_trace_close(&t);
    /* with skipped iterations the message counts both ways */
    char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"format\":\"tally-trace\",\"version\":1,\"streams\":[7],\"strings\":[\"\",\"k\"],"
             "\"iterations\":[{\"start_ns\":0,\"tail_host_ns\":0,\"traced_ns\":1000,"
             "\"traced_busy_ns\":1000,\"ops\":[%s]},{\"start_ns\":0,\"tail_host_ns\":0,"
             "\"traced_ns\":1000,\"traced_busy_ns\":1000,\"ops\":[%s]},{\"start_ns\":0,"
             "\"tail_host_ns\":0,\"traced_ns\":1000,\"traced_busy_ns\":1000,\"ops\":[%s,%s]}]}",
             KOP("[1,1,1]", "0", "0", "10"), KOP("[1,1,1]", "0", "0", "10"),
             KOP("[1,1,1]", HALF, "0", "10"), KOP("[1,1,1]", HALF, "0", "10"));
    write_text(tmp_path("skip.json"), buf);
    tl_trace_options o = {.skip_iterations = 1};
    expect_fail(tmp_path("skip.json"), &o, TL_ERANGE,
                "skip.json: iteration 2 (1 after skipping 1) op 1 (kernel 'k')");
    /* Kineto, nsys and the flat form refuse a trace spanning more than that
     * (the builder subtracts times): two launches 6e18 ns apart, each
     * timestamp within the reader's 4e15 us */
    write_text(tmp_path("kingap.json"),
               "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
               "\"pid\":1,\"tid\":1,\"ts\":-3000000000000000,\"dur\":5,\"args\":{\"correlation\":11}},"
               "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
               "\"pid\":1,\"tid\":1,\"ts\":3000000000000000,\"dur\":5,\"args\":{\"correlation\":12}},"
               "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":-2999999999999990,"
               "\"dur\":3,\"args\":{\"device\":0,\"stream\":7,\"correlation\":11,\"grid\":[1,1,1],"
               "\"block\":[32,1,1],\"registers per thread\":16,\"shared memory\":0}},"
               "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":3000000000000010,"
               "\"dur\":3,\"args\":{\"device\":0,\"stream\":7,\"correlation\":12,\"grid\":[1,1,1],"
               "\"block\":[32,1,1],\"registers per thread\":16,\"shared memory\":0}}]}");
    expect_fail(tmp_path("kingap.json"), NULL, TL_ERANGE,
                "kingap.json: timestamps span more than 2305843009213693951 ns (from "
                "-3000000000000000000 to 3000000000000013000 ns)");
    /* negative timestamps are fine: they used to lose a kernel's GPU work (-1
     * means "none" inside the builder), leaving a kernel of no GPU time */
    write_text(tmp_path("kneg.json"),
               "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
               "\"pid\":1,\"tid\":1,\"ts\":-100,\"dur\":5,\"args\":{\"correlation\":11}},"
               "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
               "\"pid\":1,\"tid\":1,\"ts\":20,\"dur\":5,\"args\":{\"correlation\":12}},"
               "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":-90,"
               "\"dur\":3,\"args\":{\"device\":0,\"stream\":7,\"correlation\":11,\"grid\":[1,1,1],"
               "\"block\":[32,1,1],\"registers per thread\":16,\"shared memory\":0}},"
               "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":30,"
               "\"dur\":3,\"args\":{\"device\":0,\"stream\":7,\"correlation\":12,\"grid\":[1,1,1],"
               "\"block\":[32,1,1],\"registers per thread\":16,\"shared memory\":0}}]}");
    load_ok(&t, tmp_path("kneg.json"), NULL);
    assert_int_equal(t.n_iters, 1);
    assert_int_equal(t.iters[0].n_ops, 2);
    assert_int_equal(t.iters[0].start_ns, 0);
    assert_int_equal(t.iters[0].ops[0].gpu_start_ns, 10 * US);
    assert_int_equal(t.iters[0].ops[0].dur_ns, 3 * US);
    assert_int_equal(t.iters[0].ops[1].host_gap_ns, 115 * US);
    assert_int_equal(t.iters[0].ops[1].gpu_start_ns, 130 * US);
    assert_int_equal(t.iters[0].traced_ns, 133 * US);
    tl_trace_close(&t);
#undef BIG
#undef HALF
}

/* An op's stream must index the trace's streams: with "streams": [] the check
 * used to become 0..0 and ops on stream 0 were taken. Then tl_trace_check,
 * which every reader's result goes through, on traces broken by hand. */
static void test_streams_and_common_check(void **state)
{
    (void)state;
    write_iter_trace(tmp_path("nostreams.json"), "[]", "0", KOP("[1,1,1]", "0", "5", "50"));
    expect_fail(tmp_path("nostreams.json"), NULL, TL_ERANGE,
                "nostreams.json: iterations[0].ops[0] (kernel 'k'): uses stream 0 but the trace "
                "declares no streams");
    /* an op without "stream" is on stream 0, which does not exist either */
    write_iter_trace(tmp_path("nostreams2.json"), "[]", "0",
                     "{\"kind\":\"sync\",\"sync\":\"device\",\"host_gap_ns\":0,\"host_call_ns\":5}");
    expect_fail(tmp_path("nostreams2.json"), NULL, TL_ERANGE, "declares no streams");
    /* the common check sees it in any trace (tl_trace_check) */
    tl_trace t;
    load_ok(&t, "tests/data/kineto_small.json", NULL);
    tl_err e;
    assert_int_equal(tl_trace_check(&t, 0, &e), 0);
    t.iters[1].ops[3].stream = 5;
    assert_int_equal(tl_trace_check(&t, 0, &e), TL_ERANGE);
    assert_non_null(strstr(e.msg, "kineto_small.json: iteration 1 op 3 (kernel 'k4'): stream 5 is "
                                  "not one of the trace's 2 streams"));
    t.iters[1].ops[3].stream = 1;
    int32_t n = t.n_streams;
    t.n_streams = 0;
    assert_int_equal(tl_trace_check(&t, 0, &e), TL_ERANGE);
    assert_non_null(strstr(e.msg, "iteration 0 op 0 (kernel 'k1'): uses stream 0 but the trace "
                                  "declares no streams"));
    t.n_streams = n;
    t.iters[0].ops[0].grid[1] = 65535;
    t.iters[0].ops[0].grid[0] = 2147483647;
    assert_int_equal(tl_trace_check(&t, 0, &e), TL_ERANGE);
    assert_non_null(strstr(e.msg, "iteration 0 op 0 (kernel 'k1'): grid [2147483647,65535,1] has"));
    t.iters[0].ops[0].grid[0] = 4;
    t.iters[0].ops[0].grid[1] = 1;
    /* a kernel without GPU time (what negative Kineto timestamps made) */
    t.iters[1].ops[0].gpu_start_ns = -1;
    t.iters[1].ops[0].dur_ns = 0;
    assert_int_equal(tl_trace_check(&t, 1, &e), TL_ERANGE);
    assert_non_null(strstr(e.msg, "kineto_small.json: iteration 2 (1 after skipping 1) op 0 "
                                  "(kernel 'k1'): GPU work without GPU time (gpu_start_ns -1, "
                                  "dur_ns 0)"));
    tl_trace_close(&t);
}

/* Event ids index per-trace tables: an id of 2^31-1 in a 5 KB file made the
 * reader allocate 4 GB. Ids must be below the file's number of ops. */
static void test_event_ids_bounded(void **state)
{
    (void)state;
    const char *rec = "{\"kind\":\"event_record\",\"stream\":0,\"event\":%s,\"host_gap_ns\":0,"
                      "\"host_call_ns\":1}";
    const char *wait = "{\"kind\":\"stream_wait\",\"stream\":0,\"event\":%s,\"host_gap_ns\":0,"
                       "\"host_call_ns\":1}";
    char r[256], w[256], ops[1024];
    snprintf(r, sizeof r, rec, "2147483647");
    snprintf(w, sizeof w, wait, "2147483647");
    snprintf(ops, sizeof ops, "%s,%s,%s", KOP("[1,1,1]", "0", "5", "50"), r, w);
    write_iter_trace(tmp_path("ev.json"), "[7]", "0", ops);
    expect_fail(tmp_path("ev.json"), NULL, TL_ERANGE,
                "ev.json: iterations[0].ops[1] (event_record ''): 'event' is 2147483647: event ids "
                "must be below the number of ops in the trace (3)");
    /* on any op: the runner sizes its event table by the largest id */
    write_iter_trace(tmp_path("evk.json"), "[7]", "0",
                     "{\"kind\":\"kernel\",\"name\":1,\"stream\":0,\"event\":99,\"host_gap_ns\":0,"
                     "\"host_call_ns\":5,\"gpu_start_ns\":0,\"dur_ns\":50,\"grid\":[1,1,1],"
                     "\"block\":[32,1,1]}");
    expect_fail(tmp_path("evk.json"), NULL, TL_ERANGE, "'event' is 99: event ids must be below");
    /* the largest id allowed: ops - 1 */
    snprintf(r, sizeof r, rec, "2");
    snprintf(w, sizeof w, wait, "2");
    snprintf(ops, sizeof ops, "%s,%s,%s", KOP("[1,1,1]", "0", "5", "50"), r, w);
    write_iter_trace(tmp_path("ev2.json"), "[7]", "0", ops);
    tl_trace t;
    load_ok(&t, tmp_path("ev2.json"), NULL);
    assert_int_equal(t.iters[0].ops[2].event, 2);
    tl_trace_close(&t);
    /* a record of an earlier iteration does not count */
    char buf[4096];
    snprintf(r, sizeof r, rec, "1");
    snprintf(w, sizeof w, wait, "1");
    snprintf(buf, sizeof buf,
             "{\"format\":\"tally-trace\",\"version\":1,\"streams\":[7],\"strings\":[\"\",\"k\"],"
             "\"iterations\":[{\"start_ns\":0,\"tail_host_ns\":0,\"traced_ns\":1000,"
             "\"traced_busy_ns\":1000,\"ops\":[%s,%s,%s]},{\"start_ns\":0,\"tail_host_ns\":0,"
             "\"traced_ns\":1000,\"traced_busy_ns\":1000,\"ops\":[%s,%s]}]}",
             KOP("[1,1,1]", "0", "0", "10"), r, w, KOP("[1,1,1]", "0", "0", "10"), w);
    write_text(tmp_path("evit.json"), buf);
    expect_fail(tmp_path("evit.json"), NULL, TL_ERANGE,
                "iterations[1].ops[1] (stream_wait ''): event 1 is not recorded earlier in this "
                "iteration");
}

/* Files are read whole, so their size is capped (TL_TRACE_MAX_FILE_BYTES, after
 * gunzip): a 3 MB gzip bomb expanded to 3 GB, /dev/zero grew without end.
 * tl_read_file_max takes a small cap to show it. */
static void test_read_file_limit(void **state)
{
    (void)state;
    assert_true(TL_TRACE_MAX_FILE_BYTES == (size_t)2 << 30);
    enum { MAX = 100000 };
    char *data = malloc(4 * MAX);
    memset(data, ' ', 4 * MAX);
    char *buf;
    size_t n;
    tl_err e;
    /* plain: exactly the cap, then one byte more */
    FILE *f = fopen(tmp_path("max.txt"), "wb");
    fwrite(data, 1, MAX, f);
    fclose(f);
    assert_int_equal(tl_read_file_max(tmp_path("max.txt"), MAX, &buf, &n, &e), 0);
    assert_int_equal(n, MAX);
    free(buf);
    f = fopen(tmp_path("max1.txt"), "wb");
    fwrite(data, 1, MAX + 1, f);
    fclose(f);
    assert_int_equal(tl_read_file_max(tmp_path("max1.txt"), MAX, &buf, &n, &e), TL_ERANGE);
    assert_null(buf);
    assert_non_null(strstr(e.msg, "max1.txt: larger than 100000 bytes"));
    assert_null(strstr(e.msg, "uncompressed"));
    /* gzip: the uncompressed size counts */
    write_gz(tmp_path("max.gz"), data, MAX);
    assert_int_equal(tl_read_file_max(tmp_path("max.gz"), MAX, &buf, &n, &e), 0);
    assert_int_equal(n, MAX);
    free(buf);
    write_gz(tmp_path("bomb.gz"), data, 4 * MAX);
    assert_int_equal(tl_read_file_max(tmp_path("bomb.gz"), MAX, &buf, &n, &e), TL_ERANGE);
    assert_non_null(strstr(e.msg, "bomb.gz: larger than 100000 bytes uncompressed"));
    /* one byte over, in a second gzip member */
    write_gz(tmp_path("m1.gz"), data, MAX);
    write_gz(tmp_path("m2.gz"), data, 1);
    size_t l1, l2;
    char *g1 = slurp(tmp_path("m1.gz"), &l1), *g2 = slurp(tmp_path("m2.gz"), &l2);
    f = fopen(tmp_path("m12.gz"), "wb");
    fwrite(g1, 1, l1, f);
    fwrite(g2, 1, l2, f);
    fclose(f);
    free(g1);
    free(g2);
    assert_int_equal(tl_read_file_max(tmp_path("m12.gz"), MAX, &buf, &n, &e), TL_ERANGE);
    assert_non_null(strstr(e.msg, "larger than 100000 bytes uncompressed"));
    /* an endless device ends too */
    if (access("/dev/zero", R_OK) == 0) {
        assert_int_equal(tl_read_file_max("/dev/zero", MAX, &buf, &n, &e), TL_ERANGE);
        assert_non_null(strstr(e.msg, "/dev/zero: larger than 100000 bytes"));
    }
    free(data);
    /* through the loader, it is a data error (exit 65) */
    assert_int_equal(tl_exit_code(TL_ERANGE), EX_DATAERR);
}

/* Bad values and unreadable databases are data errors (exit 65): they came out
 * as usage (64) and cannot-write (73) errors. */
static void test_bad_data_exit_codes(void **state)
{
    (void)state;
    write_text(tmp_path("weird.json"),
               "{\"format\":\"tally-trace\",\"version\":1,\"events\":[{\"type\":\"weird\","
               "\"name\":\"k\",\"start_ns\":10,\"end_ns\":20}]}");
    expect_fail(tmp_path("weird.json"), NULL, TL_ERANGE, "weird.json: events[0]: unknown type 'weird'");
    /* a Kineto file with two event arrays: JSON does not say which is meant */
    write_text(tmp_path("two.json"), "{\"traceEvents\":[],\"traceEvents\":[]}");
    expect_fail(tmp_path("two.json"), NULL, TL_EFORMAT, "two.json: two 'traceEvents' arrays");
    write_text(tmp_path("sideways.json"),
               "{\"format\":\"tally-trace\",\"version\":1,\"events\":[{\"type\":\"memcpy\","
               "\"stream\":7,\"start_ns\":10,\"end_ns\":20,\"bytes\":8,\"copy\":\"sideways\"}]}");
    expect_fail(tmp_path("sideways.json"), NULL, TL_ERANGE,
                "sideways.json: events[0] (memcpy ''): unknown copy 'sideways'");
    write_iter_trace(tmp_path("sync.json"), "[7]", "0",
                     "{\"kind\":\"sync\",\"sync\":\"sometimes\",\"host_gap_ns\":0,\"host_call_ns\":5}");
    expect_fail(tmp_path("sync.json"), NULL, TL_ERANGE, "unknown sync 'sometimes'");
    assert_int_equal(tl_exit_code(TL_ERANGE), EX_DATAERR);
    assert_int_equal(tl_exit_code(TL_EFORMAT), EX_DATAERR);

    /* an SQLite database in WAL mode that is no Nsight export (a results database) */
    const char *db = tmp_path("wal.sqlite");
    unlink(db);
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    tl_test_exec_sql(h, "PRAGMA journal_mode=WAL; CREATE TABLE runs (id INTEGER, name TEXT);"
                        "INSERT INTO runs VALUES (1, 'x');");
    sqlite3_close(h);
    size_t n;
    char *bytes = slurp(db, &n);
    assert_true(n >= 100 && bytes[18] == 2 && bytes[19] == 2);
    expect_fail(db, NULL, TL_EFORMAT,
                "wal.sqlite: not an Nsight Systems export with CUDA trace (no table "
                "CUPTI_ACTIVITY_KIND_KERNEL;");
    /* its first 16 bytes (the magic only) and its first page */
    FILE *f = fopen(tmp_path("cut16.sqlite"), "wb");
    fwrite(bytes, 1, 16, f);
    fclose(f);
    expect_fail(tmp_path("cut16.sqlite"), NULL, TL_EFORMAT,
                "cut16.sqlite: not a readable SQLite database (truncated or corrupt?)");
    free(bytes);
    /* a real export cut short */
    make_nsys_db(tmp_path("full.sqlite"), true, NULL);
    bytes = slurp(tmp_path("full.sqlite"), &n);
    assert_true(n > 8192);
    f = fopen(tmp_path("cut.sqlite"), "wb");
    fwrite(bytes, 1, 4096, f);
    fclose(f);
    free(bytes);
    expect_fail(tmp_path("cut.sqlite"), NULL, TL_EFORMAT, "cut.sqlite: ");
}

/* Every kernel outside the markers: the marker's iteration held a copy alone.
 * It loaded, replayed, and convert wrote it to a file its own reader refused
 * ("no GPU kernels in the trace"). Refused now as that file is. */
static void test_no_kernels_in_iterations(void **state)
{
    (void)state;
    const char *path = tmp_path("outside.json");
    write_text(path,
               "{\"format\": \"tally-trace\", \"version\": 1, \"events\": ["
               "{\"type\": \"marker\", \"name\": \"ProfilerStep#1\", \"start_ns\": 0, \"end_ns\": 1000},"
               "{\"type\": \"api\", \"name\": \"cudaMemcpyAsync\", \"start_ns\": 100, \"end_ns\": 200, \"corr\": 1},"
               "{\"type\": \"memcpy\", \"stream\": 7, \"corr\": 1, \"start_ns\": 300, \"end_ns\": 400,"
               " \"bytes\": 64, \"copy\": \"h2d\"},"
               "{\"type\": \"api\", \"name\": \"cudaLaunchKernel\", \"start_ns\": 2000, \"end_ns\": 2100, \"corr\": 2},"
               "{\"type\": \"kernel\", \"name\": \"k\", \"stream\": 7, \"corr\": 2, \"start_ns\": 2200,"
               " \"end_ns\": 2300, \"grid\": [1, 1, 1], \"block\": [32, 1, 1], \"regs\": 8}]}");
    expect_fail(path, NULL, TL_EMISSING, "no GPU kernels in the trace's iterations (split by markers; "
                "its 1 kernels lie outside them");
    /* the same when skip_iterations leaves only iterations without kernels */
    write_text(path,
               "{\"format\": \"tally-trace\", \"version\": 1, \"events\": ["
               "{\"type\": \"marker\", \"name\": \"ProfilerStep#1\", \"start_ns\": 0, \"end_ns\": 1000},"
               "{\"type\": \"api\", \"name\": \"cudaLaunchKernel\", \"start_ns\": 100, \"end_ns\": 200, \"corr\": 2},"
               "{\"type\": \"kernel\", \"name\": \"k\", \"stream\": 7, \"corr\": 2, \"start_ns\": 300,"
               " \"end_ns\": 400, \"grid\": [1, 1, 1], \"block\": [32, 1, 1], \"regs\": 8},"
               "{\"type\": \"marker\", \"name\": \"ProfilerStep#2\", \"start_ns\": 1000, \"end_ns\": 2000},"
               "{\"type\": \"api\", \"name\": \"cudaMemcpyAsync\", \"start_ns\": 1100, \"end_ns\": 1200, \"corr\": 1},"
               "{\"type\": \"memcpy\", \"stream\": 7, \"corr\": 1, \"start_ns\": 1300, \"end_ns\": 1400,"
               " \"bytes\": 64, \"copy\": \"h2d\"}]}");
    tl_trace t;
    load_ok(&t, path, NULL);
    assert_int_equal(t.n_iters, 2);
    tl_trace_close(&t);
    tl_trace_options o = {.skip_iterations = 1};
    expect_fail(path, &o, TL_EMISSING, "no GPU kernels in the trace's iterations");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors_and_exit_codes),
        cmocka_unit_test(test_parse_int64),
        cmocka_unit_test(test_rng),
        cmocka_unit_test(test_read_file_gzip),
        cmocka_unit_test(test_trace_digest),
        cmocka_unit_test(test_truncated_gzip),
        cmocka_unit_test(test_missing_and_empty_file),
        cmocka_unit_test(test_kineto_definitions),
        cmocka_unit_test(test_flat_events_form),
        cmocka_unit_test(test_skip_iterations),
        cmocka_unit_test(test_marker_prefix_option),
        cmocka_unit_test(test_tally_roundtrip),
        cmocka_unit_test(test_tally_bad_input),
        cmocka_unit_test(test_nsys_reader),
        cmocka_unit_test(test_nsys_optional_tables),
        cmocka_unit_test(test_nsys_bad_input),
        cmocka_unit_test(test_tally_write_bad_utf8),
        cmocka_unit_test(test_utf8_len),
        cmocka_unit_test(test_kineto_bad_input),
        cmocka_unit_test(test_kineto_old_format),
        cmocka_unit_test(test_kineto_string_tid),
        cmocka_unit_test(test_bundled_all_load),
        cmocka_unit_test(test_bundled_splits),
        cmocka_unit_test(test_start_kernel_split),
        cmocka_unit_test(test_bundled_figures),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_print_info),
        cmocka_unit_test(test_back_to_back_gap),
        cmocka_unit_test(test_grid_block_cap),
        cmocka_unit_test(test_iteration_time_sums),
        cmocka_unit_test(test_streams_and_common_check),
        cmocka_unit_test(test_event_ids_bounded),
        cmocka_unit_test(test_read_file_limit),
        cmocka_unit_test(test_bad_data_exit_codes),
        cmocka_unit_test(test_no_kernels_in_iterations),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
