/* GPU table and occupancy calculator. Expected values are worked by hand with
 * the CUDA occupancy calculator's rules (cuda_occupancy.h): registers per warp
 * rounded to 256, register file split in 4 sub-partitions, shared memory plus
 * the 1 KiB reserve (sm_80+) rounded to 128 B (256 B on Volta). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "tally/gpu.h"

static tl_gpu_props gpu(const char *name)
{
    tl_gpu_props g;
    tl_err err;
    assert_int_equal(tl_gpu_lookup(name, &g, &err), 0);
    return g;
}

static void test_h100_facts(void **st)
{
    tl_gpu_props g = gpu("H100");
    tl_err err;
    /* FACTS.md, measured on NVIDIA H100 80GB HBM3 */
    assert_string_equal(g.name, "H100 80GB HBM3");
    assert_int_equal(g.sms, 132);
    assert_int_equal(g.max_threads_per_sm, 2048);
    assert_int_equal(g.regs_per_sm, 65536);
    assert_int_equal(g.smem_per_sm, 233472);
    assert_int_equal(g.max_blocks_per_sm, 32);
    assert_int_equal(g.smem_per_block_optin, 232448);
    assert_int_equal(g.smem_per_block, 49152);
    assert_int_equal(g.stream_prio_greatest, -5);
    assert_int_equal(g.timeslice_ns, 2090000);
    assert_int_equal(g.ctx_switch_ns, 300000);
    assert_int_equal(g.smem_reserved_per_block, 1024);
    assert_int_equal(g.cc_major, 9);
    assert_int_equal(tl_gpu_validate(&g, &err), 0);
}

