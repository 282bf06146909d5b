#!/bin/sh
# Session 16's third device call: ResNet-50 b8 beside ResNet-50 training under tgs
# (the pair whose training is 29-38% faster in the simulator on every node-calibrated
# run), 4 s after 1 s, seed 4, with per-kernel records (-k) and the TGS controller's
# window log, to compare request by request with the simulated twin (../graph_diag.py).
# Build: build/dev of the commit that adds this file (carried as build/dev/tally-run.xz).
out=${1:?usage: call3.sh OUTDIR}
hw=experiments/results/hw; H=traces/bundled/h100
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
rm -f $out/tgsk_rb8_hw.csv
TALLY_TGS_LOG=$out/tgsk_rb8_hw.csv build/dev/tally-run run \
  -J "name=resnet50-b8,trace=$H/resnet50_infer_b8.json.gz,role=inference,load=0.5,model_mb=50,graph=1" \
  -J "name=resnet50-train,trace=$H/resnet50_train_b32_steps.json.gz,role=training,model_mb=100,graph=1" \
  -p tgs -t 4 -w 1 -S 4 -k -q -d $out/tgsk_rb8.db > $out/tgsk_rb8.log 2>&1
echo "rc=$?"; grep -E "^(tgs|alone) " $out/tgsk_rb8.log
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)')" $out/tgsk_rb8.db
python3 $hw/graph_diag.py $out/tgsk_rb8.db > $out/graph_diag_hw.txt 2>&1; cat $out/graph_diag_hw.txt
xz -9 -T0 $out/tgsk_rb8.db $out/tgsk_rb8_hw.csv; ls -la $out
