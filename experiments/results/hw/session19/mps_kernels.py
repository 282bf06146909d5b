#!/usr/bin/env python3
"""Where an inference's service time goes, per run of a database with per-kernel records
(tally-run -k or tally-sim -k; call4.sh's MPS runs): for each run and inference job, the
requests that started inside the measured window: mean service time (start to end), mean
GPU-busy time (the union of its kernels' intervals) and the rest (gaps: launches, the
GPU's back-to-back gap, waits for room), and per kernel name the launches and mean
duration. Usage:
    python3 mps_kernels.py DB > OUT.csv      (one line per run, job and kernel name,
                                              then '#' lines with the decomposition)"""
import sqlite3, sys
from bisect import bisect_left

c = sqlite3.connect(sys.argv[1])
runs = c.execute("select run_id, policy, warmup_ns, warmup_ns + duration_ns from runs order by run_id").fetchall()
print("run,policy,job,job_set,kernel,launches,mean_us,total_ms")
summary = []
for rid, pol, ws, we in runs:
    names = dict(c.execute("select job_id, name from jobs where run_id=?", (rid,)).fetchall())
    roles = dict(c.execute("select job_id, role from jobs where run_id=?", (rid,)).fetchall())
    jobset = '+'.join(names[j] for j in sorted(names))
    for (job,) in c.execute("select distinct job_id from kernels where run_id=?", (rid,)).fetchall():
        for name, n, avg, tot in c.execute(
                "select name, count(*), avg(end_ns - start_ns), sum(end_ns - start_ns) from kernels "
                "where run_id=? and job_id=? and start_ns >= ? and end_ns <= ? group by name "
                "order by sum(end_ns - start_ns) desc", (rid, job, ws, we)).fetchall():
            print('%d,%s,%s,%s,"%s",%d,%.3f,%.3f' % (rid, pol, names[job], jobset, name.replace('"', "'"), n,
                                                     avg / 1e3, tot / 1e6))
        if roles[job] != 'inference':
            continue
        ks = c.execute("select start_ns, end_ns from kernels where run_id=? and job_id=? order by start_ns",
                       (rid, job)).fetchall()
        starts = [k[0] for k in ks]
        reqs = c.execute("select start_ns, end_ns from requests where run_id=? and job_id=? and start_ns >= ? "
                         "and end_ns <= ?", (rid, job, ws, we)).fetchall()
        svc = busy = nk = 0
        for s, e in reqs:
            i = bisect_left(starts, s)
            a = b = None
            u = 0
            while i < len(ks) and ks[i][0] < e:
                ka, kb = ks[i]
                kb = min(kb, e)
                if a is None or ka > b:
                    if a is not None: u += b - a
                    a, b = ka, kb
                elif kb > b:
                    b = kb
                nk += 1
                i += 1
            if a is not None: u += b - a
            svc += e - s
            busy += u
        n = len(reqs)
        if n:
            summary.append('# run %d %s %s (%s): %d requests, service %.3f ms = GPU busy %.3f ms + gaps %.3f ms; '
                           '%.1f kernels a request' % (rid, pol, names[job], jobset, n, svc / n / 1e6, busy / n / 1e6,
                                                       (svc - busy) / n / 1e6, nk / n))
print('\n'.join(summary))
