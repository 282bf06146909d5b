#!/usr/bin/env python3
"""graph_diag.py: where an inference request's time goes, from per-kernel records.

Usage: graph_diag.py DB [--positions CSV]

For every inference job of every run in DB (tally-sim or tally-run with -k),
each request's kernels are those of its job that start inside [start, end] of
the request. Printed per run and job (medians over requests):
  lead   first kernel's start - the request's start (launch to first kernel)
  busy   sum of its kernels' durations
  gaps   sum of the idle time between consecutive kernels
  tail   the request's end - its last kernel's end (completion reaching the host)
  total  the request's end - start
  other  other jobs' kernel time overlapping [start, end] (summed over kernels)
  other_lead  other jobs' kernel time overlapping [start, first kernel's start]
and the 10th and 90th percentiles of lead, the 90th of total.
With --positions, the median duration and gap before each kernel position of
a request (same number of kernels) are written as CSV, for comparing a
simulated and a hardware database kernel by kernel.
"""
import bisect
import csv
import sqlite3
import statistics
import sys


def med(xs):
    return statistics.median(xs) if xs else float("nan")


class Others:
    """Other jobs' kernels of a run, for summing their overlap with a window."""

    def __init__(self, ks):
        self.ks = sorted(ks)
        self.starts = [k[0] for k in self.ks]
        self.maxdur = max((e - s for s, e in self.ks), default=0)

    def overlap(self, a, b):
        if b <= a:
            return 0
        i = bisect.bisect_left(self.starts, a - self.maxdur)
        j = bisect.bisect_left(self.starts, b)
        return sum(max(0, min(e, b) - max(s, a)) for s, e in self.ks[i:j])


def by_request(ks, reqs):
    """Each request (rows of (.., start, end): the last two fields) with its
    kernels: those of ks (sorted by start) that start inside [start, end]."""
    i = 0
    for req in reqs:
        rs, re = req[-2], req[-1]
        while i < len(ks) and ks[i][0] < rs:
            i += 1
        j = i
        while j < len(ks) and ks[j][0] <= re:
            j += 1
        yield req, ks[i:j]
        i = j


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    db = sqlite3.connect(sys.argv[1])
    pos_out = None
    if len(sys.argv) >= 4 and sys.argv[2] == "--positions":
        pos_out = csv.writer(open(sys.argv[3], "w", newline=""))
        pos_out.writerow(["run_id", "policy", "job", "pos", "kernel", "dur_ns", "gap_ns"])
    print("run policy job requests kernels/req lead_us busy_us gaps_us tail_us total_us other_us "
          "other_lead_us lead_p10_us lead_p90_us total_p90_us")
    for run_id, policy in db.execute("select run_id, policy from runs order by run_id"):
        for job_id, name in db.execute(
                "select job_id, name from jobs where run_id=? and role='inference'", (run_id,)).fetchall():
            ks = db.execute("select start_ns, end_ns, name from kernels where run_id=? and job_id=? "
                            "order by start_ns", (run_id, job_id)).fetchall()
            if not ks:
                continue
            others = Others(db.execute("select start_ns, end_ns from kernels where run_id=? and job_id!=?",
                                       (run_id, job_id)).fetchall())
            reqs = db.execute("select start_ns, end_ns from requests where run_id=? and job_id=? "
                              "and end_ns is not null order by start_ns", (run_id, job_id)).fetchall()
            rows = []
            per_pos = {}
            for (rs, re), mine in by_request(ks, reqs):
                if not mine:
                    continue
                busy = sum(e - s for s, e, _ in mine)
                gaps, last = 0, mine[0][1]
                gl = [0]
                for s, e, _ in mine[1:]:
                    g = max(0, s - last)
                    gaps += g
                    gl.append(g)
                    last = max(last, e)
                rows.append((len(mine), mine[0][0] - rs, busy, gaps, re - last, re - rs,
                             others.overlap(rs, re), others.overlap(rs, mine[0][0])))
                if pos_out is not None:
                    for p, (s, e, kn) in enumerate(mine):
                        per_pos.setdefault((len(mine), p), (kn, [], []))
                        per_pos[(len(mine), p)][1].append(e - s)
                        per_pos[(len(mine), p)][2].append(gl[p])
            if not rows:
                continue
            cols = list(zip(*rows))
            leads, totals = sorted(cols[1]), sorted(cols[5])
            print(run_id, policy, name, len(rows), med(cols[0]),
                  *("%.1f" % (med(c) / 1000) for c in cols[1:]),
                  "%.1f" % (leads[len(leads) // 10] / 1000), "%.1f" % (leads[9 * len(leads) // 10] / 1000),
                  "%.1f" % (totals[9 * len(totals) // 10] / 1000))
            if pos_out is not None and per_pos:
                common = max(set(cols[0]), key=cols[0].count)
                for (n, p), (kn, ds, gs) in sorted(per_pos.items()):
                    if n == common:
                        pos_out.writerow([run_id, policy, name, p, kn[:60], med(ds), med(gs)])


if __name__ == "__main__":
    main()
