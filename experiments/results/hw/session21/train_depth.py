#!/usr/bin/env python3
"""How far ahead the training job's host runs, per run of a results database (tally-run or
tally-sim): the mean iteration time (host start to GPU end, the validation's training
p50/p99 rows), the mean period between iteration starts, and their ratio, the iterations in
flight. Usage: python3 train_depth.py DB [DB...]"""
import sqlite3, sys, statistics

for path in sys.argv[1:]:
    c = sqlite3.connect(path)
    for rid, pol in c.execute("select run_id, policy from runs order by run_id").fetchall():
        jobs = c.execute("select job_id, name from jobs where run_id=? and role='training'", (rid,)).fetchall()
        others = '+'.join(n for (n,) in c.execute("select name from jobs where run_id=? and role!='training'", (rid,)))
        for job, name in jobs:
            it = c.execute("select start_ns, end_ns from iterations where run_id=? and job_id=? order by iter_idx",
                           (rid, job)).fetchall()
            if len(it) < 10:
                continue
            lat = statistics.mean(e - s for s, e in it) / 1e6
            period = (it[-1][0] - it[0][0]) / (len(it) - 1) / 1e6
            print("%s,%d,%s,%s,%.2f,%.2f,%.2f" % (path.split('/')[-1], rid, pol, others or 'alone', lat, period,
                                                 lat / period))
