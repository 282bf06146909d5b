/* See fake_device.h. Uses the engine of sim/ for its timers. */
#include "fake_device.h"

#include <stdlib.h>
#include <string.h>

#include "tally/engine.h"

typedef struct fake_item {
    tl_ns dur;
    tl_launch_cb cb;
    void *arg;
    tl_launch_id id;
    tl_ns submitted;        /* the call + the device's lag: earliest start */
    uint64_t next_block;
    const tl_op *op;
    int job;
} fake_item;

typedef struct fake_stream {
    fake_item *q;
    size_t head, len, cap;
    bool busy;
    tl_ns started;
} fake_stream;

typedef struct fake {
    tl_engine eng;
    fake_stream *streams;
    int n_streams;
    tl_launch_id next_id;
    tl_ns submit_lag;
    tl_job_stats stats[64];
    struct timer_arg *timers; /* every timer ever set, freed at close */
} fake;

static int f_ctx(tl_device *d, const tl_ctx_config *c, tl_ctx_id *o, tl_err *e)
{
    static int n;
    *o = n++;
    return 0;
}

static int f_stream(tl_device *d, tl_ctx_id c, int prio, tl_stream_id *o, tl_err *e)
{
    fake *f = d->impl;
    f->streams = realloc(f->streams, (size_t)(f->n_streams + 1) * sizeof *f->streams);
    memset(&f->streams[f->n_streams], 0, sizeof *f->streams);
    *o = f->n_streams++;
    return 0;
}

static void start_next(fake *f, int s);

static void item_done(void *ctx, void *arg, uint64_t s)
{
    fake *f = ctx;
    fake_stream *st = &f->streams[s];
    fake_item it = st->q[st->head];
    st->head++;
    st->len--;
    st->busy = false;
    tl_launch_result r = { .id = it.id, .start_ns = st->started, .end_ns = f->eng.now,
                           .next_block = it.next_block, .submitted_ns = it.submitted };
    if (it.job >= 0 && it.job < 64)
        f->stats[it.job].kernels++;
    start_next(f, (int)s);
    it.cb(it.arg, &r);
}

static void start_next(fake *f, int s)
{
    fake_stream *st = &f->streams[s];
    if (st->busy || st->len == 0)
        return;
    st->busy = true;
    const fake_item *it = &st->q[st->head];
    st->started = it->submitted > f->eng.now ? it->submitted : f->eng.now;
    tl_engine_at(&f->eng, st->started + it->dur, item_done, f, NULL, (uint64_t)s);
}

static int enqueue(tl_device *d, tl_stream_id s, const tl_op *op, int job, uint64_t next_block,
                   tl_launch_cb cb, void *arg, tl_launch_id *o)
{
    fake *f = d->impl;
    fake_stream *st = &f->streams[s];
    if (st->head + st->len == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 16;
        st->q = realloc(st->q, st->cap * sizeof *st->q);
    }
    fake_item *it = &st->q[st->head + st->len++];
    it->dur = op->dur_ns;
    it->cb = cb;
    it->arg = arg;
    it->id = ++f->next_id;
    it->submitted = f->eng.now + f->submit_lag;
    it->op = op;
    it->job = job;
    it->next_block = next_block;
    if (o)
        *o = it->id;
    start_next(f, s);
    return 0;
}

static int f_launch(tl_device *d, tl_stream_id s, const tl_kernel_desc *k, tl_launch_cb cb, void *arg,
                    tl_launch_id *o)
{
    uint64_t end = k->block_end ? k->block_end : tl_op_blocks(k->op);
    return enqueue(d, s, k->op, k->job, end, cb, arg, o);
}

static int f_copy(tl_device *d, tl_stream_id s, const tl_op *op, int job, tl_launch_cb cb, void *arg,
                  tl_launch_id *o)
{
    return enqueue(d, s, op, job, 0, cb, arg, o);
}

typedef struct timer_arg { tl_timer_cb cb; void *arg; struct timer_arg *next; } timer_arg;

static void timer_fire(void *ctx, void *arg, uint64_t u)
{
    fake *f = ctx;
    timer_arg *t = arg;
    t->cb(t->arg, f->eng.now);
}

static int f_timer(tl_device *d, tl_ns at, tl_timer_cb cb, void *arg)
{
    fake *f = d->impl;
    timer_arg *t = malloc(sizeof *t);
    t->cb = cb;
    t->arg = arg;
    t->next = f->timers;
    f->timers = t;
    tl_engine_at(&f->eng, at < f->eng.now ? f->eng.now : at, timer_fire, f, t, 0);
    return 0;
}

static tl_ns f_now(tl_device *d)
{
    return ((fake *)d->impl)->eng.now;
}

static int f_run(tl_device *d, tl_ns until, tl_err *e)
{
    tl_engine_run(&((fake *)d->impl)->eng, until);
    return 0;
}

static void f_stats(tl_device *d, int job, tl_job_stats *o)
{
    fake *f = d->impl;
    *o = job >= 0 && job < 64 ? f->stats[job] : (tl_job_stats){ 0 };
}

static void f_close(tl_device *d)
{
    fake *f = d->impl;
    while (f->timers) {
        timer_arg *t = f->timers;
        f->timers = t->next;
        free(t);
    }
    tl_engine_close(&f->eng);
    for (int i = 0; i < f->n_streams; i++)
        free(f->streams[i].q);
    free(f->streams);
    free(f);
    d->impl = NULL;
}

static const tl_device_ops fake_ops = {
    .name = "fake", .ctx_create = f_ctx, .stream_create = f_stream, .launch = f_launch,
    .copy = f_copy, .timer = f_timer, .now = f_now, .run = f_run, .job_stats = f_stats,
    .close = f_close,
};

void tl_fake_device_set_submit_lag(tl_device *d, tl_ns lag)
{
    ((fake *)d->impl)->submit_lag = lag;
}

int tl_fake_device_open(tl_device *d, const tl_gpu_props *gpu)
{
    memset(d, 0, sizeof *d);
    fake *f = calloc(1, sizeof *f);
    tl_engine_init(&f->eng);
    d->ops = &fake_ops;
    d->gpu = *gpu;
    d->impl = f;
    return 0;
}
