#!/usr/bin/env python3
"""Where best-effort training time goes, from a results database with kernel
records (-k): per run, the training job's kernels (count, PTB, retreated,
total kernel time) and the gaps between one training kernel's end and the
next one's start, split by whether an inference request was in flight.
Usage: gaps.py DB [TRAIN_JOB_ID]   (runs of every policy in DB)"""
import bisect
import sqlite3
import sys


def pct(v, q):
    if not v:
        return float("nan")
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def main():
    db = sqlite3.connect(sys.argv[1])
    job = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    print("run,policy,kind,kernels,ptb,retreated,kernel_ms,gaps_idle,gap_idle_p25_us,"
          "gap_idle_p50_us,gap_idle_p75_us,gaps_busy,gap_busy_p50_us")
    for run_id, pol, kind in db.execute("SELECT run_id, policy, kind FROM runs ORDER BY run_id"):
        ks = db.execute("SELECT start_ns, end_ns, ptb, retreated FROM kernels WHERE run_id=? AND "
                        "job_id=? ORDER BY start_ns", (run_id, job)).fetchall()
        if not ks:
            continue
        req = db.execute("SELECT start_ns, end_ns FROM requests WHERE run_id=? AND job_id<>? "
                         "ORDER BY start_ns", (run_id, job)).fetchall()
        busy = []
        for s, e in req:
            if busy and s <= busy[-1][1]:
                busy[-1][1] = max(busy[-1][1], e)
            else:
                busy.append([s, e])
        starts = [b[0] for b in busy]

        def in_req(t):
            i = bisect.bisect_right(starts, t) - 1
            return i >= 0 and busy[i][1] > t

        idle, inreq = [], []
        for a, b in zip(ks, ks[1:]):
            g = b[0] - a[1]
            if g < 0 or g > 1_000_000:  # overlapping, or a pause (held back): not a round trip
                continue
            (inreq if in_req(a[1]) else idle).append(g / 1e3)
        kt = sum(e - s for s, e, _, _ in ks) / 1e6
        print(f"{run_id},{pol},{kind},{len(ks)},{sum(k[2] for k in ks)},{sum(k[3] for k in ks)},"
              f"{kt:.1f},{len(idle)},{pct(idle, .25):.1f},{pct(idle, .5):.1f},{pct(idle, .75):.1f},"
              f"{len(inreq)},{pct(inreq, .5):.1f}")


if __name__ == "__main__":
    main()
