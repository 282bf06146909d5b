/* Metrics of a run (the list in DESIGN.md), computed from a tl_run_result. */
#ifndef TALLY_METRICS_H
#define TALLY_METRICS_H

#include "tally/runner.h"

typedef struct tl_job_metrics {
    uint64_t count;             /* requests (inference) or iterations (training) */
    double p50_ns, p90_ns, p95_ns, p99_ns, p999_ns; /* latency (inference: arrival->end;
                                                       training: iteration time) */
    double mean_latency_ns;
    double mean_service_ns;     /* start->end */
    double slo_attainment;      /* fraction of requests within the SLO; NAN if none */
    double throughput;          /* per second of the window */
    double util;                /* SM-time occupied / (SMs x window) */
    double turnaround_var_ns2;  /* variance of latency (Gilman & Walls) */
    /* relative to running alone (NAN when unknown) */
    double throughput_rel;
    double p99_overhead;        /* p99 / alone p99 - 1 */
} tl_job_metrics;

/* Nearest-rank percentile of sorted values (q in [0,1]); 0 for n == 0. */
double tl_percentile(const double *sorted, size_t n, double q);
/* Sort v[0..n) ascending, in place. */
void tl_sort_doubles(double *v, size_t n);
/* The median of v[0..n), which it sorts in place: the middle value, or the mean
 * of the two middle ones; 0 for n == 0. */
double tl_median(double *v, size_t n);

/* Fill m[0..n_jobs-1] from a run. sms: the GPU's SM count. Relative fields NAN. */
void tl_metrics_compute(const tl_run_result *r, const tl_run_config *cfg, int sms,
                        tl_job_metrics *m);
/* Fill the relative fields of m from the job's alone metrics. */
void tl_metrics_relate(tl_job_metrics *m, const tl_job_metrics *alone);
/* System throughput: sum of throughput_rel over jobs (NAN if any unknown). */
double tl_metrics_system_throughput(const tl_job_metrics *m, int n_jobs);

#endif
