#!/bin/sh
# Session 10's fifth device call: call4.sh again with the GPU clock offset also
# lowered when kernels seem to start before they were handed to the GPU
# (fix_offset in backend/cuda_device.c: the clocks drift ~9 us a second).
# Build: build/dev, the working tree of this commit with tgs_task_log.patch
# applied.
out=${1:?usage: call5.sh OUTDIR}
hw=experiments/results/hw
H=traces/bundled/h100
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
build/dev/tally-run selftest > $out/selftest.txt 2>&1; echo "selftest rc=$?"; grep -i "fail\|graph" $out/selftest.txt
rm -f $out/tgs_graph_drift.csv
TALLY_TGS_LOG=$out/tgs_graph_drift.csv build/dev/tally-run run -s experiments/specs/tally_headline.json \
  -p tgs -t 8 -w 2 -r 1 -q -d $out/tgs_graph_drift.db > $out/tgs_graph_drift.log 2>&1
echo "graph rc=$?"; grep "^tgs \|^alone " $out/tgs_graph_drift.log
rm -f $out/tt8_drift.csv
TALLY_TGS_TASK_FROM_NS=6000000000 TALLY_TGS_TASK_LOG=$out/tt8_drift.csv build/dev/tally-run run \
  -J "name=mobilenet-b1,trace=$H/mobilenetv3_infer_b1.json.gz,role=inference,load=0.5,model_mb=50,graph=1" \
  -J "name=resnet50-train,trace=$H/resnet50_train_b32_steps.json.gz,role=training,model_mb=100,graph=1" \
  -p tgs -t 8 -w 2 -S 1 -q -d $out/tt8_drift.db > $out/tt8_drift.log 2>&1
echo "rc=$?"; grep "tgs \|alone " $out/tt8_drift.log
gzip $out/tt8_drift.csv
