#!/usr/bin/env python3
"""Where an inference request's time goes, from a results database with kernel
records (-k): per run and inference job, medians over requests of
  wait   = first kernel start - request start (host before the first kernel,
           plus the GPU still busy with other work),
  gpu    = last kernel end - first kernel start,
  tail   = request end - last kernel end,
  total  = request end - request start,
and how much of another job's kernel time overlaps the request.
Usage: phases.py DB [DB...]   (every run with kernel records)"""
import bisect
import sqlite3
import sys


def med(v):
    v = sorted(v)
    return v[len(v) // 2] / 1e3 if v else float("nan")


def main():
    print("db,run,policy,kind,job,requests,total_us,wait_us,gpu_us,tail_us,kernels_per_req,"
          "other_kernel_us_per_req")
    for path in sys.argv[1:]:
        db = sqlite3.connect(path)
        runs = db.execute("SELECT run_id, policy, kind FROM runs ORDER BY run_id").fetchall()
        for run_id, pol, kind in runs:
            jobs = db.execute("SELECT job_id, name FROM jobs WHERE run_id=? AND role='inference'",
                              (run_id,)).fetchall()
            for job, name in jobs:
                ks = db.execute("SELECT start_ns, end_ns FROM kernels WHERE run_id=? AND job_id=? "
                                "ORDER BY start_ns", (run_id, job)).fetchall()
                if not ks:
                    continue
                other = db.execute("SELECT start_ns, end_ns FROM kernels WHERE run_id=? AND "
                                   "job_id<>? ORDER BY start_ns", (run_id, job)).fetchall()
                ostarts = [o[0] for o in other]
                starts = [k[0] for k in ks]
                reqs = db.execute("SELECT start_ns, end_ns FROM requests WHERE run_id=? AND job_id=? "
                                  "ORDER BY start_ns", (run_id, job)).fetchall()
                tot, wait, gpu, tail, nk, ov = [], [], [], [], [], []
                for s, e in reqs:
                    i, j = bisect.bisect_left(starts, s), bisect.bisect_left(starts, e)
                    if j <= i:
                        continue
                    first, last = ks[i][0], max(k[1] for k in ks[i:j])
                    tot.append(e - s)
                    wait.append(first - s)
                    gpu.append(last - first)
                    tail.append(e - last)
                    nk.append((j - i) * 1000)
                    a = max(0, bisect.bisect_left(ostarts, s) - 50)
                    b = bisect.bisect_left(ostarts, e)
                    ov.append(sum(max(0, min(oe, e) - max(os_, s)) for os_, oe in other[a:b]))
                print(f"{path.split('/')[-1]},{run_id},{pol},{kind},{name},{len(tot)},{med(tot):.1f},"
                      f"{med(wait):.1f},{med(gpu):.1f},{med(tail):.1f},{med(nk):.0f},{med(ov):.1f}")


if __name__ == "__main__":
    main()
