#!/bin/sh
# Session 16's device call: the graph headline spec, every policy, 8 s after 2 s,
# seed 4, graph jobs' kernels calibrated as CUDA-graph nodes: a fourth
# node-calibrated repetition (seeds 1-3: ../session12/node/graph_node.db,
# ../session13/graph_node_s2.db, graph_node_s3.db), made after model revision 14
# was chosen on seeds 1-3 and the launch-calibrated runs, so a held-out check of it.
# Build: build/dev of the commit that adds this file (carried as build/dev/tally-run.xz).
out=${1:?usage: call1.sh OUTDIR}
hw=experiments/results/hw
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$(date +%s)
build/dev/tally-run run -s experiments/specs/tally_headline.json -t 8 -w 2 -r 1 -S 4 -q \
  -d $out/graph_node_s4.db > $out/graph_node_s4.log 2>&1
echo "graph rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $out/graph_node_s4.log
python3 - $out/graph_node_s4.db $TALLY_CALIB_DB <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print("meta:", c.execute("select key, value from meta where key like 'hw_%'").fetchall())
c.execute("pragma wal_checkpoint(truncate)"); c.close()
k = sqlite3.connect(sys.argv[2])
print("calib_node rows:", k.execute("select count(*) from calib_node").fetchone()[0])
PY
xz -9 -T0 $out/graph_node_s4.db
