/* The discrete-event engine (ROSS-like: the engine knows nothing of GPUs).
 * Integer-nanosecond time, a binary-heap event queue ordered by (time, seq):
 * events at the same time fire in the order they were scheduled, so runs are
 * deterministic. Cancelled events are skipped lazily. */
#ifndef TALLY_ENGINE_H
#define TALLY_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tally/common.h"

typedef void (*tl_event_fn)(void *ctx, void *arg, uint64_t u);

typedef struct tl_event {
    tl_ns time;
    uint64_t seq;       /* tie-breaker: scheduling order */
    tl_event_fn fn;
    void *ctx;
    void *arg;
    uint64_t u;
} tl_event;

typedef struct tl_engine {
    tl_event *heap;
    size_t len, cap;
    size_t peak;
    uint64_t next_seq;
    uint64_t processed;
    tl_ns now;
    bool stop;
    unsigned char *cancelled; /* bitmap by seq, grown on demand */
    size_t cancelled_cap;
} tl_engine;

void tl_engine_init(tl_engine *e);
void tl_engine_close(tl_engine *e);
/* Schedule fn at absolute time t (>= now). Returns the event's seq (an id). */
uint64_t tl_engine_at(tl_engine *e, tl_ns t, tl_event_fn fn, void *ctx, void *arg, uint64_t u);
void tl_engine_cancel(tl_engine *e, uint64_t seq);
/* Process events with time <= until (or all if until < 0) until empty or stopped. */
void tl_engine_run(tl_engine *e, tl_ns until);
static inline tl_ns tl_engine_now(const tl_engine *e) { return e->now; }
static inline bool tl_engine_empty(const tl_engine *e) { return e->len == 0; }

#endif
