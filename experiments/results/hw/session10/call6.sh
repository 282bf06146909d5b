#!/bin/sh
# Session 10's sixth device call: the graph headline spec, every policy, one
# repetition of 8 s after 2 s, with this session's replay (bulk worker
# messages, the clock offset corrected both ways, TGS's wall time from
# submission); then the eager headline spec under tgs and time-slicing (the
# policies whose jobs run in context workers). Build: build/dev of the commit
# that adds this file (`make BUILD=build/dev TALLY_STATIC_DEPS=1
# build/dev/tally-run`).
out=${1:?usage: call6.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
build/dev/tally-run run -s experiments/specs/tally_headline.json -t 8 -w 2 -r 1 -q \
  -d $out/graph_s10.db > $out/graph_s10.log 2>&1
echo "graph rc=$?"; grep -E "^[a-z-]+ +- +0 " $out/graph_s10.log
build/dev/tally-run run -s experiments/specs/tally_headline_eager.json -t 8 -w 2 -r 1 -p tgs -p time-slicing -q \
  -d $out/eager_s10.db > $out/eager_s10.log 2>&1
echo "eager rc=$?"; grep -E "^[a-z-]+ +- +0 " $out/eager_s10.log
