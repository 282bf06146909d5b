#!/bin/sh
# Session 16's ninth device run: MobileNetV3 beside ResNet-50 training under tgs
# (4 s after 1 s, seed 4, -k, the controller's window log), whose training stays 7-19%
# faster in the simulator at revision 16: tgs_windows.py and tgs_slices.py on the
# device, their outputs and CSVs back.
# Build: build/dev of the commit that adds this file (carried as build/dev/tally-run.xz).
out=${1:?usage: call9.sh OUTDIR}
hw=experiments/results/hw; H=traces/bundled/h100; d=$hw/session16
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
db=/tmp/mob.db; rm -f $db $out/tgsk_mob_hw.csv
TALLY_TGS_LOG=$out/tgsk_mob_hw.csv build/dev/tally-run run \
  -J "name=mobilenet-b1,trace=$H/mobilenetv3_infer_b1.json.gz,role=inference,load=0.5,model_mb=50,graph=1" \
  -J "name=resnet50-train,trace=$H/resnet50_train_b32_steps.json.gz,role=training,model_mb=100,graph=1" \
  -p tgs -t 4 -w 1 -S 4 -k -q -d $db > $out/tgsk_mob.log 2>&1
echo "rc=$?"; grep -E "^(tgs|alone) " $out/tgsk_mob.log
python3 $hw/graph_diag.py $db > $out/graph_diag_mob.txt 2>&1; cat $out/graph_diag_mob.txt
python3 $d/tgs_windows.py $db 3 "H100 mobilenet" $out/tgsk_mob_hw 2>&1 | tee $out/tgs_windows_mob.txt
python3 $d/tgs_slices.py $db 3 "H100 mobilenet" 2>&1 | tee -a $out/tgs_windows_mob.txt
python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"select key, value from meta where key like 'hw_%'\").fetchall()); print(sqlite3.connect(sys.argv[1]).execute(\"select sum(m.value)/sum(o.value) from metrics m join metrics o on o.run_id=m.run_id and o.name='cuda_graph_lag_ops' join runs r on r.run_id=m.run_id join jobs j on j.run_id=r.run_id and j.job_id=0 where m.name='cuda_graph_lag_sum_ns' and r.policy='alone' and j.role='inference'\").fetchall())" $db
