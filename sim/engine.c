/* The discrete-event engine: a clock, an event queue (evq.h) and a flush hook. */
#include "tally/engine.h"

#include <string.h>

#include "engine_inline.h"

void tl_engine_init(tl_engine *e)
{
    memset(e, 0, sizeof *e);
    e->q = tl_evq_new();
}

void tl_engine_close(tl_engine *e)
{
    if (!e)
        return;
    tl_evq_free(e->q);
    memset(e, 0, sizeof *e);
}

tl_event_id tl_engine_at(tl_engine *e, tl_ns t, tl_event_fn fn, void *ctx, void *arg, uint64_t u)
{
    return tl_engine_at_inline(e, t, fn, ctx, arg, u);
}

tl_event_id tl_engine_move(tl_engine *e, tl_event_id id, tl_ns t)
{
    return tl_engine_move_inline(e, id, t);
}

bool tl_engine_cancel(tl_engine *e, tl_event_id id)
{
    return id != 0 && tl_evq_remove(e->q, id);
}

void tl_engine_stop(tl_engine *e)
{
    e->stop = true;
}

void tl_engine_set_flush(tl_engine *e, tl_flush_fn fn, void *ctx)
{
    e->flush = fn;
    e->flush_ctx = ctx;
}

void tl_engine_request_flush(tl_engine *e)
{
    e->flush_pending = true;
}

size_t tl_engine_pending(const tl_engine *e)
{
    return tl_evq_len(e->q);
}

/* Run the flush hook until it stops asking (it may schedule events "now",
 * which then run before the clock moves). */
static void do_flush(tl_engine *e)
{
    while (e->flush_pending) {
        e->flush_pending = false;
        if (e->flush)
            e->flush(e->flush_ctx);
    }
}

void tl_engine_run(tl_engine *e, tl_ns until)
{
    tl_evq *q = e->q;
    e->stop = false;
    while (!e->stop) {
        /* the earliest entry, read once: its time decides flush, stop or fire */
        const tl_evq_ent *top = tl_evq_top(q);
        if (!top) {
            if (!e->flush_pending)
                break;
            do_flush(e);
            continue;
        }
        tl_ns t = top->time;
        if (e->flush_pending && t > e->now) {
            do_flush(e);
            continue;
        }
        if (until >= 0 && t > until) {
            if (until > e->now)
                e->now = until;
            break;
        }
        tl_event ev = tl_evq_pop_top(q, top);
        e->now = t;
        e->processed++;
        ev.fn(ev.ctx, ev.arg, ev.u);
    }
    /* A stop may leave flush work at the current instant: do it so that the
     * model's state is consistent for the caller. */
    do_flush(e);
    e->peak = q->peak; /* copied once here, not at every push */
}
