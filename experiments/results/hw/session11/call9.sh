#!/bin/sh
# Session 11's ninth device call: the eager headline spec (its six policies), one
# repetition of 8 s after 2 s, each run in a fresh CUDA context (dc86476): does
# the eager validation (../validation_eager.md, four repetitions made before the
# reset) hold without the state earlier runs left? Build: build/dev of the
# commit that adds this file.
out=${1:?usage: call9.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
build/dev/tally-run run -s experiments/specs/tally_headline_eager.json -t 8 -w 2 -r 1 -q \
  -d $out/eager_s11.db > $out/eager_s11.log 2>&1
echo "rc=$?"; grep -E "^[a-z-]+ +- +0 " $out/eager_s11.log