static void test_lookup_names(void **st)
{
    tl_gpu_props g;
    tl_err err;
    struct { const char *q, *want; int sms; } cases[] = {
        { "NVIDIA H100 80GB HBM3", "H100 80GB HBM3", 132 },
        { "h100", "H100 80GB HBM3", 132 },
        { "H100 PCIe", "H100 PCIe", 114 },
        { "NVIDIA H200", "H200", 132 },
        { "A100-SXM4-80GB", "A100-SXM4-80GB", 108 },
        { "NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB", 108 },
        { "a100", "A100-SXM4-40GB", 108 },
        { "V100-SXM2-32GB", "V100-SXM2-32GB", 80 },
        { "Tesla V100-SXM2-16GB", "V100-SXM2-16GB", 80 },
        { "v100", "V100-SXM2-32GB", 80 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(tl_gpu_lookup(cases[i].q, &g, &err), 0);
        assert_string_equal(g.name, cases[i].want);
        assert_int_equal(g.sms, cases[i].sms);
    }
    assert_int_equal(tl_gpu_lookup("GeForce GTX 480", &g, &err), TL_EUNKNOWN);
    assert_non_null(strstr(err.msg, "GTX 480"));
    assert_int_equal(tl_gpu_lookup("", &g, &err), TL_EUNKNOWN);
    assert_int_equal(tl_gpu_lookup(NULL, &g, &err), TL_EUNKNOWN);
    const char *const *n = tl_gpu_names();
    int k = 0;
    while (n[k]) {
        assert_int_equal(tl_gpu_lookup(n[k], &g, &err), 0);
        assert_string_equal(g.name, n[k]);
        k++;
    }
    assert_true(k >= 5);
}

static void check_occ(const tl_gpu_props *g, int thr, int regs, int smem, int want,
                      tl_occ_limit want_lim)
{
    tl_occ_limit lim;
    int occ = tl_occupancy(g, thr, regs, smem, &lim);
    if (occ != want || lim != want_lim)
        fail_msg("%s: %d threads, %d regs, %d smem: got %d (%s), want %d (%s)", g->name, thr,
                 regs, smem, occ, tl_occ_limit_name(lim), want, tl_occ_limit_name(want_lim));
}

static void test_occupancy_h100(void **st)
{
    tl_gpu_props g = gpu("H100");
    /* 8 warps/block: threads 64/8 = 8; regs 32x32 = 1024/warp, 16384/1024 = 16
     * warps per sub-partition, 64/8 = 8: tie, threads reported first. */
    check_occ(&g, 256, 32, 0, 8, TL_OCC_THREADS);
    /* smem 49152 + 1024 = 50176 (a multiple of 128); 233472 / 50176 = 4.65 */
    check_occ(&g, 128, 64, 49152, 4, TL_OCC_SMEM);
    /* 33 regs: 1056 -> 1280 per warp; 16384/1280 = 12 warps x 4 = 48; 48/8 = 6
     * (a naive 65536 / (33 x 256) would give 7). */
    check_occ(&g, 256, 33, 0, 6, TL_OCC_REGS);
    /* 96 threads = 3 warps; 40 regs: 1280/warp -> 48 warps -> 16 blocks */
    check_occ(&g, 96, 40, 0, 16, TL_OCC_REGS);
    /* 64 threads, 128 regs: 4096/warp -> 4 per sub-partition -> 16 warps -> 8 */
    check_occ(&g, 64, 128, 0, 8, TL_OCC_REGS);
    /* 32-thread blocks: the 32-block limit */
    check_occ(&g, 32, 16, 0, 32, TL_OCC_BLOCKS);
    /* the whole opt-in shared memory: 232448 + 1024 = 233472 -> 1 block */
    check_occ(&g, 128, 32, 232448, 1, TL_OCC_SMEM);
    check_occ(&g, 128, 32, 232449, 0, TL_OCC_UNFIT);
    /* 1024 threads x 64 regs: 2048/warp x 32 = 65536 = regs per block -> 1 */
    check_occ(&g, 1024, 64, 0, 1, TL_OCC_REGS);
    /* 65 regs: 2080 -> 2304/warp x 32 warps > 65536: does not launch */
    check_occ(&g, 1024, 65, 0, 0, TL_OCC_UNFIT);
    check_occ(&g, 1024, 255, 0, 0, TL_OCC_UNFIT);
    check_occ(&g, 128, 256, 0, 0, TL_OCC_UNFIT); /* above 255 regs/thread */
    /* 640 threads = 20 warps, 48 regs: 1536/warp -> 10 per sub-partition ->
     * 40 warps -> 2 blocks (threads would allow 3). */
    check_occ(&g, 640, 48, 0, 2, TL_OCC_REGS);
    /* 544 threads = 17 warps, 104 regs: 3328/warp; the hardware check rounds
     * warps up to 20 (4 sub-partitions): 3328 x 20 = 66560 > 65536. */
    check_occ(&g, 544, 104, 0, 0, TL_OCC_UNFIT);
    check_occ(&g, 544, 96, 0, 1, TL_OCC_REGS); /* 3072 x 20 = 61440 fits */
    check_occ(&g, 1025, 0, 0, 0, TL_OCC_UNFIT);
    check_occ(&g, 0, 0, 0, 0, TL_OCC_UNFIT);
    /* the traced cutlass kernel of resnet50_train: 128 threads, 214 regs,
     * 81920 B smem: regs 6848 -> 6912/warp -> 2 per sub-partition -> 8 warps
     * -> 2 blocks; smem 82944 -> 2 blocks: tie, registers first. */
    check_occ(&g, 128, 214, 81920, 2, TL_OCC_REGS);
}

static void test_occupancy_a100_v100(void **st)
{
    tl_gpu_props a = gpu("A100-SXM4-80GB");
    /* 40000 + 1024 = 41024 -> 41088 (128 B units); 167936 / 41088 = 4.09 */
    check_occ(&a, 128, 32, 40000, 4, TL_OCC_SMEM);
    check_occ(&a, 256, 32, 0, 8, TL_OCC_THREADS);
    check_occ(&a, 128, 32, 166912, 1, TL_OCC_SMEM);
    check_occ(&a, 128, 32, 166913, 0, TL_OCC_UNFIT);
    tl_gpu_props v = gpu("V100-SXM2-32GB");
    /* no reserve; 40000 -> 40192 (256 B units); 98304 / 40192 = 2.45 */
    check_occ(&v, 128, 32, 40000, 2, TL_OCC_SMEM);
    check_occ(&v, 128, 32, 0, 16, TL_OCC_THREADS);
    check_occ(&v, 128, 32, 98304, 1, TL_OCC_SMEM);
}

static void test_block_cost(void **st)
{
    tl_gpu_props g = gpu("H100");
    tl_block_cost c;
    /* 96 threads, 40 regs: 16 blocks by registers -> 65536 / 16 = 4096 */
    assert_int_equal(tl_block_cost_of(&g, 96, 40, 0, &c, NULL), 16);
    assert_int_equal(c.threads, 96);
    assert_int_equal(c.regs, 4096);
    assert_int_equal(c.smem, 1024);
    /* 100 threads round up to 4 warps */
    assert_int_equal(tl_block_cost_of(&g, 100, 0, 100, &c, NULL), 16);
    assert_int_equal(c.threads, 128);
    assert_int_equal(c.regs, 0);
    assert_int_equal(c.smem, 1152);
    /* a kernel alone fits exactly its occupancy with these costs */
    int shapes[][3] = { { 256, 33, 0 }, { 96, 40, 0 }, { 640, 48, 0 }, { 128, 64, 49152 },
                        { 64, 128, 0 }, { 128, 214, 81920 } };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int occ = tl_block_cost_of(&g, shapes[i][0], shapes[i][1], shapes[i][2], &c, NULL);
        int by_t = g.max_threads_per_sm / c.threads;
        int by_r = c.regs ? g.regs_per_sm / c.regs : 1000;
        int by_s = c.smem ? g.smem_per_sm / c.smem : 1000;
        int m = g.max_blocks_per_sm;
        if (by_t < m) m = by_t;
        if (by_r < m) m = by_r;
        if (by_s < m) m = by_s;
        assert_int_equal(m, occ);
    }
}

