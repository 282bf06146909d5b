/* The CUDA device's figures of a run: the run metrics recorded with it (the
 * event loop's, the graph batches', the GPU's clocks) and the stats getters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* The GPU's clocks over the run (time 0 to now), from the sampler, which
 * stops here; with TALLY_GPU_SAMPLE_LOG every sample is appended there too. */
static void gpu_clock_metrics(tl_cuda *c, tl_dev_metric_fn fn, void *arg)
{
    if (!c->sampler) return;
    tl_gpu_sampler_stop(c->sampler, &c->samples, &c->n_samples);
    c->sampler = NULL;
    tl_gpu_clock_summary g;
    tl_gpu_clock_summarize(c->samples, c->n_samples, c->t0, tl_mono_ns(), &g);
    const char *log = getenv("TALLY_GPU_SAMPLE_LOG");
    FILE *f = log && *log ? fopen(log, "a") : NULL;
    if (f) {
        fprintf(f, "# t_ns (run clock),sm_mhz,mem_mhz,reasons,power_mw,temp_c\n");
        for (size_t i = 0; i < c->n_samples; i++)
            fprintf(f, "%lld,%u,%u,%#llx,%u,%u\n", (long long)(c->samples[i].t_ns - c->t0), c->samples[i].sm_mhz,
                    c->samples[i].mem_mhz, c->samples[i].reasons, c->samples[i].power_mw, c->samples[i].temp_c);
        fclose(f);
    }
    fn(arg, "gpu_clock_samples", (double)g.samples);
    if (!g.samples) return;
    fn(arg, "gpu_sm_mhz_min", g.sm_min_mhz);
    fn(arg, "gpu_sm_mhz_mean", g.sm_mean_mhz);
    fn(arg, "gpu_sm_mhz_max", g.sm_max_mhz);
    fn(arg, "gpu_mem_mhz_min", g.mem_min_mhz);
    fn(arg, "gpu_sm_dip_samples", (double)g.dip_samples);
    fn(arg, "gpu_sm_dip_longest_ns", (double)g.dip_longest_ns);
    fn(arg, "gpu_clock_reasons", (double)g.reasons);
    fn(arg, "gpu_power_max_w", g.power_max_mw / 1e3);
    fn(arg, "gpu_temp_max_c", g.temp_max_c);
}

/* The replay's own figures of the run, warm-up included (what cu_close's
 * "CUDA graphs" line prints), recorded with the run: how the graph jobs'
 * batches were launched and how long after the event that issued them (also
 * a context worker's: the parent sends them); the same for launches made one
 * by one, and how long after their launch call kernels on an idle stream
 * started on the GPU (on the corrected GPU clock: fix_offset keeps that >= 0,
 * so a mean, not a bound); how late the event loop fired its timers, and how
 * far fix_offset moved the GPU clock's offset each way. This
 * process's contexts only: a context worker's graphs are its own. */
void tl_cuda_run_metrics(tl_device *d, tl_dev_metric_fn fn, void *arg)
{
    tl_cuda *c = C(d);
    tl_gcache_stats gs = {0};
    if (c->gcache) tl_gcache_get_stats(c->gcache, &gs);
    const tl_cuda_loop_stats *l = &c->loop;
    fn(arg, "cuda_timers", (double)l->timers);
    fn(arg, "cuda_setup_ns", (double)l->setup_ns);
    fn(arg, "cuda_clock_offset_raised_ns", (double)l->offset_raised_ns);
    fn(arg, "cuda_clock_offset_lowered_ns", (double)l->offset_lowered_ns);
    if (l->launch_lag_count) {
        fn(arg, "cuda_launch_lag_count", (double)l->launch_lag_count);
        fn(arg, "cuda_launch_lag_sum_ns", (double)l->launch_lag_sum_ns);
    }
    if (l->start_lat_count) {
        fn(arg, "cuda_start_latency_count", (double)l->start_lat_count);
        fn(arg, "cuda_start_latency_sum_ns", (double)l->start_lat_sum_ns);
        fn(arg, "cuda_start_latency_max_ns", (double)l->start_lat_max_ns);
        fn(arg, "cuda_start_latency_over_500us", (double)l->start_lat_over_500us);
    }
    if (l->lag_batches) {
        fn(arg, "cuda_graph_lag_batches", (double)l->lag_batches);
        fn(arg, "cuda_graph_lag_ops", (double)l->lag_ops);
        fn(arg, "cuda_graph_lag_sum_ns", (double)l->lag_sum_ns);
        fn(arg, "cuda_graph_lag_max_ns", (double)l->lag_max_ns);
        fn(arg, "cuda_graph_lag_over_500us", (double)l->lag_over_500us);
    }
    if (l->timers) {
        fn(arg, "cuda_timer_late_mean_ns", (double)l->late_sum_ns / (double)l->timers);
        fn(arg, "cuda_timer_late_max_ns", (double)l->late_max_ns);
        fn(arg, "cuda_timer_late_over_1ms", (double)l->late_over_1ms);
    }
    gpu_clock_metrics(c, fn, arg);
    long nivcsw = thread_nivcsw(); /* since time 0 (or the open, without a begin) */
    if (nivcsw >= 0 && l->nivcsw_begin >= 0)
        fn(arg, "cuda_loop_preemptions", (double)(nivcsw - l->nivcsw_begin));
    if (!gs.launches && !gs.no_room) return;
    fn(arg, "cuda_graph_launches", (double)gs.launches);
    fn(arg, "cuda_graph_kernels", (double)gs.nodes);
    fn(arg, "cuda_graph_instantiations", (double)gs.instantiations);
    fn(arg, "cuda_graph_reuses", (double)gs.reuses);
    fn(arg, "cuda_graph_updates", (double)gs.updates);
    fn(arg, "cuda_graph_one_by_one", (double)gs.no_room);
    fn(arg, "cuda_graph_batch_cuts", (double)l->batch_cuts);
    if (l->batches)
        fn(arg, "cuda_graph_issue_to_flush_mean_ns", (double)l->batch_open_sum_ns / (double)l->batches);
    if (gs.launches)
        fn(arg, "cuda_graph_launch_call_mean_ns", (double)gs.launch_call_ns / (double)gs.launches);
}

void tl_cuda_job_stats(tl_device *d, int job, tl_job_stats *out)
{
    tl_cuda *c = C(d);
    memset(out, 0, sizeof *out);
    if (job >= 0 && job < c->n_jstats) *out = c->jstats[job];
}

void tl_cuda_get_calib_stats(tl_device *d, tl_cuda_calib_stats *out) { *out = C(d)->cstats; }
void tl_cuda_get_loop_stats(tl_device *d, tl_cuda_loop_stats *out) { *out = C(d)->loop; }
void tl_cuda_get_graph_stats(tl_device *d, tl_gcache_stats *out) { tl_gcache_get_stats(C(d)->gcache, out); }
