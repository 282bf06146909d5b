#!/usr/bin/env python3
"""tally_gaps.py DB [POLICY]: how the best-effort training uses the inference's idle
time under tally (or another policy), from a -k results database (hardware or
simulated), one line per pair run.

An idle period starts when an inference request ends with none queued and lasts until
the next request's first kernel starts. For each such period of at least 0.5 ms:
  resume  - from the idle start to the training's first kernel start in it (the
            policy's idle wait, its timer's lateness and the launch's latency);
  fill    - the share of the idle period's GPU time the training's kernels covered
            (after the resume);
Over the whole run: the training kernels' count, their median and mean duration and
how many were PTB launches or retreated; the inference's first-kernel delay after its
arrival (the request's start to its first kernel), median and p90."""
import bisect
import sqlite3
import statistics as st
import sys

db = sqlite3.connect(sys.argv[1])
policy = sys.argv[2] if len(sys.argv) > 2 else "tally"


def q(p, xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


runs = db.execute("select r.run_id, (select group_concat(name, '+') from jobs j where j.run_id=r.run_id) "
                  "from runs r where r.policy=? order by r.run_id", (policy,)).fetchall()
for run, jobs in runs:
    roles = dict(db.execute("select job_id, role from jobs where run_id=?", (run,)).fetchall())
    inf = [j for j, r in roles.items() if r == "inference"]
    trn = [j for j, r in roles.items() if r == "training"]
    if len(inf) != 1 or len(trn) != 1:
        continue
    inf, trn = inf[0], trn[0]
    ik = db.execute("select start_ns, end_ns from kernels where run_id=? and job_id=? order by start_ns",
                    (run, inf)).fetchall()
    tk = db.execute("select start_ns, end_ns, ptb, retreated from kernels where run_id=? and job_id=? "
                    "order by start_ns", (run, trn)).fetchall()
    reqs = db.execute("select arrival_ns, start_ns, end_ns from requests where run_id=? and job_id=? "
                      "order by arrival_ns", (run, inf)).fetchall()
    if not ik or not tk or not reqs:
        print(f"{jobs}: run {run} has no kernel records")
        continue
    istarts = [k[0] for k in ik]
    tstarts = [k[0] for k in tk]
    resume, fill, first = [], [], []
    for n, (arr, s, e) in enumerate(reqs):
        i = bisect.bisect_left(istarts, s)
        if i < len(ik):
            first.append(ik[i][0] - s)
        if n + 1 >= len(reqs) or reqs[n + 1][0] <= e:
            continue  # the next one was queued: no idle period
        nxt = bisect.bisect_left(istarts, reqs[n + 1][1])
        if nxt >= len(ik):
            continue
        a, b = e, ik[nxt][0]
        if b - a < 500_000:
            continue
        x = bisect.bisect_left(tstarts, a)
        if x >= len(tk) or tk[x][0] >= b:
            resume.append(b - a)
            fill.append(0.0)
            continue
        resume.append(tk[x][0] - a)
        cover, ce = 0, tk[x][0]
        for t0, t1, _, _ in tk[x:]:
            if t0 >= b:
                break
            u, v = max(ce, t0), min(b, t1)
            if v > u:
                cover += v - u
                ce = v
        fill.append(cover / (b - tk[x][0]) if b > tk[x][0] else 0.0)
    durs = [t1 - t0 for t0, t1, _, _ in tk]
    print(f"{jobs} (run {run}): idle periods >= 0.5 ms {len(resume)}; "
          f"resume us p10/p50/p90/mean {q(.1, resume)/1e3:.1f}/{q(.5, resume)/1e3:.1f}/"
          f"{q(.9, resume)/1e3:.1f}/{st.mean(resume)/1e3:.1f}; fill mean {st.mean(fill):.3f}; "
          f"training kernels {len(tk)} (ptb {sum(1 for k in tk if k[2])}, retreated "
          f"{sum(1 for k in tk if k[3])}), us median/mean {st.median(durs)/1e3:.1f}/{st.mean(durs)/1e3:.1f}; "
          f"inference first kernel after start us p50/p90 {q(.5, first)/1e3:.1f}/{q(.9, first)/1e3:.1f}")
