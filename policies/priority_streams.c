/* priority-streams: one context shared by every job; each job's streams at
 * the CUDA stream priority of its rank (rank 0 -> greatest, e.g. -5 on H100;
 * rank r -> greatest + r, capped at 0, the least: six levels on H100).
 * Everything is launched as soon as the host issues it; the hardware block
 * scheduler does the rest: a block of a lower priority level is dispatched
 * only when every higher level has nothing left to dispatch, and running
 * blocks are never preempted, so a long low-priority kernel delays a
 * high-priority one by the remaining time of its resident blocks
 * (Gilman & Walls' "compounded delay").
 *
 * Parameters: none.
 */
#include <stdlib.h>

#include "tally/policy.h"

typedef struct prio_state {
    tl_stream_map *maps;
} prio_state;

static int prio_setup(tl_policy *p, tl_err *err)
{
    prio_state *st = p->state;
    st->maps = tl_xcalloc((size_t)p->n_jobs + 1, sizeof *st->maps);
    tl_job_ctx_plan plan = { .shared = true, .kind = TL_CTX_TIMESLICED };
    return tl_policy_setup_jobs(p, &plan, NULL, st->maps, err);
}

static void prio_submit(tl_policy *p, tl_task *t)
{
    prio_state *st = p->state;
    tl_policy_run_plain(p, t, tl_stream_map_get(&st->maps[t->job->id], t->op));
}

static void prio_teardown(tl_policy *p)
{
    prio_state *st = p->state;
    free(st->maps);
    st->maps = NULL;
}

const tl_policy_ops tl_policy_priority_streams = {
    .name = "priority-streams",
    .summary = "one context; each job on streams of its rank's priority; no preemption",
    .state_size = sizeof(prio_state),
    .params = NULL,
    .setup = prio_setup,
    .submit = prio_submit,
    .teardown = prio_teardown,
};
