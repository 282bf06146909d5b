#!/bin/sh
# Session 11's second device call: does a training run earlier in the same
# tally-run process lengthen MobileNetV3's in-graph gaps (session 10's idle_train
# and session 8's tally_gap saw +0.27 us a gap only in runs that followed the
# training job's alone runs; call1 ran MobileNetV3 under tally right after its own
# alone run and saw no difference)? residue/spec_{graph,eager}.json: run order
# alone MobileNetV3, alone training, MobileNetV3 under priority-streams, under
# tally, training under both. Build: as call1.sh.
out=${1:?usage: call2.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
for s in graph eager; do
  rm -f /tmp/r_$s.db
  build/dev/tally-run run -s $hw/session11/residue/spec_$s.json -k -q -d /tmp/r_$s.db > $out/run_$s.log 2>&1
  echo "== $s rc=$?"; python3 $hw/graph_diag.py /tmp/r_$s.db > $out/diag_$s.txt; cat $out/diag_$s.txt
done
