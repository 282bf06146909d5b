"""The victim's placement in placement.cu's runs: per scenario and repetition,
how many SMs its blocks went to, the most of them on one SM, its span (first
block start to last block end) and its blocks' median time, us.
    python3 analyze.py blocks_victim.csv.gz > analysis.txt"""
import collections, csv, gzip, statistics, sys

runs = collections.defaultdict(list)
with gzip.open(sys.argv[1] if len(sys.argv) > 1 else 'blocks_victim.csv.gz', 'rt') as f:
    for r in csv.DictReader(f):
        if r['kernel'] == '-1':
            runs[(r['scenario'], int(r['rep']))].append((int(r['sm']), int(r['start_ns']), int(r['end_ns'])))
print("%-26s %3s %6s %9s %8s %9s %9s" % ("scenario", "rep", "blocks", "SMs used", "max/SM", "span us", "block us"))
for (sc, rep), b in sorted(runs.items()):
    per = collections.Counter(s for s, _, _ in b)
    span = (max(e for _, _, e in b) - min(s for _, s, _ in b)) / 1e3
    med = statistics.median((e - s) / 1e3 for _, s, e in b)
    print("%-26s %3d %6d %9d %8d %9.1f %9.1f" % (sc, rep, len(b), len(per), max(per.values()), span, med))
