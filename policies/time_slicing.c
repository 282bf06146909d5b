/* time-slicing: every job gets its own ordinary context, as separate processes
 * without MPS would. The device time-slices contexts: kernels of different
 * contexts never run at the same time (on H100 about 2 ms slices with about
 * 0.3 ms of switching, see FACTS.md). Within its context a job's streams keep
 * the priority of its rank (it only orders the job's own streams).
 * Everything is launched as soon as the host issues it.
 *
 * Parameters: none.
 */
#include <stdlib.h>

#include "tally/policy.h"

typedef struct ts_state {
    tl_stream_map *maps;
} ts_state;

static int ts_setup(tl_policy *p, tl_err *err)
{
    ts_state *st = p->state;
    st->maps = tl_xcalloc((size_t)p->n_jobs + 1, sizeof *st->maps);
    tl_job_ctx_plan plan = { .shared = false, .kind = TL_CTX_TIMESLICED };
    return tl_policy_setup_jobs(p, &plan, NULL, st->maps, err);
}

static void ts_submit(tl_policy *p, tl_task *t)
{
    ts_state *st = p->state;
    tl_policy_run_plain(p, t, tl_stream_map_get(&st->maps[t->job->id], t->op));
}

static void ts_teardown(tl_policy *p)
{
    ts_state *st = p->state;
    free(st->maps);
    st->maps = NULL;
}

const tl_policy_ops tl_policy_time_slicing = {
    .name = "time-slicing",
    .summary = "one context per job; the GPU time-slices contexts",
    .state_size = sizeof(ts_state),
    .params = NULL,
    .setup = ts_setup,
    .submit = ts_submit,
    .teardown = ts_teardown,
};
