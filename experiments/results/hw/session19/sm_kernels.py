#!/usr/bin/env python3
"""Per run, job and kernel name of a database with per-kernel records (-k): launches,
mean duration (us) and the mean and distribution of avg_sms inside the measured window.
With TALLY_SM_TRACE=1 (tally-run) avg_sms is the number of SMs a launch's blocks ran on;
in the simulator it is the time-averaged number of SMs holding its blocks.
    python3 sm_kernels.py DB > OUT.csv"""
import sqlite3, sys

c = sqlite3.connect(sys.argv[1])
print("run,policy,job_set,job,kernel,launches,blocks,mean_us,sms_mean,sms_p10,sms_p50,sms_p90")
for rid, pol, ws, we in c.execute("select run_id, policy, warmup_ns, warmup_ns + duration_ns from runs "
                                  "order by run_id").fetchall():
    names = dict(c.execute("select job_id, name from jobs where run_id=?", (rid,)).fetchall())
    jobset = '+'.join(names[j] for j in sorted(names))
    rows = {}
    for job, name, blocks, dur, sms in c.execute(
            "select job_id, name, blocks, end_ns - start_ns, avg_sms from kernels where run_id=? "
            "and start_ns >= ? and end_ns <= ?", (rid, ws, we)):
        rows.setdefault((job, name), []).append((blocks, dur, sms))
    for (job, name), v in sorted(rows.items(), key=lambda kv: -sum(x[1] for x in kv[1])):
        s = sorted(x[2] for x in v)
        q = lambda f: s[int(f * (len(s) - 1))]
        print('%d,%s,%s,%s,"%s",%d,%.0f,%.2f,%.1f,%.0f,%.0f,%.0f' % (
            rid, pol, jobset, names[job], name.replace('"', "'")[:120], len(v), sum(x[0] for x in v) / len(v),
            sum(x[1] for x in v) / len(v) / 1e3, sum(s) / len(s), q(.1), q(.5), q(.9)))
