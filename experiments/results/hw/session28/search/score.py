#!/usr/bin/env python3
"""Score a tally-validate csv (validation_graph_pooled.csv) for the parameter search.

  python3 score.py DIR_OR_CSV [--json] [--rows]

Prints: p99 within 10% (all rows / steady rows: queue grows on neither side and
the hardware run not "hw slowed", i.e. slow_phases_hw >= slow_phases_sim + 3),
service time within 10%, training throughput within 5%, mean |err| of service
and training, and the ranking lines of the .txt next to the csv.
Score ("goals") = rows within their goals (p99 all + service + training), ties
broken by "mae" = mean |err| of service + mean |err| of training (lower is better).
"""
import csv, json, math, os, re, sys

P99_GOAL, SVC_GOAL, TPUT_GOAL, SLOW_EXCESS = 0.10, 0.10, 0.05, 3


def f(x):
    try:
        v = float(x)
        return v if math.isfinite(v) else None
    except (TypeError, ValueError):
        return None


def score(path):
    if os.path.isdir(path):
        path = os.path.join(path, "validation_graph_pooled.csv")
    rows = list(csv.DictReader(open(path)))
    s = dict(p99_n=0, p99_ok=0, steady_n=0, steady_ok=0, svc_n=0, svc_ok=0,
             tput_n=0, tput_ok=0, svc_abs=0.0, tput_abs=0.0, p99_abs=0.0)
    detail = []
    for r in rows:
        if r["role"] == "inference":
            e = f(r["p99_err"])
            if e is not None:
                s["p99_n"] += 1
                s["p99_ok"] += abs(e) <= P99_GOAL
                s["p99_abs"] += abs(e)
                grows = (f(r["queue_grows_sim"]) or 0) > 0 or (f(r["queue_grows_hw"]) or 0) > 0
                ss, sh = f(r["slow_phases_sim"]), f(r["slow_phases_hw"])
                slowed = ss is not None and sh is not None and sh >= ss + SLOW_EXCESS
                if not grows and not slowed:
                    s["steady_n"] += 1
                    s["steady_ok"] += abs(e) <= P99_GOAL
            e2 = f(r["service_err"])
            if e2 is not None:
                s["svc_n"] += 1
                s["svc_ok"] += abs(e2) <= SVC_GOAL
                s["svc_abs"] += abs(e2)
            detail.append((r["job_set"], r["policy"], r["job"], "p99", e, "svc", e2))
        elif r["role"] == "training":
            e = f(r["throughput_err"])
            if e is not None:
                s["tput_n"] += 1
                s["tput_ok"] += abs(e) <= TPUT_GOAL
                s["tput_abs"] += abs(e)
            detail.append((r["job_set"], r["policy"], r["job"], "thr", e, "", None))
    s["svc_mae"] = s["svc_abs"] / max(s["svc_n"], 1)
    s["tput_mae"] = s["tput_abs"] / max(s["tput_n"], 1)
    s["p99_mae"] = s["p99_abs"] / max(s["p99_n"], 1)
    # rankings, from the .txt beside the csv
    txt = path[:-4] + ".txt"
    rank = []
    if os.path.exists(txt):
        for line in open(txt):
            if "the same order up to the hardware's ties" in line or \
               "with two policies whose high-priority queue grows" in line:
                rank.append(line.strip())
    s["rank_thr_ok"], s["rank_p99_ok"] = None, None
    for line in rank:
        if "system throughput" in line and "up to the hardware's ties" in line:
            # "... system throughput 4 of 4 (0 of 51)"
            s["rank_thr_ok"] = int(re.search(r"system throughput (\d+) of \d+ \(", line).group(1))
        if "also tied" in line:
            s["rank_p99_ok"] = int(re.search(r"p99 overhead (\d+) of \d+ ranking", line).group(1))
    s["goals"] = s["p99_ok"] + s["svc_ok"] + s["tput_ok"]
    s["mae"] = s["svc_mae"] + s["tput_mae"]
    return s, rank, detail


def line(s):
    return ("goals %d = p99 %d/%d (steady %d/%d) + svc %d/%d + train %d/%d; "
            "mean|err| svc %.2f%% train %.2f%% (sum %.2f%%); p99 mean|err| %.1f%%; "
            "rank thr %s/4 p99(ov tied) %s/4" % (
                s["goals"], s["p99_ok"], s["p99_n"], s["steady_ok"], s["steady_n"],
                s["svc_ok"], s["svc_n"], s["tput_ok"], s["tput_n"],
                100 * s["svc_mae"], 100 * s["tput_mae"], 100 * s["mae"], 100 * s["p99_mae"],
                s["rank_thr_ok"], s["rank_p99_ok"]))


if __name__ == "__main__":
    s, rank, detail = score(sys.argv[1])
    if "--json" in sys.argv:
        print(json.dumps(s))
        sys.exit(0)
    print(line(s))
    for r in rank:
        print("  " + r)
    if "--rows" in sys.argv:
        for d in detail:
            a = "%+.1f%%" % (100 * d[4]) if d[4] is not None else "-"
            b = "%+.1f%%" % (100 * d[6]) if d[6] is not None else ""
            print("  %-28s %-17s %-15s %s %8s %s %8s" % (d[0], d[1], d[2], d[3], a, d[5], b))
