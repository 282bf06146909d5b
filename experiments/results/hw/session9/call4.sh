#!/bin/sh
# Session 9's fourth device call: the TGS controller's windows in graph mode
# (TALLY_TGS_LOG, policies/tgs.c), each graph headline pair under tgs, 8 s
# after 2 s, build/dev (bd9e83a, no patch). Simulated twin and comparison:
# experiments/results/hw/diag_tgs/graph/README.md.
out=${1:?usage: call4.sh OUTDIR}
hw=experiments/results/hw
H=traces/bundled/h100
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
for inf in "mobilenet-b1 mobilenetv3_infer_b1" "vit-b16-b1 vit_b16_infer_b1" "resnet50-b8 resnet50_infer_b8"; do
  set -- $inf
  rm -f $out/tgs_hw_$1.csv
  TALLY_TGS_LOG=$out/tgs_hw_$1.csv build/dev/tally-run run \
    -J "name=$1,trace=$H/$2.json.gz,role=inference,load=0.5,model_mb=50,graph=1" \
    -J "name=resnet50-train,trace=$H/resnet50_train_b32_steps.json.gz,role=training,model_mb=100,graph=1" \
    -p tgs -t 8 -w 2 -S 1 -q -d $out/tgs_hw.db > $out/tgs_hw_$1.log 2>&1
  grep "tgs \|alone " $out/tgs_hw_$1.log
done
python3 $hw/diag_tgs/windows/compare.py $out/tgs_hw_*.csv
