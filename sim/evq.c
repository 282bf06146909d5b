/* The event queue's cold parts (evq.h has the operations and the design). */
#include "evq.h"

#include <stdlib.h>

#include "tally/common.h"

tl_evq *tl_evq_new(void)
{
    return tl_xcalloc(1, sizeof(tl_evq));
}

void tl_evq_free(tl_evq *q)
{
    if (!q)
        return;
    free(q->ent);
    free(q->slots);
    free(q);
}

/* Sorted form: move the entries to the front of the array. */
static void compact(tl_evq *q)
{
    for (uint32_t k = 0; k < q->len; k++)
        tl_evq_put(q, k, q->ent[q->head + k]);
    q->head = 0;
}

void tl_evq_grow(tl_evq *q)
{
    if (q->head + q->len == q->cap) {
        if (q->head > 0) {
            compact(q);
        } else {
            q->cap = q->cap ? q->cap * 2 : 64;
            q->ent = tl_xrealloc(q->ent, (size_t)q->cap * sizeof *q->ent);
        }
    }
    if (!q->free_head) {
        if (q->n_slots == q->cap_slots) {
            q->cap_slots = q->cap_slots ? q->cap_slots * 2 : 64;
            q->slots = tl_xrealloc(q->slots, (size_t)q->cap_slots * sizeof *q->slots);
        }
        tl_evq_slot *s = &q->slots[q->n_slots];
        s->gen = 1;
        s->queued = false;
        s->next_free = 0;
        q->free_head = ++q->n_slots;
    }
}

/* A sorted array is a min-heap already. */
void tl_evq_to_heap(tl_evq *q)
{
    compact(q);
    q->is_heap = true;
}

void tl_evq_to_sorted(tl_evq *q)
{
    for (uint32_t i = 1; i < q->len; i++) /* few entries: insertion sort */
        tl_evq_rise(q, i, q->ent[i]);
    q->head = 0;
    q->is_heap = false;
}
