"""perkernel.py HW.db SIM.db [SIM2.db ...]: each job's kernels beside the other
job under priority-streams and mps, per kernel name (mean us over the first
WINDOW_MS ms of every run's measured period, as slim_db.py keeps on the hardware;
environment WINDOW_MS, default 100),
on the H100 and in the simulator, each also as a ratio to the same kernel's mean
in the job's alone run; and the median gap between one kernel's end and the
next one's start on the job's stream (the room the other job gets between them).
HW.db: a tally-run database with per-kernel records (-k), e.g. call1.sh's
perkernel_slim.db; SIM.db: tally-sim run -k of the same spec and seed (the
command is in README.md)."""
import collections
import sqlite3
import statistics as st
import os
import sys

WINDOW_NS = int(float(os.environ.get('WINDOW_MS', '100')) * 1e6)
PAIRS = ('mobilenet-b1', 'vit-b16-b1', 'resnet50-b8')


def runs(c, pol):
    for rid, warm in c.execute("select run_id, warmup_ns from runs where policy=?", (pol,)):
        jobs = dict(c.execute("select job_id, name from jobs where run_id=?", (rid,)).fetchall())
        yield rid, warm, jobs


def kernels(c, rid, warm, job):
    return c.execute("select name, start_ns, end_ns from kernels where run_id=? and job_id=? "
                     "and start_ns >= ? and start_ns < ? order by start_ns",
                     (rid, job, warm, warm + WINDOW_NS)).fetchall()


def load(path):
    """{(policy, pair, job name): ({kernel: [us]}, [gap us])}"""
    c = sqlite3.connect(path)
    out = {}
    for pol in ('alone', 'priority-streams', 'mps'):
        for rid, warm, jobs in runs(c, pol):
            names = sorted(jobs.values())
            pair = next((p for p in PAIRS if p in names), 'resnet50-train')
            for jid, jname in jobs.items():
                d = collections.defaultdict(list)
                gaps = []
                prev_end = None
                for name, s, e in kernels(c, rid, warm, jid):
                    d[name[:48]].append((e - s) / 1e3)
                    if prev_end is not None and s >= prev_end:
                        gaps.append((s - prev_end) / 1e3)
                    prev_end = e if prev_end is None or e > prev_end else prev_end
                key = (pol, 'alone' if pol == 'alone' else pair, jname)
                out[key] = (d, gaps)
    return out


hw = load(sys.argv[1])
sims = [load(p) for p in sys.argv[2:]]
for pair in PAIRS:
    for pol in ('priority-streams', 'mps'):
        for job in (pair, 'resnet50-train'):
            key = (pol, pair, job)
            if key not in hw:
                continue
            d, gaps = hw[key]
            alone = hw.get(('alone', 'alone', job), ({}, []))[0]
            print("%s, %s beside %s: %s's kernels (mean us; x: over alone)" %
                  (pol, job, pair if job != pair else 'resnet50-train', job))
            print("  %-48s %5s %8s %6s" % ("kernel", "n", "hw", "x") +
                  ''.join(" %8s %6s" % ("sim%d" % i, "x") for i in range(len(sims))))
            top = sorted(((st.mean(v) * len(v), k) for k, v in d.items() if len(v) >= 3), reverse=True)
            for _, k in top[:12]:
                a = st.mean(alone[k]) if k in alone else float('nan')
                line = "  %-48s %5d %8.1f %6.2f" % (k, len(d[k]), st.mean(d[k]), st.mean(d[k]) / a)
                for s in sims:
                    sd = s.get(key, ({}, []))[0]
                    sa = s.get(('alone', 'alone', job), ({}, []))[0]
                    if k in sd and k in sa:
                        line += " %8.1f %6.2f" % (st.mean(sd[k]), st.mean(sd[k]) / st.mean(sa[k]))
                    else:
                        line += " %8s %6s" % ('-', '-')
                print(line)
            tot = lambda dd: sum(map(sum, dd.values())) / 1e3
            med = lambda g: st.median(g) if g else float('nan')
            print("  kernel time in the window, ms: hw %.1f" % tot(d) +
                  ''.join(" sim%d %.1f" % (i, tot(s.get(key, ({}, []))[0])) for i, s in enumerate(sims)) +
                  "; median gap us: hw %.2f" % med(gaps) +
                  ''.join(" sim%d %.2f" % (i, med(s.get(key, ({}, []))[1])) for i, s in enumerate(sims)))
            print()
