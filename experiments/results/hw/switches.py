#!/usr/bin/env python3
"""How two jobs shared the GPU, from a results database with kernel records (-k):
per run, the kernels in start order (all jobs), the number of hand-overs
(consecutive kernels of different jobs), the median length of a job's stretch,
and per inference request the number of hand-overs inside it.
Usage: switches.py DB"""
import bisect
import sqlite3
import statistics
import sys


def main():
    db = sqlite3.connect(sys.argv[1])
    print("run,policy,kind,kernels,handovers,stretch_ms_median,infer_requests,"
          "handovers_per_request_median,request_ms_median")
    for run_id, pol, kind in db.execute("SELECT run_id, policy, kind FROM runs ORDER BY run_id"):
        ks = db.execute("SELECT job_id, start_ns, end_ns FROM kernels WHERE run_id=? ORDER BY start_ns",
                        (run_id,)).fetchall()
        if not ks or len({k[0] for k in ks}) < 2:
            continue
        hand, stretch, s0 = [], [], ks[0][1]
        for a, b in zip(ks, ks[1:]):
            if a[0] != b[0]:
                hand.append(b[1])
                stretch.append((a[2] - s0) / 1e6)
                s0 = b[1]
        inf = db.execute("SELECT job_id FROM jobs WHERE run_id=? AND role='inference'", (run_id,)).fetchone()
        reqs = db.execute("SELECT start_ns, end_ns FROM requests WHERE run_id=? AND job_id=?",
                          (run_id, inf[0])).fetchall() if inf else []
        per = [bisect.bisect_left(hand, e) - bisect.bisect_left(hand, s) for s, e in reqs]
        print(f"{run_id},{pol},{kind},{len(ks)},{len(hand)},"
              f"{statistics.median(stretch) if stretch else 0:.3f},{len(reqs)},"
              f"{statistics.median(per) if per else 0},"
              f"{statistics.median([(e - s) / 1e6 for s, e in reqs]) if reqs else 0:.3f}")


if __name__ == "__main__":
    main()
