/* tally-run selftest: checks on the real GPU that the device does what the
 * policies rely on, through the tl_device interface only. Prints one line per
 * check ("selftest: <name>: <figures> PASS|FAIL"); returns 0 if all pass, 1 if
 * any fails, <0 on errors. Used by tests/test_backend.c where a GPU exists and
 * for the committed hardware results. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cuda_device.h"

/* A tiny trace holding the synthetic ops, so the device knows their names. */
enum { K_LONG, K_SHORT, K_PTB, K_COMPUTE, K_MEMORY, K_TINY, K_GRAPH, K_N };
static char *names[] = {"", "selftest_gemm_long", "selftest_gemm_short", "selftest_elementwise_ptb",
                        "selftest_conv_compute", "selftest_copy_memory", "selftest_tiny_memory",
                        "selftest_tiny_graph"};

static void make_trace(tl_trace *t, tl_op *ops)
{
    memset(t, 0, sizeof *t);
    memset(ops, 0, K_N * sizeof *ops);
    struct { uint32_t grid, threads; tl_ns dur; } shape[K_N] = {
        [K_LONG] = {132 * 8 * 20, 256, 4 * TL_NS_PER_MS},   /* 20 waves of 8 blocks/SM */
        [K_SHORT] = {132, 128, 30 * TL_NS_PER_US},
        [K_PTB] = {132 * 8 * 50, 256, 10 * TL_NS_PER_MS},
        [K_COMPUTE] = {132 * 4, 256, 500 * TL_NS_PER_US},
        [K_MEMORY] = {132 * 16, 256, 200 * TL_NS_PER_US},
        [K_TINY] = {132, 128, 5 * TL_NS_PER_US},
        [K_GRAPH] = {132, 128, 5 * TL_NS_PER_US}, /* K_TINY, launched as a CUDA graph */
    };
    for (int i = 0; i < K_N; i++) {
        ops[i].kind = TL_OP_KERNEL;
        ops[i].name = (uint32_t)i + 1;
        ops[i].grid[0] = shape[i].grid;
        ops[i].grid[1] = ops[i].grid[2] = 1;
        ops[i].block[0] = shape[i].threads;
        ops[i].block[1] = ops[i].block[2] = 1;
        ops[i].regs = 32;
        ops[i].dur_ns = shape[i].dur;
        ops[i].event = -1;
    }
    ops[K_GRAPH].graph = 1;
    static tl_iteration it;
    it.ops = ops;
    it.n_ops = K_N;
    t->iters = &it;
    t->n_iters = 1;
    t->strings = names;
    t->n_strings = K_N + 1;
}

typedef struct done {
    int n;
    tl_launch_result r[8];
    tl_ns issued[8];
} done;

static void on_done(void *arg, const tl_launch_result *r)
{
    done *d = arg;
    if (d->n < 8) d->r[d->n++] = *r;
}

typedef struct later {
    tl_device *dev;
    tl_stream_id s;
    tl_kernel_desc k;
    done *d;
    tl_launch_id retreat_id;
    tl_ns at;
} later;

static void launch_later(void *arg, tl_ns now)
{
    later *l = arg;
    l->at = now;
    if (l->retreat_id) {
        tl_dev_retreat(l->dev, l->retreat_id);
        return;
    }
    l->d->issued[l->d->n] = now;
    tl_dev_launch(l->dev, l->s, &l->k, on_done, l->d, NULL);
}

/* A chain of launches, each from the completion callback of the one before. */
typedef struct chain {
    tl_device *dev;
    tl_stream_id s;
    tl_kernel_desc k;
    int left;
    tl_ns last_end;
    tl_ns cb_lat[4096];
    int n_lat;
} chain;

static void chain_next(void *arg, const tl_launch_result *r)
{
    chain *c = arg;
    tl_ns now = tl_dev_now(c->dev);
    if (c->n_lat < 4096) c->cb_lat[c->n_lat++] = now - r->end_ns;
    c->last_end = r->end_ns;
    if (--c->left > 0) tl_dev_launch(c->dev, c->s, &c->k, chain_next, c, NULL);
}

static int cmp_ns(const void *a, const void *b)
{
    tl_ns x = *(const tl_ns *)a, y = *(const tl_ns *)b;
    return x < y ? -1 : x > y;
}

static double median_ns(tl_ns *v, int n)
{
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_ns);
    return (double)v[n / 2];
}

static int check(FILE *out, const char *name, bool ok, int *fails)
{
    fprintf(out, " %s\n", ok ? "PASS" : "FAIL");
    (void)name;
    if (!ok) (*fails)++;
    fflush(out);
    return 0;
}

