/* `tally-sim info FILE`: what was read from a trace. */
#include <inttypes.h>
#include <stdio.h>

#include "internal.h"

static double ms(tl_ns ns)
{
    return (double)ns / 1e6;
}

void tl_trace_print_info(FILE *out, const tl_trace *t)
{
    fprintf(out, "trace:       %s\n", t->path ? t->path : "(memory)");
    fprintf(out, "format:      %s%s\n", t->format ? t->format : "?",
            t->truncated ? " (capture truncated)" : "");
    if (t->has_gpu_props)
        fprintf(out, "gpu:         %s, %d SMs, cc %d.%d (from the trace)\n", t->gpu.name,
                t->gpu.sms, t->gpu.cc_major, t->gpu.cc_minor);
    else
        fprintf(out, "gpu:         not recorded in the trace\n");
    fprintf(out, "streams:     %d (CUDA ids:", t->n_streams);
    for (int i = 0; i < t->n_streams; i++)
        fprintf(out, " %" PRId64, t->streams[i]);
    fprintf(out, ")\n");
    static const char *const how[] = {
        [TL_SPLIT_MARKERS] = "split by markers",
        [TL_SPLIT_PERIOD] = "split by the period of the kernel sequence",
        [TL_SPLIT_USER] = "split at the given start kernel",
        [TL_SPLIT_WHOLE] = "no markers, no period: the whole trace",
    };
    fprintf(out, "iterations:  %u (%s)\n", t->n_iters,
            t->split <= TL_SPLIT_WHOLE ? how[t->split] : "?");
    if (t->n_unlinked || t->n_precapture || t->n_zero_dur || t->n_unresolved || t->n_outside)
        fprintf(out,
                "warnings:    %u GPU ops without API call, %u launched before the capture "
                "(dropped), %u zero durations, %u unresolved event waits, %u ops outside "
                "iterations\n",
                t->n_unlinked, t->n_precapture, t->n_zero_dur, t->n_unresolved, t->n_outside);
    if (t->n_inferred || t->n_untraced)
        fprintf(out,
                "inferred:    %u cross-stream dependencies, %u stretches of untraced GPU work "
                "(read off the GPU timeline)\n",
                t->n_inferred, t->n_untraced);
    if (t->n_iters == 0)
        return;

    double k = 0, c = 0, m = 0, s = 0, busy = 0, host = 0, traced = 0;
    for (uint32_t i = 0; i < t->n_iters; i++) {
        tl_iter_stats st;
        tl_iteration_stats(&t->iters[i], &st);
        k += st.kernels;
        c += st.copies;
        m += st.memsets;
        s += st.syncs;
        busy += ms(st.gpu_busy_ns);
        host += ms(st.host_ns);
        traced += ms(st.traced_ns);
    }
    double n = t->n_iters;
    fprintf(out,
            "mean/iter:   %.1f kernels, %.1f copies, %.1f memsets, %.1f syncs; "
            "GPU busy %.3f ms, host %.3f ms, traced %.3f ms (GPU busy %.0f%%)\n",
            k / n, c / n, m / n, s / n, busy / n, host / n, traced / n,
            traced > 0 ? 100.0 * busy / traced : 0.0);
    uint64_t pairs = 0;
    tl_ns gap = tl_trace_back_to_back_gap(t, &pairs);
    if (pairs)
        fprintf(out, "back2back:   median GPU gap %.2f us between ops of a stream less than 10 us "
                     "apart (%" PRIu64 " pairs); the simulator leaves stream_gap_ns (--sim-param)\n",
                (double)gap / 1e3, pairs);
    fprintf(out, "\n%5s %10s %8s %6s %7s %6s %11s %11s %11s\n", "iter", "start_ms", "kernels",
            "copies", "memsets", "syncs", "gpu_busy_ms", "host_ms", "traced_ms");
    for (uint32_t i = 0; i < t->n_iters; i++) {
        tl_iter_stats st;
        tl_iteration_stats(&t->iters[i], &st);
        fprintf(out, "%5u %10.3f %8u %6u %7u %6u %11.3f %11.3f %11.3f\n", i,
                ms(t->iters[i].start_ns), st.kernels, st.copies, st.memsets, st.syncs,
                ms(st.gpu_busy_ns), ms(st.host_ns), ms(st.traced_ns));
    }
}
