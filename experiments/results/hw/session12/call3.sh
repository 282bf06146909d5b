#!/bin/sh
# Session 12's fourth device call: a third repetition, made with the context reset
# (dc86476), of both headline specs at every policy, 8 s after 2 s, seed 3 (session
# 11's graph_s11/eager_s11 were seed 1, call1.sh seed 2). Made after model revision 11
# (contention.partial_starve on) was decided on seeds 1 and 2: a held-out check of
# that revision. Build: build/dev of the commit that adds this file.
out=${1:?usage: call3.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
build/dev/tally-run run -s experiments/specs/tally_headline.json -t 8 -w 2 -r 1 --seed 3 -q \
  -d $out/graph_s12r3.db > $out/graph_s12r3.log 2>&1
echo "graph rc=$?"; grep -E "^[a-z-]+ +- +0 " $out/graph_s12r3.log
build/dev/tally-run run -s experiments/specs/tally_headline_eager.json -t 8 -w 2 -r 1 --seed 3 -q \
  -d $out/eager_s12r3.db > $out/eager_s12r3.log 2>&1
echo "eager rc=$?"; grep -E "^[a-z-]+ +- +0 " $out/eager_s12r3.log
