#!/usr/bin/env python3
"""The search log (search_log.csv) as a markdown table, best first per set.
  python3 log_table.py search_log.csv [fit|held]"""
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r.get("goals") not in (None, "FAILED")]
if len(sys.argv) > 2:
    rows = [r for r in rows if r["set"] == sys.argv[2]]
rows.sort(key=lambda r: (r["set"], -int(r["goals"]), float(r["mae"])))
print("| set | name | parameters | goals | p99 (of 21) | steady p99 | service (of 21) | training (of 19) | svc mean abs err | train mean abs err | rank thr / p99 (tied) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %.2f%% | %.2f%% | %s / %s |" % (
        r["set"], r["name"], r["params"] or "(defaults)", r["goals"], r["p99_ok"], r["steady_ok"],
        r["svc_ok"], r["tput_ok"], 100 * float(r["svc_mae"]), 100 * float(r["tput_mae"]),
        r["rank_thr"], r["rank_p99"]))
