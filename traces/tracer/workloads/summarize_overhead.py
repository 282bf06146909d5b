"""Summarize the ResNet-50 training overhead runs (run_device.sh).

Reads ovh_<config>_<repeat>.json files (config: baseline, lite,
lite_callback, lite_nosync, full, gpu_only, torch_profiler, or any other) (per-step seconds written by
resnet50_train.py), drops the first WARMUP steps of each run (steady state),
and writes two CSV files:
  overhead_runs.csv     config,repeat,steps,median_ms,mean_ms,p90_ms
  overhead_summary.csv  config,runs,median_ms,ratio_vs_baseline,slowdown_pct
where median_ms is the median of the runs' medians.

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
    for path in sorted(glob.glob(os.path.join(d, "ovh_*_*.json"))):
        config, rep = os.path.basename(path)[4:-5].rsplit("_", 1)
        steps = json.load(open(path))["step_s"][warmup:]
        ms = sorted(1e3 * s for s in steps)
        med = statistics.median(ms)
        rows.append([config, rep, len(ms), "%.3f" % med, "%.3f" % statistics.mean(ms),
                     "%.3f" % ms[int(0.9 * (len(ms) - 1))]])
        runs.setdefault(config, []).append(med)
    with open(os.path.join(d, "overhead_runs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "repeat", "steps", "median_ms", "mean_ms", "p90_ms"])
        w.writerows(rows)
    base = statistics.median(runs["baseline"])
    with open(os.path.join(d, "overhead_summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "runs", "median_ms", "ratio_vs_baseline", "slowdown_pct"])
        order = ["baseline", "lite", "lite_callback", "lite_nosync", "full", "gpu_only",
                 "torch_profiler",
                 # names of the runs before the lite mode (experiments/results/tracer)
                 "tally_trace", "tally_trace_all", "tally_trace_gpu_only"]
        for config in order + sorted(set(runs) - set(order)):
            if config not in runs:
                continue
            m = statistics.median(runs[config])
            w.writerow([config, len(runs[config]), "%.3f" % m, "%.4f" % (m / base),
                        "%.2f" % (100 * (m / base - 1))])
    print(open(os.path.join(d, "overhead_summary.csv")).read())


if __name__ == "__main__":
    main()
