#!/bin/sh
# Session 11's eleventh device call: the graph headline's tally and tgs runs (with
# every job alone) at 30 s after 2 s, a third repetition (seed 3; call4.sh, call5.sh: seeds 1, 2), each run in a fresh CUDA
# context (tally-run's default since dc86476). One 8 s repetition (call3.sh) put
# tally's MobileNetV3 p99 at +47% over alone with its service time +1.6%: its tail
# is ~10 clusters of 20-40 requests behind a multi-ms stall, alone as under tally
# (stall times differ between runs), so 8 s holds too few of them for a p99.
# Build: build/dev of the commit that adds this file.
out=${1:?usage: call11.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
build/dev/tally-run run -s experiments/specs/tally_headline.json -p tally -p tgs -t 30 -w 2 -r 1 -S 3 -q \
  -d $out/graph_long_s3.db > $out/graph_long_s3.log 2>&1
echo "rc=$?"; grep -E "^[a-z-]+ +- +0 " $out/graph_long_s3.log
