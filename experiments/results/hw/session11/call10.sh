#!/bin/sh
# Session 11's tenth device call: the parent's search for a worker's reported
# completions (remote_done) from the last one found, against the old search from
# the queue's head (quadratic in a graph batch: ~20,000 steps for MobileNetV3's
# 204 ops). The MobileNetV3 pair of the graph headline under tgs and mps (context
# workers), 8 s after 2 s, both ways; run metrics cuda_graph_lag_* (the parent's
# issue cost per op, which includes handling the completions before it).
# Build (here, then carry build/dev/tally-run): the commit that adds this file,
#   git apply experiments/results/hw/session11/scan/head_scan.patch
#   make BUILD=build/dev TALLY_STATIC_DEPS=1 build/dev/tally-run; git checkout backend/cuda_device.c
# Without TALLY_DEBUG_HEAD_SCAN the patched build is the committed search.
out=${1:?usage: call10.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
python3 - > /tmp/mob_pair.json <<'PY'
import json
s = json.load(open("experiments/specs/tally_headline.json"))
s["job_sets"] = s["job_sets"][:1]
for j in s["job_sets"][0]:
    j["trace"] = "experiments/specs/" + j["trace"]
print(json.dumps(s))
PY
for v in last head; do
  e=X=1; [ $v = head ] && e=TALLY_DEBUG_HEAD_SCAN=1
  env $e build/dev/tally-run run -s /tmp/mob_pair.json -p tgs -p mps -t 8 -w 2 -r 1 -q -d /tmp/s_$v.db > $out/run_$v.log 2>&1
  echo "== $v rc=$?"; grep -E "^[a-z-]+ +- +0 " $out/run_$v.log
  python3 -c "
import sqlite3,sys
c=sqlite3.connect(sys.argv[1])
for rid,pol in c.execute('select run_id,policy from runs order by run_id').fetchall():
    m=dict(c.execute('select name,value from metrics where run_id=? and job_id=-1',(rid,)).fetchall())
    if m.get('cuda_graph_lag_ops'):
        print(rid,pol,'graph lag %.0f ns an op, %.1f us a batch'%(m['cuda_graph_lag_sum_ns']/m['cuda_graph_lag_ops'],m['cuda_graph_lag_sum_ns']/m['cuda_graph_lag_batches']/1e3))
" /tmp/s_$v.db | tee $out/lag_$v.txt
done
