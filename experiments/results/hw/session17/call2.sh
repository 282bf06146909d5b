#!/bin/sh
# Session 17's second device run: session16/call10.sh again, unchanged (the graph
# headline spec, every policy, 8 s after 2 s, seed 5, graph jobs' kernels calibrated
# as CUDA-graph nodes), with the same build: a same-seed repeat, to measure how far
# the H100 differs from itself run to run, row by row.
# Build: build/dev of the commit that adds this file (carried as build/dev/tally-run.xz;
# the replay code is session 16's).
out=${1:?usage: call2.sh OUTDIR}
hw=experiments/results/hw
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$(date +%s)
build/dev/tally-run run -s experiments/specs/tally_headline.json -t 8 -w 2 -r 1 -S 5 -q \
  -d $out/graph_node_s5_rep.db > $out/graph_node_s5_rep.log 2>&1
echo "graph rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $out/graph_node_s5_rep.log
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute(\"select key, value from meta where key like 'hw_%'\").fetchall()); c.execute('pragma wal_checkpoint(truncate)')" $out/graph_node_s5_rep.db
xz -9 -T0 $out/graph_node_s5_rep.db
