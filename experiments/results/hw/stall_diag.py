#!/usr/bin/env python3
"""stall_diag.py: where the slowest inference requests lose their time.

Usage: stall_diag.py DB [N]

For each inference job of each run in DB (tally-run with -k), the N (default
10) requests with the longest service time (start to end) are broken down
against the run's median request:
  lead    first kernel's start - the request's start (host issue, graph launch)
  busy    sum of its kernels' durations (GPU work)
  gaps    idle GPU time between its kernels
  maxgap  the longest of those gaps, and where it lay (kernel position)
  tail    the request's end - its last kernel's end (completion reaching the host)
Then, over the whole run, how late the host started requests it could have
started (after both their arrival and the previous request's end): whether
stalls are the host's (late starts, lead, tail) or the GPU's (busy, gaps).
"""
import os
import sqlite3
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from graph_diag import by_request  # noqa: E402


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    db = sqlite3.connect(sys.argv[1])
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    for run_id, policy in db.execute("select run_id, policy from runs order by run_id").fetchall():
        for job_id, name in db.execute("select job_id, name from jobs where run_id=? and role='inference'",
                                       (run_id,)).fetchall():
            ks = db.execute("select start_ns, end_ns from kernels where run_id=? and job_id=? order by start_ns",
                            (run_id, job_id)).fetchall()
            reqs = db.execute("select arrival_ns, start_ns, end_ns from requests where run_id=? and job_id=? "
                              "and end_ns is not null order by start_ns", (run_id, job_id)).fetchall()
            if not ks or not reqs:
                continue
            rows = []
            for (a, rs, re), mine in by_request(ks, reqs):
                if not mine:
                    continue
                busy = sum(e - s for s, e in mine)
                gaps, maxgap, maxpos, last = 0, 0, 0, mine[0][1]
                for p, (s, e) in enumerate(mine[1:], 1):
                    g = max(0, s - last)
                    gaps += g
                    if g > maxgap:
                        maxgap, maxpos = g, p
                    last = max(last, e)
                rows.append((re - rs, mine[0][0] - rs, busy, gaps, maxgap, maxpos, re - last, rs, len(mine)))
            med = [statistics.median(c) for c in zip(*rows)]
            t0 = reqs[0][0]
            print(f"== run {run_id} {policy} {name}: {len(rows)} requests; median service {med[0]/1e3:.1f} us "
                  f"(lead {med[1]/1e3:.1f}, busy {med[2]/1e3:.1f}, gaps {med[3]/1e3:.1f}, "
                  f"max gap {med[4]/1e3:.1f}, tail {med[6]/1e3:.1f})")
            print("   slowest: at_s service_us lead_us busy_us gaps_us maxgap_us@pos tail_us kernels")
            for r in sorted(rows, reverse=True)[:top]:
                print(f"   {(r[7]-t0)/1e9:7.3f} {r[0]/1e3:9.1f} {r[1]/1e3:8.1f} {r[2]/1e3:8.1f} {r[3]/1e3:8.1f} "
                      f"{r[4]/1e3:8.1f}@{r[5]:<4d} {r[6]/1e3:8.1f} {r[8]}")
            # The host starting a request later than it could: after its arrival
            # and the previous request's end.
            late, prev_end = [], 0
            for arr, rs, re in reqs:
                d = rs - max(arr, prev_end)
                if d > 0:
                    late.append((d, rs))
                prev_end = max(prev_end, re)
            late.sort(reverse=True)
            print(f"   started late (after arrival and the previous end): {sum(d for d, _ in late)/1e6:.2f} ms "
                  f"in all, {sum(1 for d, _ in late if d > 500000)} over 0.5 ms; longest: " +
                  ", ".join(f"{d/1e6:.2f} ms at {(t-t0)/1e9:.3f} s" for d, t in late[:5]))

if __name__ == "__main__":
    main()
