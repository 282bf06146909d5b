"""Summarize lockstep pairs (run.sh): pN_A_<config>.json and pN_B_<config>.json
hold each side's step times (resnet50_train.py --json). A's step i runs just
before B's step i. Drops the first WARMUP steps of each side, then writes
  pairs.csv    pair,config_a,config_b,steps,median_a_ms,median_b_ms,
               ratio_b_a (median B / median A),
               step_ratio_b_a (median over i of B_i / A_i),
               step_ratio_p25,step_ratio_p75
  summary.csv  config,pairs,slowdown_pct (geometric mean over the pairs with
               baseline on one side of config/baseline, from the per-step
               ratios), min_pct,max_pct, and the same with medians of medians
and prints both.
  python3 summarize.py DIR [WARMUP]"""
import csv, glob, json, math, os, re, statistics, sys


def pairs(d):
    """(pair number, config A, config B, A's step times, B's), every complete
    pair in d, in pair order (split_window.py reads them the same way)."""
    out = []
    for fa in glob.glob(os.path.join(d, "p*_A_*.json")):
        m = re.match(r"p(\d+)_A_(\w+)\.json$", os.path.basename(fa))
        if not m:
            continue
        n, ca = int(m.group(1)), m.group(2)
        fb = glob.glob(os.path.join(d, "p%d_B_*.json" % n))
        if not fb:
            continue
        cb = re.match(r"p\d+_B_(\w+)\.json$", os.path.basename(fb[0])).group(1)
        out.append((n, ca, cb, json.load(open(fa))["step_s"], json.load(open(fb[0]))["step_s"]))
    return sorted(out, key=lambda x: x[0])


def main():
    d = sys.argv[1]
    warm = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    rows = []
    for n, ca, cb, a, b in pairs(d):
        a, b = a[warm:], b[warm:]
        k = min(len(a), len(b))
        if k == 0:
            continue
        r = sorted(y / x for x, y in zip(a[:k], b[:k]))
        rows.append(dict(pair=n, config_a=ca, config_b=cb, steps=k,
                         median_a_ms=1e3 * statistics.median(a[:k]),
                         median_b_ms=1e3 * statistics.median(b[:k]),
                         ratio_b_a=statistics.median(b[:k]) / statistics.median(a[:k]),
                         step_ratio_b_a=statistics.median(r),
                         step_ratio_p25=r[k // 4], step_ratio_p75=r[(3 * k) // 4]))
    if not rows:
        sys.exit("summarize.py: no complete pair in %s" % d)
    keys = list(rows[0])
    with open(os.path.join(d, "pairs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, keys)
        w.writeheader()
        for x in rows:
            w.writerow({k: ("%.4f" % v if isinstance(v, float) else v) for k, v in x.items()})
    # config vs baseline: B/A when baseline is A, A/B when baseline is B
    per = {}
    for x in rows:
        if x["config_a"] == "baseline":
            c, s, mm = x["config_b"], x["step_ratio_b_a"], x["ratio_b_a"]
        elif x["config_b"] == "baseline":
            c, s, mm = x["config_a"], 1 / x["step_ratio_b_a"], 1 / x["ratio_b_a"]
        else:
            continue
        per.setdefault(c, []).append((s, mm))
    with open(os.path.join(d, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "pairs", "slowdown_pct", "min_pct", "max_pct",
                    "slowdown_medians_pct"])
        for c, v in sorted(per.items()):
            g = math.exp(statistics.mean(math.log(s) for s, _ in v))
            gm = math.exp(statistics.mean(math.log(mm) for _, mm in v))
            w.writerow([c, len(v), "%.2f" % (100 * (g - 1)),
                        "%.2f" % (100 * (min(s for s, _ in v) - 1)),
                        "%.2f" % (100 * (max(s for s, _ in v) - 1)), "%.2f" % (100 * (gm - 1))])
    for name in ("pairs.csv", "summary.csv"):
        print(open(os.path.join(d, name)).read())


if __name__ == "__main__":
    main()