int tl_hw_selftest(FILE *out, const tl_cuda_options *o, tl_err *err)
{
    tl_device dev;
    tl_cuda_options opt = *o;
    int r = tl_cuda_open(&dev, &opt, err);
    if (r < 0) return r;
    tl_trace t;
    tl_op ops[K_N];
    make_trace(&t, ops);
    int fails = 0;
    tl_cuda_info info;
    tl_cuda_get_info(&dev, &info);
    fprintf(out, "selftest: gpu: %s, %d SMs, driver %s, clocks %s\n", info.name, info.sms, info.driver, info.clocks);
    fprintf(out, "selftest: globaltimer step %lld ns, host offset %lld ns\n", info.timer_res_ns, info.clock_offset_ns);
    if ((r = tl_cuda_prepare_trace(&dev, &t, err)) < 0) goto out;

    /* 1. calibration: the calibrated kernels, timed again, within 5% of their
     * target or 250 ns, whichever is more: a 5 us kernel's time moves by
     * 100-300 ns from one machine to the next (5120, 5184 and 5280 ns for the
     * same cached calibration in session 13's calls 1, 10 and 9), more than 5%
     * of it. */
    for (int k = K_LONG; k < K_N; k++) {
        tl_kernel_desc kd = {.op = &ops[k]};
        tl_ns m = 0;
        if ((r = tl_dev_measure(&dev, &kd, &m, err)) < 0) goto out;
        double e = (double)m / (double)ops[k].dur_ns - 1;
        double tol = 0.05 * (double)ops[k].dur_ns > 250 ? 0.05 * (double)ops[k].dur_ns : 250;
        fprintf(out, "selftest: calibration %-26s target %8lld ns measured %8lld ns error %+6.2f%%", names[k + 1],
                (long long)ops[k].dur_ns, (long long)m, 100 * e);
        check(out, "calibration", fabs((double)(m - ops[k].dur_ns)) <= tol, &fails);
    }

    tl_ctx_id ctx;
    tl_ctx_config cc = {.kind = TL_CTX_TIMESLICED, .job = 0};
    tl_stream_id s_lo, s_hi, s_lo2, s_ctl;
    if ((r = tl_dev_ctx_create(&dev, &cc, &ctx, err)) < 0 ||
        (r = tl_dev_stream_create(&dev, ctx, 0, &s_lo, err)) < 0 ||
        (r = tl_dev_stream_create(&dev, ctx, 0, &s_lo2, err)) < 0 ||
        (r = tl_dev_stream_create(&dev, ctx, dev.gpu.stream_prio_greatest, &s_hi, err)) < 0 ||
        (r = tl_dev_stream_create(&dev, ctx, 0, &s_ctl, err)) < 0)
        goto out;

    /* 2. PTB: retreat after 1 ms, then resume from next_block. */
    {
        done d = {0};
        tl_kernel_desc kd = {.op = &ops[K_PTB], .job = 0, .ptb_workers_per_sm = 4};
        tl_launch_id id;
        tl_ns t0 = tl_dev_now(&dev);
        if ((r = tl_dev_launch(&dev, s_lo, &kd, on_done, &d, &id)) < 0) goto out;
        later l = {.dev = &dev, .retreat_id = id};
        tl_dev_timer(&dev, t0 + TL_NS_PER_MS, launch_later, &l);
        if ((r = tl_dev_run(&dev, -1, err)) < 0) goto out;
        uint64_t total = tl_op_blocks(&ops[K_PTB]);
        bool ok1 = d.n == 1 && d.r[0].retreated && d.r[0].next_block > 0 && d.r[0].next_block < total;
        fprintf(out, "selftest: ptb retreat: %llu of %llu logical blocks done, retreat-to-end %lld ns",
                (unsigned long long)d.r[0].next_block, (unsigned long long)total,
                (long long)(d.r[0].end_ns - l.at));
        check(out, "ptb retreat", ok1, &fails);
        kd.block_begin = d.r[0].next_block;
        if ((r = tl_dev_launch(&dev, s_lo, &kd, on_done, &d, NULL)) < 0) goto out;
        if ((r = tl_dev_run(&dev, -1, err)) < 0) goto out;
        bool ok2 = d.n == 2 && !d.r[1].retreated && d.r[1].next_block == total;
        fprintf(out, "selftest: ptb resume: finished at block %llu of %llu, %lld ns",
                (unsigned long long)d.r[1].next_block, (unsigned long long)total,
                (long long)(d.r[1].end_ns - d.r[1].start_ns));
        check(out, "ptb resume", ok2, &fails);
        /* an unretreated PTB launch does all the blocks */
        kd.block_begin = 0;
        tl_ns m = 0;
        if ((r = tl_dev_measure(&dev, &kd, &m, err)) < 0) goto out;
        fprintf(out, "selftest: ptb speed: PTB(4/SM) %lld ns vs original %lld ns (speed %.3f)\n", (long long)m,
                (long long)ops[K_PTB].dur_ns, (double)ops[K_PTB].dur_ns / (double)m);
    }

    /* 3. stream priorities: a short kernel issued 0.5 ms into a long one, on a
     * stream of the greatest priority vs on another stream of priority 0. */
    tl_ns wait[2];
    for (int pass = 0; pass < 2; pass++) {
        done d = {0};
        tl_kernel_desc kl = {.op = &ops[K_LONG], .job = 0};
        tl_ns t0 = tl_dev_now(&dev);
        if ((r = tl_dev_launch(&dev, s_lo, &kl, on_done, &d, NULL)) < 0) goto out;
        later l = {.dev = &dev, .s = pass ? s_lo2 : s_hi, .k = {.op = &ops[K_SHORT], .job = 0}, .d = &d};
        tl_dev_timer(&dev, t0 + TL_NS_PER_MS / 2, launch_later, &l);
        if ((r = tl_dev_run(&dev, -1, err)) < 0) goto out;
        const tl_launch_result *sh = d.r[0].end_ns < d.r[1].end_ns ? &d.r[0] : &d.r[1];
        const tl_launch_result *lg = sh == &d.r[0] ? &d.r[1] : &d.r[0];
        wait[pass] = sh->end_ns - l.at;
        fprintf(out, "selftest: priority %s: short kernel done %lld ns after issue; long kernel %lld ns\n",
                pass ? "equal (0 vs 0)" : "greatest vs 0", (long long)wait[pass],
                (long long)(lg->end_ns - lg->start_ns));
    }
    fprintf(out, "selftest: priority streams: high-priority wait %.0f us vs equal-priority %.0f us", wait[0] / 1e3,
            wait[1] / 1e3);
    check(out, "priority", wait[0] * 2 < wait[1], &fails);

    /* 4. SM partition: the compute kernel on a 16-SM green context. */
    {
        tl_ctx_config pc = {.kind = TL_CTX_PARTITION, .job = 0, .sm_count = 16};
        tl_ctx_id pctx;
        tl_stream_id ps;
        tl_err perr = {0};
        if (tl_dev_ctx_create(&dev, &pc, &pctx, &perr) < 0 || tl_dev_stream_create(&dev, pctx, 0, &ps, &perr) < 0) {
            fprintf(out, "selftest: partition: %s", perr.msg);
            check(out, "partition", false, &fails);
        } else {
            tl_ns dur[2];
            tl_stream_id ss[2] = {s_lo, ps};
            int lr = 0;
            for (int i = 0; i < 2 && !lr; i++) {
                done d = {0};
                tl_kernel_desc kd = {.op = &ops[K_COMPUTE], .job = 0};
                if ((lr = tl_dev_launch(&dev, ss[i], &kd, on_done, &d, NULL)) < 0) break;
                if ((r = tl_dev_run(&dev, -1, err)) < 0) goto out;
                dur[i] = d.r[0].end_ns - d.r[0].start_ns;
            }
            if (lr < 0) {
                fprintf(out, "selftest: partition: launch on the green context's stream failed (%d)", lr);
                check(out, "partition", false, &fails);
                goto done_part;
            }
            double ratio = (double)dur[1] / (double)dur[0];
            fprintf(out, "selftest: partition: 528 blocks on all SMs %lld ns, on a 16-SM green context %lld ns "
                         "(x%.2f; ideal x%.2f)", (long long)dur[0], (long long)dur[1], ratio, info.sms / 16.0);
            check(out, "partition", ratio > 0.6 * info.sms / 16.0, &fails);
        }
    }
done_part:
    /* 5. host round trip: what a policy holding work back pays per task. N
     * tiny kernels, each launched from the completion callback of the one
     * before, against the same N queued back to back on one stream. */
    {
        enum { N = 2000 };
        chain ch = {.dev = &dev, .s = s_lo, .k = {.op = &ops[K_TINY], .job = 0}, .left = N};
        tl_ns t0 = tl_dev_now(&dev);
        if ((r = tl_dev_launch(&dev, s_lo, &ch.k, chain_next, &ch, NULL)) < 0) goto out;
        if ((r = tl_dev_run(&dev, -1, err)) < 0) goto out;
        tl_ns chained = ch.last_end - t0;
        done d = {0};
        t0 = tl_dev_now(&dev);
        for (int i = 0; i < N; i++)
            if ((r = tl_dev_launch(&dev, s_lo, &ch.k, i == N - 1 ? on_done : NULL, &d, NULL)) < 0) goto out;
        if ((r = tl_dev_run(&dev, -1, err)) < 0) goto out;
        tl_ns queued = d.r[0].end_ns - t0;
        double rt = (double)(chained - queued) / N;
        fprintf(out, "selftest: host round trip: %d chained launches %lld ns, queued %lld ns: %.1f us per "
                     "task (GPU end to callback %.1f us median)",
                N, (long long)chained, (long long)queued, rt / 1e3, median_ns(ch.cb_lat, ch.n_lat) / 1e3);
        check(out, "roundtrip", ch.left == 0 && rt > 0, &fails);
    }
    /* 6. back to back: what one queued launch costs beyond its kernel, for a
     * 5 us and a 30 us kernel (hw_gap.c). */
    tl_hw_gap tiny_gap = {0};
    {
        int kinds[2] = {K_TINY, K_SHORT};
        for (int v = 0; v < 2; v++) {
            tl_hw_gap g;
            if ((r = tl_hw_stream_gap(&dev, s_lo, &ops[kinds[v]], 2000, &g, err)) < 0) goto out;
            fprintf(out, "selftest: back to back (%s, %d queued): issue %.2f us per launch; GPU period %.2f us, "
                         "kernel median %.2f us, end-to-next-start gap median %.2f us\n",
                    names[kinds[v] + 1], g.launches, g.issue_ns / 1e3, g.period_ns / 1e3, g.kernel_ns / 1e3,
                    g.gap_ns / 1e3);
            if (v == 0) tiny_gap = g;
        }
    }
    /* 8. CUDA graphs (graph_cache.h): the 5 us kernel as a graph job's, 500
     * launches issued in one turn go as one graph; the same batch again must
     * reuse it; the same on a second context's stream (a worker process). */
    {
        tl_hw_gap g[2];
        tl_gcache_stats gs;
        for (int pass = 0; pass < 2; pass++)
            if ((r = tl_hw_stream_gap(&dev, s_lo, &ops[K_GRAPH], 500, &g[pass], err)) < 0) goto out;
        tl_cuda_get_graph_stats(&dev, &gs);
        fprintf(out, "selftest: graph: 2 x %d launches: %llu graph launches of %llu kernels, %llu instantiated "
                     "(%.2f ms); gap inside the graph %.2f / %.2f us vs %.2f launched one by one",
                g[0].launches, (unsigned long long)gs.launches, (unsigned long long)gs.nodes,
                (unsigned long long)gs.instantiations, gs.instantiate_ns / 1e6, g[0].gap_ns / 1e3, g[1].gap_ns / 1e3,
                tiny_gap.gap_ns / 1e3);
        check(out, "graph", gs.launches == 2 && gs.nodes == 1000 && gs.instantiations == 1 &&
                                g[1].gap_ns < tiny_gap.gap_ns, &fails);
        tl_ctx_config wc = {.kind = TL_CTX_TIMESLICED, .job = 1};
        tl_ctx_id wctx;
        tl_stream_id ws;
        tl_hw_gap wg;
        if ((r = tl_dev_ctx_create(&dev, &wc, &wctx, err)) < 0 || (r = tl_dev_stream_create(&dev, wctx, 0, &ws, err)) < 0 ||
            (r = tl_hw_stream_gap(&dev, ws, &ops[K_GRAPH], 500, &wg, err)) < 0)
            goto out;
        fprintf(out, "selftest: graph in a worker process: %d launches done, gap inside the graph %.2f us",
                wg.launches, wg.gap_ns / 1e3);
        check(out, "graph worker", wg.launches == 500 && wg.gap_ns < tiny_gap.gap_ns, &fails);
    }
    /* 7. copy bandwidth: what a model upload (PipeSwitch) or a copy without a
     * traced duration takes; the simulator's GPU table has pcie_gbps for it. */
    {
        static const uint8_t kinds[2] = {TL_COPY_H2D, TL_COPY_D2H};
        for (int v = 0; v < 2; v++) {
            tl_op cp;
            memset(&cp, 0, sizeof cp);
            cp.kind = TL_OP_MEMCPY;
            cp.copy_kind = kinds[v];
            cp.bytes = 64ull << 20;
            cp.event = -1;
            tl_ns best = 0;
            for (int rep = 0; rep < 3; rep++) {
                done d = {0};
                if ((r = tl_dev_copy(&dev, s_lo, &cp, 0, on_done, &d, NULL)) < 0) goto out;
                if ((r = tl_dev_run(&dev, -1, err)) < 0) goto out;
                tl_ns ns = d.r[0].end_ns - d.r[0].start_ns;
                if (rep == 0 || ns < best) best = ns;
            }
            fprintf(out, "selftest: copy %s 64 MiB (pinned): %.3f ms, %.1f GB/s (best of 3)\n", v ? "D2H" : "H2D",
                    best / 1e6, (double)cp.bytes / (double)best);
        }
    }
    r = fails ? 1 : 0;
    fprintf(out, "selftest: %s\n", fails ? "SOME CHECKS FAILED" : "ALL CHECKS PASSED");
out:
    tl_dev_close(&dev);
    return r;
}
