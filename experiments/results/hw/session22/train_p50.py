#!/usr/bin/env python3
"""The training's iteration time (p50, the validation's training p50 rows) against the
H100, per policy group, over every validation CSV of one or more folders made by
validate_all.sh: how many rows are within 5% and the mean error. Usage:
python3 train_p50.py DIR [DIR...]; prints one line per folder and group."""
import csv, glob, os, statistics, sys

GROUPS = {'alone': 'alone', 'tally': 'tally/tgs', 'tgs': 'tally/tgs'}
for d in sys.argv[1:]:
    per = {}
    for f in sorted(glob.glob(os.path.join(d, 'validation_*.csv'))):
        for r in csv.DictReader(open(f)):
            if r['role'] != 'training' or not r['p50_err']:
                continue
            g = GROUPS.get(r['policy'], 'mps/mps-priority/time-slicing/priority-streams')
            per.setdefault(g, []).append(float(r['p50_err']))
    for g, errs in sorted(per.items()):
        within = sum(abs(e) <= 0.05 for e in errs)
        print("%s  %-48s p50 within 5%%: %3d of %3d  mean error %+.1f%%  median %+.1f%%" %
              (d, g, within, len(errs), 100 * statistics.mean(errs), 100 * statistics.median(errs)))
