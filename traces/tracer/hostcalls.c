/* tally-trace: host times of launch (and copy, memset) calls from callbacks
 * (--launch-times callback, lite host timeline).
 *
 * The handler runs on the program's launching thread around every launch,
 * so it does as little as it can: at entry, one CUPTI timestamp into the
 * call's correlationData (callbacks.c); at exit, another, and one 24-byte entry
 * appended to the thread's own buffer with a plain store and a release
 * store of the count. No lock, no name or stream lookup (the GPU record has
 * the stream and the name), no system call. The lock (tt_hc_log.mu) is
 * taken by a launching thread only when its buffer of TT_HC_CHUNK entries is
 * full (once per 1024 calls), and by the writer when it collects every
 * buffer; it is not the recorder's tt_state.mu, which CUPTI's buffer thread holds
 * for milliseconds while it parses a buffer.
 *
 * Nesting: a timed call made inside another is not timed itself. With
 * CUDA 13 on the H100 every runtime launch (cudaLaunchKernel[ExC], the
 * test program's <<<>>>) makes a nested driver launch callback carrying the
 * runtime call's own correlation id (while CUPTI's activity records show no
 * nested driver call): it is skipped. A nested call with another id (not
 * seen) is recorded with the outermost call's times and name
 * (TT_RF_NESTED), so that whichever of the ids the GPU record carries finds
 * them; lite.c drops the entry no GPU record claims.
 *
 * Publication: the owner writes e[n] then stores n + 1 with release; the
 * collector (under mu) reads n with acquire and copies [taken, n). The owner
 * resets n and taken only under mu (when full), so the two never touch the
 * same entry. A thread that ends hands its buffer back (pthread key
 * destructor) for the next new thread.
 *
 * CUPTI-free: tests/test_tracer.c compiles it and drives it with made-up
 * correlation ids and times.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tracer.h"

struct tt_hc_buf {
    tt_hc_entry e[TT_HC_CHUNK];
    _Atomic uint32_t n;   /* entries the owner has published */
    uint32_t taken;       /* entries already moved to the log (under mu) */
    bool owned;           /* a live thread appends to it (under mu) */
    tt_hc_log *log;
    struct tt_hc_buf *next;
};

static void hc_thread_ended(void *p);

int tt_hc_init(tt_hc_log *log, size_t max_entries)
{
    memset(log, 0, sizeof *log);
    log->max = max_entries;
    if (pthread_mutex_init(&log->mu, NULL) != 0)
        return -1;
    if (pthread_key_create(&log->key, hc_thread_ended) != 0) {
        pthread_mutex_destroy(&log->mu);
        return -1;
    }
    log->ready = true;
    return 0;
}

/* Move [taken, upto) of b into the log (what passes log->max is counted
 * as lost). Called with mu held. */
static void move_locked(tt_hc_log *log, tt_hc_buf *b, uint32_t upto)
{
    if (upto <= b->taken)
        return;
    size_t k = upto - b->taken;
    if (log->max && log->n + k > log->max) {
        size_t room = log->max > log->n ? log->max - log->n : 0;
        log->lost += k - room;
        k = room;
    }
    if (log->n + k > log->cap) {
        size_t cap = log->cap ? log->cap : 4096;
        while (cap < log->n + k)
            cap *= 2;
        if (log->max && cap > log->max)
            cap = log->max;
        tt_hc_entry *p = realloc(log->all, cap * sizeof *p);
        if (!p) {
            log->lost += k;
            k = 0;
        } else {
            log->all = p;
            log->cap = cap;
        }
    }
    if (k)
        memcpy(log->all + log->n, b->e + b->taken, k * sizeof *b->e);
    log->n += k;
    b->taken = upto;
}

static void hc_thread_ended(void *p)
{
    tt_hc_buf *b = p;
    tt_hc_log *log = b->log;
    pthread_mutex_lock(&log->mu);
    move_locked(log, b, atomic_load_explicit(&b->n, memory_order_acquire));
    atomic_store_explicit(&b->n, 0, memory_order_relaxed);
    b->taken = 0;
    b->owned = false;
    pthread_mutex_unlock(&log->mu);
}

