#!/usr/bin/env python3
"""Shared runs' mean kernel time over each job's alone run, H100 against a simulated twin,
from two ../../session19/sm_kernels.py summaries; with the SMs a launch ran on (median /
10th percentile), and the root-mean-square of log(sim / H100) over the rows:
    python3 compare_kernels.py HW.csv SIM.csv"""
import csv, sys, math
def load(p):
    d = {}
    for r in csv.DictReader(open(p)):
        k = (r['policy'], r['job_set'] if r['policy'] != 'alone' else '', r['job'])
        if k in d and r['policy'] != 'alone':  # alone runs repeat per job set, the same runs
            sys.exit('compare_kernels.py: %s has %s twice (runs of an earlier sweep in its database?)' % (p, k))
        d.setdefault(k, r)
    return d
h, s = load(sys.argv[1]), load(sys.argv[2])
alone = lambda d, j: float(d[('alone', '', j)]['mean_us'])
errs = []
print('%-16s %-11s | H100 x  SMs p50/p10 | sim x  SMs p50/p10 | sim/H100' % ('pair', 'job'))
for (pol, js, job), r in sorted(h.items()):
    if pol == 'alone': continue
    x = float(r['mean_us']) / alone(h, job)
    q = s.get((pol, js, job))
    if not q: continue
    y = float(q['mean_us']) / alone(s, job)
    errs.append(math.log(y / x))
    print('%-16s %-11s | %5.2f  %3s/%3s     | %5.2f  %3s/%3s     | %+5.0f%%' % (js, job, x, r['sms_p50'], r['sms_p10'], y, q['sms_p50'], q['sms_p10'], (y / x - 1) * 100))
print('rms log error %.3f; within 20%%: %d of %d' % (math.sqrt(sum(e * e for e in errs) / len(errs)), sum(abs(math.exp(e) - 1) <= .2 for e in errs), len(errs)))
