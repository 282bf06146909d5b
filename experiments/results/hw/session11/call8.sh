#!/bin/sh
# Session 11's eighth device call: tally-run's other modes with the context reset
# at every device close (dc86476): the selftest (PTB retreat, priorities, SM
# partitions, graphs, context workers, MPS) and solo replay fidelity of two
# bundled traces. Build: build/dev of the commit that adds this file.
out=${1:?usage: call8.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
build/dev/tally-run selftest > $out/selftest.txt 2>&1; echo "selftest rc=$?"
grep -E "PASS|FAIL|ALL" $out/selftest.txt | tail -30
build/dev/tally-run fidelity -t 3 -w 0.5 --csv $out/fidelity.csv traces/bundled/h100/mobilenetv3_infer_b1.json.gz \
  traces/bundled/h100/resnet50_train_b32_steps.json.gz > $out/fidelity.txt 2>&1; echo "fidelity rc=$?"
tail -8 $out/fidelity.txt
