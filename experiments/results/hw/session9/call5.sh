#!/bin/sh
# Session 9's fifth device call: ViT-B/16 b1 and MobileNetV3 b1 beside
# ResNet-50 training, graphs, under tgs, 4 s after 1 s, with per-kernel
# records (-k) and the TGS controller's windows (TALLY_TGS_LOG); build/dev.
out=${1:?usage: call5.sh OUTDIR}
hw=experiments/results/hw
H=traces/bundled/h100
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
rm -f /tmp/tk.db
for inf in "vit-b16-b1 vit_b16_infer_b1" "mobilenet-b1 mobilenetv3_infer_b1"; do
  set -- $inf
  TALLY_TGS_LOG=$out/tgsk_hw_$1.csv build/dev/tally-run run \
    -J "name=$1,trace=$H/$2.json.gz,role=inference,load=0.5,model_mb=50,graph=1" \
    -J "name=resnet50-train,trace=$H/resnet50_train_b32_steps.json.gz,role=training,model_mb=100,graph=1" \
    -p tgs -t 4 -w 1 -S 1 -k -q -d /tmp/tk.db 2>&1 | grep "tgs \|alone "
done
python3 $hw/graph_diag.py /tmp/tk.db
python3 $hw/slim_db.py /tmp/tk.db /tmp/tk_slim.db 1000 && gzip -c /tmp/tk_slim.db > $out/tgsk_hw_slim.db.gz
ls -la $out
