/* Solo replay fidelity (see include/tally/fidelity.h). */
#include "tally/fidelity.h"

#include <string.h>

#include "tally/runner.h"
#include "tally/sim.h"

int tl_fidelity_check(const tl_trace *t, const tl_gpu_props *gpu, tl_fidelity *out, tl_err *err)
{
    memset(out, 0, sizeof *out);
    if (t->n_iters == 0)
        return tl_errf(err, TL_EINVAL, "%s: no iterations to replay", t->path ? t->path : "trace");
    tl_gpu_props g;
    if (gpu) {
        g = *gpu;
    } else if (t->has_gpu_props) {
        g = t->gpu;
        tl_gpu_complete(&g);
    } else {
        int r = tl_gpu_lookup("H100", &g, err);
        if (r < 0)
            return r;
    }
    /* Play every iteration once, back to back, as the capture did. The
     * training role gives the closed loop; the window covers them all. */
    long double total = 0;
    for (uint32_t i = 0; i < t->n_iters; i++)
        total += t->iters[i].traced_ns;
    tl_job_spec job = { .name = "solo", .trace = t, .role = TL_ROLE_TRAINING };
    tl_run_config cfg = { .jobs = &job, .n_jobs = 1, .policy = tl_policy_find("time-slicing"),
                          .duration_ns = (tl_ns)(total * 3) + TL_NS_PER_MS, .warmup_ns = 0,
                          .seed = 1 };
    if (!cfg.policy)
        return tl_errf(err, TL_EUNKNOWN, "policy time-slicing is not registered");
    tl_device dev;
    tl_sim_params p;
    tl_sim_params_default(&p, &g);
    int r = tl_sim_open(&dev, &g, &p, err);
    if (r < 0)
        return r;
    tl_run_result res;
    r = tl_run(&cfg, &dev, &res, err);
    tl_dev_close(&dev);
    if (r < 0)
        return r;
    if (res.n_recs < t->n_iters) {
        tl_run_result_close(&res);
        return tl_errf(err, TL_EINVAL, "%s: replay finished %zu of %u iterations", t->path, res.n_recs,
                       t->n_iters);
    }
    long double ti = 0, tb = 0, ri = 0, rb = 0;
    for (uint32_t i = 0; i < t->n_iters; i++) {
        ti += t->iters[i].traced_ns;
        tb += t->iters[i].traced_busy_ns;
        ri += res.recs[i].end_ns - res.recs[i].start_ns;
        rb += res.recs[i].busy_ns;
    }
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
