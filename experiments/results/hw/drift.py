#!/usr/bin/env python3
"""Do kernels get slower as a run goes on? From a results database with kernel
records (-k): per run and job, per 1 s of the run, the number of kernels, their
median duration and the median of duration / that kernel name's median over the
whole run (1.00 = as usual).
Usage: drift.py DB"""
import sqlite3
import statistics
import sys
from collections import defaultdict


def main():
    db = sqlite3.connect(sys.argv[1])
    print("run,policy,job,second,kernels,median_us,rel_median")
    for run_id, pol in db.execute("SELECT run_id, policy FROM runs ORDER BY run_id").fetchall():
        jobs = db.execute("SELECT DISTINCT job_id FROM kernels WHERE run_id=?", (run_id,)).fetchall()
        for (job,) in jobs:
            ks = db.execute("SELECT name, start_ns, end_ns FROM kernels WHERE run_id=? AND job_id=?",
                            (run_id, job)).fetchall()
            if not ks:
                continue
            by_name = defaultdict(list)
            for n, s, e in ks:
                by_name[n].append(e - s)
            ref = {n: statistics.median(v) for n, v in by_name.items()}
            t0 = min(s for _, s, _ in ks)
            buckets = defaultdict(list)
            for n, s, e in ks:
                buckets[int((s - t0) // 1_000_000_000)].append((e - s, (e - s) / ref[n] if ref[n] else 1))
            for sec in sorted(buckets):
                b = buckets[sec]
                print(f"{run_id},{pol},{job},{sec},{len(b)},{statistics.median(x for x, _ in b) / 1e3:.2f},"
                      f"{statistics.median(r for _, r in b):.3f}")


if __name__ == "__main__":
    main()
