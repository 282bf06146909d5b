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
