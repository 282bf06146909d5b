/* Indexed binary min-heap on (time, seq): the cold parts (evq.h has the
 * operations). */
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
    free(q->heap);
    free(q->slots);
    free(q);
}

void tl_evq_grow(tl_evq *q)
{
    if (q->len == q->cap) {
        q->cap = q->cap ? q->cap * 2 : 64;
        q->heap = tl_xrealloc(q->heap, (size_t)q->cap * sizeof *q->heap);
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
