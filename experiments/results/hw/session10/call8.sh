#!/bin/sh
# Session 10's last device call: the graph headline spec, every policy, one
# repetition of 4 s after 1 s (the device time left), with the replay's graph
# issue cost recorded per run (run metrics cuda_graph_lag_*). Build: build/dev
# of the commit that adds this file. tally-validate then takes graph_node_ns
# from the alone inference runs of this database (see README.md).
out=${1:?usage: call8.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
build/dev/tally-run run -s experiments/specs/tally_headline.json -t 4 -w 1 -r 1 -q \
  -d $out/graph_lag.db > $out/graph_lag.log 2>&1
echo "rc=$?"; grep -E "^[a-z-]+ +- +0 " $out/graph_lag.log
