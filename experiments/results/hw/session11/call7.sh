#!/bin/sh
# Session 11's seventh device call: are the slow requests' long leads (call6.sh:
# 0.6-1.7 ms from a request's start to its graph's first kernel, median 0.15) the
# host's or the GPU's? MobileNetV3 alone and under priority streams (one job),
# graphs, 20 s after 1 s, three ways: as is, the replay's process under
# SCHED_FIFO (chrt -f 10), and pinned to one core (taskset -c 3). Run metrics
# cuda_graph_lag_max_ns / _over_500us (host: event to the graph's launch) and
# cuda_start_latency_max_ns / _over_500us (GPU: launch call to first kernel).
# Build: build/dev of the commit that adds this file.
out=${1:?usage: call7.sh OUTDIR}
hw=experiments/results/hw
H=traces/bundled/h100
M="name=mobilenet-b1,trace=$H/mobilenetv3_infer_b1.json.gz,role=inference,load=0.5,model_mb=50,graph=1"
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
for v in plain fifo pinned; do
  case $v in plain) pre=;; fifo) pre="chrt -f 10";; pinned) pre="taskset -c 3";; esac
  rm -f /tmp/l_$v.db
  $pre build/dev/tally-run run -J "$M" -p priority-streams -t 20 -w 1 -S 1 -q -d /tmp/l_$v.db > $out/run_$v.log 2>&1
  echo "== $v rc=$?"; grep -E "^[a-z-]+ +- +0 " $out/run_$v.log
  python3 -c "
import sqlite3,sys
c=sqlite3.connect(sys.argv[1])
for rid,pol in c.execute('select run_id,policy from runs order by run_id').fetchall():
    m=dict(c.execute('select name,value from metrics where run_id=? and job_id=-1',(rid,)).fetchall())
    p99=c.execute('select value from metrics where run_id=? and job_id=0 and name=\'p99_ns\'',(rid,)).fetchone()[0]
    print(rid,pol,'p99 %.2f ms'%(p99/1e6),' '.join('%s=%.0f'%(k[5:],v) for k,v in sorted(m.items()) if 'max' in k or 'over' in k))
" /tmp/l_$v.db | tee $out/metrics_$v.txt
done
