#!/bin/sh
# Session 10's ninth device call: spec.json here (tally with an idle training
# job, graph and eager; MobileNetV3 under tally alone), per-kernel records,
# graph_diag.py. Build: build/dev of 73fdfda.
out=${1:?usage: call9.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
rm -f /tmp/it.db
build/dev/tally-run run -s $hw/session10/idle_train/spec.json -k -q -d /tmp/it.db > $out/run.log 2>&1
echo "rc=$?"; grep -E "^[a-z-]+ +- +0 " $out/run.log
python3 $hw/graph_diag.py /tmp/it.db | tee $out/diag.txt
