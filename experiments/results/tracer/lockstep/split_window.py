"""Does toggling CUPTI's GPU kinds leave the steps between records slower?
For lockstep pairs of baseline and lite_every_late (--record-every N from
iteration START on; _flush: the same with the buffers flushed after each
recorded iteration): the median per-step ratio (traced / baseline) of the
steps before the window (WARMUP..START-1: kinds off, never turned back on) and
of the window's unrecorded steps (positions 1..N-2 after each recorded one,
away from the toggles), and change_pct between the two. Every other pair
(no window at START: baseline:baseline, every_off, ...) is split the same way
as the null test of the drift within a run (kind "null"; its "between" column
is all steps from START+1 on).
  python3 split_window.py DIR... [--start START] [--every N] [--warmup W]"""
import argparse, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import pairs  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("dirs", nargs="+")
p.add_argument("--start", type=int, default=100)
p.add_argument("--every", type=int, default=10)
p.add_argument("--warmup", type=int, default=20)
a = p.parse_args()
start, n, warm = a.start, a.every, a.warmup
print("dir,pair,config,kind,traced_side,before_window_ratio,between_records_ratio,change_pct")
for d in a.dirs:
    for n_pair, ca, cb, A, B in pairs(d):
        if "baseline" not in (ca, cb):
            continue
        t, base, cfg = (A, B, ca) if ca != "baseline" else (B, A, cb)
        r = [x / y for x, y in zip(t, base)]
        if len(r) <= start + n:
            continue
        window = cfg.startswith("lite_every_late")
        before = r[warm:start]
        between = ([r[i] for i in range(start, len(r)) if 1 <= (i - start) % n <= n - 2]
                   if window else r[start + 1:])
        mb, mw = statistics.median(before), statistics.median(between)
        print("%s,%d,%s,%s,%s,%.4f,%.4f,%+.2f" % (os.path.basename(d.rstrip("/")), n_pair, cfg,
              "window" if window else "null", "A" if ca != "baseline" else "B", mb, mw,
              100 * (mw / mb - 1)))
