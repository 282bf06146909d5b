#!/usr/bin/env python3
"""Call 2's sample of v1's blocks (block_probe.py --sample): each memory block inside the
span of the compute job's traced blocks, by the compute blocks on its SM that were
there when it started (older) and that were placed during its life (younger), its
duration over the alone run's median block (median and 90th percentile, groups of 30
blocks or more). Then, for the memory blocks placed before any compute block on their SM
that saw compute blocks arrive in the first half of their alone time: the rest of their
work's slowdown, (duration - arrival) / (alone median - arrival), by the compute blocks
that arrived (a block's early part, done before the arrival, would hide a starved rest).
    xz -dk call2/blocks_sample_v1.csv.xz; python3 block_age.py call2/blocks_sample_v1.csv"""
import sys
import numpy as np, pandas as pd
d = pd.read_csv(sys.argv[1])
d["end"] = d.start_gt + d.dur_ns
alone = d[(d.run == 2)].dur_ns.median()
for run in (7, 8):
    r = d[d.run == run]
    m = r[r.job == "v1-memory"]; c = r[r.job == "v1-compute"]
    lo, hi = c.start_gt.min(), c.end.max()
    m = m[(m.start_gt >= lo) & (m.end <= hi)].copy()
    older = np.zeros(len(m), int); younger = np.zeros(len(m), int)
    ms, me, msm = m.start_gt.to_numpy(), m.end.to_numpy(), m.sm.to_numpy()
    for sm in np.unique(msm):
        cs = c[c.sm == sm]; idx = np.nonzero(msm == sm)[0]
        a, b = cs.start_gt.to_numpy(), cs.end.to_numpy()
        for i in idx:
            older[i] = np.sum((a < ms[i]) & (b > ms[i]))     # compute blocks present when it started
            younger[i] = np.sum((a >= ms[i]) & (a < me[i]))  # compute blocks placed during its life
    m["older"], m["younger"] = older, younger
    m["x"] = m.dur_ns / alone
    print("run", run, r.policy.iloc[0], "memory blocks", len(m), "alone p50", alone)
    g = m.groupby([np.minimum(m.older, 6), np.minimum(m.younger, 4)]).x.agg([("blocks", "size"), ("median", "median"), ("p90", lambda s: s.quantile(.9))])
    print(g[g["blocks"] >= 30].to_string())

for run in (7, 8):
    r = d[d.run == run]; m = r[r.job == "v1-memory"]; c = r[r.job == "v1-compute"]
    lo, hi = c.start_gt.min(), c.end.max()
    m = m[(m.start_gt >= lo) & (m.end <= hi)]
    ms, me, msm = m.start_gt.to_numpy(), m.end.to_numpy(), m.sm.to_numpy()
    ta = np.full(len(m), -1.0); older = np.zeros(len(m), int); nyoung = np.zeros(len(m), int)
    for sm in np.unique(msm):
        cs = c[c.sm == sm]; idx = np.nonzero(msm == sm)[0]
        a, b = cs.start_gt.to_numpy(), cs.end.to_numpy()
        for i in idx:
            older[i] = np.sum((a < ms[i]) & (b > ms[i]))
            yy = a[(a >= ms[i]) & (a < me[i])]
            nyoung[i] = len(yy)
            if len(yy): ta[i] = yy.min() - ms[i]
    sel = (older == 0) & (nyoung > 0) & (ta < 0.5 * alone)
    after = (m.dur_ns.to_numpy()[sel] - ta[sel]) / (alone - ta[sel])
    print(run, r.policy.iloc[0], "older memory blocks with compute arriving in their first half:", sel.sum())
    for k in (1, 2, 3, 4):
        s2 = after[np.minimum(nyoung[sel], 4) == k]
        if len(s2) >= 20: print("  %d compute blocks arrive: n %d, slowdown of the rest: p50 %.2f p90 %.2f" % (k, len(s2), np.median(s2), np.quantile(s2, .9)))
