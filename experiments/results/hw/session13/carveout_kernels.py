"""Training's kernels beside ViT-B/16 under priority streams and MPS, per kernel
name (mean us): the H100 (../tally_gap/headline_diag_slim.db, session 9, unpacked
with xz -dk) against the simulator at revision 13 with carveout 0 and 1. The
simulated databases come from (C = 0, 1):
  build/tally-sim run -q -s experiments/specs/tally_headline.json -t 2 -w 1 -r 1 \\
    -p priority-streams -p mps -k --sim-param launch_latency_ns=12500 \\
    --sim-param callback_launch_latency_ns=1100 --sim-param graph_launch_ns=0 \\
    --sim-param graph_node_ns=510 --sim-param carveout=C -d /tmp/tdcC.db
  python3 carveout_kernels.py HW.db /tmp/tdc0.db /tmp/tdc1.db"""
import collections
import sqlite3
import statistics as st
import sys


def load(f, pol):
    c = sqlite3.connect(f)
    d = collections.defaultdict(list)
    for rid, in c.execute("select run_id from runs where policy=?", (pol,)):
        jobs = dict(c.execute("select job_id, name from jobs where run_id=?", (rid,)).fetchall())
        if not any(n.startswith('vit') for n in jobs.values()):
            continue
        tj = [j for j, n in jobs.items() if n.startswith('resnet50-train')][0]
        for name, dur in c.execute("select name, end_ns - start_ns from kernels where run_id=? and job_id=?",
                                   (rid, tj)):
            d[name[:50]].append(dur / 1e3)
    return d


hw_db, s0_db, s1_db = sys.argv[1:4]
for pol in ('priority-streams', 'mps'):
    hw, s0, s1 = load(hw_db, pol), load(s0_db, pol), load(s1_db, pol)
    print("%s: training's kernels beside ViT-B/16, the 10 with the most time on the H100" % pol)
    print("  %-50s %9s %9s %9s" % ("kernel", "hw", "carveout0", "carveout1"))
    rows = sorted(((st.mean(v) * len(v), k) for k, v in hw.items() if k in s0 and k in s1 and len(v) >= 5),
                  reverse=True)
    for _, k in rows[:10]:
        print("  %-50s %9.1f %9.1f %9.1f" % (k, st.mean(hw[k]), st.mean(s0[k]), st.mean(s1[k])))
