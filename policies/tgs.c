/* tgs: adaptive rate control of best-effort launches (TGS, NSDI'23; FACTS.md).
 *
 * Model:
 *  - Every job gets its own context, as containers (processes) would: ordinary
 *    time-sliced contexts, or MPS clients with mps = true. High-priority jobs
 *    (the smallest rank) launch everything at once.
 *  - Best-effort kernels wait in a per-job FIFO and are launched against a
 *    token bucket counted in best-effort GPU time: a kernel may launch while
 *    the bucket is positive and takes its traced (solo) duration out of it
 *    (copies and memsets cost nothing but keep their place in the FIFO). At
 *    the end of every window the bucket gets rate x window, holding at most
 *    one window's worth. So the rate is the share of the GPU's time granted
 *    to best-effort kernels (0.05: 5%), whatever their lengths.
 *  - The rate follows a TCP-like controller (tl_tgs_ctl_*): slow start
 *    (doubling) below ssthresh, then additive increase; when the high-priority
 *    throughput of the window drops below (1 - tolerance) x the best of the
 *    last `history` windows, ssthresh = max(min_rate, rate x decrease) and the
 *    rate falls to it. Starting low lets the controller see the high-priority
 *    job's undisturbed throughput first.
 *  - High-priority throughput of a window: the solo (traced) time of the
 *    high-priority tasks completed in it divided by the time they took, each
 *    from when it could start (handed to the GPU, and its stream's previous
 *    task done) to its end. 1 alone (less a constant launch overhead on
 *    hardware); below 1 when best-effort work slows or delays it. Normalising by solo time keeps a
 *    window with fewer or smaller requests from reading as interference (a raw
 *    blocks-per-window count swings with the arrival process). A window with
 *    no completed high-priority task gives no observation: "no drop".
 *    With raw_rate, the observation is instead the number of high-priority
 *    kernels completed in the window (TGS's kernel rate, unnormalised).
 *  - The window timer runs only while some work is pending or in flight.
 *  - Diagnostic: with TALLY_TGS_LOG=PATH in the environment every window
 *    appends a CSV line to PATH (simulator and hardware alike: the same code):
 *    time_ns,hp_solo_ns,hp_wall_ns,hp_kernels,observed,observation,best,
 *    rate_before,rate_after; a line "# tgs run ..." starts each run. It reads
 *    nothing back and changes no decision.
 *
 * Parameters:
 *   window_ms     ms      default 10     range [0.1, 10000]  controller period
 *   initial_rate  double  default 0.05   range [0.0001, 100] GPU-time share at start
 *   ssthresh      double  default 0.5    range [0.0001, 100] slow-start threshold
 *   increase      double  default 0.05   range [0, 100]      additive step per window
 *   decrease      double  default 0.5    range [0.01, 0.99]  multiplicative back-off
 *   tolerance     double  default 0.05   range [0, 0.99]     drop that counts as a loss
 *   min_rate      double  default 0.01   range [0.0001, 100] floor of the rate
 *   max_rate      double  default 8      range [0.0001, 100] ceiling (above 1: kernels
 *                                                           of several streams overlap);
 *                                                           not below min_rate
 *   history       int     default 8      range [1, 64]       windows in "recent best"
 *   mps           bool    default false  MPS clients instead of time-sliced contexts
 *   raw_rate      bool    default false  observe completed high-priority kernels per
 *                                        window instead of the normalised speed
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "tally/policy.h"
#include "tally/policy_util.h"

typedef struct tgs_state {
    /* parameters */
    tl_ns window_ns;
    double initial_rate, ssthresh, increase, decrease, tolerance, min_rate, max_rate;
    int history;
    bool mps, raw_rate;
    /* runtime */
    tl_policy *p;
    FILE *log;                             /* TALLY_TGS_LOG (diagnostic), or NULL */
    tl_stream_map *maps;
    bool *high;
    tl_task_queue *q;
    tl_tgs_ctl ctl;
    double tokens;                         /* ns of best-effort kernel time */
    int hp_outstanding, be_inflight;
    tl_ns (*last_end)[TL_MAX_JOB_STREAMS]; /* per job and trace stream */
    double solo_acc, wall_acc;             /* high-priority work this window */
    uint64_t hp_kernels;                   /* high-priority kernels this window */
    bool timer_armed;
} tgs_state;

