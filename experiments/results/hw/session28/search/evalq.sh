#!/bin/sh
# Evaluate parameter sets one after another and append their scores to a log.
#   sh experiments/results/hw/session28/search/evalq.sh SET QUEUEFILE LOG [OUTROOT]
# QUEUEFILE: one parameter set a line, "name|KEY=VAL KEY=VAL" ("name|" = defaults).
# Each set runs pooled_subset.sh on SET (fit | held | all) into OUTROOT/SET/name and its
# score.py line is appended to LOG (csv: set,name,params,goals,p99_ok,steady_ok,svc_ok,
# tput_ok,svc_mae,tput_mae,mae,p99_mae,rank_thr,rank_p99,seconds).
set_=${1:?}; q=${2:?}; log=${3:?}; root=${4:-/work/s28out}
d=experiments/results/hw/session28/search
[ -f "$log" ] || echo "set,name,params,goals,p99_ok,steady_ok,svc_ok,tput_ok,svc_mae,tput_mae,mae,p99_mae,rank_thr,rank_p99,seconds" > "$log"
while IFS='|' read -r name params; do
  [ -z "$name" ] && continue
  case "$name" in \#*) continue ;; esac
  args=""
  for kv in $params; do args="$args --sim-param $kv"; done
  t0=$(date +%s)
  sh $d/pooled_subset.sh build "$root/$set_/$name" "$set_" $args || { echo "$set_,$name,$params,FAILED" >> "$log"; continue; }
  t1=$(date +%s)
  python3 - "$root/$set_/$name" "$set_" "$name" "$params" $((t1 - t0)) >> "$log" <<'PY'
import sys; sys.path.insert(0, "experiments/results/hw/session28/search")
from score import score
s, _, _ = score(sys.argv[1])
print(",".join(str(x) for x in [sys.argv[2], sys.argv[3], sys.argv[4], s["goals"], s["p99_ok"], s["steady_ok"],
      s["svc_ok"], s["tput_ok"], "%.4f" % s["svc_mae"], "%.4f" % s["tput_mae"], "%.4f" % s["mae"],
      "%.4f" % s["p99_mae"], s["rank_thr_ok"], s["rank_p99_ok"], sys.argv[5]]))
PY
  tail -1 "$log"
done < "$q"
