#!/bin/sh
# Session 12's sixth device call: the graph headline's tally and tgs runs (with
# every job alone) at 30 s after 2 s, seed 1, with graph jobs' kernels calibrated
# as CUDA-graph nodes (call4.sh; the cache call4 filled is ../calib.sqlite now):
# does the headline (call2.sh, seeds 1-5 with launch calibration) hold?
# Build: build/dev of the commit that adds this file.
out=${1:?usage: call5.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
build/dev/tally-run run -s experiments/specs/tally_headline.json -p tally -p tgs -t 30 -w 2 -r 1 -S 1 -q \
  -d $out/graph_long_node_s1.db > $out/graph_long_node_s1.log 2>&1
echo "rc=$?"; grep -E "^[a-z-]+ +- +0 " $out/graph_long_node_s1.log; grep -c warning $out/graph_long_node_s1.log
