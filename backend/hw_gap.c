/* The hardware replay's back-to-back gap: how long the GPU leaves between one
 * synthetic kernel's end and the next one's start on a stream when the next
 * one is already queued. Real kernels leave ~1.15 us on the H100 (the
 * simulator's stream_gap_ns); the synthetic ones leave more, for their
 * completion publishing and launch path (experiments/results/hw/README.md).
 * tally-run measures it before its runs and records it with them (meta
 * hw_stream_gap_ns) so that tally-validate can simulate the replay it ran. */
#include <stdlib.h>
#include <string.h>

#include "cuda_device.h"

/* completion order is stream order: one stream */
typedef struct spans {
    tl_ns *start, *end;
    int n, cap;
} spans;

static void on_span(void *arg, const tl_launch_result *r)
{
    spans *sp = arg;
    if (sp->n < sp->cap) {
        sp->start[sp->n] = r->start_ns;
        sp->end[sp->n++] = r->end_ns;
    }
}

static int cmp_ns(const void *a, const void *b)
{
    tl_ns x = *(const tl_ns *)a, y = *(const tl_ns *)b;
    return x < y ? -1 : x > y;
}

static tl_ns median(tl_ns *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_ns);
    return v[n / 2];
}

int tl_hw_stream_gap(tl_device *d, tl_stream_id s, const tl_op *op, int n, tl_hw_gap *out, tl_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 3)
        return tl_errf(err, TL_EINVAL, "stream gap probe: at least 3 launches");
    spans sp = {.start = tl_xcalloc((size_t)n, sizeof(tl_ns)), .end = tl_xcalloc((size_t)n, sizeof(tl_ns)),
                .cap = n};
    tl_ns *gap = tl_xcalloc((size_t)n, sizeof(tl_ns)), *dur = tl_xcalloc((size_t)n, sizeof(tl_ns));
    tl_kernel_desc kd = {.op = op, .job = 0};
    tl_ns t0 = tl_dev_now(d);
    int r = 0;
    for (int i = 0; i < n && r == 0; i++)
        r = tl_dev_launch(d, s, &kd, on_span, &sp, NULL);
    if (r < 0)
        tl_errf(err, r, "stream gap probe: launch failed (%d)", r);
    tl_ns issued = tl_dev_now(d) - t0;
    if (r == 0)
        r = tl_dev_run(d, -1, err);
    if (r == 0 && sp.n < n)
        r = tl_errf(err, TL_EIO, "stream gap probe: %d of %d launches completed", sp.n, n);
    if (r == 0) {
        /* One stream: each kernel starts after the one before it ended. If
         * many seem not to, the times are not the GPU's (a clock conversion
         * clamped them): no figure rather than a wrong one. */
        int overlap = 0;
        for (int i = 1; i < n; i++)
            overlap += sp.start[i] < sp.end[i - 1];
        if (overlap > n / 10)
            r = tl_errf(err, TL_EIO, "stream gap probe: %d of %d kernels start before the one before "
                        "them ended: the GPU times are not usable", overlap, n - 1);
    }
    if (r == 0) {
        for (int i = 0; i < n; i++) {
            dur[i] = sp.end[i] - sp.start[i];
            if (i > 0) gap[i - 1] = sp.start[i] - sp.end[i - 1];
        }
        out->launches = n;
        out->issue_ns = issued / n;
        out->period_ns = (sp.end[n - 1] - sp.end[0]) / (n - 1);
        out->kernel_ns = median(dur, n);
        out->gap_ns = median(gap, n - 1);
    }
    free(sp.start);
    free(sp.end);
    free(gap);
    free(dur);
    return r;
}
