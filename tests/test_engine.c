/* The discrete-event engine: (time, seq) order, cancellation, run(until),
 * the per-instant flush, and a randomized check against a sorted reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tally/engine.h"
#include "tally/rng.h"

typedef struct rec {
    tl_ns t[4096];
    uint64_t u[4096];
    int n;
    int flushes;
    tl_ns flush_at[64];
} rec;

static void note(void *ctx, void *arg, uint64_t u)
{
    rec *r = arg;
    tl_engine *e = ctx;
    r->t[r->n] = tl_engine_now(e);
    r->u[r->n] = u;
    r->n++;
}

static void test_order_and_ties(void **st)
{
    tl_engine e;
    rec r = { 0 };
    tl_engine_init(&e);
    tl_engine_at(&e, 30, note, &e, &r, 1);
    tl_engine_at(&e, 10, note, &e, &r, 2);
    tl_engine_at(&e, 20, note, &e, &r, 3);
    tl_engine_at(&e, 10, note, &e, &r, 4); /* same time: after u=2 */
    tl_engine_at(&e, 10, note, &e, &r, 5);
    tl_engine_run(&e, -1);
    uint64_t want[] = { 2, 4, 5, 3, 1 };
    assert_int_equal(r.n, 5);
    for (int i = 0; i < 5; i++)
        assert_int_equal(r.u[i], want[i]);
    assert_int_equal(e.processed, 5);
    assert_int_equal(tl_engine_now(&e), 30);
    assert_int_equal(e.peak, 5);
    assert_true(tl_engine_empty(&e));
    tl_engine_close(&e);
}

static void test_cancel(void **st)
{
    tl_engine e;
    rec r = { 0 };
    tl_engine_init(&e);
    tl_event_id a = tl_engine_at(&e, 5, note, &e, &r, 1);
    tl_event_id b = tl_engine_at(&e, 6, note, &e, &r, 2);
    tl_event_id c = tl_engine_at(&e, 7, note, &e, &r, 3);
    assert_true(tl_engine_cancel(&e, b));
    assert_false(tl_engine_cancel(&e, b)); /* twice: harmless */
    assert_false(tl_engine_cancel(&e, 0));
    assert_false(tl_engine_cancel(&e, 12345678901ull));
    assert_int_equal(tl_engine_pending(&e), 2);
    tl_engine_run(&e, -1);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.u[0], 1);
    assert_int_equal(r.u[1], 3);
    /* ids of fired events are stale, even when their slot is reused */
    tl_event_id d = tl_engine_at(&e, 100, note, &e, &r, 4);
    assert_false(tl_engine_cancel(&e, a));
    assert_false(tl_engine_cancel(&e, c));
    assert_true(tl_engine_cancel(&e, d));
    tl_engine_close(&e);
}

static void test_run_until_and_past(void **st)
{
    tl_engine e;
    rec r = { 0 };
    tl_engine_init(&e);
    tl_engine_at(&e, 10, note, &e, &r, 1);
    tl_engine_at(&e, 20, note, &e, &r, 2);
    tl_engine_at(&e, 30, note, &e, &r, 3);
    tl_engine_run(&e, 20); /* inclusive */
    assert_int_equal(r.n, 2);
    assert_int_equal(tl_engine_now(&e), 20);
    tl_engine_run(&e, 25); /* nothing to do: the clock moves to 25 */
    assert_int_equal(r.n, 2);
    assert_int_equal(tl_engine_now(&e), 25);
    tl_engine_at(&e, 3, note, &e, &r, 4); /* in the past: fires now */
    tl_engine_run(&e, -1);
    assert_int_equal(r.n, 4);
    assert_int_equal(r.u[2], 4);
    assert_int_equal(r.t[2], 25);
    assert_int_equal(r.t[3], 30);
    tl_engine_close(&e);
}

/* The flush runs once per instant, after every event of the instant,
 * including events scheduled at the same instant by earlier events. */
typedef struct fl {
    tl_engine *e;
    rec *r;
} fl;

static void spawn(void *ctx, void *arg, uint64_t u)
{
    fl *f = arg;
    note(f->e, f->r, u);
    tl_engine_request_flush(f->e);
    if (u == 1)
        tl_engine_at(f->e, tl_engine_now(f->e), spawn, f->e, f, 2);
}

static void on_flush(void *ctx)
{
    fl *f = ctx;
    f->r->flush_at[f->r->flushes++] = tl_engine_now(f->e);
    f->r->u[f->r->n++] = 99;
}

