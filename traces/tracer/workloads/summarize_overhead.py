"""Summarize the ResNet-50 training overhead runs (run_device.sh).

Reads ovh_<config>_<repeat>.json files (config: baseline, lite,
lite_noqueued, lite_launchcb, lite_completion, lite_nosync, full, gpu_only,
torch_profiler, or any other) (per-step seconds written by
resnet50_train.py), drops the first WARMUP steps of each run (steady state),
and writes two CSV files:
  overhead_runs.csv     config,repeat,steps,median_ms,mean_ms,p90_ms,p25_ms
  overhead_summary.csv  config,runs,median_ms,ratio_vs_baseline,slowdown_pct,
                        paired_slowdown_pct,p25_ms,p25_slowdown_pct
where median_ms is the median of the runs' medians; paired_slowdown_pct the
median over repeats of (this run's median / the same repeat's baseline
median - 1): runs of one repeat are neighbours in time, so a drift of the
machine between repeats cancels; p25_ms the median of the runs' 25th
percentiles (less sensitive to bursts of slow steps than the median).

  python3 summarize_overhead.py DIR [WARMUP]
"""
import csv
import glob
import json
import os
import statistics
import sys


def main():
    d = sys.argv[1]
    warmup = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    runs = {}
    rows = []
    by_rep = {}
    p25s = {}
    for path in sorted(glob.glob(os.path.join(d, "ovh_*_*.json"))):
        config, rep = os.path.basename(path)[4:-5].rsplit("_", 1)
        steps = json.load(open(path))["step_s"][warmup:]
        ms = sorted(1e3 * s for s in steps)
        med = statistics.median(ms)
        p25 = ms[int(0.25 * (len(ms) - 1))]
        rows.append([config, rep, len(ms), "%.3f" % med, "%.3f" % statistics.mean(ms),
                     "%.3f" % ms[int(0.9 * (len(ms) - 1))], "%.3f" % p25])
        runs.setdefault(config, []).append(med)
        by_rep.setdefault(rep, {})[config] = med
        p25s.setdefault(config, []).append(p25)
    with open(os.path.join(d, "overhead_runs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "repeat", "steps", "median_ms", "mean_ms", "p90_ms", "p25_ms"])
        w.writerows(rows)
    base = statistics.median(runs["baseline"])
    base_p25 = statistics.median(p25s["baseline"])
    with open(os.path.join(d, "overhead_summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "runs", "median_ms", "ratio_vs_baseline", "slowdown_pct",
                    "paired_slowdown_pct", "p25_ms", "p25_slowdown_pct"])
        order = ["baseline", "gpu_only", "lite", "lite_noqueued", "lite_launchcb", "lite_completion",
                 "lite_completion_noqueued", "lite_activity", "lite_callback", "lite_nosync",
                 "full", "torch_profiler",
                 # names of the runs before the lite mode (experiments/results/tracer)
                 "tally_trace", "tally_trace_all", "tally_trace_gpu_only"]
        for config in order + sorted(set(runs) - set(order)):
            if config not in runs:
                continue
            m = statistics.median(runs[config])
            paired = [r[config] / r["baseline"] - 1 for r in by_rep.values()
                      if config in r and "baseline" in r]
            p25 = statistics.median(p25s[config])
            w.writerow([config, len(runs[config]), "%.3f" % m, "%.4f" % (m / base),
                        "%.2f" % (100 * (m / base - 1)),
                        "%.2f" % (100 * statistics.median(paired)) if paired else "",
                        "%.3f" % p25, "%.2f" % (100 * (p25 / base_p25 - 1))])
    print(open(os.path.join(d, "overhead_summary.csv")).read())


if __name__ == "__main__":
    main()
