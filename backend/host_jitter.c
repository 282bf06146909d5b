/* Host stalls: how long this machine keeps a runnable thread from running
 * (see backend.h). No GPU needed; tally-run jitter prints it, and
 * tests/test_backend.c checks the arithmetic on this machine. */
#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "tally/metrics.h"

/* The machine's steal time so far, in CPU-seconds; -1 if /proc/stat has none
 * (not Linux, or a kernel without the field). */
static double steal_seconds(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                   &v[5], &v[6], &v[7]);
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    return n == 8 && hz > 0 ? (double)v[7] / (double)hz : -1;
}

static void note_stall(tl_jitter_result *o, FILE *csv, tl_ns at, tl_ns gap, tl_ns threshold)
{
    if (gap > o->max_ns) {
        o->max_ns = gap;
        o->max_at_ns = at;
    }
    if (gap < threshold) return;
    o->stalls++;
    o->stalled_ns += gap;
    o->over_100us += gap >= 100 * TL_NS_PER_US;
    o->over_1ms += gap >= TL_NS_PER_MS;
    o->over_10ms += gap >= 10 * TL_NS_PER_MS;
    if (csv) fprintf(csv, "%lld,%lld\n", (long long)at, (long long)gap);
}

int tl_host_jitter(tl_ns duration_ns, tl_ns sleep_ns, tl_ns threshold_ns, FILE *csv,
                   tl_jitter_result *out, tl_err *err)
{
    memset(out, 0, sizeof *out);
    if (duration_ns <= 0 || duration_ns > TL_JITTER_MAX_DURATION_NS)
        return tl_errf(err, TL_EINVAL, "jitter: duration %.3f s; expected more than 0 and at most %d s",
                       (double)duration_ns / 1e9, (int)(TL_JITTER_MAX_DURATION_NS / TL_NS_PER_S));
    if (sleep_ns < 0 || sleep_ns > TL_NS_PER_S)
        return tl_errf(err, TL_EINVAL, "jitter: sleep %lld ns; expected 0 (spin) to 1 s", (long long)sleep_ns);
    if (threshold_ns <= 0)
        return tl_errf(err, TL_EINVAL, "jitter: threshold %lld ns; expected more than 0", (long long)threshold_ns);
    if (csv) fprintf(csv, "start_mono_ns,gap_ns\n");
    struct rusage r0, r1;
    getrusage(RUSAGE_THREAD, &r0);
    double steal0 = steal_seconds();
    out->cpu = sched_getcpu();

    double *over = NULL; /* sleep mode: every oversleep, for its percentiles */
    size_t cap = 0;
    tl_ns t0 = tl_mono_ns(), prev = t0, end = t0 + duration_ns;
    out->start_ns = t0;
    while (prev < end) {
        if (sleep_ns) {
            struct timespec ts = {sleep_ns / TL_NS_PER_S, sleep_ns % TL_NS_PER_S};
            nanosleep(&ts, NULL);
        }
        tl_ns now = tl_mono_ns();
        tl_ns gap = now - prev - sleep_ns;
        if (gap < 0) gap = 0;
        if (sleep_ns) {
            if (out->reads == cap) {
                cap = cap ? cap * 2 : 4096;
                over = tl_xrealloc(over, cap * sizeof *over);
            }
            over[out->reads] = (double)gap;
        }
        out->reads++;
        note_stall(out, csv, prev, gap, threshold_ns);
        prev = now;
    }
    out->duration_ns = prev - t0;
    if (sleep_ns && out->reads) {
        tl_sort_doubles(over, out->reads);
        out->sleep_p50_ns = (tl_ns)tl_percentile(over, out->reads, 0.50);
        out->sleep_p99_ns = (tl_ns)tl_percentile(over, out->reads, 0.99);
    }
    free(over);
    getrusage(RUSAGE_THREAD, &r1);
    out->nivcsw = r1.ru_nivcsw - r0.ru_nivcsw;
    out->nvcsw = r1.ru_nvcsw - r0.ru_nvcsw;
    double steal1 = steal_seconds();
    out->steal_s = steal0 >= 0 && steal1 >= 0 ? steal1 - steal0 : -1;
    return 0;
}