static void test_complete(void **st)
{
    tl_err err;
    /* a trace's partial properties (Kineto deviceProperties) */
    tl_gpu_props p = { 0 };
    strcpy(p.name, "NVIDIA H100 80GB HBM3");
    p.sms = 132;
    p.smem_per_sm = 233472;
    assert_int_equal(tl_gpu_complete(&p), 0);
    assert_string_equal(p.name, "NVIDIA H100 80GB HBM3"); /* the trace's name is kept */
    assert_int_equal(p.max_blocks_per_sm, 32);
    assert_int_equal(p.smem_reserved_per_block, 1024);
    assert_int_equal(p.timeslice_ns, 2090000);
    assert_int_equal(tl_gpu_validate(&p, &err), 0);
    /* a field the trace gave wins */
    memset(&p, 0, sizeof p);
    strcpy(p.name, "A100-SXM4-80GB");
    p.sms = 100;
    assert_int_equal(tl_gpu_complete(&p), 0);
    assert_int_equal(p.sms, 100);
    assert_int_equal(p.smem_per_sm, 167936);
    /* by compute capability only */
    memset(&p, 0, sizeof p);
    p.cc_major = 7;
    p.cc_minor = 0;
    assert_int_equal(tl_gpu_complete(&p), 0);
    assert_int_equal(p.sms, 80);
    assert_int_equal(p.smem_alloc_unit, 256);
    /* an unknown GPU of a known architecture: architecture constants only */
    memset(&p, 0, sizeof p);
    strcpy(p.name, "NVIDIA RTX A2000 12GB");
    p.cc_major = 8;
    p.cc_minor = 6;
    p.sms = 26;
    p.smem_per_sm = 102400;
    p.pcie_gbps = 12;
    assert_int_equal(tl_gpu_complete(&p), 0);
    assert_int_equal(p.max_threads_per_sm, 1536);
    assert_int_equal(p.max_blocks_per_sm, 16);
    assert_int_equal(p.max_warps_per_sm, 48);
    assert_int_equal(p.smem_per_block_optin, 101376);
    assert_int_equal(tl_gpu_validate(&p, &err), 0);
    /* nothing to go on */
    memset(&p, 0, sizeof p);
    strcpy(p.name, "Mystery GPU");
    assert_int_equal(tl_gpu_complete(&p), TL_EUNKNOWN);
    assert_int_equal(tl_gpu_validate(&p, &err), TL_ERANGE);
    assert_non_null(strstr(err.msg, "Mystery GPU"));
    assert_non_null(strstr(err.msg, "sms"));
    /* more warps than threads an SM holds (an Nsight export's maxWarpsPerSm
     * of 2000000000): occupancy would count by a limit no SM has */
    memset(&p, 0, sizeof p);
    strcpy(p.name, "NVIDIA H100 80GB HBM3");
    p.max_warps_per_sm = 2000000000;
    assert_int_equal(tl_gpu_complete(&p), 0);
    assert_int_equal(tl_gpu_validate(&p, &err), TL_ERANGE);
    assert_non_null(strstr(err.msg, "max_warps_per_sm 2000000000 warps of 32 threads are more "
                                    "than max_threads_per_sm 2048"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h100_facts),
        cmocka_unit_test(test_lookup_names),
        cmocka_unit_test(test_occupancy_h100),
        cmocka_unit_test(test_occupancy_a100_v100),
        cmocka_unit_test(test_block_cost),
        cmocka_unit_test(test_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
