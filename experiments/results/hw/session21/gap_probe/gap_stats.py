#!/usr/bin/env python3
"""Back-to-back gaps of each job's kernels, per run of a database with per-kernel records
(tally-run -k or tally-sim -k): the gaps under 20 us between one kernel's end and the next
one's start on the job's stream, inside the measured window: count, 10th percentile,
median, mean, 90th percentile, in us. Usage: python3 gap_stats.py DB > OUT.csv"""
import sqlite3, statistics, sys

c = sqlite3.connect(sys.argv[1])
print("run,policy,job_set,job,gaps,p10_us,median_us,mean_us,p90_us")
for rid, pol, ws, we in c.execute("select run_id, policy, warmup_ns, warmup_ns + duration_ns from runs "
                                  "order by run_id").fetchall():
    names = dict(c.execute("select job_id, name from jobs where run_id=?", (rid,)).fetchall())
    jobset = '+'.join(names[j] for j in sorted(names))
    for job in sorted(names):
        for (stream,) in c.execute("select distinct stream from kernels where run_id=? and job_id=?",
                                   (rid, job)).fetchall():
            ks = c.execute("select start_ns, end_ns from kernels where run_id=? and job_id=? and stream=? "
                           "and start_ns >= ? and end_ns <= ? order by start_ns",
                           (rid, job, stream, ws, we)).fetchall()
            g = [(b[0] - a[1]) / 1e3 for a, b in zip(ks, ks[1:]) if 0 <= b[0] - a[1] < 20000]
            if len(g) < 20:
                continue
            q = statistics.quantiles(g, n=10)
            print("%d,%s,%s,%s,%d,%.3f,%.3f,%.3f,%.3f" % (rid, pol, jobset, names[job], len(g), q[0],
                                                          statistics.median(g), statistics.mean(g), q[-1]))
