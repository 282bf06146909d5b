#!/bin/sh
# Session 16's sixth device run: where training kernels cut into inference requests
# under tgs and time-slicing, for all three graph headline pairs (4 s after 1 s, seed
# 4, -k), to test a time-slicing rule seen in call3 (the inference context's slice
# starting with each request). The databases stay on the device; tgs_slices.py's
# output comes back.
# Build: build/dev of the commit that adds this file (carried as build/dev/tally-run.xz).
out=${1:?usage: call5.sh OUTDIR}
hw=experiments/results/hw; H=traces/bundled/h100; d=$hw/session16
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
for m in mobilenetv3_infer_b1:mobilenet-b1 vit_b16_infer_b1:vit-b16-b1 resnet50_infer_b8:resnet50-b8; do
  t=${m%%:*}; n=${m##*:}; db=/tmp/sl_$n.db; rm -f $db
  build/dev/tally-run run \
    -J "name=$n,trace=$H/$t.json.gz,role=inference,load=0.5,model_mb=50,graph=1" \
    -J "name=resnet50-train,trace=$H/resnet50_train_b32_steps.json.gz,role=training,model_mb=100,graph=1" \
    -p tgs -p time-slicing -t 4 -w 1 -S 4 -k -q -d $db > $out/sl_$n.log 2>&1
  echo "$n rc=$?"; grep -E "^(tgs|time-slicing|alone) " $out/sl_$n.log
  for r in $(sqlite3 $db "select run_id || ':' || policy from runs where policy <> 'alone'" 2>/dev/null || python3 -c "
import sqlite3,sys; print(' '.join('%d:%s'%x for x in sqlite3.connect(sys.argv[1]).execute(\"select run_id, policy from runs where policy <> 'alone'\")))" $db); do
    python3 $d/tgs_slices.py $db ${r%%:*} "H100 $n ${r##*:}"
  done
done 2>&1 | tee $out/slices_hw.txt
