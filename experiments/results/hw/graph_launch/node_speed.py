#!/usr/bin/env python3
"""node_speed.py HW.db SIM.db: kernels of each job alone, replayed on the GPU
(HW.db, tally-run -k; a slim_db.py copy does) against the simulator (SIM.db,
tally-sim -k of the same spec, where every kernel takes its traced time),
grouped by the decade of the kernel's block count: sum over kernel shapes of
calls x median hw duration / the same with the simulated median. Matched by
kernel name and block count."""
import math
import sqlite3
import statistics
import sys


def durations(db, job):
    row = db.execute("select r.run_id from runs r join jobs j using(run_id) "
                     "where r.policy='alone' and j.name=?", (job,)).fetchone()
    d = {}
    if row:
        for n, dur, b in db.execute("select name, end_ns - start_ns, blocks from kernels where run_id=?",
                                    (row[0],)):
            d.setdefault((n, b), []).append(dur)
    return d


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    hw, sim = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
    jobs = [r[0] for r in hw.execute("select distinct j.name from jobs j join runs r using(run_id) "
                                     "where r.policy='alone' order by j.name")]
    print("job blocks(decade) kernels hw/sim")
    for job in jobs:
        h, s = durations(hw, job), durations(sim, job)
        acc = {}
        for k, v in h.items():
            if k not in s:
                continue
            dec = int(math.log10(max(1, k[1])))
            a = acc.setdefault(dec, [0.0, 0.0, 0])
            a[0] += statistics.median(v) * len(v)
            a[1] += statistics.median(s[k]) * len(v)
            a[2] += len(v)
        for dec, (mh, ms, n) in sorted(acc.items()):
            print(job, "1e%d" % dec, n, "%.3f" % (mh / ms))


if __name__ == "__main__":
    main()
