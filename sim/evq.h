/* The engine's event queue, behind a small API so that it can be swapped
 * (calendar queue, ladder queue) without touching the engine.
 *
 * Today: a binary min-heap on (time, seq). Keys live inline in the heap array
 * (comparisons touch one cache line); payloads live in a slot pool, and every
 * slot knows its heap position, so an event can be removed in O(log n).
 * A handle is (generation << 32 | slot + 1): a stale handle (event fired or
 * removed, slot reused) is recognised and ignored. Internal to sim/. */
#ifndef TALLY_SIM_EVQ_H
#define TALLY_SIM_EVQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tally/engine.h"

tl_evq *tl_evq_new(void);
void tl_evq_free(tl_evq *q);
/* Insert ev (time and seq set by the caller); returns its handle (never 0). */
uint64_t tl_evq_push(tl_evq *q, const tl_event *ev);
/* The earliest event, or NULL when empty. Valid until the next change. */
const tl_event *tl_evq_peek(const tl_evq *q);
/* Remove the earliest event into *out. False when empty. */
bool tl_evq_pop(tl_evq *q, tl_event *out);
/* Remove the event with this handle. False if it is no longer queued. */
bool tl_evq_remove(tl_evq *q, uint64_t handle);
size_t tl_evq_len(const tl_evq *q);

#endif
