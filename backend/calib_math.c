/* Calibration arithmetic: choose how many work units per block make a
 * synthetic kernel last as long as its traced original (see backend.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"

tl_ns tl_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (tl_ns)ts.tv_sec * TL_NS_PER_S + ts.tv_nsec;
}

static tl_ns absdiff(tl_ns a, tl_ns b) { return a > b ? a - b : b - a; }

void tl_calib_curve_add(tl_calib_curve *c, uint32_t iters, tl_ns ns, tl_ns keep_near_ns)
{
    int i = 0;
    while (i < c->n && c->p[i].iters < iters) i++;
    if (i < c->n && c->p[i].iters == iters) {
        c->p[i].ns = ns;
        return;
    }
    if (c->n == TL_CALIB_MAX_POINTS) {
        /* Drop the point farthest from where we are looking, but never the
         * floor (iters 0): extrapolations lean on it. */
        int far = -1;
        for (int j = 0; j < c->n; j++) {
            if (c->p[j].iters == 0) continue;
            if (far < 0 || absdiff(c->p[j].ns, keep_near_ns) > absdiff(c->p[far].ns, keep_near_ns))
                far = j;
        }
        if (far < 0) return;
        memmove(&c->p[far], &c->p[far + 1], (size_t)(c->n - far - 1) * sizeof c->p[0]);
        c->n--;
        if (far < i) i--;
    }
    memmove(&c->p[i + 1], &c->p[i], (size_t)(c->n - i) * sizeof c->p[0]);
    c->p[i].iters = iters;
    c->p[i].ns = ns;
    c->n++;
}

const tl_calib_point *tl_calib_closest(const tl_calib_curve *c, tl_ns target)
{
    const tl_calib_point *best = NULL;
    for (int i = 0; i < c->n; i++)
        if (!best || absdiff(c->p[i].ns, target) < absdiff(best->ns, target)) best = &c->p[i];
    return best;
}

bool tl_calib_within(tl_ns ns, tl_ns target, double tol)
{
    return (double)absdiff(ns, target) <= tol * (double)target;
}

static bool measured(const tl_calib_curve *c, uint32_t iters)
{
    for (int i = 0; i < c->n; i++)
        if (c->p[i].iters == iters) return true;
    return false;
}

static uint32_t clamp_iters(double x)
{
    if (!(x > 0)) return 0;
    if (x > TL_CALIB_MAX_ITERS) return TL_CALIB_MAX_ITERS;
    return (uint32_t)(x + 0.5);
}

uint32_t tl_calib_next(const tl_calib_curve *c, tl_ns target, double tol, bool *done)
{
    *done = false;
    if (c->n == 0 || c->p[0].iters != 0) return 0; /* the floor first */
    const tl_calib_point *best = tl_calib_closest(c, target);
    if (tl_calib_within(best->ns, target, tol)) {
        *done = true;
        return best->iters;
    }
    if (target <= c->p[0].ns) { /* below what an empty kernel takes */
        *done = true;
        return 0;
    }
    if (c->n == 1) return TL_CALIB_PROBE_ITERS;
    /* Bracket: lo = most units with time < target, hi = fewest with time >= target. */
    int lo = -1, hi = -1;
    for (int i = 0; i < c->n; i++) {
        if (c->p[i].ns < target) { if (lo < 0 || c->p[i].iters > c->p[lo].iters) lo = i; }
        else if (hi < 0 || c->p[i].iters < c->p[hi].iters) hi = i;
    }
    uint32_t guess;
    if (lo >= 0 && hi >= 0 && c->p[hi].iters > c->p[lo].iters) {
        double slope = (double)(c->p[hi].ns - c->p[lo].ns) / (double)(c->p[hi].iters - c->p[lo].iters);
        guess = slope > 0 ? clamp_iters(c->p[lo].iters + (double)(target - c->p[lo].ns) / slope)
                          : c->p[lo].iters;
        if (c->p[hi].iters - c->p[lo].iters <= 1) {
            /* Adjacent units bracket the target: the closer one is the answer. */
            *done = true;
            return best->iters;
        }
        if (guess <= c->p[lo].iters) guess = c->p[lo].iters + 1;
        if (guess >= c->p[hi].iters) guess = c->p[hi].iters - 1;
    } else if (lo >= 0) {
        /* All below: extend along the slope of the last two points (the
         * floor and the best below, when the curve is short). */
        const tl_calib_point *a = &c->p[0], *b = &c->p[lo];
        for (int i = 0; i < c->n; i++)
            if (c->p[i].iters < b->iters && c->p[i].iters > a->iters && c->p[i].ns < b->ns) a = &c->p[i];
        double slope = b->iters > a->iters ? (double)(b->ns - a->ns) / (double)(b->iters - a->iters) : 0;
        double x = slope > 0 ? b->iters + (double)(target - b->ns) / slope : b->iters * 8.0 + 1;
        double cap = b->iters * 8.0 + 8;
        guess = clamp_iters(x > cap ? cap : x);
        if (guess <= b->iters) guess = b->iters + 1;
    } else {
        /* All at or above the target but the floor is below it: cannot
         * happen (the floor is below), kept for safety. */
        *done = true;
        return best->iters;
    }
    if (measured(c, guess) || guess >= TL_CALIB_MAX_ITERS) {
        *done = true;
        return best->iters;
    }
    return guess;
}

static int cmp_ns(const void *a, const void *b)
{
    tl_ns x = *(const tl_ns *)a, y = *(const tl_ns *)b;
    return x < y ? -1 : x > y;
}

tl_ns tl_median_ns(const tl_ns *v, int n)
{
    if (n <= 0) return 0;
    tl_ns tmp[64];
    if (n > 64) n = 64;
    memcpy(tmp, v, (size_t)n * sizeof *v);
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_ns);
    return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

int tl_calib_proportional(tl_calib_time_fn time_fn, void *arg, tl_ns target, uint32_t *iters,
                          double *got, tl_err *err)
{
    uint32_t it = 64;
    double t = 0;
    for (int step = 0; step < 8; step++) {
        int r = time_fn(arg, it, &t, err);
        if (r < 0)
            return r;
        if (fabs(t / (double)target - 1) < 0.03 || step == 7)
            break; /* (it, t) stay a measured pair */
        double next = (double)it * (double)target / (t > 1 ? t : 1);
        if (next > (double)TL_CALIB_MAX_ITERS)
            next = TL_CALIB_MAX_ITERS;
        if (next < 1)
            next = 1;
        if ((uint32_t)next == it)
            break;
        it = (uint32_t)next;
    }
    *iters = it;
    *got = t;
    return 0;
}
