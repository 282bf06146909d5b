#!/bin/sh
# Session 12's fifth device call: graph jobs' kernels calibrated as CUDA-graph
# nodes (tally-run's new default; --plain-node-calibration the old way). Session 8
# found the replay's many-block kernels 13% faster inside a graph than their
# traced time (../graph_launch/README.md): they were calibrated as launches, whose
# blocks end with a fence and an exit count, and run as nodes, whose blocks end
# with one atomic. The graph headline spec, every policy, 8 s after 2 s, seed 1
# (the seed of session 11's graph_s11, made with launch calibration), with the
# calibration cache filled for the nodes (brought back as calib.sqlite).
# Build: build/dev of the commit that adds this file.
out=${1:?usage: call4.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
t0=$(date +%s)
build/dev/tally-run run -s experiments/specs/tally_headline.json -t 8 -w 2 -r 1 -S 1 -q \
  -d $out/graph_node.db > $out/graph_node.log 2>&1
echo "graph rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $out/graph_node.log
grep -i "calib" $out/graph_node.log | head -5
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(\"calib_node rows:\", c.execute(\"select count(*) from calib_node\").fetchone()[0])" $TALLY_CALIB_DB
cp $TALLY_CALIB_DB $out/calib.sqlite
