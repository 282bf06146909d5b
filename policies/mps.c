/* mps: every job is an MPS client (a sub-context of one shared context), so
 * kernels of different jobs run concurrently and contend inside SMs. A client
 * may be capped to a percentage of the SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE);
 * the cap of job j is, first found: the job's own sm_percent (spec job entry),
 * sm_percents[j], sm_percent. Everything is launched as soon as issued.
 *
 * Parameters:
 *   sm_percent   double  default 100  range [1, 100]
 *                active-thread percentage of jobs without their own cap
 *   sm_percents  list of doubles, default [] (unset)  each in [1, 100]
 *                per-job caps by job id (index in the spec's job list)
 *
 * mps-priority (policies/mps_priority.c) shares this code and these
 * parameters, adding CUDA_MPS_CLIENT_PRIORITY 1 for best-effort jobs.
 */
#include <stddef.h>
#include <stdlib.h>

#include "tally/policy.h"
#include "tally/policy_util.h"

const tl_param_desc tl_mps_params[] = {
    { "sm_percent", TL_PARAM_DOUBLE, offsetof(tl_mps_state, sm_percent), 100, 1, 100,
      "MPS active-thread percentage of jobs without their own" },
    { "sm_percents", TL_PARAM_DOUBLE_LIST, offsetof(tl_mps_state, sm_percents), 0, 1, 100,
      "per-job MPS active-thread percentages, by job id" },
    { NULL },
};

double tl_mps_job_sm_percent(const tl_job *j, const tl_param_list *list, double def)
{
    if (j->sm_percent > 0 && j->sm_percent <= 100)
        return j->sm_percent;
    if (list && j->id >= 0 && j->id < list->n)
        return list->v[j->id];
    return def > 0 && def <= 100 ? def : 100;
}

int tl_mps_check_jobs(const void *state, int n_jobs, tl_err *err)
{
    const tl_mps_state *st = state;
    if (st->sm_percents.n > n_jobs)
        return tl_errf(err, TL_ERANGE, "sm_percents has %d values for %d jobs", st->sm_percents.n,
                       n_jobs);
    return 0;
}

int tl_mps_setup(tl_policy *p, bool client_priority, tl_err *err)
{
    tl_mps_state *st = p->state;
    tl_err e2;
    if (tl_mps_check_jobs(st, p->n_jobs, &e2) < 0)
        return tl_errf(err, e2.code, "policy %s: %s", p->ops->name, e2.msg);
    size_t n = (size_t)p->n_jobs + 1;
    st->maps = tl_xcalloc(n, sizeof *st->maps);
    double *caps = tl_xcalloc(n, sizeof *caps);
    int *prio = tl_xcalloc(n, sizeof *prio);
    for (int j = 0; j < p->n_jobs; j++) {
        caps[j] = tl_mps_job_sm_percent(&p->jobs[j], &st->sm_percents, st->sm_percent);
        prio[j] = client_priority && !tl_policy_job_is_high(p, &p->jobs[j]) ? 1 : 0;
    }
    tl_job_ctx_plan plan = { .shared = false, .kind = TL_CTX_MPS, .sm_percent = caps,
                             .mps_priority = prio };
    int r = tl_policy_setup_jobs(p, &plan, NULL, st->maps, err);
    free(caps);
    free(prio);
    return r;
}

void tl_mps_submit(tl_policy *p, tl_task *t)
{
    tl_mps_state *st = p->state;
    tl_policy_run_plain(p, t, tl_stream_map_get(&st->maps[t->job->id], t->op));
}

void tl_mps_teardown(tl_policy *p)
{
    tl_mps_state *st = p->state;
    free(st->maps);
    st->maps = NULL;
}

static int mps_setup(tl_policy *p, tl_err *err)
{
    return tl_mps_setup(p, false, err);
}

const tl_policy_ops tl_policy_mps = {
    .name = "mps",
    .summary = "one MPS client per job (optional SM cap per job); concurrent kernels",
    .state_size = sizeof(tl_mps_state),
    .params = tl_mps_params,
    .setup = mps_setup,
    .submit = tl_mps_submit,
    .teardown = tl_mps_teardown,
    .check_jobs = tl_mps_check_jobs,
};
