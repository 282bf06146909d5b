#!/usr/bin/env python3
"""pooled_p99.py: the p99 of each inference job's requests pooled over several
hardware databases of the same spec (seeds), against the pooled alone runs.

Usage (from the repository root, the databases unpacked with xz -dk):
  python3 experiments/results/hw/session11/pooled_p99.py \\
      experiments/results/hw/session11/graph_long{,_s2,_s3}.db
p99: nearest rank over the finished requests (as tally-sim's metrics).
"""
import math
import sqlite3
import sys


def p99(v):
    v = sorted(v)
    return v[max(0, math.ceil(0.99 * len(v)) - 1)]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    pool = {}
    for path in sys.argv[1:]:
        c = sqlite3.connect(path)
        for rid, pol in c.execute("select run_id, policy from runs").fetchall():
            for jid, name in c.execute("select job_id, name from jobs where run_id=? and role='inference'",
                                       (rid,)).fetchall():
                lat = [r[0] for r in c.execute("select latency_ns from requests where run_id=? and job_id=? "
                                               "and end_ns is not null", (rid, jid))]
                pool.setdefault((pol, name), []).extend(lat)
    for (pol, name), lat in sorted(pool.items()):
        if pol == "alone":
            continue
        a = p99(pool[("alone", name)])
        t = p99(lat)
        print(f"{name:13s} {pol:16s} pooled p99 {t/1e6:.2f} ms vs alone {a/1e6:.2f} ms: "
              f"{100*(t/a-1):+.1f}%  (n={len(lat)})")


if __name__ == "__main__":
    main()
