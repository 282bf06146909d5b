#!/bin/sh
# Session 13's fourth device call: the graph headline spec, every policy, 8 s
# after 2 s, seed 3, graph jobs' kernels calibrated as CUDA-graph nodes: a third
# node-calibrated repetition (seeds 1 and 2: ../session12/node/graph_node.db,
# call1.sh's graph_node_s2.db), made after model revision 13 was fitted on
# seeds 1-2, so a held-out check of it.
# Build: build/dev of the commit that adds this file.
out=${1:?usage: call3.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$(date +%s)
build/dev/tally-run run -s experiments/specs/tally_headline.json -t 8 -w 2 -r 1 -S 3 -q \
  -d $out/graph_node_s3.db > $out/graph_node_s3.log 2>&1
echo "graph rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $out/graph_node_s3.log
python3 - $out/graph_node_s3.db $TALLY_CALIB_DB <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print("meta:", c.execute("select value from meta where key='hw_graph_calibration'").fetchall())
c.execute("pragma wal_checkpoint(truncate)"); c.close()
k = sqlite3.connect(sys.argv[2])
print("calib_node rows:", k.execute("select count(*) from calib_node").fetchone()[0])
PY
cp $TALLY_CALIB_DB $out/calib.sqlite
