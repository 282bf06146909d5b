/* Latency percentiles, throughput, utilization: see include/tally/metrics.h. */
#include "tally/metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void tl_sort_doubles(double *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_double);
}

double tl_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    tl_sort_doubles(v, n);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double tl_percentile(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return 0;
    size_t rank = (size_t)ceil(q * (double)n); /* nearest rank, 1-based */
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

int tl_slow_phases(const double *service, size_t n)
{
    if (n < TL_SLOW_RUN)
        return 0;
    double *tmp = tl_xmalloc(n * sizeof *tmp);
    memcpy(tmp, service, n * sizeof *tmp);
    double bar = TL_SLOW_FACTOR * tl_median(tmp, n);
    free(tmp);
    int phases = 0;
    size_t run = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && service[i] > bar) {
            run++;
            continue;
        }
        phases += run >= TL_SLOW_RUN;
        run = 0;
    }
    return phases;
}

typedef struct arrival_service {
    tl_ns arrival;
    double service;
} arrival_service;

static int cmp_arrival(const void *a, const void *b)
{
    tl_ns x = ((const arrival_service *)a)->arrival, y = ((const arrival_service *)b)->arrival;
    return (x > y) - (x < y);
}

/* tl_slow_phases of job j's requests, taken in order of arrival. */
static double job_slow_phases(const tl_run_result *r, int j, size_t n)
{
    arrival_service *as = tl_xmalloc((n + 1) * sizeof *as);
    double *svc = tl_xmalloc((n + 1) * sizeof *svc);
    size_t k = 0;
    for (size_t i = 0; i < r->n_recs && k < n; i++)
        if (r->recs[i].job == j)
            as[k++] = (arrival_service){r->recs[i].arrival_ns, (double)(r->recs[i].end_ns - r->recs[i].start_ns)};
    qsort(as, k, sizeof *as, cmp_arrival);
    for (size_t i = 0; i < k; i++)
        svc[i] = as[i].service;
    int phases = tl_slow_phases(svc, k);
    free(as);
    free(svc);
    return phases;
}

void tl_metrics_compute(const tl_run_result *r, const tl_run_config *cfg, int sms,
                        tl_job_metrics *m)
{
    double window_s = (double)(r->window_end_ns - r->window_start_ns) / 1e9;
    double *lat = tl_xmalloc((r->n_recs + 1) * sizeof *lat);
    for (int j = 0; j < cfg->n_jobs; j++) {
        tl_job_metrics *x = &m[j];
        memset(x, 0, sizeof *x);
        size_t n = 0, within = 0, served = 0;
        bool inference = cfg->jobs[j].role == TL_ROLE_INFERENCE;
        double sum = 0, sum_service = 0;
        for (size_t i = 0; i < r->n_recs; i++) {
            const tl_request_rec *q = &r->recs[i];
            if (q->job != j)
                continue;
            /* Training "latency" is the iteration time: from its start. */
            tl_ns from = inference ? q->arrival_ns : q->start_ns;
            /* Throughput counts what was served inside the window. A training
             * iteration is recorded only then; a request that arrived inside it
             * is recorded however late it ends (the run drains), and one whose
             * queue grows ends after the window: counting it would report the
             * offered rate, not what the GPU served. */
            served += !inference || q->end_ns < r->window_end_ns;
            double l = (double)(q->end_ns - from);
            lat[n++] = l;
            sum += l;
            sum_service += (double)(q->end_ns - q->start_ns);
            if (cfg->jobs[j].slo_ns > 0 && l <= (double)cfg->jobs[j].slo_ns)
                within++;
        }
        tl_sort_doubles(lat, n);
        x->count = n;
        x->p50_ns = tl_percentile(lat, n, 0.50);
        x->p90_ns = tl_percentile(lat, n, 0.90);
        x->p95_ns = tl_percentile(lat, n, 0.95);
        x->p99_ns = tl_percentile(lat, n, 0.99);
        x->p999_ns = tl_percentile(lat, n, 0.999);
        x->mean_latency_ns = n ? sum / (double)n : 0;
        x->mean_service_ns = n ? sum_service / (double)n : 0;
        double var = 0;
        for (size_t i = 0; i < n; i++)
            var += (lat[i] - x->mean_latency_ns) * (lat[i] - x->mean_latency_ns);
        x->turnaround_var_ns2 = n > 1 ? var / (double)(n - 1) : 0;
        x->slo_attainment = cfg->jobs[j].slo_ns > 0 && n ? (double)within / (double)n : NAN;
        x->throughput = window_s > 0 ? (double)served / window_s : 0;
        double denom = (double)sms * (double)(r->window_end_ns - r->window_start_ns);
        x->util = denom > 0 && r->job_stats ? (double)r->job_stats[j].sm_busy_ns / denom : 0;
        x->throughput_rel = NAN;
        x->p99_overhead = NAN;
        x->slow_phases = cfg->jobs[j].role == TL_ROLE_INFERENCE ? job_slow_phases(r, j, n) : NAN;
        if (n == 0) {
            /* nothing finished in the window: no latency to speak of (unknown,
             * so not stored), where 0 ms would read as a measurement */
            x->p50_ns = x->p90_ns = x->p95_ns = x->p99_ns = x->p999_ns = NAN;
            x->mean_latency_ns = x->mean_service_ns = x->turnaround_var_ns2 = NAN;
        }
    }
    free(lat);
}

void tl_metrics_relate(tl_job_metrics *m, const tl_job_metrics *alone)
{
    m->throughput_rel = alone->throughput > 0 ? m->throughput / alone->throughput : NAN;
    m->p99_overhead = alone->p99_ns > 0 ? m->p99_ns / alone->p99_ns - 1.0 : NAN;
}

double tl_metrics_system_throughput(const tl_job_metrics *m, int n_jobs)
{
    double s = 0;
    for (int j = 0; j < n_jobs; j++) {
        if (isnan(m[j].throughput_rel))
            return NAN;
        s += m[j].throughput_rel;
    }
    return s;
}
