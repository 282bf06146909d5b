#!/usr/bin/env python3
"""Sum the rankings (up to ties) over every validation of a compare_validations.py output.
  python3 rank_totals.py compare_all_X.txt"""
import re, sys
a = [0] * 8
for l in open(sys.argv[1]):
    m = re.findall(r"sys (\d+)/(\d+) p99ov\(tied\) (\d+)/(\d+)", l)
    if len(m) == 2:
        for i, v in enumerate(m[0] + m[1]):
            a[i] += int(v)
print("rankings up to ties, before: system throughput %d/%d, p99 overhead (overloaded tied) %d/%d; "
      "after: %d/%d, %d/%d" % tuple(a))
