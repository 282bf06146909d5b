/* Back-to-back gap of a queue of kernels (see backend.h). No GPU needed:
 * hw_gap.c measures, this summarizes, tests/test_backend.c checks it. */
#include "backend.h"

int tl_gap_summarize(const tl_ns *start, const tl_ns *end, int n, tl_hw_gap *out, tl_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 3)
        return tl_errf(err, TL_EINVAL, "stream gap: %d kernels; at least 3", n);
    int overlap = 0;
    for (int i = 1; i < n; i++)
        overlap += start[i] < end[i - 1];
    if (overlap > n / 10)
        return tl_errf(err, TL_EIO, "stream gap: %d of %d kernels start before the one before them "
                       "ended: the GPU times are not usable", overlap, n - 1);
    tl_ns *gap = tl_xcalloc((size_t)n, sizeof *gap), *dur = tl_xcalloc((size_t)n, sizeof *dur);
    for (int i = 0; i < n; i++) {
        dur[i] = end[i] - start[i];
        if (i > 0)
            gap[i - 1] = start[i] - end[i - 1];
    }
    out->launches = n;
    out->period_ns = (end[n - 1] - end[0]) / (n - 1);
    out->kernel_ns = tl_median_ns(dur, n);
    out->gap_ns = tl_median_ns(gap, n - 1);
    free(gap);
    free(dur);
    return 0;
}
