#!/usr/bin/env python3
"""tgs_windows.py DB RUN_ID TGS_LOG [LABEL [CSV_PREFIX]]: the TGS controller's windows against the
training kernels that ran in them, from a -k results database (hardware or simulated)
and the TALLY_TGS_LOG of the same run (its last '# tgs run' block).

Prints, for the windows after 1.05 s that observed high-priority work, grouped by the
training kernel time inside the window: how many, the mean observation (high-priority
solo / wall time), its ratio to the best of the recent windows, the share read as a
drop (observation < 0.95 x best, which halves the training's rate), and the
high-priority wall time above solo time per kernel. Then, per inference request, the
time from its start to its first kernel ("lead"), grouped by how long before that the
last training kernel ended. Job 0 is the inference, job 1 the training. With
CSV_PREFIX, the windows and the requests are also written to CSV_PREFIX_windows.csv
and CSV_PREFIX_requests.csv (what the summary is computed from)."""
import bisect
import sqlite3
import statistics as st
import sys

db = sqlite3.connect(sys.argv[1])
run = int(sys.argv[2])
label = sys.argv[4] if len(sys.argv) > 4 else sys.argv[1]
prefix = sys.argv[5] if len(sys.argv) > 5 else None
wcsv = open(prefix + "_windows.csv", "w") if prefix else None
rcsv = open(prefix + "_requests.csv", "w") if prefix else None
if wcsv:
    wcsv.write("time_ns,observation,best,drop,training_ns,hp_kernels,wall_minus_solo_ns\n")
    rcsv.write("start_ns,lead_ns,since_training_end_ns\n")
tk = db.execute("select start_ns, end_ns from kernels where run_id=? and job_id=1 order by start_ns",
                (run,)).fetchall()
starts = [k[0] for k in tk]
blocks, cur = [], None
for line in open(sys.argv[3]):
    if line.startswith("#"):
        cur = []
        blocks.append(cur)
    elif cur is not None:
        cur.append(line.strip().split(","))
rows = blocks[-1]  # time_ns,hp_solo_ns,hp_wall_ns,hp_kernels,observed,observation,best,rate_before,rate_after


def train_in(a, b):
    i = bisect.bisect_left(starts, a - 5_000_000)
    s = 0
    for k0, k1 in tk[i:]:
        if k0 > b:
            break
        s += max(0, min(b, k1) - max(a, k0))
    return s


bins = ["<50 us", "50-200 us", "200-500 us", "0.5-1 ms", ">1 ms"]
grp = {}
for r in rows:
    t = int(r[0])
    if t < 1_050_000_000 or r[4] != "1" or float(r[6]) <= 0:
        continue
    tr = train_in(t - 10_000_000, t) / 1e3
    k = 0 if tr < 50 else 1 if tr < 200 else 2 if tr < 500 else 3 if tr < 1000 else 4
    obs, best = float(r[5]), float(r[6])
    if wcsv:
        wcsv.write("%d,%s,%s,%d,%d,%s,%d\n" % (t, r[5], r[6], obs < 0.95 * best, tr * 1e3, r[3],
                                               int(r[2]) - int(r[1])))
    grp.setdefault(k, []).append((obs, obs / best, obs < 0.95 * best,
                                  (int(r[2]) - int(r[1])) / max(1, int(r[3])) / 1e3))
print("%s: windows by training kernel time in the window" % label)
print("  training      windows  obs    obs/best  drop   (wall-solo)/kernel us")
for k in sorted(grp):
    v = grp[k]
    print("  %-12s %7d  %.3f  %.3f     %.2f   %.2f" % (
        bins[k], len(v), st.mean(x[0] for x in v), st.mean(x[1] for x in v),
        st.mean(x[2] for x in v), st.mean(x[3] for x in v)))

reqs = db.execute("select start_ns, end_ns from requests where run_id=? and job_id=0 order by start_ns",
                  (run,)).fetchall()
ik = db.execute("select start_ns from kernels where run_id=? and job_id=0 order by start_ns",
                (run,)).fetchall()
istarts = [k[0] for k in ik]
tends = sorted(k[1] for k in tk)
lead = {}
for s, e in reqs:
    i = bisect.bisect_left(istarts, s)
    if i >= len(istarts) or istarts[i] > e:
        continue
    j = bisect.bisect_left(tends, istarts[i]) - 1
    since = (istarts[i] - tends[j]) / 1e3 if j >= 0 else 1e9
    if rcsv:
        rcsv.write("%d,%d,%d\n" % (s, istarts[i] - s, since * 1e3 if j >= 0 else -1))
    c = "< 200 us" if since < 200 else "0.2-2 ms" if since < 2000 else "> 2 ms"
    lead.setdefault(c, []).append((istarts[i] - s) / 1e3)
print("%s: requests by the time since the last training kernel ended" % label)
for c in ("> 2 ms", "0.2-2 ms", "< 200 us"):
    v = sorted(lead.get(c, []))
    if v:
        print("  %-9s %5d requests  lead p10 %.1f  p50 %.1f  p90 %.1f us" % (
            c, len(v), v[len(v) // 10], st.median(v), v[9 * len(v) // 10]))