static void test_flush(void **st)
{
    tl_engine e;
    rec r = { 0 };
    fl f = { &e, &r };
    tl_engine_init(&e);
    tl_engine_set_flush(&e, on_flush, &f);
    tl_engine_at(&e, 10, spawn, &e, &f, 1);
    tl_engine_at(&e, 10, spawn, &e, &f, 3);
    tl_engine_at(&e, 20, spawn, &e, &f, 4);
    tl_engine_at(&e, 30, note, &e, &r, 5); /* no flush requested */
    tl_engine_run(&e, -1);
    uint64_t want[] = { 1, 3, 2, 99, 4, 99, 5 };
    assert_int_equal(r.n, 7);
    for (int i = 0; i < 7; i++)
        assert_int_equal(r.u[i], want[i]);
    assert_int_equal(r.flushes, 2);
    assert_int_equal(r.flush_at[0], 10);
    assert_int_equal(r.flush_at[1], 20);
    /* a flush requested outside run happens at the start of the next run */
    tl_engine_request_flush(&e);
    tl_engine_run(&e, -1);
    assert_int_equal(r.flushes, 3);
    assert_int_equal(r.flush_at[2], 30);
    tl_engine_close(&e);
}

static void stopper(void *ctx, void *arg, uint64_t u)
{
    note(ctx, arg, u);
    if (u == 2)
        tl_engine_stop(ctx);
}

static void test_stop(void **st)
{
    tl_engine e;
    rec r = { 0 };
    tl_engine_init(&e);
    for (int i = 1; i <= 4; i++)
        tl_engine_at(&e, i, stopper, &e, &r, (uint64_t)i);
    tl_engine_run(&e, -1);
    assert_int_equal(r.n, 2);
    tl_engine_run(&e, -1);
    assert_int_equal(r.n, 4);
    tl_engine_close(&e);
}

/* Randomized: 3000 events (many equal times), a third cancelled; the fired
 * sequence must be the reference sorted by (time, scheduling order). */
static void test_random_against_reference(void **st)
{
    enum { N = 3000 };
    tl_engine e;
    static rec r;
    memset(&r, 0, sizeof r);
    tl_rng g;
    tl_rng_init(&g, 42);
    tl_engine_init(&e);
    static tl_event_id ids[N];
    static tl_ns times[N];
    static bool cancelled[N];
    for (int i = 0; i < N; i++) {
        times[i] = (tl_ns)(tl_rng_next(&g) % 200);
        ids[i] = tl_engine_at(&e, times[i], note, &e, &r, (uint64_t)i);
    }
    int n_live = N;
    for (int i = 0; i < N; i++)
        if (tl_rng_next(&g) % 3 == 0) {
            assert_true(tl_engine_cancel(&e, ids[i]));
            cancelled[i] = true;
            n_live--;
        }
    tl_engine_run(&e, -1);
    assert_int_equal(r.n, n_live);
    int k = 0;
    for (tl_ns t = 0; t < 200; t++)
        for (int i = 0; i < N; i++)
            if (times[i] == t && !cancelled[i]) {
                assert_int_equal(r.u[k], i);
                assert_int_equal(r.t[k], t);
                k++;
            }
    assert_int_equal(k, n_live);
    tl_engine_close(&e);
}

/* tl_engine_move orders an event exactly as cancelling it and scheduling it
 * again would (it takes the next sequence number), keeps its id, clamps a
 * past time to now, and refuses ids that fired or were cancelled. */
static void test_move_equals_cancel_and_schedule(void **st)
{
    enum { N = 2000 };
    tl_engine a, b;
    static rec ra, rb;
    memset(&ra, 0, sizeof ra);
    memset(&rb, 0, sizeof rb);
    tl_rng g;
    tl_rng_init(&g, 7);
    tl_engine_init(&a);
    tl_engine_init(&b);
    static tl_event_id ia[N], ib[N];
    for (int i = 0; i < N; i++) {
        tl_ns t = (tl_ns)(tl_rng_next(&g) % 300);
        ia[i] = tl_engine_at(&a, t, note, &a, &ra, (uint64_t)i);
        ib[i] = tl_engine_at(&b, t, note, &b, &rb, (uint64_t)i);
    }
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < N / 2; k++) {
            int i = (int)(tl_rng_next(&g) % N);
            tl_ns t = (tl_ns)(tl_rng_next(&g) % 400); /* some in the past: clamped */
            tl_event_id m = tl_engine_move(&a, ia[i], t);
            bool live = tl_engine_cancel(&b, ib[i]);
            assert_int_equal(m != 0, live);
            if (live) {
                assert_int_equal(m, ia[i]); /* the id is kept */
                ib[i] = tl_engine_at(&b, t, note, &b, &rb, (uint64_t)i);
            }
        }
        tl_ns until = 100 * (round + 1);
        tl_engine_run(&a, until);
        tl_engine_run(&b, until);
        assert_int_equal(ra.n, rb.n);
        assert_int_equal(tl_engine_pending(&a), tl_engine_pending(&b));
    }
    tl_engine_run(&a, -1);
    tl_engine_run(&b, -1);
    assert_int_equal(ra.n, N);
    assert_int_equal(rb.n, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(ra.u[i], rb.u[i]);
        assert_int_equal(ra.t[i], rb.t[i]);
    }
    assert_int_equal(a.peak, b.peak);
    /* fired and cancelled ids are refused */
    assert_int_equal(tl_engine_move(&a, ia[0], 1000), 0);
    assert_int_equal(tl_engine_move(&a, 0, 1000), 0);
    tl_event_id x = tl_engine_at(&a, 2000, note, &a, &ra, 9);
    assert_true(tl_engine_cancel(&a, x));
    assert_int_equal(tl_engine_move(&a, x, 3000), 0);
    assert_true(tl_engine_empty(&a));
    tl_engine_close(&a);
    tl_engine_close(&b);
}

