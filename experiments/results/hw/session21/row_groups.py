#!/usr/bin/env python3
"""Row groups across the node-calibrated graph validations (validation_graph_node_*.csv of
two validate_all.sh output folders, A and B): per job set, policy, job and metric (p99 and
service time within 10%, training throughput within 5%; the training jobs' p99, their
iteration time, is listed too, though the goal counts inference rows only), how many of the runs' rows are
within the goal in A and in B and the median error in each; groups within the goal in every
run on both sides are left out; sorted by A's count. Usage:
    python3 row_groups.py A_DIR B_DIR"""
import collections, csv, glob, sys


def load(d):
    rows = {}
    for f in sorted(glob.glob(d + '/validation_graph_node_*.csv')):
        for r in csv.DictReader(open(f)):
            rows[(f.split('/')[-1], r['job_set'], r['policy'], r['job'])] = r
    return rows


def err(r, col):
    return float(r[col]) if r.get(col) not in (None, '') else float('nan')


a, b = load(sys.argv[1]), load(sys.argv[2])
groups = collections.defaultdict(lambda: [0, 0, 0, [], []])
for k, r in a.items():
    for metric, col, tol in (('p99', 'p99_err', .10), ('svc', 'service_err', .10), ('thr', 'throughput_err', .05)):
        if r.get(col) in (None, '') or k not in b:
            continue
        ea, eb = err(r, col), err(b[k], col)
        g = groups[(k[1], k[2], k[3], metric)]
        g[0] += 1
        g[1] += abs(ea) <= tol
        g[2] += abs(eb) <= tol
        g[3].append(ea)
        g[4].append(eb)
median = lambda v: sorted(v)[len(v) // 2]
for k, g in sorted(groups.items(), key=lambda kv: (kv[1][1] - kv[1][0], kv[0])):
    if g[1] == g[0] and g[2] == g[0]:
        continue
    print("%-27s %-16s %-14s %-3s within %2d -> %2d of %2d  median error %+6.1f%% -> %+6.1f%%" %
          (k[0], k[1], k[2], k[3], g[1], g[2], g[0], 100 * median(g[3]), 100 * median(g[4])))
