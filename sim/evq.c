/* Indexed binary min-heap on (time, seq); see evq.h. */
#include "evq.h"

#include <stdlib.h>

#include "tally/common.h"

typedef struct heap_ent {
    tl_ns time;
    uint64_t seq;
    uint32_t slot;
} heap_ent;

typedef struct slot {
    tl_event ev;
    uint32_t pos;       /* index in the heap while queued */
    uint32_t gen;       /* bumped when the slot is released */
    uint32_t next_free; /* free-list link (slot index + 1; 0 ends) */
    bool queued;
} slot;

struct tl_evq {
    heap_ent *heap;
    size_t len, cap;
    slot *slots;
    uint32_t n_slots, cap_slots;
    uint32_t free_head; /* slot index + 1; 0: none */
};

static inline bool before(const heap_ent *a, const heap_ent *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static inline void place(tl_evq *q, size_t i, heap_ent e)
{
    q->heap[i] = e;
    q->slots[e.slot].pos = (uint32_t)i;
}

static void sift_up(tl_evq *q, size_t i)
{
    heap_ent e = q->heap[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&e, &q->heap[p]))
            break;
        place(q, i, q->heap[p]);
        i = p;
    }
    place(q, i, e);
}

static void sift_down(tl_evq *q, size_t i)
{
    heap_ent e = q->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->len)
            break;
        if (c + 1 < q->len && before(&q->heap[c + 1], &q->heap[c]))
            c++;
        if (!before(&q->heap[c], &e))
            break;
        place(q, i, q->heap[c]);
        i = c;
    }
    place(q, i, e);
}

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

static uint32_t slot_get(tl_evq *q)
{
    if (q->free_head) {
        uint32_t s = q->free_head - 1;
        q->free_head = q->slots[s].next_free;
        return s;
    }
    if (q->n_slots == q->cap_slots) {
        q->cap_slots = q->cap_slots ? q->cap_slots * 2 : 64;
        q->slots = tl_xrealloc(q->slots, q->cap_slots * sizeof *q->slots);
    }
    slot *s = &q->slots[q->n_slots];
    s->gen = 1;
    s->queued = false;
    return q->n_slots++;
}

static void slot_put(tl_evq *q, uint32_t s)
{
    q->slots[s].queued = false;
    q->slots[s].gen++;
    q->slots[s].next_free = q->free_head;
    q->free_head = s + 1;
}

uint64_t tl_evq_push(tl_evq *q, const tl_event *ev)
{
    uint32_t s = slot_get(q);
    q->slots[s].ev = *ev;
    q->slots[s].queued = true;
    if (q->len == q->cap) {
        q->cap = q->cap ? q->cap * 2 : 64;
        q->heap = tl_xrealloc(q->heap, q->cap * sizeof *q->heap);
    }
    q->heap[q->len] = (heap_ent){ ev->time, ev->seq, s };
    q->len++;
    sift_up(q, q->len - 1);
    return ((uint64_t)q->slots[s].gen << 32) | (uint64_t)(s + 1);
}

const tl_event *tl_evq_peek(const tl_evq *q)
{
    return q->len ? &q->slots[q->heap[0].slot].ev : NULL;
}

static void remove_at(tl_evq *q, size_t i)
{
    uint32_t s = q->heap[i].slot;
    q->len--;
    if (i < q->len) {
        heap_ent last = q->heap[q->len];
        bool up = before(&last, &q->heap[i]);
        place(q, i, last);
        if (up)
            sift_up(q, i);
        else
            sift_down(q, i);
    }
    slot_put(q, s);
}

bool tl_evq_pop(tl_evq *q, tl_event *out)
{
    if (!q->len)
        return false;
    *out = q->slots[q->heap[0].slot].ev;
    remove_at(q, 0);
    return true;
}

bool tl_evq_remove(tl_evq *q, uint64_t handle)
{
    uint32_t s1 = (uint32_t)(handle & 0xffffffffu);
    uint32_t gen = (uint32_t)(handle >> 32);
    if (s1 == 0 || s1 > q->n_slots)
        return false;
    slot *s = &q->slots[s1 - 1];
    if (!s->queued || s->gen != gen)
        return false;
    remove_at(q, s->pos);
    return true;
}

size_t tl_evq_len(const tl_evq *q)
{
    return q->len;
}