/* The queue changes form with its length (a sorted array when short, a heap
 * past a few tens of events): pushes, cancels, re-times and pops while the
 * length swings between 0 and ~100 must fire in exactly the order of a
 * plain reference list ordered by (time, scheduling order). */
typedef struct ref_ev {
    tl_ns t;
    uint64_t order;  /* scheduling order (re-timing counts as scheduling) */
    uint64_t u;
    tl_event_id id;
    bool live;
} ref_ev;

static void test_queue_forms_against_reference(void **st)
{
    enum { N = 4000 }; /* rec holds 4096 */
    static ref_ev ev[N];
    static rec r;
    memset(ev, 0, sizeof ev);
    memset(&r, 0, sizeof r);
    tl_engine e;
    tl_engine_init(&e);
    tl_rng g;
    tl_rng_init(&g, 99);
    int n = 0, fired = 0;
    uint64_t order = 0;
    static uint64_t want[N];
    static tl_ns want_t[N];
    int n_want = 0;
    tl_ns now = 0;
    for (int round = 0; round < 300 && n < N - 64; round++) {
        /* grow to a random target, then re-time and cancel some */
        int target = (int)(tl_rng_next(&g) % 100);
        int live = 0;
        for (int i = 0; i < n; i++)
            live += ev[i].live;
        for (; live < target && n < N; live++, n++) {
            ev[n].t = now + (tl_ns)(tl_rng_next(&g) % 50);
            ev[n].order = order++;
            ev[n].u = (uint64_t)n;
            ev[n].live = true;
            ev[n].id = tl_engine_at(&e, ev[n].t, note, &e, &r, (uint64_t)n);
        }
        for (int k = 0; k < 20 && n > 0; k++) {
            int i = (int)(tl_rng_next(&g) % (uint64_t)n);
            if (!ev[i].live)
                continue;
            if (tl_rng_next(&g) % 2) {
                tl_ns t = now + (tl_ns)(tl_rng_next(&g) % 50);
                assert_int_equal(tl_engine_move(&e, ev[i].id, t), ev[i].id);
                ev[i].t = t;
                ev[i].order = order++;
            } else {
                assert_true(tl_engine_cancel(&e, ev[i].id));
                ev[i].live = false;
            }
        }
        /* run a random stretch; the reference fires the same events */
        tl_ns until = now + (tl_ns)(tl_rng_next(&g) % 30);
        for (;;) {
            int best = -1;
            for (int i = 0; i < n; i++)
                if (ev[i].live && ev[i].t <= until &&
                    (best < 0 || ev[i].t < ev[best].t ||
                     (ev[i].t == ev[best].t && ev[i].order < ev[best].order)))
                    best = i;
            if (best < 0)
                break;
            ev[best].live = false;
            want[n_want] = ev[best].u;
            want_t[n_want++] = ev[best].t;
        }
        tl_engine_run(&e, until);
        now = until;
        fired = r.n;
        assert_int_equal(fired, n_want);
    }
    tl_engine_run(&e, -1);
    for (int i = 0; i < n; i++)
        if (ev[i].live) {
            int best = -1;
            for (int k = 0; k < n; k++)
                if (ev[k].live && (best < 0 || ev[k].t < ev[best].t ||
                                   (ev[k].t == ev[best].t && ev[k].order < ev[best].order)))
                    best = k;
            ev[best].live = false;
            want[n_want] = ev[best].u;
            want_t[n_want++] = ev[best].t;
            i = -1;
        }
    assert_int_equal(r.n, n_want);
    for (int i = 0; i < n_want; i++) {
        assert_int_equal(r.u[i], want[i]);
        assert_int_equal(r.t[i], want_t[i]);
    }
    assert_true(e.peak >= 64); /* the heap form was used */
    tl_engine_close(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_ties),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_run_until_and_past),
        cmocka_unit_test(test_flush),
        cmocka_unit_test(test_stop),
        cmocka_unit_test(test_random_against_reference),
        cmocka_unit_test(test_move_equals_cancel_and_schedule),
        cmocka_unit_test(test_queue_forms_against_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
