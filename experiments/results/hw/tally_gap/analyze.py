#!/usr/bin/env python3
"""analyze.py: the figures of README.md from the slim per-kernel databases.

Usage: analyze.py HW_SLIM.db [SIM.db]

HW_SLIM.db: a slim_db.py copy of a tally-run -k database (gunzip the .db.gz
here first). Printed per run and inference job:
  - the median gap between consecutive kernels of the job (gaps under 3 us:
    those inside one CUDA graph), and how many requests hold a hole of more
    than 3 us, with the kernel positions where the holes are;
and, when the database holds a priority-streams run of vit-b16-b1, per kernel
name of ViT the median duration alone and beside training (hw), and the same
from SIM.db (a tally-sim -k database of the same spec) when given.
"""
import bisect
import collections
import sqlite3
import statistics
import sys


def gaps_by_run(db):
    print("run policy job median_gap_ns requests_with_hole hole_positions")
    for run_id, policy in db.execute("select run_id, policy from runs order by run_id").fetchall():
        for job_id, name in db.execute("select job_id, name from jobs where run_id=? and role='inference'",
                                       (run_id,)).fetchall():
            ks = db.execute("select start_ns, end_ns from kernels where run_id=? and job_id=? order by start_ns",
                            (run_id, job_id)).fetchall()
            if len(ks) < 2:
                continue
            small = [b[0] - a[1] for a, b in zip(ks, ks[1:]) if 0 <= b[0] - a[1] < 3000]
            reqs = db.execute("select start_ns, end_ns from requests where run_id=? and job_id=? "
                              "and end_ns is not null order by start_ns", (run_id, job_id)).fetchall()
            starts = [k[0] for k in ks]
            holes, pos, n = 0, collections.Counter(), 0
            for rs, re in reqs:
                m = ks[bisect.bisect_left(starts, rs):bisect.bisect_right(starts, re)]
                if len(m) < 2:
                    continue
                n += 1
                big = [x for x in range(1, len(m)) if m[x][0] - m[x - 1][1] > 3000]
                holes += bool(big)
                pos.update(big)
            print(run_id, policy, name, statistics.median(small) if small else "-", "%d/%d" % (holes, n),
                  " ".join("%d:%d" % kv for kv in pos.most_common(4)))


def per_name(db, policy, job):
    q = ("select k.name, k.end_ns - k.start_ns from kernels k join runs r using(run_id) "
         "join jobs j on j.run_id = k.run_id and j.job_id = k.job_id where r.policy=? and j.name=? "
         "and r.run_id in (select run_id from jobs where name = 'resnet50-train' or ? = 'alone')")
    d = {}
    for n, dur in db.execute(q, (policy, job, policy)):
        d.setdefault(n, []).append(dur)
    return {n: (statistics.median(v), len(v)) for n, v in d.items()}


def vit_table(hw, sim):
    job = "vit-b16-b1"
    ha, hp = per_name(hw, "alone", job), per_name(hw, "priority-streams", job)
    if not ha or not hp:
        return
    sa = per_name(sim, "alone", job) if sim else {}
    sp = per_name(sim, "priority-streams", job) if sim else {}
    rows = sorted(((hp[n][0] - ha[n][0]) * ha[n][1], n) for n in ha if n in hp)[::-1]
    print("\nViT-B/16 kernels beside ResNet-50 training under priority-streams, median us "
          "(alone -> beside; the 12 that lose the most time per request on the hardware)")
    print("kernel | calls | hw alone | hw beside | hw x | sim alone | sim beside | sim x")
    for _, n in rows[:12]:
        a, b = ha[n][0] / 1e3, hp[n][0] / 1e3
        line = "%s | %d | %.1f | %.1f | %.2f" % (n[:50], ha[n][1], a, b, b / a)
        if n in sa and n in sp:
            c, d = sa[n][0] / 1e3, sp[n][0] / 1e3
            line += " | %.1f | %.1f | %.2f" % (c, d, d / c)
        print(line)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    hw = sqlite3.connect(sys.argv[1])
    sim = sqlite3.connect(sys.argv[2]) if len(sys.argv) > 2 else None
    gaps_by_run(hw)
    vit_table(hw, sim)


if __name__ == "__main__":
    main()
