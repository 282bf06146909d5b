#!/bin/sh
# Session 17's third device run: the graph headline spec, every policy, 8 s after 2 s,
# seed 6, graph jobs' kernels calibrated as CUDA-graph nodes (as session16/call10.sh):
# a held-out run for the experimental churn rule (contention.churn_block_ns=4000,
# contention.churn_slowdown=1.6, chosen on the node-calibrated seeds 1-5 and the seed-5
# repeat). Decided before this run: the rule becomes the H100's default if, on this
# seed, it puts more training rows within 5% of the H100 than revision 16 and no fewer
# inference p99 rows within 10%; else it stays off.
# Build: build/dev of the commit that adds this file (carried as build/dev/tally-run.xz).
out=${1:?usage: call3.sh OUTDIR}
hw=experiments/results/hw
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$(date +%s)
build/dev/tally-run run -s experiments/specs/tally_headline.json -t 8 -w 2 -r 1 -S 6 -q \
  -d $out/graph_node_s6.db > $out/graph_node_s6.log 2>&1
echo "graph rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $out/graph_node_s6.log
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute(\"select key, value from meta where key like 'hw_%'\").fetchall()); c.execute('pragma wal_checkpoint(truncate)')" $out/graph_node_s6.db
xz -9 -T0 $out/graph_node_s6.db
