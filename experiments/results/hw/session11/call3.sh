#!/bin/sh
# Session 11's third device call: does resetting the CUDA context between runs
# (tally-run's new default; --keep-context the old behaviour) remove the longer
# in-graph gaps MobileNetV3 shows after an eager training run (call2.sh)?
# residue/spec_eager.json with and without --keep-context, per-kernel records.
# Build: build/dev of the commit that adds this file.
out=${1:?usage: call3.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
for v in reset keep; do
  o=; [ $v = keep ] && o=--keep-context
  rm -f /tmp/r_$v.db
  build/dev/tally-run run $o -s $hw/session11/residue/spec_eager.json -k -q -d /tmp/r_$v.db > $out/run_eager_$v.log 2>&1
  echo "== $v rc=$?"; python3 $hw/graph_diag.py /tmp/r_$v.db > $out/diag_eager_$v.txt; cat $out/diag_eager_$v.txt
done
# If the reset removed the longer gaps (tally's MobileNetV3 under 260 us of gaps a
# request), the graph headline spec, every policy, one repetition of 8 s after 2 s.
g=$(awk '$2=="tally" && $3=="mobilenet-b1" {print int($8)}' $out/diag_eager_reset.txt)
echo "tally gaps with reset: $g us"
if [ -n "$g" ] && [ "$g" -lt 260 ]; then
  build/dev/tally-run run -s experiments/specs/tally_headline.json -t 8 -w 2 -r 1 -q \
    -d $out/graph_s11.db > $out/graph_s11.log 2>&1
  echo "headline rc=$?"; grep -E "^[a-z-]+ +- +0 " $out/graph_s11.log
fi
