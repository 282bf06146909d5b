#!/usr/bin/env python3
"""hw_repeat.py A.csv B.csv: how far two hardware runs of the same spec and seed are
from each other, row by row, next to the simulator's error against each. A.csv and
B.csv are tally-validate --csv outputs against hardware runs A and B (the simulated
runs differ a little where tally-validate takes the replay's measured gaps from each
hardware database).

Per row: the inference p99 and mean service time, or the training throughput, on A
and B; B / A - 1 (the hardware against itself); the simulator's error against A, B and
their mean (the simulator's for A and B averaged too). The summary counts the rows within the goals (p99 10%, training 5%)
for B against A, and for the simulator against A, B and the mean."""
import csv
import sys


def rows(path):
    with open(path) as f:
        return {(r["job_set"], r["policy"], r["job"]): r for r in csv.DictReader(f)}


a, b = rows(sys.argv[1]), rows(sys.argv[2])
keys = [k for k in a if k in b and k[1] != "alone" and a[k]["role"] in ("inference", "training")]
keys += [k for k in a if k in b and k[1] == "alone" and a[k]["role"] == "inference"]
count = {"p99": [0, 0, 0, 0, 0], "svc": [0, 0, 0, 0, 0], "thr": [0, 0, 0, 0, 0]}
err = {"p99": [[], [], [], []], "svc": [[], [], [], []], "thr": [[], [], [], []]}
goal = {"p99": 0.10, "svc": 0.10, "thr": 0.05}
print(f"{'policy':16s} {'job':15s} {'metric':4s} {'sim A':>9s} {'sim B':>9s} {'hw A':>9s} {'hw B':>9s} "
      f"{'B/A-1':>7s} {'sim/A-1':>8s} {'sim/B-1':>8s} {'sim/mean-1':>10s}  grows A/B")
for k in keys:
    ra, rb = a[k], b[k]
    metrics = [("p99", "p99_sim_ms", "p99_hw_ms"), ("svc", "service_sim_ms", "service_hw_ms")] \
        if ra["role"] == "inference" else [("thr", "throughput_sim", "throughput_hw")]
    for m, cs, ch in metrics:
        sa, sb, ha, hb = float(ra[cs]), float(rb[cs]), float(ra[ch]), float(rb[ch])
        e = [hb / ha - 1, sa / ha - 1, sb / hb - 1, (sa + sb) / (ha + hb) - 1]
        count[m][0] += 1
        for i in range(4):
            count[m][i + 1] += abs(e[i]) <= goal[m]
            err[m][i].append(abs(e[i]))
        grows = f"{ra['queue_grows_hw']}/{rb['queue_grows_hw']}" if m != "thr" else ""
        print(f"{k[1]:16s} {k[2]:15s} {m:4s} {sa:9.2f} {sb:9.2f} {ha:9.2f} {hb:9.2f} {e[0]:+7.1%} "
              f"{e[1]:+8.1%} {e[2]:+8.1%} {e[3]:+10.1%}  {grows}")
print()
for m, what in (("p99", "inference p99 within 10%"), ("svc", "inference service time within 10%"),
                ("thr", "training throughput within 5%")):
    n, c = count[m][0], count[m]
    mean = [sum(x) / len(x) if x else float("nan") for x in err[m]]
    print(f"{what} (of {n}): hw B against hw A {c[1]} (mean |diff| {mean[0]:.1%}); "
          f"sim against A {c[2]} ({mean[1]:.1%}), against B {c[3]} ({mean[2]:.1%}), "
          f"against their mean {c[4]} ({mean[3]:.1%})")
