#!/usr/bin/env python3
"""Backfill probe analysis (make_backfill.py): for every high request whose kernel
waited for room (its kernel started over 200 us after the request did), how
many low kernels started in between, from the request's start + 20 us to the high
kernel's start, and how long that wait was. Usage: backfill_stats.py DB [DB...]"""
import sqlite3, sys, statistics

for path in sys.argv[1:]:
    c = sqlite3.connect(path)
    for (rid,) in c.execute("select run_id from runs where policy='priority-streams'"):
        jobs = dict(c.execute("select name, job_id from jobs where run_id=?", (rid,)).fetchall())
        hi, lo = jobs['high'], jobs['low']
        reqs = c.execute("select start_ns from requests where run_id=? and job_id=? order by req_id",
                         (rid, hi)).fetchall()
        hk = [s for (s,) in c.execute("select start_ns from kernels where run_id=? and job_id=? order by start_ns",
                                      (rid, hi))]
        lk = [s for (s,) in c.execute("select start_ns from kernels where run_id=? and job_id=? order by start_ns",
                                      (rid, lo))]
        waited, inside, waits = 0, [], []
        for (rs,) in reqs:
            ks = next((k for k in hk if k >= rs), None)
            if ks is None or ks - rs < 200000:
                continue
            waited += 1
            waits.append((ks - rs) / 1e3)
            inside.append(sum(1 for k in lk if rs + 20000 <= k < ks))
        print("%s run %d: %d high requests, %d waited > 200 us (median wait %.0f us); low kernels started "
              "during those waits: median %s, total %d; low kernels in the run %d" %
              (path.split('/')[-1], rid, len(reqs), waited, statistics.median(waits) if waits else 0,
               statistics.median(inside) if inside else '-', sum(inside), len(lk)))
