/* mps-priority: mps (see policies/mps.c), plus CUDA_MPS_CLIENT_PRIORITY:
 * clients of high-priority jobs (the smallest rank, normally 0) get client
 * priority 0 (normal), every other job 1 (below normal). The driver treats it
 * as a hint: the device decides what it means (see sim/README.md for the
 * simulator's reading of it); running blocks are never preempted.
 *
 * Parameters: those of mps (sm_percent, sm_percents).
 */
#include "tally/policy.h"
#include "tally/policy_util.h"

static int mpsp_setup(tl_policy *p, tl_err *err)
{
    return tl_mps_setup(p, true, err);
}

const tl_policy_ops tl_policy_mps_priority = {
    .name = "mps-priority",
    .summary = "MPS with client priority 1 (below normal) for best-effort jobs",
    .state_size = sizeof(tl_mps_state),
    .params = tl_mps_params,
    .setup = mpsp_setup,
    .submit = tl_mps_submit,
    .teardown = tl_mps_teardown,
    .check_jobs = tl_mps_check_jobs,
};
