#!/usr/bin/env python3
"""The sharing probe's variants side by side (call 9): per variant, policy and job the
mean kernel time over its alone time and the SMs a launch ran on (median, 10th
percentile), on the H100 and simulated, from the two sm_kernels.py summaries.
    python3 compare_probe.py probe_variants_kernels_hw.csv probe_variants_kernels_sim.csv"""
import csv, sys

def load(p):
    return {(r['policy'], r['job']): r for r in csv.DictReader(open(p))}

h, s = load(sys.argv[1]), load(sys.argv[2])
print('%-17s %-11s | %-28s | %-28s' % ('policy', 'job', 'H100: us (x alone) SMs p50 (p10)', 'simulated'))
jobs = sorted({j for _, j in h if j.startswith('v')})
for job in jobs:
    ah, as_ = float(h[('alone', job)]['mean_us']), float(s[('alone', job)]['mean_us'])
    for pol in ('mps', 'priority-streams'):
        x, y = h.get((pol, job)), s.get((pol, job))
        if not x or not y:
            continue
        print('%-17s %-11s | %6.1f (%5.2fx) %3s (%3s)    | %6.1f (%5.2fx) %3s (%3s)' % (
            pol, job, float(x['mean_us']), float(x['mean_us']) / ah, x['sms_p50'], x['sms_p10'],
            float(y['mean_us']), float(y['mean_us']) / as_, y['sms_p50'], y['sms_p10']))
