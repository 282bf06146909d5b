#!/usr/bin/env python3
"""tgs_slices.py DB RUN_ID [LABEL]: where the training's kernels cut into the inference
requests under time slicing (tgs, time-slicing), from a -k results database (hardware
or simulated). Job 0 is the inference, job 1 the training.

For each request whose first kernel is followed, before its last kernel ends, by a
training kernel's start ("cut" requests): when that training kernel started after the
request's first kernel (the inference context's slice, if it starts with the request),
and how much longer the request's kernels took in all than the median request's
("stretch") less the training kernel time inside the request (what the switches cost).
Also the share of requests cut, the training kernel time inside a cut request, and,
for cut requests whose kernels left the GPU idle 5 us or more before the cut, how long
after the last such idle the cut came (a slice restarted there?)."""
import bisect
import sqlite3
import statistics as st
import sys

db = sqlite3.connect(sys.argv[1])
run = int(sys.argv[2])
label = sys.argv[3] if len(sys.argv) > 3 else sys.argv[1]
reqs = db.execute("select start_ns, end_ns from requests where run_id=? and job_id=0 order by start_ns",
                  (run,)).fetchall()
ik = db.execute("select start_ns, end_ns from kernels where run_id=? and job_id=0 order by start_ns",
                (run,)).fetchall()
tk = db.execute("select start_ns, end_ns from kernels where run_id=? and job_id=1 order by start_ns",
                (run,)).fetchall()
istarts = [k[0] for k in ik]
tstarts = [k[0] for k in tk]
per = []
for s, e in reqs:
    i, j = bisect.bisect_left(istarts, s), bisect.bisect_right(istarts, e)
    if j <= i:
        continue
    a = ik[i][0]
    b = max(ik[x][1] for x in range(i, j))
    busy = sum(ik[x][1] - ik[x][0] for x in range(i, j))
    x0 = bisect.bisect_left(tstarts, a)
    cut_at = (tk[x0][0] - a) if x0 < len(tk) and tk[x0][0] < b else None
    inside, ce = 0, None
    for t0, t1 in tk[bisect.bisect_left(tstarts, a - 5_000_000):]:
        if t0 > b:
            break
        u, v = max(a, t0), min(b, t1)
        if v <= u:
            continue
        if ce is None or u > ce:
            inside += v - u
            ce = v
        elif v > ce:
            inside += v - ce
            ce = v
    # the GPU idle inside the request (between its own kernels) of 5 us or more,
    # before the cut: the last one's end, from the first kernel
    last_idle, end = 0, ik[i][1]
    for x in range(i + 1, j):
        if cut_at is not None and ik[x][0] - a >= cut_at:
            break
        if ik[x][0] - end >= 5000:
            last_idle = ik[x][0] - a
        end = max(end, ik[x][1])
    per.append((j - i, busy, cut_at, inside, last_idle))
med = st.median(p[1] for p in per if p[2] is None) if any(p[2] is None for p in per) else 0
cut = [p for p in per if p[2] is not None]
print("%s: %d requests, %d cut by a training kernel (%.0f%%); uncut median busy %.0f us"
      % (label, len(per), len(cut), 100.0 * len(cut) / max(1, len(per)), med / 1e3))
if cut:
    at = sorted(p[2] / 1e3 for p in cut)
    sw = sorted((p[1] - med - p[3]) / 1e3 for p in cut)
    q = lambda v, f: v[min(len(v) - 1, int(f * len(v)))]
    print("  training starts after the request's first kernel: p10 %.0f p50 %.0f p90 %.0f us"
          % (q(at, .1), q(at, .5), q(at, .9)))
    h = [0] * 14
    for x in at:
        h[min(13, int(x // 250))] += 1
    print("  the same per 250 us from 0:", h)
    print("  stretch less training inside: p10 %.0f p50 %.0f p90 %.0f us; training inside p50 %.0f us"
          % (q(sw, .1), q(sw, .5), q(sw, .9), st.median(p[3] for p in cut) / 1e3))
    idl = [p for p in cut if p[4] > 0]
    if idl:
        since = sorted((p[2] - p[4]) / 1e3 for p in idl)
        print("  %d cut requests idled 5 us or more before the cut; the cut came p10 %.0f p50 %.0f"
              " p90 %.0f us after the last such idle" % (len(idl), q(since, .1), q(since, .5), q(since, .9)))
