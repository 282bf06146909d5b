/* The hardware replay's back-to-back gap: how long the GPU leaves between one
 * synthetic kernel's end and the next one's start on a stream when the next
 * one is already queued. Real kernels leave ~1.15 us on the H100 (the
 * simulator's stream_gap_ns); the synthetic ones leave more, for their
 * completion publishing and launch path (experiments/results/hw/README.md).
 * tally-run measures it before its runs and records it with them (meta
 * hw_stream_gap_ns) so that tally-validate can simulate the replay it ran. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
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

int tl_hw_stream_gap(tl_device *d, tl_stream_id s, const tl_op *op, int n, tl_hw_gap *out, tl_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 3)
        return tl_errf(err, TL_EINVAL, "stream gap probe: at least 3 launches");
    spans sp = {.start = tl_xcalloc((size_t)n, sizeof(tl_ns)), .end = tl_xcalloc((size_t)n, sizeof(tl_ns)),
                .cap = n};
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
        r = tl_gap_summarize(sp.start, sp.end, n, out, err);
        out->issue_ns = issued / n;
    }
    free(sp.start);
    free(sp.end);
    return r;
}

/* EXPERIMENT (session 5, taken out in the next commit): the replay's launch
 * latency, n launches of op on stream s each on an idle GPU, the median time
 * from tl_dev_launch to the kernel's start. It moves with the backend's GPU
 * clock offset (0.71 and 11.44 us in two runs: experiments/results/hw/README.md). */
static int cmp_ns(const void *a, const void *b)
{
    tl_ns x = *(const tl_ns *)a, y = *(const tl_ns *)b;
    return (x > y) - (x < y);
}

int tl_hw_launch_latency(tl_device *d, tl_stream_id s, const tl_op *op, int n, tl_ns *out, tl_err *err)
{
    *out = 0;
    if (n < 1)
        return tl_errf(err, TL_EINVAL, "launch latency probe: at least 1 launch");
    spans sp = {.start = tl_xcalloc((size_t)n, sizeof(tl_ns)), .end = tl_xcalloc((size_t)n, sizeof(tl_ns)),
                .cap = n};
    tl_ns *lat = tl_xcalloc((size_t)n, sizeof(tl_ns));
    tl_kernel_desc kd = {.op = op, .job = 0};
    int r = 0;
    for (int i = 0; i < n && r == 0; i++) {
        tl_ns t = tl_dev_now(d);
        if ((r = tl_dev_launch(d, s, &kd, on_span, &sp, NULL)) < 0)
            tl_errf(err, r, "launch latency probe: launch failed (%d)", r);
        else if ((r = tl_dev_run(d, -1, err)) == 0 && sp.n != i + 1)
            r = tl_errf(err, TL_EIO, "launch latency probe: launch %d did not complete", i);
        if (r == 0)
            lat[i] = sp.start[i] - t;
    }
    if (r == 0) {
        qsort(lat, (size_t)n, sizeof *lat, cmp_ns);
        *out = lat[n / 2];
    }
    free(lat);
    free(sp.start);
    free(sp.end);
    return r;
}
