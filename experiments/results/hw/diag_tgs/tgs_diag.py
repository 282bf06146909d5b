#!/usr/bin/env python3
"""TGS beside training, hardware vs simulator, from results databases with kernel
records (-k; run 1: inference alone, run 2: training alone, run 3: tgs; job 0 the
inference, job 1 the training in run 3). Kernel names may be NULL (the hardware
DBs): the training's solo duration per kernel comes from the simulated alone run
(names), aligned to each run's kernel sequence by durations (period 726 kernels).
Prints per DB:
  rate: the controller's rate per 10 ms window, reconstructed as the solo time of
        the training kernels of each burst (bursts: > 3 ms apart; one per window)
        / 10 ms (checked against the simulator's own rate: median |error| 0.002);
  P(dec): chance that the rate falls (< 0.7x) at the next window, by how many
        inference kernels ended in the window (none / 1-49 / 50+), rate >= 0.016;
  first: wait from a request's start to its first kernel, by which job's kernel
        the GPU ran last (requests arriving while a training kernel runs left
        out), by how long the GPU had been idle at the arrival.
Usage: tgs_diag.py SIM_DB_WITH_NAMES DB [DB...]"""
import bisect
import math
import sqlite3
import statistics as S
import sys

P = 726


def template(path):
    db = sqlite3.connect(path)
    ks = db.execute("SELECT start_ns, end_ns FROM kernels WHERE run_id=2 ORDER BY start_ns").fetchall()
    return [S.median(ks[i + P * r][1] - ks[i + P * r][0] for r in range(50)) for i in range(P)]


def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")


def bursts(ks, tmpl):
    d = [e - s for s, e in ks[:4000]]
    off = min(range(P), key=lambda o: sum(abs(math.log(max(x, 500) / max(tmpl[(i + o) % P], 500)))
                                         for i, x in enumerate(d)))
    out, cur = [], None
    for i, (s, e) in enumerate(ks):
        if cur is None or s - cur[1] > 3e6:
            cur = [s, e, 0.0]
            out.append(cur)
        cur[1] = max(cur[1], e)
        cur[2] += tmpl[(i + off) % P]
    return out


def main():
    tmpl = template(sys.argv[1])
    for path in sys.argv[2:]:
        db = sqlite3.connect(path)
        tr = db.execute("SELECT start_ns, end_ns FROM kernels WHERE run_id=3 AND job_id=1 "
                        "ORDER BY start_ns").fetchall()
        iters = db.execute("SELECT count(*) FROM iterations WHERE run_id=3 AND job_id=1").fetchone()[0]
        B = bursts(tr, tmpl)
        r = [b[2] / 1e7 for b in B]
        n = len(r)
        dec = sum(1 for i in range(1, n) if r[i] < 0.7 * r[i - 1] and r[i - 1] > 0.016)
        print("%s\n  training: %d kernels, %d iterations, solo kernel time %.1f ms; windows %d, "
              "rate mean %.4f p50 %.4f p90 %.4f, at floor (<0.016) %.1f%%, decreases %d"
              % (path, len(tr), iters, sum(b[2] for b in B) / 1e6, n, S.mean(r), q(r, .5), q(r, .9),
                 100 * sum(x < 0.016 for x in r) / n, dec))
        ends = sorted(e for (e,) in db.execute("SELECT end_ns FROM kernels WHERE run_id=3 AND job_id=0"))
        c = {}
        for k in range(n - 2):
            if not (8e6 < B[k + 1][0] - B[k][0] < 12e6) or r[k] < 0.016:
                continue
            m = bisect.bisect_left(ends, B[k + 1][0]) - bisect.bisect_left(ends, B[k][0])
            key = "none" if m == 0 else "1-49" if m < 50 else "50+"
            t = c.setdefault(key, [0, 0])
            t[0] += r[k + 1] < 0.7 * r[k]
            t[1] += 1
        print("  P(dec) by inference kernels ended in the window: " +
              ", ".join("%s %.2f (n=%d)" % (k, v[0] / v[1], v[1]) for k, v in sorted(c.items())))
        rq = db.execute("SELECT start_ns FROM requests WHERE run_id=3 AND job_id=0 ORDER BY start_ns").fetchall()
        ks = db.execute("SELECT start_ns, end_ns, job_id FROM kernels WHERE run_id=3 ORDER BY start_ns").fetchall()
        st = [k[0] for k in ks]
        bins = [0, 50e3, 200e3, 1e6, 3e6, 1e12]
        G = {}
        for (s,) in rq:
            a = bisect.bisect_left(st, s)
            i = a
            while i < len(ks) and ks[i][2] != 0:
                i += 1
            if i >= len(ks):
                continue
            prev = [k for k in ks[max(0, i - 40):i] if k[1] <= ks[i][0]]
            if not prev or any(k[2] == 1 and k[0] <= s < k[1] for k in ks[max(0, a - 5):a + 1]):
                continue
            last = max(prev, key=lambda k: k[1])
            b = bisect.bisect_right(bins, s - last[1]) - 1
            G.setdefault((last[2], b), []).append(ks[i][0] - s)
        print("  first kernel wait (us, median [n]) by GPU idle at arrival: last kernel inference / training")
        for b in range(len(bins) - 1):
            x, y = G.get((0, b), []), G.get((1, b), [])
            print("    idle %5.0f-%-7.0f us: %6.1f [%3d] / %6.1f [%3d]"
                  % (bins[b] / 1e3, min(bins[b + 1], 1e9) / 1e3, q(x, .5) / 1e3, len(x), q(y, .5) / 1e3, len(y)))


if __name__ == "__main__":
    main()
