/* Solo replay fidelity (see include/tally/fidelity.h). */
#include "tally/fidelity.h"

#include <stdlib.h>
#include <string.h>

#include "tally/runner.h"
#include "tally/sim.h"

int tl_fidelity_check(const tl_trace *t, const tl_gpu_props *gpu, tl_fidelity *out, tl_err *err)
{
    return tl_fidelity_check_params(t, gpu, NULL, out, err);
}

/* The replay's errors name its one job, "solo", not the trace: with several
 * traces checked in a row (tally-sim fidelity A B C) the message must say
 * which one failed. */
static int name_trace(const tl_trace *t, int r, tl_err *err)
{
    if (!err || !t->path || !strncmp(err->msg, t->path, strlen(t->path)))
        return r;
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    return tl_errf(err, r, "%s: its replay failed: %s", t->path, msg);
}

/* The longest window a replay grows to: 11.6 days (TL_TRACE_MAX_OP_NS), past
 * any trace the readers accept times a simulator parameter's largest delay. */
#define FIDELITY_MAX_WINDOW_NS 1000000000000000LL

/* *undrained: the run failed at the drain's limit (runner.h). The replay is
 * one closed-loop job without arrivals, of a trace checked as a run checks
 * it: tl_run's TL_ERANGE is then an iteration still running when the runner
 * stopped waiting for it. */
static int replay_once(const tl_run_config *cfg, const tl_gpu_props *g, const tl_sim_params *p,
                       tl_run_result *res, bool *undrained, tl_err *err)
{
    tl_device dev;
    *undrained = false;
    int r = tl_sim_open(&dev, g, p, err);
    if (r < 0)
        return r;
    r = tl_run(cfg, &dev, res, err);
    tl_dev_close(&dev);
    *undrained = r == TL_ERANGE;
    return r;
}

/* The runner's own words for it blame an offered load far beyond what the
 * GPU serves, and a replay has none: an iteration replays far longer than
 * it was traced (one of about 60 s where 0.1 ms were), longer than the
 * runner waits after a window sized by the traced time. */
static int replay_too_long(const tl_trace *t, const tl_run_config *cfg, long double traced, int r,
                           tl_err *err)
{
    tl_ns drain = tl_run_drain_ns(cfg->warmup_ns + cfg->duration_ns);
    return tl_errf(err, r, "%s: replayed, an iteration was still running %.0f s after the replay's "
                   "window of %.4g ms (sized by the %.4g ms traced) ended: the trace replays far "
                   "slower than it was traced, and a replay window long enough to hold it would be "
                   "too long (a broken trace, or a --sim-param that slows the replay?)",
                   t->path ? t->path : "trace", (double)drain / 1e9,
                   (double)cfg->duration_ns / 1e6, (double)(traced / 1e6));
}

/* The measured pass: iterations first .. first + n - 1 (ids count from 0 in
 * start order; records come in completion order). Returns how many ran. */
static uint32_t measured_pass(const tl_run_result *res, uint32_t first, uint32_t n,
                              const tl_request_rec **pass)
{
    uint32_t found = 0;
    memset(pass, 0, n * sizeof *pass);
    for (size_t k = 0; k < res->n_recs; k++) {
        uint32_t id = res->recs[k].id;
        if (id >= first && id - first < n && !pass[id - first]) {
            pass[id - first] = &res->recs[k];
            found++;
        }
    }
    return found;
}

