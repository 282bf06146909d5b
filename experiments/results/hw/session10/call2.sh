#!/bin/sh
# Session 10's second device call: every high-priority task's times as TGS
# sees them (TALLY_TGS_TASK_LOG, tgs_task_log.patch on 1441978: issued,
# submitted, start, end, ready, the stream's last end, solo; 150000 tasks after
# the first second), MobileNetV3 beside ResNet-50 training as graphs, 2 s after
# 1 s. The simulated twin: the same -J/-p/-t/-w/-S with build/tally-sim and the
# validation's parameters (../diag_tgs/graph/README.md).
out=${1:?usage: call2.sh OUTDIR}
hw=experiments/results/hw
H=traces/bundled/h100
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
rm -f $out/tt_hw.csv
TALLY_TGS_TASK_LOG=$out/tt_hw.csv build/dev/tally-run run \
  -J "name=mobilenet-b1,trace=$H/mobilenetv3_infer_b1.json.gz,role=inference,load=0.5,model_mb=50,graph=1" \
  -J "name=resnet50-train,trace=$H/resnet50_train_b32_steps.json.gz,role=training,model_mb=100,graph=1" \
  -p tgs -t 2 -w 1 -S 1 -q -d $out/tt_hw.db > $out/tt_hw.log 2>&1
echo "rc=$?"; grep "tgs \|alone " $out/tt_hw.log
gzip $out/tt_hw.csv
