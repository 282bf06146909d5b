/* The watchdog: ends a run whose GPU work hangs (see backend.h). A separate
 * thread, because a hung GPU can also block the event loop inside a CUDA call. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"

struct tl_watchdog {
    pthread_t thread;
    void (*report)(void *arg);
    void *report_arg;
    tl_ns limit;
    _Atomic tl_ns last_progress;
    atomic_bool busy;
    atomic_bool stop;
};

bool tl_watchdog_expired(tl_ns now, tl_ns last_progress, bool busy, tl_ns limit)
{
    return busy && limit > 0 && now - last_progress > limit;
}

static void *watch(void *arg)
{
    tl_watchdog *w = arg;
    while (!atomic_load(&w->stop)) {
        struct timespec ts = {0, 50000000L};
        nanosleep(&ts, NULL);
        tl_ns now = tl_mono_ns();
        if (tl_watchdog_expired(now, atomic_load(&w->last_progress), atomic_load(&w->busy), w->limit)) {
            fprintf(stderr,
                    "tally-run: watchdog: GPU work has been in flight for %.1f s without any completion; "
                    "ending the run (limit --watchdog %.1f s)\n",
                    (double)(now - atomic_load(&w->last_progress)) / 1e9, (double)w->limit / 1e9);
            if (w->report) w->report(w->report_arg); /* what was in flight (best effort) */
            tl_procs_cleanup();
            _exit(70); /* EX_SOFTWARE */
        }
    }
    return NULL;
}

int tl_watchdog_start(tl_watchdog **out, tl_ns limit, tl_err *err)
{
    tl_watchdog *w = tl_xcalloc(1, sizeof *w);
    w->limit = limit;
    atomic_store(&w->last_progress, tl_mono_ns());
    if (pthread_create(&w->thread, NULL, watch, w) != 0) {
        free(w);
        return tl_errf(err, TL_ENOMEM, "watchdog: cannot start its thread");
    }
    *out = w;
    return 0;
}

void tl_watchdog_kick(tl_watchdog *w, bool busy)
{
    if (!w) return;
    atomic_store(&w->last_progress, tl_mono_ns());
    atomic_store(&w->busy, busy);
}

void tl_watchdog_stop(tl_watchdog *w)
{
    if (!w) return;
    atomic_store(&w->stop, true);
    pthread_join(w->thread, NULL);
    free(w);
}

void tl_watchdog_set_report(tl_watchdog *w, void (*report)(void *arg), void *arg)
{
    if (!w) return;
    w->report_arg = arg;
    w->report = report;
}
