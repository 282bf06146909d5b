/* The engine's event queue, behind a small API so that it can be swapped
 * (calendar queue, ladder queue) without touching the engine.
 *
 * Events are ordered by (time, seq). Entries (time, seq, slot) live in an
 * array (comparisons touch few cache lines); payloads live in a slot pool,
 * and every slot knows its entry's position, so an event can be removed or
 * re-timed in place. A handle is (generation << 32 | slot + 1): a stale
 * handle (event fired or removed, slot reused) is recognised and ignored.
 *
 * The GPU model's queue is short (a few to a few tens of events: group ends,
 * host timers), so the entries are an array sorted LATEST FIRST: pop takes
 * the last entry in O(1), and a new event, usually due before most of the
 * queued ones, moves only the entries due before it one place up; re-time
 * and remove shift the entries in between. Past EVQ_SMALL_MAX entries the
 * array becomes a binary min-heap (O(log n) everywhere; the sorted array
 * reversed is one) and it is sorted again when it shrinks below
 * EVQ_SMALL_MIN. Keys are unique, so the order of events is the same in
 * either form.
 *
 * Pushes and re-times always take a seq above every queued one (the engine's
 * next sequence number), so in the sorted form an event placed anew goes
 * after every queued event of the same time: placing it compares times only.
 *
 * The operations are inline: the engine and the GPU model call them once or
 * twice per event, and call overhead would be a good part of their cost.
 * Growth and the changes of form live in evq.c. Internal to sim/. */
#ifndef TALLY_SIM_EVQ_H
#define TALLY_SIM_EVQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tally/engine.h"

typedef struct tl_evq_ent {
    tl_ns time;
    uint64_t seq;
    uint32_t slot;
} tl_evq_ent;

typedef struct tl_evq_slot {
    tl_event ev;        /* fn, ctx, arg, u (time and seq live in the entry) */
    uint32_t pos;       /* index in ent while queued */
    uint32_t gen;       /* bumped when the slot is released: a handle is current
                           (its event queued) while its generation is the slot's,
                           as a free slot's generation is handed out only by its
                           next push */
    uint32_t next_free; /* free-list link (slot index + 1; 0 ends) */
} tl_evq_slot;

#define EVQ_SMALL_MAX 32 /* more entries: heap form */
#define EVQ_SMALL_MIN 8  /* fewer entries in heap form: sorted again */

struct tl_evq {
    tl_evq_ent *ent;    /* sorted form: latest first; heap form: a min-heap */
    uint32_t len, cap;
    bool is_heap;
    tl_evq_slot *slots;
    uint32_t n_slots, cap_slots;
    uint32_t free_head; /* slot index + 1; 0: none */
    size_t peak;        /* largest len seen */
};

tl_evq *tl_evq_new(void);
void tl_evq_free(tl_evq *q);
/* A free slot, and room for its entry (cold path of tl_evq_push). */
void tl_evq_grow(tl_evq *q);
/* Sorted form -> heap form, and back (evq.c). */
void tl_evq_to_heap(tl_evq *q);
void tl_evq_to_sorted(tl_evq *q);

/* (time, seq) order: a before b. */
static inline bool tl_evq_less(const tl_evq_ent *a, const tl_evq_ent *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static inline void tl_evq_put(tl_evq *q, uint32_t i, tl_evq_ent e)
{
    q->ent[i] = e;
    q->slots[e.slot].pos = i;
}

static inline void tl_evq_sift_up(tl_evq *q, uint32_t i, tl_evq_ent e)
{
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!tl_evq_less(&e, &q->ent[p]))
            break;
        tl_evq_put(q, i, q->ent[p]);
        i = p;
    }
    tl_evq_put(q, i, e);
}

static inline void tl_evq_sift_down(tl_evq *q, uint32_t i, tl_evq_ent e)
{
    uint32_t n = q->len;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && tl_evq_less(&q->ent[c + 1], &q->ent[c]))
            c++;
        if (!tl_evq_less(&q->ent[c], &e))
            break;
        tl_evq_put(q, i, q->ent[c]);
        i = c;
    }
    tl_evq_put(q, i, e);
}

/* Sorted form (latest first): entry i becomes e, due earlier than what was
 * there: e moves towards the end past the entries due after it. e's seq is
 * above every queued one, so "after it" is a later time. */
static inline void tl_evq_sink(tl_evq *q, uint32_t i, tl_evq_ent e)
{
    tl_evq_ent *p = q->ent + i, *last = q->ent + q->len - 1;
    tl_evq_slot *slots = q->slots;
    tl_ns t = e.time;
    while (p != last && t < p[1].time) {
        *p = p[1];
        slots[p->slot].pos = i++;
        p++;
    }
    *p = e;
    slots[e.slot].pos = i;
}

/* Sorted form: entry i becomes e, due later than what was there (or i is a
 * new last place): e moves towards the front past the entries due before
 * it, i.e. (e's seq being above every queued one) at or before its time. */
