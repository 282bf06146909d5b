/* Inline forms of the engine's scheduling calls, for the GPU model's hot
 * paths (a group's end is scheduled, moved or cancelled several times per
 * kernel). tl_engine_at / tl_engine_move / tl_engine_cancel are these.
 * Internal to sim/. */
#ifndef TALLY_SIM_ENGINE_INLINE_H
#define TALLY_SIM_ENGINE_INLINE_H

#include "tally/engine.h"

#include "evq.h"

static inline tl_event_id tl_engine_at_inline(tl_engine *e, tl_ns t, tl_event_fn fn, void *ctx,
                                              void *arg, uint64_t u)
{
    return tl_evq_push(e->q, t < e->now ? e->now : t, e->next_seq++, fn, ctx, arg, u);
}

/* Re-time a pending event: the same order as cancelling it and scheduling
 * it again at t (it takes the next sequence number), keeping its id. Returns
 * the id, or 0 if it already fired or was cancelled. */
static inline tl_event_id tl_engine_move_inline(tl_engine *e, tl_event_id id, tl_ns t)
{
    if (id == 0)
        return 0;
    if (!tl_evq_move(e->q, id, t < e->now ? e->now : t, e->next_seq))
        return 0;
    e->next_seq++;
    return id;
}

static inline bool tl_engine_cancel_inline(tl_engine *e, tl_event_id id)
{
    return id != 0 && tl_evq_remove(e->q, id);
}

#endif