int tl_fidelity_check_params(const tl_trace *t, const tl_gpu_props *gpu, const char *sim_params,
                             tl_fidelity *out, tl_err *err)
{
    memset(out, 0, sizeof *out);
    if (t->n_iters == 0)
        return tl_errf(err, TL_EINVAL, "%s: no iterations to replay", t->path ? t->path : "trace");
    tl_gpu_props g;
    if (gpu) {
        g = *gpu;
    } else {
        int r = tl_trace_gpu(t, &g, err);
        if (r < 0)
            return r;
    }
    /* as a run would refuse it: a replay on a GPU that cannot launch a kernel
     * was a silent wrong answer */
    int r = tl_trace_check_replayable(t, &g, err);
    if (r < 0)
        return r;
    /* Play every iteration once, back to back, as the capture did. The
     * training role gives the closed loop; the window covers them all.
     * A trace captured mid-run (n_precapture > 0: work of the step before
     * was still queued on the GPU when the capture began) starts with that
     * backlog, and its iteration 0 waited for it. Such a trace is played
     * twice and the second pass is measured: its iteration 0 inherits the
     * backlog of the replayed last iteration, the closest stand-in for the
     * untraced step before. */
    uint32_t first = t->n_precapture > 0 ? t->n_iters : 0;
    long double total = 0;
    for (uint32_t i = 0; i < t->n_iters; i++)
        total += t->iters[i].traced_ns;
    /* The window is in traced time; the iterations are bounded too, to one
     * pass after the measured one (what may overlap its tail): a trace whose
     * replay is far shorter than its traced time (one timestamp broken by
     * hours) would otherwise replay millions of iterations. And no more: a
     * GPU-bound trace without syncs lets the host run ahead by every
     * iteration allowed, and 64 more of 2 s each outlasted the drain's limit
     * (the replay failed as an overload). */
    uint32_t passes = first ? 5 : 3;
    long double window = total * passes + TL_NS_PER_MS; /* iterations of up to 2^61 ns overflowed */
    tl_job_spec job = { .name = "solo", .trace = t, .role = TL_ROLE_TRAINING };
    tl_run_config cfg = { .jobs = &job, .n_jobs = 1, .policy = tl_policy_find("time-slicing"),
                          .duration_ns = window < FIDELITY_MAX_WINDOW_NS ? (tl_ns)window
                                                                         : FIDELITY_MAX_WINDOW_NS,
                          .warmup_ns = 0, .seed = 1,
                          .max_iterations = first + 2 * t->n_iters };
    if (!cfg.policy)
        return tl_errf(err, TL_EUNKNOWN, "policy time-slicing is not registered");
    tl_sim_params p;
    tl_sim_params_default(&p, &g);
    r = tl_sim_params_apply(&p, sim_params, err);
    if (r < 0)
        return r;
    /* A replay slower than the capture (legal --sim-param values such as
     * stream_gap_ns=1000000 behind microsecond kernels, or a hand-made trace
     * whose traced_ns is below its host time) has not started the measured
     * pass when the window ends. The window then grows, 16x a time, until it
     * holds the pass: the run is bounded by its iterations anyway, and a
     * replay that fits the first window is played exactly as before. */
    tl_run_result res;
    const tl_request_rec **pass = tl_xcalloc(t->n_iters, sizeof *pass);
    uint32_t found;
    for (;;) {
        bool undrained;
        r = replay_once(&cfg, &g, &p, &res, &undrained, err);
        if (r < 0) {
            free(pass);
            return undrained ? replay_too_long(t, &cfg, total, r, err) : name_trace(t, r, err);
        }
        found = measured_pass(&res, first, t->n_iters, pass);
        if (found == t->n_iters || cfg.duration_ns >= FIDELITY_MAX_WINDOW_NS)
            break;
        tl_run_result_close(&res);
        cfg.duration_ns = cfg.duration_ns > FIDELITY_MAX_WINDOW_NS / 16 ? FIDELITY_MAX_WINDOW_NS
                                                                         : cfg.duration_ns * 16;
    }
    if (found < t->n_iters) {
        free(pass);
        tl_run_result_close(&res);
        return tl_errf(err, TL_EINVAL, "%s: replay finished %u of %u iterations%s in %.0f s", t->path,
                       found, t->n_iters, first ? " of its second pass" : "",
                       (double)cfg.duration_ns / 1e9);
    }
    long double ti = 0, tb = 0, ri = 0, rb = 0;
    for (uint32_t i = 0; i < t->n_iters; i++) {
        ti += t->iters[i].traced_ns;
        tb += t->iters[i].traced_busy_ns;
        ri += pass[i]->end_ns - pass[i]->start_ns;
        rb += pass[i]->busy_ns;
    }
    free(pass);
    out->iterations = t->n_iters;
    out->traced_iter_ns = (double)(ti / t->n_iters);
    out->traced_busy_ns = (double)(tb / t->n_iters);
    out->replay_iter_ns = (double)(ri / t->n_iters);
    out->replay_busy_ns = (double)(rb / t->n_iters);
    out->iter_err = out->traced_iter_ns > 0 ? out->replay_iter_ns / out->traced_iter_ns - 1 : 0;
    out->busy_err = out->traced_busy_ns > 0 ? out->replay_busy_ns / out->traced_busy_ns - 1 : 0;
    tl_run_result_close(&res);
    return 0;
}
