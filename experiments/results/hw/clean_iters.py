#!/usr/bin/env python3
"""The held-back training's per-op cost in place: training iterations that ran
entirely while no inference request was active or being switched back from
(no request arrived before the iteration's end whose end + 5.3 ms, pipeswitch's
switch back to training, falls after 1 ms before the iteration's start), so
their time is the training's 750 ops (726 kernels, 24 memsets) each released
one at a time: kernel time + the host round trip. Per policy and job set,
the hardware's (HW.db) and the simulator's (SIM.db) iteration times.
Usage: clean_iters.py POLICY HW.db SIM.db"""
import bisect
import sqlite3
import statistics as S
import sys


def runs(db):
    out = {}
    for rid, p, rep in db.execute("select run_id, policy, repetition from runs"):
        j = db.execute("select group_concat(name) from (select name from jobs where run_id=? "
                       "order by job_id)", (rid,)).fetchone()[0]
        out[(p, j, rep)] = rid
    return out


def clean(db, rid):
    reqs = db.execute("select arrival_ns, end_ns from requests where run_id=? and job_id=0 "
                      "order by arrival_ns", (rid,)).fetchall()
    ends = [r[0] for r in db.execute("select end_ns from iterations where run_id=? and job_id=1 "
                                     "order by end_ns", (rid,))]
    arr = [r[0] for r in reqs]
    out = []
    for a, b in zip(ends, ends[1:]):
        clash = False
        for k in range(bisect.bisect_left(arr, a - 20e6), len(reqs)):
            ar, en = reqs[k]
            if ar > b:
                break
            if en + 5.3e6 > a - 1e6 and ar < b:
                clash = True
                break
        if not clash:
            out.append((b - a) / 1e6)
    return out


def main():
    pol, hw, sm = sys.argv[1], sqlite3.connect(sys.argv[2]), sqlite3.connect(sys.argv[3])
    rh, rs = runs(hw), runs(sm)
    print("policy,job_set,rep,hw_n,hw_median_ms,hw_mean_ms,sim_n,sim_median_ms,sim_mean_ms")
    allh, alls = [], []
    for key in sorted(rh):
        if key[0] != pol or key not in rs or "train" in key[1].split(",")[0]:
            continue
        dh, ds = clean(hw, rh[key]), clean(sm, rs[key])
        allh += dh
        alls += ds
        if dh and ds:
            print(f"{pol},{key[1].split(',')[0]},{key[2]},{len(dh)},{S.median(dh):.3f},{S.mean(dh):.3f},"
                  f"{len(ds)},{S.median(ds):.3f},{S.mean(ds):.3f}")
    if allh and alls:
        print(f"{pol},all,,{len(allh)},{S.median(allh):.3f},{S.mean(allh):.3f},{len(alls)},"
              f"{S.median(alls):.3f},{S.mean(alls):.3f}")


if __name__ == "__main__":
    main()