static inline void tl_evq_rise(tl_evq *q, uint32_t i, tl_evq_ent e)
{
    tl_evq_ent *p = q->ent + i, *first = q->ent;
    tl_evq_slot *slots = q->slots;
    tl_ns t = e.time;
    while (p != first && p[-1].time <= t) {
        *p = p[-1];
        slots[p->slot].pos = i--;
        p--;
    }
    *p = e;
    slots[e.slot].pos = i;
}

/* Insert an event at (time, seq), seq above every queued one; returns its
 * handle (never 0). */
static inline uint64_t tl_evq_push(tl_evq *q, tl_ns time, uint64_t seq, tl_event_fn fn,
                                   void *ctx, void *arg, uint64_t u)
{
    if (!q->free_head) /* a free slot has room for its entry (tl_evq_grow) */
        tl_evq_grow(q);
    uint32_t s = q->free_head - 1;
    tl_evq_slot *sl = &q->slots[s];
    q->free_head = sl->next_free;
    sl->ev.fn = fn;
    sl->ev.ctx = ctx;
    sl->ev.arg = arg;
    sl->ev.u = u;
    uint32_t i = q->len++;
    if (q->len > q->peak)
        q->peak = q->len;
    tl_evq_ent e = { time, seq, s };
    if (q->is_heap) {
        tl_evq_sift_up(q, i, e);
    } else {
        tl_evq_rise(q, i, e);
        if (q->len > EVQ_SMALL_MAX)
            tl_evq_to_heap(q);
    }
    return ((uint64_t)sl->gen << 32) | (uint64_t)(s + 1);
}

/* The earliest entry, or NULL when empty. Valid until the next change. */
static inline const tl_evq_ent *tl_evq_top(const tl_evq *q)
{
    if (!q->len)
        return NULL;
    return &q->ent[q->is_heap ? 0 : q->len - 1];
}

static inline void tl_evq_release(tl_evq *q, uint32_t s)
{
    tl_evq_slot *sl = &q->slots[s];
    sl->gen++;
    sl->next_free = q->free_head;
    q->free_head = s + 1;
}

static inline void tl_evq_remove_at(tl_evq *q, uint32_t i)
{
    uint32_t s = q->ent[i].slot;
    if (q->is_heap) {
        uint32_t n = --q->len;
        if (i < n) {
            tl_evq_ent last = q->ent[n];
            if (tl_evq_less(&last, &q->ent[i]))
                tl_evq_sift_up(q, i, last);
            else
                tl_evq_sift_down(q, i, last);
        }
        if (n < EVQ_SMALL_MIN)
            tl_evq_to_sorted(q);
    } else {
        uint32_t n = --q->len;
        tl_evq_ent *p = q->ent + i, *end = q->ent + n;
        for (; p != end; p++, i++) {
            *p = p[1];
            q->slots[p->slot].pos = i;
        }
    }
    tl_evq_release(q, s);
}

/* Remove the earliest entry, top (tl_evq_top's, the queue unchanged since), and
 * return its event (time and seq included): the engine reads top's time first and
 * pops it without looking it up again. */
static inline tl_event tl_evq_pop_top(tl_evq *q, const tl_evq_ent *top)
{
    tl_evq_ent e = *top;
    tl_event ev = q->slots[e.slot].ev;
    ev.time = e.time;
    ev.seq = e.seq;
    if (q->is_heap) {
        tl_evq_remove_at(q, 0);
    } else {
        q->len--;
        tl_evq_release(q, e.slot);
    }
    return ev;
}

/* The queued event with this handle, or NULL if it is no longer queued. */
static inline tl_evq_slot *tl_evq_find(tl_evq *q, uint64_t handle)
{
    uint32_t s1 = (uint32_t)(handle & 0xffffffffu);
    if (s1 == 0 || s1 > q->n_slots)
        return NULL;
    tl_evq_slot *s = &q->slots[s1 - 1];
    if (s->gen != (uint32_t)(handle >> 32))
        return NULL;
    return s;
}

/* Remove the event with this handle. False if it is no longer queued. */
static inline bool tl_evq_remove(tl_evq *q, uint64_t handle)
{
    tl_evq_slot *s = tl_evq_find(q, handle);
    if (!s)
        return false;
    tl_evq_remove_at(q, s->pos);
    return true;
}

/* Give a queued event a new (time, seq), seq above every queued one,
 * keeping its handle and payload: the same order as removing it and pushing
 * it again with that key. False if it is no longer queued. */
static inline bool tl_evq_move(tl_evq *q, uint64_t handle, tl_ns time, uint64_t seq)
{
    tl_evq_slot *s = tl_evq_find(q, handle);
    if (!s)
        return false;
    uint32_t i = s->pos;
    tl_evq_ent e = { time, seq, q->ent[i].slot };
    /* the new seq is above the old one: earlier only if the time is */
    bool earlier = time < q->ent[i].time;
    if (q->is_heap) {
        if (earlier)
            tl_evq_sift_up(q, i, e);
        else
            tl_evq_sift_down(q, i, e);
    } else {
        if (earlier)
            tl_evq_sink(q, i, e);
        else
            tl_evq_rise(q, i, e);
    }
    return true;
}

static inline size_t tl_evq_len(const tl_evq *q)
{
    return q->len;
}

#endif
