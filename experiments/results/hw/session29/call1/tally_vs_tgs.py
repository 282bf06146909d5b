#!/usr/bin/env python3
"""Tally's p99 overhead and its system throughput over TGS's on the H100, per seed and
job set, from the validations of call1/ (columns p99_overhead_hw and throughput_hw; session 28's script, seeds 24 and 25).
From this folder: python3 tally_vs_tgs.py"""
import csv
for s in (24, 25):
    rs = list(csv.DictReader(open(f'validation_graph_node_s{s}.csv')))
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
