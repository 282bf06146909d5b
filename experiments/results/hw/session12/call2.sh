#!/bin/sh
# Session 12's second and third device calls: the graph headline's tally and tgs
# runs (with every job alone) at 30 s after 2 s, seeds 4 and 5 (session11/call4,
# call5, call11: seeds 1-3), each run in a fresh CUDA context. Decided before
# running: the headline's pooled figure is the pool of all five seeds
# (session11/pooled_p99.py), whatever these two show.
# Build: build/dev of the commit that adds this file.
out=${1:?usage: call2.sh OUTDIR SEED}; seed=${2:?usage: call2.sh OUTDIR SEED}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
build/dev/tally-run run -s experiments/specs/tally_headline.json -p tally -p tgs -t 30 -w 2 -r 1 -S $seed -q \
  -d $out/graph_long_s$seed.db > $out/graph_long_s$seed.log 2>&1
echo "rc=$?"; grep -E "^[a-z-]+ +- +0 " $out/graph_long_s$seed.log