/* The calling thread's buffer: a free one, or a new one. NULL if out of memory. */
static tt_hc_buf *hc_buffer(tt_hc_log *log, tt_hc_thread *th)
{
    pthread_mutex_lock(&log->mu);
    tt_hc_buf *b = log->bufs;
    while (b && b->owned)
        b = b->next;
    if (!b && (b = calloc(1, sizeof *b))) {
        b->log = log;
        b->next = log->bufs;
        log->bufs = b;
    }
    if (b)
        b->owned = true;
    pthread_mutex_unlock(&log->mu);
    if (b)
        pthread_setspecific(log->key, b); /* handed back when the thread ends */
    th->buf = b;
    return b;
}

static void push(tt_hc_log *log, tt_hc_thread *th, const tt_hc_entry *e)
{
    tt_hc_buf *b = th->buf ? th->buf : hc_buffer(log, th);
    if (!b) { /* out of memory: rare enough for the lock */
        pthread_mutex_lock(&log->mu);
        log->lost++;
        pthread_mutex_unlock(&log->mu);
        return;
    }
    uint32_t n = atomic_load_explicit(&b->n, memory_order_relaxed);
    if (n == TT_HC_CHUNK) {
        pthread_mutex_lock(&log->mu);
        move_locked(log, b, n);
        atomic_store_explicit(&b->n, 0, memory_order_relaxed);
        b->taken = 0;
        pthread_mutex_unlock(&log->mu);
        n = 0;
    }
    b->e[n] = *e;
    atomic_store_explicit(&b->n, n + 1, memory_order_release);
}

void tt_hc_add(tt_hc_log *log, tt_hc_thread *th, int driver, uint32_t cbid, uint32_t corr,
               uint64_t start, uint64_t end)
{
    tt_hc_entry e = {.corr = corr, .cbid = (uint16_t)cbid, .driver = (uint8_t)(driver != 0),
                     .start = start, .end = end >= start ? end : start};
    push(log, th, &e);
    if (corr != th->outer) /* an exit without its entry (callbacks turned on mid-call) */
        return;
    e.flags = TT_RF_NESTED; /* the calls made inside it: its times and name */
    for (uint8_t i = 0; i < th->n_nested; i++) {
        e.corr = th->nested[i];
        push(log, th, &e);
    }
    th->n_nested = 0;
    th->outer = 0;
}

int tt_hc_lock(tt_hc_log *log, int wait_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += wait_ms / 1000;
    until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L)
        until.tv_sec++, until.tv_nsec -= 1000000000L;
    return pthread_mutex_timedlock(&log->mu, &until) == 0 ? 0 : -1;
}

void tt_hc_unlock(tt_hc_log *log)
{
    pthread_mutex_unlock(&log->mu);
}

void tt_hc_collect_locked(tt_hc_log *log, uint32_t below)
{
    for (tt_hc_buf *b = log->bufs; b; b = b->next)
        move_locked(log, b, atomic_load_explicit(&b->n, memory_order_acquire));
    if (below) { /* before the recording window: never written */
        size_t w = 0;
        for (size_t i = 0; i < log->n; i++)
            if (log->all[i].corr >= below)
                log->all[w++] = log->all[i];
        log->n = w;
    }
}

void tt_hc_collect(tt_hc_log *log, uint32_t below)
{
    pthread_mutex_lock(&log->mu);
    tt_hc_collect_locked(log, below);
    pthread_mutex_unlock(&log->mu);
}

void tt_hc_free(tt_hc_log *log)
{
    if (!log->ready)
        return;
    pthread_key_delete(log->key);
    for (tt_hc_buf *b = log->bufs, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(log->all);
    pthread_mutex_destroy(&log->mu);
    memset(log, 0, sizeof *log);
}
