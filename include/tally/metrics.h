/* Metrics of a run (the list in DESIGN.md), computed from a tl_run_result. */
#ifndef TALLY_METRICS_H
#define TALLY_METRICS_H

#include "tally/runner.h"

typedef struct tl_job_metrics {
    uint64_t count;             /* requests (inference) or iterations (training) */
    double p50_ns, p90_ns, p95_ns, p99_ns, p999_ns; /* latency (inference: arrival->end;
                                                       training: iteration time) */
    double mean_latency_ns;
    double mean_service_ns;     /* start->end; these six and turnaround_var_ns2 are NAN
                                   (not stored) when count is 0 */
    double slo_attainment;      /* fraction of requests within the SLO; NAN if none */
    double throughput;          /* per second of the window: iterations that ended in it,
                                   requests that arrived and were served in it */
    double util;                /* SM-time occupied / (SMs x window) */
    double turnaround_var_ns2;  /* variance of latency (Gilman & Walls) */
    /* relative to running alone (NAN when unknown) */
    double throughput_rel;
    double p99_overhead;        /* p99 / alone p99 - 1 */
    double slow_phases;         /* inference: tl_slow_phases of its requests; NAN for training */
} tl_job_metrics;

/* Slow phases: maximal runs of at least TL_SLOW_RUN consecutive requests
 * (service times in order of arrival) each served in more than TL_SLOW_FACTOR
 * times the median service time; 0 with fewer than TL_SLOW_RUN requests. The
 * policies make none or one (time slicing one long phase, holding the
 * inference off for whole slices), in the simulator and on the H100; some
 * H100 machines make several a run, slowing the GPU work about 2.2x for tens
 * of ms at a time (experiments/results/hw/session19/). */
#define TL_SLOW_FACTOR 1.6
#define TL_SLOW_RUN 3
#define TL_SLOW_WARN 3 /* a hardware run with this many or more gets a warning */
int tl_slow_phases(const double *service, size_t n);

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
