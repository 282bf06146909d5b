#!/usr/bin/env python3
"""ptb_fit.py: how well the simulator's timing of slices and PTB launches matches the
H100's timings of the same candidates (tally's tl_dev_measure on the hardware, cached in
experiments/results/hw/calib.sqlite.xz, table measure: a launch's own first block start
to last block end, median of 5), and the fit of a saturating-residency form. Run from
the repository root; no GPU needed.

Each measured slice or PTB launch is matched to its kernel in the bundled H100 traces
(grid, block, shared memory -> registers -> occupancy o), and to the same kernel's
whole-grid measurement T. Forms (k: the launch's blocks or workers per SM, k0 the whole
kernel's, w warps a block, waves = ceil(grid / (o x SMs)), rounds likewise for k):
  now (revision 17): slice = rounds x T / waves; PTB = rounds x (T / waves + 200 ns)
  fit: blk = (T - ramp) / waves; f = max(k w, W) / max(k0 w, W) (W per kind);
       slice = rounds x blk x f + ramp; PTB = rounds x (blk x f + round) + ramp."""
import collections
import glob
import gzip
import json
import lzma
import math
import os
import sqlite3
import statistics as st
import tempfile

SMS = 132
regs = {}
for f in glob.glob("traces/bundled/h100/*.json.gz"):
    for e in json.load(gzip.open(f))["traceEvents"]:
        if e.get("cat") != "kernel":
            continue
        a = e["args"]
        g, b = a.get("grid"), a.get("block")
        if g and b:
            regs[(g[0] * g[1] * g[2], tuple(b), a.get("shared memory") or 0)] = a.get("registers per thread", 32)


def occ(threads, r, smem):
    warps = (threads + 31) // 32
    by_r = 65536 // ((((r * 32 + 255) // 256) * 256) * warps) if r else 32
    by_s = 233472 // (smem + 1024) if smem else 32
    return max(0, min(32, 2048 // (warps * 32), by_r, by_s))


tmp = tempfile.NamedTemporaryFile(suffix=".sqlite", delete=False)
tmp.write(lzma.open("experiments/results/hw/calib.sqlite.xz").read())
tmp.close()
db = sqlite3.connect(tmp.name)
shapes = collections.defaultdict(dict)
for key, ns in db.execute("select key, ns from measure where synth_version=2"):
    kind, var, iters, total, block, smem, rng, w = key.split("/")
    b, e = map(int, rng.split("-"))
    shapes[(kind, var, iters, int(total), block, int(smem))][(b, e, int(w))] = ns
os.unlink(tmp.name)
data = []
for (kind, _, _, total, block, smem), m in shapes.items():
    if (0, total, 0) not in m:
        continue
    bl = tuple(int(x) for x in block.split(","))
    threads = bl[0] * bl[1] * bl[2]
    r = regs.get((total, bl, smem))
    o = occ(threads, r, smem) if r is not None else 0
    if o == 0:
        continue
    for (b, e, w), tp in m.items():
        if (b, e, w) == (0, total, 0) or (w and (b, e) != (0, total)):
            continue
        k = min(w // SMS, o) if w else min(o, math.ceil((e - b) / SMS))
        data.append((kind, total, threads, o, m[(0, total, 0)], tp, k,
                     math.ceil((e - b) / (k * SMS)), "ptb" if w else "slice"))


def pred(d, wc, wm, ramp, rnd, now=False):
    kind, total, threads, o, t, _, k, rounds, typ = d
    waves = math.ceil(total / (o * SMS))
    if now:
        return rounds * (t / waves + (200 if typ == "ptb" else 0))
    wk = wm if kind == "1" else wc
    w = (threads + 31) // 32
    k0 = min(o, math.ceil(total / SMS))
    f = max(k * w, wk) / max(k0 * w, wk) if wk > 0 else 1.0
    return rounds * (max(t - ramp, 1) / waves * f + (rnd if typ == "ptb" else 0)) + ramp


def score(dd, *a, **kw):
    e = [math.log(d[5] / pred(d, *a, **kw)) for d in dd]
    return math.sqrt(sum(x * x for x in e) / len(e)), st.median(e)


best = min(((score(data, wc, wm, ramp, rnd)[0], wc, wm, ramp, rnd)
            for wc in (0, 4.74, 6, 8) for wm in (0, 8, 12, 16, 20, 24)
            for ramp in (0, 250, 500, 750, 1000, 1500, 2000) for rnd in (0, 100, 200, 300, 500)))
print(f"{len(data)} measured slices and PTB launches matched to trace kernels")
print("rmse of log(H100 / model), median: now %.3f (%+.3f); fit W compute %s, W memory %s warps, "
      "ramp %d ns, PTB round %d ns: %.3f (%+.3f)" % (*score(data, 0, 0, 0, 0, now=True), *best[1:],
                                                   *score(data, *best[1:])))
for kind in "01":
    for typ in ("ptb", "slice"):
        dd = [d for d in data if d[0] == kind and d[8] == typ]
        print("  %-7s %-5s n %3d: now %.3f (%+.3f), fit %.3f (%+.3f)" % (
            "compute" if kind == "0" else "memory", typ, len(dd), *score(dd, 0, 0, 0, 0, now=True),
            *score(dd, *best[1:])))
