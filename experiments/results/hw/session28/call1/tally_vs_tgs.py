#!/usr/bin/env python3
"""Tally's p99 overhead and its system throughput over TGS's on the H100, per seed and
job set, from validation_graph_node_sSEED.csv files (columns p99_overhead_hw and
throughput_hw). From this folder: python3 tally_vs_tgs.py (seeds 22 and 23 here);
session 29's: python3 tally_vs_tgs.py ../../session29/call1 24 25"""
import csv, os, sys
folder = sys.argv[1] if len(sys.argv) > 1 else '.'
for s in [int(a) for a in sys.argv[2:]] or (22, 23):
    rs = list(csv.DictReader(open(os.path.join(folder, f'validation_graph_node_s{s}.csv'))))
    for js in sorted(set(r['job_set'] for r in rs if r['policy'] != 'alone')):
        d = {}
        for r in rs:
            if r['job_set'] != js:
                continue
            if r['role'] == 'inference':
                d[(r['policy'], 'ov')] = float(r['p99_overhead_hw'])
            if r['job'] == 'system':
                d[(r['policy'], 'sys')] = float(r['throughput_hw'])
        print(s, js, 'tally p99 overhead %+.1f%%' % (100 * d[('tally', 'ov')]),
              'tally/tgs system throughput %.2f' % (d[('tally', 'sys')] / d[('tgs', 'sys')]))
