#!/usr/bin/env python3
"""pair_gaps.py DB: in each alone run of a results database made with -k from
make_probe.py's trace, the gap from each kernel's end to the next one's start, by
the pair (previous -> next kernel name): how many, the share over 2 us, p10, median,
p90 and mean, in ns; and each kernel's median duration."""
import sqlite3, statistics as st, collections, sys
db = sqlite3.connect(sys.argv[1])
for run, job, jname, pol in db.execute("select r.run_id, j.job_id, j.name, r.policy from runs r "
                                       "join jobs j using(run_id) order by r.run_id, j.job_id").fetchall():
    ks = db.execute("select seq, start_ns, end_ns, name from kernels where run_id=? and job_id=? "
                    "order by seq", (run, job)).fetchall()
    if not ks:
        continue
    print('run %d (%s), job %s: %d kernels' % (run, pol, jname, len(ks)))
    d, dur = collections.defaultdict(list), collections.defaultdict(list)
    for a, b in zip(ks, ks[1:]):
        g = b[1] - a[2]
        if b[0] == a[0] + 1 and 0 <= g < 100000:
            d[(a[3], b[3])].append(g)
    for k in ks:
        dur[k[3]].append(k[2] - k[1])
    for (p, n), v in sorted(d.items()):
        v.sort()
        q = lambda f: v[min(len(v) - 1, int(f * len(v)))]
        print('  %-24s -> %-24s n=%5d long %.2f p10 %5d median %5d p90 %5d mean %5.0f' %
              (p, n, len(v), sum(x > 2000 for x in v) / len(v), q(.1), st.median(v), q(.9), st.mean(v)))
    for n, v in sorted(dur.items()):
        print('  duration %-24s median %8.0f ns' % (n, st.median(v)))
