#!/bin/sh
# Session 10's third device call: as call2.sh, but 8 s after 2 s (the TGS
# graph runs of call1.sh change regime near 4 s on the hardware only) and the
# task log from 6 s (TALLY_TGS_TASK_FROM_NS), 150000 tasks.
out=${1:?usage: call3.sh OUTDIR}
hw=experiments/results/hw
H=traces/bundled/h100
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
rm -f $out/tt8_hw.csv $out/tt8_win_hw.csv
TALLY_TGS_TASK_FROM_NS=6000000000 TALLY_TGS_TASK_LOG=$out/tt8_hw.csv TALLY_TGS_LOG=$out/tt8_win_hw.csv build/dev/tally-run run \
  -J "name=mobilenet-b1,trace=$H/mobilenetv3_infer_b1.json.gz,role=inference,load=0.5,model_mb=50,graph=1" \
  -J "name=resnet50-train,trace=$H/resnet50_train_b32_steps.json.gz,role=training,model_mb=100,graph=1" \
  -p tgs -t 8 -w 2 -S 1 -q -d $out/tt8_hw.db > $out/tt8_hw.log 2>&1
echo "rc=$?"; grep "tgs \|alone " $out/tt8_hw.log
gzip $out/tt8_hw.csv
