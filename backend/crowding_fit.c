/* The simulator's crowding rule (sim/README.md, "Crowding") fitted to the
 * block times tally-run crowding measures: a block with k blocks of its
 * kernel (w warps each) on its SM takes
 *   tl_sim_crowding(ws, w, k_ref, k) = max(k w, ws) / max(k_ref w, ws)
 * times as long as with k_ref: the SM reaches its throughput with ws warps and
 * shares it past that. One ws per kernel kind, by least squares over
 * [0.1, 64] in steps of 0.01 (deterministic: ties keep the smaller). */
#include <math.h>
#include <stdio.h>

#include "backend.h"
#include "tally/sim.h"

int tl_crowding_fit(const tl_crowding_point *p, int n, tl_crowding_result *out, tl_err *err)
{
    if (!p || n <= 0 || !out)
        return tl_errf(err, TL_EINVAL, "crowding fit: no points");
    for (int i = 0; i < n; i++)
        if ((p[i].kind != TL_KIND_COMPUTE && p[i].kind != TL_KIND_MEMORY) || p[i].warps < 1 ||
            p[i].occupancy < 1 || p[i].k < 1 || p[i].k_ref < 1 || p[i].k > p[i].occupancy ||
            p[i].k_ref > p[i].occupancy || !(p[i].ratio > 0) || !isfinite(p[i].ratio))
            return tl_errf(err, TL_EINVAL, "crowding fit: point %d is not valid (kind %d, warps "
                                           "%d, occupancy %d, k %d, k_ref %d, ratio %g)",
                           i, p[i].kind, p[i].warps, p[i].occupancy, p[i].k, p[i].k_ref,
                           p[i].ratio);
    for (int kind = 0; kind < 2; kind++) {
        int m = 0;
        double best = INFINITY, best_ws = 0;
        for (int step = 10; step <= 6400; step++) {
            double ws = step / 100.0, sse = 0;
            m = 0;
            for (int i = 0; i < n; i++) {
                if (p[i].kind != kind)
                    continue;
                double d = tl_sim_crowding(ws, p[i].warps, p[i].k_ref, p[i].k) - p[i].ratio;
                sse += d * d;
                m++;
            }
            if (m && sse < best) {
                best = sse;
                best_ws = ws;
            }
        }
        out->ws[kind] = m ? best_ws : 0;
        out->n[kind] = m;
        out->rmse[kind] = m ? sqrt(best / m) : 0;
    }
    return 0;
}
