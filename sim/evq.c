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

/* Every queued entry holds a slot, so with room for as many entries as
 * there are slots, a free slot means room for its entry: tl_evq_push checks
 * only for a free slot. */
void tl_evq_grow(tl_evq *q)
{
    if (!q->free_head) {
        if (q->n_slots == q->cap_slots) {
            q->cap_slots = q->cap_slots ? q->cap_slots * 2 : 64;
            q->slots = tl_xrealloc(q->slots, (size_t)q->cap_slots * sizeof *q->slots);
            q->cap = q->cap_slots;
            q->ent = tl_xrealloc(q->ent, (size_t)q->cap * sizeof *q->ent);
        }
        tl_evq_slot *s = &q->slots[q->n_slots];
        s->gen = 1;
        s->next_free = 0;
        q->free_head = ++q->n_slots;
    }
}

/* Latest first, reversed, is earliest first: a min-heap. */
void tl_evq_to_heap(tl_evq *q)
{
    for (uint32_t i = 0, j = q->len - 1; i < j; i++, j--) {
        tl_evq_ent t = q->ent[i];
        tl_evq_put(q, i, q->ent[j]);
        tl_evq_put(q, j, t);
    }
    if (q->len % 2) /* the middle entry stays: its position is right already */
        q->slots[q->ent[q->len / 2].slot].pos = q->len / 2;
    q->is_heap = true;
}

void tl_evq_to_sorted(tl_evq *q)
{
    q->is_heap = false;
    for (uint32_t i = 1; i < q->len; i++) { /* few entries: insertion sort, latest first */
        tl_evq_ent e = q->ent[i];
        uint32_t j = i;
        while (j > 0 && tl_evq_less(&q->ent[j - 1], &e)) {
            tl_evq_put(q, j, q->ent[j - 1]);
            j--;
        }
        tl_evq_put(q, j, e);
    }
}
