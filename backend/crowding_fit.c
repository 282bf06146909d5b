/* The simulator's crowding rule (sim/README.md, "Crowding") fitted to the
 * block times tally-run crowding measures: a kernel's blocks run slower when
 * more of them share an SM, time ratio
 *   tl_sim_crowding(c, occupancy, k_ref, k)
 *     = (1 - c (1 - k / occupancy)) / (1 - c (1 - k_ref / occupancy)),
 * one c per kernel kind, by least squares over c in [0, 1] in steps of 0.001
 * (deterministic: ties keep the smaller c). */
#include <math.h>
#include <stdio.h>

#include "backend.h"
#include "tally/sim.h"

int tl_crowding_fit(const tl_crowding_point *p, int n, tl_crowding_result *out, tl_err *err)
{
    if (!p || n <= 0 || !out)
        return tl_errf(err, TL_EINVAL, "crowding fit: no points");
    for (int i = 0; i < n; i++)
        if ((p[i].kind != TL_KIND_COMPUTE && p[i].kind != TL_KIND_MEMORY) || p[i].occupancy < 1 ||
            p[i].k < 1 || p[i].k_ref < 1 || p[i].k > p[i].occupancy ||
            p[i].k_ref > p[i].occupancy || !(p[i].ratio > 0) || !isfinite(p[i].ratio))
            return tl_errf(err, TL_EINVAL, "crowding fit: point %d is not valid (kind %d, "
                                           "occupancy %d, k %d, k_ref %d, ratio %g)",
                           i, p[i].kind, p[i].occupancy, p[i].k, p[i].k_ref, p[i].ratio);
    for (int kind = 0; kind < 2; kind++) {
        int m = 0;
        double best = INFINITY, best_c = 0;
        for (int step = 0; step <= 1000; step++) {
            double c = step / 1000.0, sse = 0;
            m = 0;
            for (int i = 0; i < n; i++) {
                if (p[i].kind != kind)
                    continue;
                double d = tl_sim_crowding(c, p[i].occupancy, p[i].k_ref, p[i].k) - p[i].ratio;
                sse += d * d;
                m++;
            }
            if (m && sse < best) {
                best = sse;
                best_c = c;
            }
        }
        out->c[kind] = best_c;
        out->n[kind] = m;
        out->rmse[kind] = m ? sqrt(best / m) : 0;
    }
    return 0;
}