static const tl_param_desc tgs_params[] = {
    { "window_ms", TL_PARAM_NS_FROM_MS, offsetof(tgs_state, window_ns), 10, 0.1, 10000,
      "controller period" },
    { "initial_rate", TL_PARAM_DOUBLE, offsetof(tgs_state, initial_rate), 0.05, 0.0001, 100,
      "share of GPU time granted to best-effort kernels at start" },
    { "ssthresh", TL_PARAM_DOUBLE, offsetof(tgs_state, ssthresh), 0.5, 0.0001, 100,
      "slow-start threshold of the rate" },
    { "increase", TL_PARAM_DOUBLE, offsetof(tgs_state, increase), 0.05, 0, 100,
      "additive increase of the rate per window" },
    { "decrease", TL_PARAM_DOUBLE, offsetof(tgs_state, decrease), 0.5, 0.01, 0.99,
      "multiplicative decrease on a high-priority throughput drop" },
    { "tolerance", TL_PARAM_DOUBLE, offsetof(tgs_state, tolerance), 0.05, 0, 0.99,
      "relative drop below the recent best that counts as interference" },
    { "min_rate", TL_PARAM_DOUBLE, offsetof(tgs_state, min_rate), 0.01, 0.0001, 100,
      "floor of the rate" },
    { "max_rate", TL_PARAM_DOUBLE, offsetof(tgs_state, max_rate), 8, 0.0001, 100,
      "ceiling of the rate" },
    { "history", TL_PARAM_INT, offsetof(tgs_state, history), 8, 1, TL_TGS_HISTORY_MAX,
      "windows over which the recent best throughput is taken" },
    { "mps", TL_PARAM_BOOL, offsetof(tgs_state, mps), 0, 0, 1,
      "jobs as MPS clients instead of time-sliced contexts" },
    { "raw_rate", TL_PARAM_BOOL, offsetof(tgs_state, raw_rate), 0, 0, 1,
      "observe high-priority kernels completed per window, not the normalised speed" },
    { NULL },
};

/* ---- the controller (pure) ---- */

