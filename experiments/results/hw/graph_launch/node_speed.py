#!/usr/bin/env python3
"""node_speed.py HW.db SIM.db [EAGER.csv]: kernels of each job alone, replayed on
the GPU (HW.db, tally-run -k; a slim_db.py copy does) against the simulator
(SIM.db, tally-sim -k of the same spec, where every kernel takes its traced
time), grouped by the decade of the kernel's block count: sum over kernel
shapes of calls x median hw duration / the same with the simulated median, and
the decade's share of the job's simulated kernel time. Matched by kernel name
and block count. With EAGER.csv (tally-run fidelity's per-kernel CSV,
../fidelity_kernels.csv), the kernels of each job that run under 0.9x their
traced time in the graph replay, with their eager replayed/traced ratio."""
import csv
import math
import sqlite3
import statistics
import sys


def alone_run(db, job):
    row = db.execute("select r.run_id from runs r join jobs j using(run_id) "
                     "where r.policy='alone' and j.name=?", (job,)).fetchone()
    return row[0] if row else None


def durations(db, job, key):
    d = {}
    run = alone_run(db, job)
    if run is not None:
        for n, dur, b in db.execute("select name, end_ns - start_ns, blocks from kernels where run_id=?", (run,)):
            d.setdefault(key(n, b), []).append(dur)
    return d


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    hw, sim = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
    jobs = [r[0] for r in hw.execute("select distinct j.name from jobs j join runs r using(run_id) "
                                     "where r.policy='alone' order by j.name")]
    print("job blocks(decade) kernels hw/sim share_of_sim_kernel_time")
    for job in jobs:
        by_shape = lambda n, b: (n, b)
        h, s = durations(hw, job, by_shape), durations(sim, job, by_shape)
        sim_total = sum(sum(v) for v in s.values())
        share = {}
        for (n, b), v in s.items():
            dec = int(math.log10(max(1, b)))
            share[dec] = share.get(dec, 0) + sum(v)
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
            print(job, "1e%d" % dec, n, "%.3f" % (mh / ms), "%.3f" % (share.get(dec, 0) / sim_total))
    if len(sys.argv) == 4:
        eager = {}
        for r in csv.DictReader(open(sys.argv[3])):
            eager.setdefault(r["kernel"][:100], []).append(int(r["replayed_median_ns"]) / int(r["traced_median_ns"]))
        print("\njob kernel(first 60) graph/traced eager/traced")
        by_name = lambda n, b: n[:100]
        for job in jobs:
            h, s = durations(hw, job, by_name), durations(sim, job, by_name)
            for k in sorted(h):
                if k in s and k in eager:
                    g = statistics.median(h[k]) / statistics.median(s[k])
                    if g < 0.9:
                        print(job, "%-60s" % k[:60], "%.2f" % g,
                              "/".join("%.2f" % e for e in eager[k]))


if __name__ == "__main__":
    main()
