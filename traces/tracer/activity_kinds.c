/* tally-trace: what CUPTI collects: the activity kinds --activities asks
 * for and kernels' latency timestamps, turned on at the start
 * (tt_enable_activities) and, with --record-every and --latency-sample, on
 * and off at iteration boundaries (tt_sample_records_locked,
 * tt_sample_latency_locked). flush.c turns them off at the stop and exit.
 */
#include <stdatomic.h>

#include "inject.h"

/* The activity groups of --activities and the CUPTI kinds they turn on. */
static const struct act_kind {
    unsigned bit;
    CUpti_ActivityKind kind;
} act_kinds[] = {
    {TT_ACT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL},
    {TT_ACT_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY},
    {TT_ACT_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET},
    {TT_ACT_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME},
    {TT_ACT_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER},
    {TT_ACT_SYNC, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION},
    {TT_ACT_NVTX, CUPTI_ACTIVITY_KIND_MARKER},
    {TT_ACT_EVENT, CUPTI_ACTIVITY_KIND_CUDA_EVENT},
    {TT_ACT_STREAM, CUPTI_ACTIVITY_KIND_STREAM},
};
#define N_ACT_KINDS (sizeof act_kinds / sizeof act_kinds[0])
/* The GPU's records: what --record-every turns off between its iterations. */
#define TT_ACT_GPU_RECORDS (TT_ACT_KERNEL | TT_ACT_MEMCPY | TT_ACT_MEMSET)

/* Iteration it is sampled (--latency-sample, --record-every N): the window's
 * first, then every N-th; none before the window. Called with tt_state.mu held. */
static bool sampled_iteration(uint64_t it, int64_t every)
{
    return tt_state.started && ((int64_t)it - tt_state.first_iter) % every == 0;
}

/* --latency-sample N: CUPTI's latency timestamps (what gives launches their
 * host time, and widens the GPU's gap between back-to-back kernels) on in
 * the first iteration of the window and every N-th after it, off in the
 * others and before the window (lite_sample.c fills those in). CUPTI's
 * documentation asks for the setting to be made before CUDA starts; turning
 * it on and off at run time works on the H100 with CUDA 13 (the GPU test
 * test_gpu_latency_sample checks that both kinds of iteration are there).
 * Called with tt_state.mu held. */
void tt_sample_latency_locked(uint64_t it)
{
    if (tt_state.opts.latency_sample <= 1 || !tt_state.latency_ts || tt_state.latency_toggle_failed)
        return;
    bool on = sampled_iteration(it, tt_state.opts.latency_sample);
    if (on == tt_state.latency_on)
        return;
    CUptiResult r = cuptiActivityEnableLatencyTimestamps(on);
    if (r != CUPTI_SUCCESS) {
        const char *err = "";
        cuptiGetResultString(r, &err);
        tt_say("cannot turn kernel queued timestamps %s (%s): --latency-sample ignored from here",
               on ? "on" : "off", err);
        tt_state.latency_toggle_failed = true;
        return;
    }
    tt_state.latency_on = on;
    tt_state.latency_toggles++;
}

/* --record-every N: record the window's first iteration and every N-th
 * after it, nothing in the others (and before the window): the GPU activity
 * kinds are turned off there (CUPTI's kernel records cost the launching
 * thread ~2 us a launch: experiments/results/tracer/launch_cost), and our
 * callbacks keep no calls. The iterations left out are marked
 * TT_ITER_SKIPPED; the writer gives them no iteration range, so the trace
 * holds whole recorded iterations only. Returns whether the iteration that
 * starts here is left out. Called with tt_state.mu held. */
bool tt_sample_records_locked(uint64_t it)
{
    if (tt_state.opts.record_every <= 1 || tt_state.record_toggle_failed)
        return false;
    bool on = sampled_iteration(it, tt_state.opts.record_every);
    if (on != atomic_load(&tt_state.recording)) {
        unsigned gpu = tt_state.opts.activities & TT_ACT_GPU_RECORDS;
        for (size_t i = 0; i < N_ACT_KINDS; i++) {
            if (!(gpu & act_kinds[i].bit))
                continue;
            CUpti_ActivityKind kind = act_kinds[i].kind;
            CUptiResult r = on ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);
            if (r != CUPTI_SUCCESS) {
                const char *err = "";
                cuptiGetResultString(r, &err);
                tt_say("cannot turn CUPTI activity kind %d %s (%s): --record-every "
                       "ignored from here", (int)kind, on ? "on" : "off", err);
                tt_state.record_toggle_failed = true;
                for (size_t k = 0; k < N_ACT_KINDS; k++)
                    if (gpu & act_kinds[k].bit) /* everything on again */
                        cuptiActivityEnable(act_kinds[k].kind);
                atomic_store(&tt_state.recording, true);
                return false;
            }
        }
        atomic_store(&tt_state.recording, on);
    }
    return tt_state.started && !on;
}

int tt_enable_activities(unsigned acts)
{
    /* LITE: kernels' host launch times come from CUPTI's latency timestamps
     * (queued, submitted), collected only when asked for before enabling. */
    if (tt_state.opts.host_timeline == TT_HOST_LITE && tt_state.opts.launch_times == TT_LAUNCH_QUEUED) {
        CUptiResult r = cuptiActivityEnableLatencyTimestamps(1);
        tt_state.latency_ts = tt_state.latency_on = r == CUPTI_SUCCESS;
        if (!tt_state.latency_ts) {
            const char *err = "";
            cuptiGetResultString(r, &err);
            tt_say("cannot collect kernel queued timestamps (%s): launch times will be estimated "
                   "from their neighbours", err);
        }
    }
    for (size_t i = 0; i < N_ACT_KINDS; i++) {
        if (!(acts & act_kinds[i].bit))
            continue;
        if ((tt_lite_callbacks() || tt_lite_completions()) &&
            (act_kinds[i].bit == TT_ACT_SYNC || act_kinds[i].bit == TT_ACT_EVENT))
            continue; /* from callbacks instead (tt_setup_callbacks) */
        CUptiResult r = cuptiActivityEnable(act_kinds[i].kind);
        if (r != CUPTI_SUCCESS) {
            const char *err = "";
            cuptiGetResultString(r, &err);
            tt_say("cannot enable CUPTI activity kind %d: %s", (int)act_kinds[i].kind, err);
            if (act_kinds[i].bit == TT_ACT_KERNEL)
                return -1;
        }
    }
    return 0;
}
