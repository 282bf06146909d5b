"""Median over runs of each configuration's launch-call time (launch_cost.cu)."""
import collections, statistics, sys
d, it = collections.defaultdict(list), collections.defaultdict(list)
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) >= 11 and f[1] == "launch_call_us":
        d[f[0]].append(float(f[3])); it[f[0]].append(float(f[10]))
b, bi = statistics.median(d["untraced"]), statistics.median(it["untraced"])
for k in sorted(d):
    print("%-18s launch call %.3f us (%+.3f)  runs [%s]  iteration %.1f us (%+.1f%%)" % (
        k, statistics.median(d[k]), statistics.median(d[k]) - b, " ".join("%.2f" % x for x in d[k]),
        statistics.median(it[k]), 100 * (statistics.median(it[k]) / bi - 1)))