static double clamp(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

void tl_tgs_ctl_init(tl_tgs_ctl *c, double initial_rate, double ssthresh, double increase,
                     double decrease, double tolerance, double min_rate, double max_rate,
                     int history)
{
    *c = (tl_tgs_ctl){ 0 };
    c->min_rate = min_rate > 0 ? min_rate : 1e-3;
    c->max_rate = max_rate > c->min_rate ? max_rate : c->min_rate;
    c->rate = clamp(initial_rate, c->min_rate, c->max_rate);
    c->ssthresh = ssthresh;
    c->increase = increase;
    c->decrease = clamp(decrease, 0, 1);
    c->tolerance = clamp(tolerance, 0, 1);
    c->hist_len = history < 1 ? 1 : history > TL_TGS_HISTORY_MAX ? TL_TGS_HISTORY_MAX : history;
}

double tl_tgs_ctl_best(const tl_tgs_ctl *c)
{
    double best = 0;
    for (int i = 0; i < c->hist_n; i++)
        if (c->hist[i] > best)
            best = c->hist[i];
    return best;
}

tl_tgs_event tl_tgs_ctl_update(tl_tgs_ctl *c, bool have_obs, double obs)
{
    tl_tgs_event ev;
    if (have_obs && c->hist_n > 0 && obs < tl_tgs_ctl_best(c) * (1 - c->tolerance)) {
        c->ssthresh = clamp(c->rate * c->decrease, c->min_rate, c->max_rate);
        c->rate = c->ssthresh;
        ev = TL_TGS_DECREASE;
    } else if (c->rate < c->ssthresh) {
        c->rate = clamp(c->rate * 2, c->min_rate, c->max_rate);
        ev = TL_TGS_SLOW_START;
    } else {
        c->rate = clamp(c->rate + c->increase, c->min_rate, c->max_rate);
        ev = TL_TGS_INCREASE;
    }
    if (have_obs) {
        c->hist[c->hist_pos] = obs;
        c->hist_pos = (c->hist_pos + 1) % c->hist_len;
        if (c->hist_n < c->hist_len)
            c->hist_n++;
    }
    return ev;
}

/* ---- the policy ---- */

static void add_tokens(tgs_state *st)
{
    double budget = st->ctl.rate * (double)st->window_ns;
    st->tokens = st->tokens + budget > budget ? budget : st->tokens + budget;
}

static void window_timer(void *arg, tl_ns now);

static void arm(tgs_state *st)
{
    if (st->timer_armed)
        return;
    tl_ns now = tl_dev_now(st->p->dev);
    int r = tl_dev_timer(st->p->dev, now + st->window_ns, window_timer, st);
    if (r < 0)
        tl_policy_fail(st->p, r, "policy tgs: the device refused a timer (%s)", tl_strerror(r));
    else
        st->timer_armed = true;
}

static void be_done(tl_policy *p, tl_task *t, const tl_launch_result *r)
{
    tgs_state *st = p->state;
    st->be_inflight--;
}

static void pump(tgs_state *st)
{
    tl_policy *p = st->p;
    bool progress = true;
    while (progress) {
        progress = false;
        for (int j = 0; j < p->n_jobs; j++) {
            tl_task *t = st->high[j] ? NULL : tl_task_queue_peek(&st->q[j]);
            if (!t)
                continue;
            bool kernel = t->op->kind == TL_OP_KERNEL;
            if (kernel && st->tokens <= 0)
                continue;
            tl_task_queue_pop(&st->q[j]);
            if (kernel)
                st->tokens -= (double)t->op->dur_ns;
            st->be_inflight++;
            if (tl_policy_run_plain_then(p, t, tl_stream_map_get(&st->maps[j], t->op), be_done) < 0)
                st->be_inflight--;
            progress = true;
        }
    }
}

static bool busy(const tgs_state *st)
{
    if (st->hp_outstanding > 0 || st->be_inflight > 0)
        return true;
    for (int j = 0; j < st->p->n_jobs; j++)
        if (st->q[j].len)
            return true;
    return false;
}

static void window_timer(void *arg, tl_ns now)
{
    tgs_state *st = arg;
    st->timer_armed = false;
    bool observed = st->raw_rate ? st->hp_kernels > 0 : st->wall_acc > 0;
    double obs = st->raw_rate ? (double)st->hp_kernels
                 : observed   ? st->solo_acc / st->wall_acc
                              : 0;
    double best = tl_tgs_ctl_best(&st->ctl), rate = st->ctl.rate;
    tl_tgs_ctl_update(&st->ctl, observed, obs);
    if (st->log)
        fprintf(st->log, "%lld,%.0f,%.0f,%llu,%d,%.6f,%.6f,%.6f,%.6f\n", (long long)now,
                st->solo_acc, st->wall_acc, (unsigned long long)st->hp_kernels, observed, obs,
                best, rate, st->ctl.rate);
    st->solo_acc = st->wall_acc = 0;
    st->hp_kernels = 0;
    add_tokens(st);
    pump(st);
    if (busy(st))
        arm(st);
}

static void hp_done(tl_policy *p, tl_task *t, const tl_launch_result *r)
{
    tgs_state *st = p->state;
    int s = t->op->stream >= 0 ? t->op->stream % TL_MAX_JOB_STREAMS : 0;
    tl_ns *last = &st->last_end[t->job->id][s];
    /* could start: handed to the GPU (on hardware a graph's launch comes after
     * the host issued its ops: not the GPU's time) and the stream free */
    tl_ns ready = r->submitted_ns > t->issued_ns ? r->submitted_ns : t->issued_ns;
    if (*last > ready)
        ready = *last;
    st->solo_acc += (double)t->op->dur_ns;
    st->wall_acc += (double)(r->end_ns > ready ? r->end_ns - ready : 1);
    *last = r->end_ns;
    st->hp_kernels += t->op->kind == TL_OP_KERNEL;
    st->hp_outstanding--;
}

static int tgs_setup(tl_policy *p, tl_err *err)
{
    tgs_state *st = p->state;
    size_t n = (size_t)p->n_jobs + 1;
    st->p = p;
    st->maps = tl_xcalloc(n, sizeof *st->maps);
    st->high = tl_xcalloc(n, sizeof *st->high);
    st->q = tl_xcalloc(n, sizeof *st->q);
    st->last_end = tl_xcalloc(n, sizeof *st->last_end);
    for (int j = 0; j < p->n_jobs; j++)
        st->high[j] = tl_policy_job_is_high(p, &p->jobs[j]);
    tl_tgs_ctl_init(&st->ctl, st->initial_rate, st->ssthresh, st->increase, st->decrease,
                    st->tolerance, st->min_rate, st->max_rate, st->history);
    add_tokens(st);
    const char *log = getenv("TALLY_TGS_LOG");
    if (log && *log) {
        st->log = fopen(log, "a");
        if (!st->log)
            return tl_errf(err, TL_EIO, "policy tgs: TALLY_TGS_LOG=%s: cannot open", log);
        fprintf(st->log, "# tgs run: %d jobs, window_ns %lld\n", p->n_jobs, (long long)st->window_ns);
    }
    tl_job_ctx_plan plan = { .shared = false, .kind = st->mps ? TL_CTX_MPS : TL_CTX_TIMESLICED };
    return tl_policy_setup_jobs(p, &plan, NULL, st->maps, err);
}

static void tgs_submit(tl_policy *p, tl_task *t)
{
    tgs_state *st = p->state;
    int j = t->job->id;
    arm(st);
    if (st->high[j]) {
        st->hp_outstanding++;
        if (tl_policy_run_plain_then(p, t, tl_stream_map_get(&st->maps[j], t->op), hp_done) < 0)
            st->hp_outstanding--;
        return;
    }
    tl_task_queue_push(&st->q[j], t);
    pump(st);
}

static void tgs_teardown(tl_policy *p)
{
    tgs_state *st = p->state;
    for (int j = 0; st->q && j < p->n_jobs; j++)
        tl_task_queue_close(&st->q[j]);
    free(st->q);
    free(st->maps);
    free(st->high);
    free(st->last_end);
    if (st->log)
        fclose(st->log);
    st->log = NULL;
    st->last_end = NULL;
    st->q = NULL;
    st->maps = NULL;
    st->high = NULL;
}

static int tgs_check_params(const void *state, tl_err *err)
{
    const tgs_state *st = state;
    if (st->min_rate > st->max_rate)
        return tl_errf(err, TL_ERANGE, "policy tgs: min_rate %g is above max_rate %g", st->min_rate,
                       st->max_rate);
    return 0;
}

const tl_policy_ops tl_policy_tgs = {
    .name = "tgs",
    .summary = "best-effort kernels throttled to a TCP-like GPU-time share driven by high-priority throughput",
    .state_size = sizeof(tgs_state),
    .params = tgs_params,
    .check_params = tgs_check_params,
    .setup = tgs_setup,
    .submit = tgs_submit,
    .teardown = tgs_teardown,
};
