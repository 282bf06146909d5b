/* Time slicing between units (contexts; the MPS server; the partition set).
 *
 * Only the active unit has blocks running. While it is the only unit with
 * kernel work it runs without switches. Its slices of timeslice_ns run back
 * to back from its switch-in; as soon as another unit has work, the active one
 * keeps the GPU to the end of the slice in progress; then its resident blocks are paused
 * (their remaining time kept), nothing is resident for ctx_switch_ns, and the
 * next unit with work in round-robin order resumes. A unit that runs out of
 * work hands over at once, without a gap (nothing to save). Decisions are
 * taken at the end of an instant (engine flush), so work that a completion
 * callback launches at the same instant keeps its unit active. */
#include "sim_internal.h"

void unit_work_added(sim *s, unit *u)
{
    u->pending++;
    s->eng.flush_pending = true; /* tl_engine_request_flush */
}

void unit_work_removed(sim *s, unit *u)
{
    u->pending--;
    s->eng.flush_pending = true; /* tl_engine_request_flush */
}

/* The next unit with work after 'after' (round robin), or NULL. */
static unit *next_with_work(sim *s, const unit *after, bool include_after)
{
    int start = after ? after->index + 1 : 0;
    for (int i = 0; i < s->n_units; i++) {
        unit *u = s->units[(start + i) % s->n_units];
        if (u == after && !include_after)
            continue;
        if (u->pending > 0)
            return u;
    }
    return NULL;
}

static bool others_have_work(sim *s, const unit *u)
{
    for (int i = 0; i < s->n_units; i++)
        if (s->units[i] != u && s->units[i]->pending > 0)
            return true;
    return false;
}

static void activate(sim *s, unit *u)
{
    s->active = u;
    s->idle_since = -1;
    s->active_since = sim_now(s);
    s->switching = false;
    bool any_paused = false;
    for (group *g = u->groups; g; g = g->next)
        if (g->paused)
            any_paused = true;
    if (any_paused) {
        sm_presence_all(s, u, +1);
        for (group *g = u->groups; g; g = g->next)
            group_resume(s, g);
    }
    unit_dirty(s, u);
}

static void switch_in_ev(void *ctx, void *arg, uint64_t x)
{
    sim *s = ctx;
    s->switch_ev = 0;
    activate(s, arg);
}

static void slice_end_ev(void *ctx, void *arg, uint64_t x)
{
    sim *s = ctx;
    s->slice_ev = 0;
    unit *u = s->active;
    if (!u || s->switching || !others_have_work(s, u))
        return;
    /* Preempt: save the resident blocks' progress, then a gap. */
    for (group *g = u->groups; g; g = g->next)
        group_pause(s, g);
    sm_presence_all(s, u, -1);
    s->stats.ctx_switches++;
    s->switching = true;
    s->switch_to = next_with_work(s, u, false);
    s->switch_ev = tl_engine_at(&s->eng, sim_now(s) + s->gpu.ctx_switch_ns, switch_in_ev, s,
                                s->switch_to, 0);
}

static void idle_ev_fn(void *ctx, void *arg, uint64_t x)
{
    sim *s = ctx;
    s->idle_ev = 0;
    unit *u = s->active;
    if (s->switching || (u && u->pending > 0))
        return;
    slice_update(s);
}

/* slice_overtime: the active unit's slice ran out while no other unit had work;
 * the first launch of its own (not a later node of a graph) that starts after
 * that begins a new slice. On the H100 a stream of 30 us kernels renews its
 * slice, a lone long kernel or a CUDA graph of the same 30 us kernels does not,
 * and gives way ~0.15 ms after another context gets work
 * (experiments/results/hw/timeslice/slice_after_idle*.txt). */
void slice_launch_started(sim *s, const launch *l)
{
    if (!s->p.slice_overtime || s->n_units == 1 || !l->renews || s->switching || !s->active ||
        l->st->c->u != s->active)
        return;
    if (sim_now(s) >= s->active_since + s->gpu.timeslice_ns)
        s->active_since = sim_now(s);
}

void slice_update_slow(sim *s)
{
    if (s->switching)
        return;
    if (s->n_units == 1) { /* nothing to slice: the one unit is always active */
        if (!s->active)
            activate(s, s->units[0]);
        return;
    }
    unit *u = s->active;
    if (u && u->pending > 0) {
        /* Work after an idle as long as a hand-over's (idle_handover_ns) in
         * which no other unit had work: a new slice (slice_restart). A shorter
         * idle, or one another unit waited through, keeps the slice in
         * progress. */
        if (s->idle_since >= 0 && s->p.slice_restart && !s->idle_contested &&
            sim_now(s) - s->idle_since >= s->p.idle_handover_ns)
            s->active_since = sim_now(s);
        s->idle_since = -1;
        if (s->idle_ev) {
            tl_engine_cancel(&s->eng, s->idle_ev);
            s->idle_ev = 0;
        }
    }
    if (!u || u->pending == 0) {
        /* Idle hand-over: nothing resident, nothing to save, no gap. An idle
         * active unit keeps its place for round robin until then. */
        tl_engine_cancel(&s->eng, s->slice_ev);
        s->slice_ev = 0;
        if (u && s->idle_since < 0) {
            s->idle_since = sim_now(s);
            s->idle_contested = false;
        }
        unit *next = next_with_work(s, u, true);
        if (next && next != u) {
            s->idle_contested = true;
            tl_ns at = u ? s->idle_since + s->p.idle_handover_ns : 0;
            if (at <= sim_now(s)) {
                if (s->idle_ev) {
                    tl_engine_cancel(&s->eng, s->idle_ev);
                    s->idle_ev = 0;
                }
                if (u && s->p.idle_switch_ns > 0) {
                    /* Nothing to save, but the next context still takes
                     * idle_switch_ns to start (the H100: 75 us). */
                    s->switching = true;
                    s->switch_to = next;
                    s->switch_ev = tl_engine_at(&s->eng, sim_now(s) + s->p.idle_switch_ns,
                                                switch_in_ev, s, next, 0);
                } else {
                    activate(s, next);
                }
            } else if (!s->idle_ev) {
                s->idle_ev = tl_engine_at(&s->eng, at, idle_ev_fn, s, NULL, 0);
            }
        }
    }
    u = s->active;
    if (u && u->pending > 0 && !s->slice_ev && others_have_work(s, u)) {
        /* Slices run back to back from the unit's switch-in, whether or not
         * another unit waits: work that arrives meets the end of the slice in
         * progress (the H100: a kernel of a process that idled G us beside a
         * busy one waits 2.39 ms - G for G up to 1 ms, and 4.18 ms - 3.06 ms
         * + 0.30 ms after 3.06 ms; experiments/results/hw/timeslice). */
        tl_ns since = s->active_since, ts = s->gpu.timeslice_ns, now = sim_now(s), end;
        if (s->p.slice_overtime) /* one that ran out unrenewed (slice_launch_started) gives way now */
            end = since + ts > now ? since + ts : now;
        else
            end = since + ((now - since) / ts + 1) * ts;
        s->slice_ev = tl_engine_at(&s->eng, end, slice_end_ev, s, NULL, 0);
    }
}
