/* The discrete-event engine (ROSS-like: the engine knows nothing of GPUs).
 *
 * Integer-nanosecond time and an event queue ordered by (time, seq): events at
 * the same time fire in the order they were scheduled, so runs are
 * deterministic. The queue sits behind a small internal API (sim/evq.h; a
 * binary heap with a position index today), so it can be swapped without
 * touching the engine's users. Cancellation removes the event at once
 * (O(log n)); ids of events that already fired or were cancelled are harmless.
 *
 * Flush: a model that wants to act once per instant, after every event of that
 * instant has run (the GPU model dispatches blocks then, so that blocks that
 * end together are replaced together), calls tl_engine_request_flush; the
 * engine calls the flush function before the clock moves on (or before run
 * returns). Flushes are not events and do not count in 'processed'.
 */
#ifndef TALLY_ENGINE_H
#define TALLY_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tally/common.h"

typedef void (*tl_event_fn)(void *ctx, void *arg, uint64_t u);
typedef void (*tl_flush_fn)(void *ctx);

typedef struct tl_event {
    tl_ns time;
    uint64_t seq;       /* tie-breaker: scheduling order */
    tl_event_fn fn;
    void *ctx;
    void *arg;
    uint64_t u;
} tl_event;

/* An event's id: never 0, so 0 can mean "none". */
typedef uint64_t tl_event_id;

typedef struct tl_evq tl_evq; /* sim/evq.h */

typedef struct tl_engine {
    tl_evq *q;
    tl_ns now;
    uint64_t next_seq;
    uint64_t processed;   /* events fired */
    size_t peak;          /* largest queue length seen (as of the end of the last
                             run; the queue keeps the running figure) */
    bool stop;            /* set by tl_engine_stop: run returns after this event */
    bool flush_pending;
    tl_flush_fn flush;
    void *flush_ctx;
} tl_engine;

void tl_engine_init(tl_engine *e);
void tl_engine_close(tl_engine *e);
/* Schedule fn at absolute time t; a t before now is taken as now (time never
 * runs backwards). Returns the event's id. */
tl_event_id tl_engine_at(tl_engine *e, tl_ns t, tl_event_fn fn, void *ctx, void *arg, uint64_t u);
/* Remove a pending event. Returns false if it already fired or was cancelled. */
bool tl_engine_cancel(tl_engine *e, tl_event_id id);
/* Re-time a pending event to t (a t before now is taken as now): the same
 * order as cancelling it and scheduling it again, without giving up its slot;
 * it keeps its id. Returns the id, or 0 if it already fired or was cancelled
 * (nothing is scheduled then). */
tl_event_id tl_engine_move(tl_engine *e, tl_event_id id, tl_ns t);
/* Process events in (time, seq) order while their time <= until (all if
 * until < 0), until the queue is empty or tl_engine_stop is called. The clock
 * ends at the last event's time, or at 'until' if events remain after it. */
void tl_engine_run(tl_engine *e, tl_ns until);
void tl_engine_stop(tl_engine *e);
void tl_engine_set_flush(tl_engine *e, tl_flush_fn fn, void *ctx);
void tl_engine_request_flush(tl_engine *e);
size_t tl_engine_pending(const tl_engine *e);
static inline tl_ns tl_engine_now(const tl_engine *e) { return e->now; }
static inline bool tl_engine_empty(const tl_engine *e) { return tl_engine_pending(e) == 0; }

#endif
