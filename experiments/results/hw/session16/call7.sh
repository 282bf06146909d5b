#!/bin/sh
# Session 16's eighth device run: ViT-B/16 beside ResNet-50 training under tgs (4 s
# after 1 s, seed 4, -k), twice: on the H100 35% of ViT's requests are cut by training
# (call5), 11 points of them 2.5-3.5 ms after the request's first kernel, past the
# first slice; the simulator cuts 23%, all at 2.39 ms. tgs_slices.py says whether the
# late cuts follow an idle inside the request (a slice restarted there).
# Build: build/dev of the commit that adds this file (carried as build/dev/tally-run.xz).
out=${1:?usage: call7.sh OUTDIR}
hw=experiments/results/hw; H=traces/bundled/h100; d=$hw/session16
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
for rep in 1 2; do
  db=/tmp/vit_$rep.db; rm -f $db
  build/dev/tally-run run \
    -J "name=vit-b16-b1,trace=$H/vit_b16_infer_b1.json.gz,role=inference,load=0.5,model_mb=50,graph=1" \
    -J "name=resnet50-train,trace=$H/resnet50_train_b32_steps.json.gz,role=training,model_mb=100,graph=1" \
    -p tgs -t 4 -w 1 -S 4 -k -q -d $db > $out/vit_$rep.log 2>&1
  echo "rep $rep rc=$?"; grep -E "^(tgs|alone) " $out/vit_$rep.log
  python3 $d/tgs_slices.py $db 3 "H100 vit tgs rep $rep"
  python3 $hw/graph_diag.py $db
done 2>&1 | tee $out/vit_slices.txt
