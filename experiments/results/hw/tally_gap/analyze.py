#!/usr/bin/env python3
"""analyze.py: the figures of README.md from the slim per-kernel databases.

Usage: analyze.py HW_SLIM.db [SIM.db]

HW_SLIM.db: a slim_db.py copy of a tally-run -k database (unpack the .db.xz with xz -dk
here first). Printed per run and inference job:
  - the median gap between consecutive kernels of the job (gaps under 3 us:
    those inside one CUDA graph), and how many requests hold a hole of more
    than 3 us, with the kernel positions where the holes are;
then, per run whose inference job shares it with another job, the median gap
inside a request by how long before the request the other job's last kernel
ended; and, when the database holds a priority-streams run of vit-b16-b1, per
kernel name of ViT the median duration alone and beside training (hw), and
the same from SIM.db (a tally-sim -k database of the same spec) when given,
then the share of ViT's compute-bound kernels' time spent beside training
kernels, by their kind and whether they started before ViT's kernel (older).
"""
import bisect
import collections
import sqlite3
import statistics
import sys


def inference_kernels(db):
    """Each run's inference jobs with their kernels (start, end) in order:
    (run_id, policy, job_id, name, kernels)."""
    for run_id, policy in db.execute("select run_id, policy from runs order by run_id").fetchall():
        for job_id, name in db.execute("select job_id, name from jobs where run_id=? and role='inference'",
                                       (run_id,)).fetchall():
            ks = db.execute("select start_ns, end_ns from kernels where run_id=? and job_id=? order by start_ns",
                            (run_id, job_id)).fetchall()
            yield run_id, policy, job_id, name, ks


def gaps_by_run(db):
    print("run policy job median_gap_ns requests_with_hole hole_positions")
    for run_id, policy, job_id, name, ks in inference_kernels(db):
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


def gaps_by_idle(db):
    """Median in-graph gap (under 3 us) of each request, bucketed by the time
    from the other jobs' last kernel end to the request's start."""
    print("\nrun policy job: median gap (ns) by time since the other jobs' last kernel ended")
    for run_id, policy, job_id, name, ks in inference_kernels(db):
        other_ends = sorted(e for (e,) in db.execute("select end_ns from kernels where run_id=? and job_id!=?",
                                                     (run_id, job_id)))
        if len(ks) < 2 or not other_ends:
            continue
        starts = [k[0] for k in ks]
        buckets = {}
        for rs, re in db.execute("select start_ns, end_ns from requests where run_id=? and job_id=? "
                                 "and end_ns is not null", (run_id, job_id)):
            m = ks[bisect.bisect_left(starts, rs):bisect.bisect_right(starts, re)]
            small = [b[0] - a[1] for a, b in zip(m, m[1:]) if 0 <= b[0] - a[1] < 3000]
            i = bisect.bisect_left(other_ends, rs)
            if not small or i == 0:
                continue
            since = rs - other_ends[i - 1]
            key = "<0.1ms" if since < 1e5 else "0.1-1ms" if since < 1e6 else ">1ms"
            buckets.setdefault(key, []).append(statistics.median(small))
        if buckets:
            print(run_id, policy, name + ":", " ".join("%s %.0f (%d)" % (k, statistics.median(v), len(v))
                                                       for k, v in sorted(buckets.items())))


# The kernel-kind rule of traces/work_kind.c (tl_work_for_name), for names.
MEMORY_FIRST = ("splitkreduce", "reducesplitk", "split_k_reduce", "gemv", "epilogue::impl::globalkernel",
                "init_device_workspace")
COMPUTE_WORDS = ("gemm", "conv", "mma", "fmha", "attention", "attn", "flash", "xmma", "cutlass", "cublas",
                 "dgrad", "wgrad", "fprop", "implicit", "winograd", "matmul")


def kind_of(name):
    n = (name or "").lower()
    if any(w in n for w in MEMORY_FIRST):
        return "memory"
    return "compute" if any(w in n for w in COMPUTE_WORDS) else "memory"


def vit_neighbours(db, label):
    """Share of ViT's compute-bound kernels' time beside training kernels."""
    row = db.execute("select r.run_id from runs r join jobs j using(run_id) "
                     "where r.policy='priority-streams' and j.name='vit-b16-b1'").fetchone()
    if not row:
        return
    ks = db.execute("select start_ns, end_ns, job_id, name from kernels where run_id=? order by start_ns",
                    (row[0],)).fetchall()
    vit_job = db.execute("select job_id from jobs where run_id=? and name='vit-b16-b1'", (row[0],)).fetchone()[0]
    other = [k for k in ks if k[2] != vit_job]
    starts = [k[0] for k in other]
    maxd = max((k[1] - k[0] for k in other), default=0)
    share, total = {}, 0
    for s, e, j, name in ks:
        if j != vit_job or kind_of(name) != "compute":
            continue
        total += e - s
        for os_, oe, _, on in other[bisect.bisect_left(starts, s - maxd):bisect.bisect_left(starts, e)]:
            ov = min(e, oe) - max(s, os_)
            if ov > 0:
                key = kind_of(on) + (" older" if os_ < s else " younger")
                share[key] = share.get(key, 0) + ov
    if total:
        print("%s: ViT's compute kernels beside training kernels, share of their time: %s" %
              (label, ", ".join("%s %.2f" % (k, v / total) for k, v in sorted(share.items()))))


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
    gaps_by_idle(hw)
    vit_table(hw, sim)
    print()
    vit_neighbours(hw, "hw")
    if sim:
        vit_neighbours(sim, "sim")


if __name__ == "__main__":
    main()
