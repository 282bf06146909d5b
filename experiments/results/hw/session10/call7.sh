#!/bin/sh
# Session 10's seventh and eighth device calls (`call7.sh OUT dev0`, then
# `call7.sh OUT dev`; one binary per call: the device tool carries 64 MiB):
# graph nodes' slot lines brought into L2 by warm nodes at the head of every
# graph (k_warm, backend/synth.cu) against the build without them. Builds:
# build/dev (warm nodes) and build/dev0 (bc6a3fc), each `make BUILD=build/dev
# TALLY_STATIC_DEPS=1 build/dev/tally-run` in its checkout. For each:
# tally_gap/spec.json (MobileNetV3 beside training under
# tally and three variants, per-kernel records) and each graph inference job
# alone (priority streams, 2 s after 1 s, per-kernel records), through
# graph_diag.py (median request: lead, busy, gaps).
out=${1:?usage: call7.sh OUTDIR dev0|dev}
hw=experiments/results/hw
H=traces/bundled/h100
for b in ${2:?usage: call7.sh OUTDIR dev0|dev}; do
  export TALLY_CALIB_DB=/tmp/calib_$b.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
  rm -f /tmp/tg_$b.db /tmp/al_$b.db
  build/$b/tally-run run -s $hw/tally_gap/spec.json -k -q -d /tmp/tg_$b.db > $out/tally_gap_$b.log 2>&1
  echo "$b tally-gap rc=$?"
  python3 $hw/graph_diag.py /tmp/tg_$b.db > $out/tally_gap_diag_$b.txt 2>&1
  cat $out/tally_gap_diag_$b.txt
  for j in "mobilenet-b1 mobilenetv3_infer_b1" "vit-b16-b1 vit_b16_infer_b1" "resnet50-b8 resnet50_infer_b8"; do
    set -- $j
    build/$b/tally-run run -J "name=$1,trace=$H/$2.json.gz,role=inference,load=0.5,model_mb=50,graph=1" \
      -p priority-streams -t 2 -w 1 -S 1 -k -q -d /tmp/al_$b.db >> $out/alone_$b.log 2>&1
  done
  python3 $hw/graph_diag.py /tmp/al_$b.db > $out/alone_diag_$b.txt 2>&1
  cat $out/alone_diag_$b.txt
done
