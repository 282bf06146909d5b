#!/usr/bin/env python3
"""Scores compare_probe.py outputs: per file, the rms of log(simulated / H100) of
each kernel's time over its time alone, and how many are within 20%.
    python3 probe_score.py pv_*.txt"""
import math, re, sys

for f in sys.argv[1:]:
    e = []
    for line in open(f):
        m = re.findall(r'\(\s*([\d.]+)x\)', line)
        if len(m) == 2:
            e.append(math.log(float(m[1]) / float(m[0])))
    w = sum(abs(x) <= math.log(1.2) for x in e)
    print('%-28s rms log %.3f  within 20%%: %d of %d' % (f, (sum(x * x for x in e) / len(e)) ** .5, w, len(e)))
