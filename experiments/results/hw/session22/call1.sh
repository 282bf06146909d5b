#!/bin/sh
# Session 22's first device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz): the graph headline at a new seed, 13 (8 s after
# 2 s, every policy), with the runner giving a graph job's launch-queue room back by
# whole graphs (core/runner.c, launch_queue_full). Checks that the training's iteration
# times (iterations in flight) now agree between the H100 and the simulator, the alone
# run included. One archive comes back: call1.tar.xz.
out=${1:?usage: call1.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call1; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
$run info > $w/info.txt 2>&1
t0=$(date +%s)
TALLY_GPU_SAMPLE_LOG=$w/clocks_s13.csv $run run -s experiments/specs/tally_headline.json \
  -t 8 -w 2 -r 1 -S 13 -q -d $w/graph_node_s13.db > $w/graph_node_s13.log 2>&1
echo "graph rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "training" $w/graph_node_s13.log | head -30
grep -i "warning" $w/graph_node_s13.log | head -5
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)'); print(c.execute(\"select key, value from meta where key like 'hw_%'\").fetchall()); print(c.execute(\"select min(value), max(value) from metrics where name in ('gpu_sm_mhz_min', 'gpu_sm_mhz_max')\").fetchall())" $w/graph_node_s13.db
xz -9 $w/clocks_s13.csv
cd $w && tar cJf $out/call1.tar.xz . && ls -la $out
