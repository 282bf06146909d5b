#!/bin/sh
# Session 23's device run (build: build/dev of the commit that adds this file, carried
# as build/dev/tally-run.xz): tally-run after backend/cuda_device.c was split into
# cuda_launch.c, cuda_complete.c and cuda_metrics.c (no change of behaviour meant) and
# the session's fuzzing fixes: the selftest, a bad spec's exit code with a GPU present,
# one trace's solo fidelity (measure and calibration paths), and a short graph
# headline pair under every policy (2 s after 1 s), written twice to one database (the
# second must skip every run). One archive comes back: call1.tar.xz.
out=${1:?usage: call1.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call1; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
$run selftest > $w/selftest.txt 2>&1; echo "selftest rc=$?"; grep -c PASS $w/selftest.txt; tail -5 $w/selftest.txt
$run run -p nope -J trace=traces/bundled/h100/mobilenetv3_infer_b1.json.gz,role=inference,load=0.5 \
  -d $w/bad.db > $w/bad_spec.txt 2>&1; echo "bad spec rc=$? (64 expected)"; cat $w/bad_spec.txt
$run fidelity -t 2 -w 0.5 --csv $w/fidelity.csv traces/bundled/h100/mobilenetv3_infer_b1.json.gz \
  > $w/fidelity.txt 2>&1; echo "fidelity rc=$?"; cat $w/fidelity.txt | tail -8
J="-J trace=traces/bundled/h100/mobilenetv3_infer_b1.json.gz,role=inference,load=0.5,graph=1,name=mobilenet -J trace=traces/bundled/h100/resnet50_train_b32_steps.json.gz,role=training,graph=1,name=train"
P="-p tally -p tgs -p mps -p mps-priority -p time-slicing -p priority-streams -p pipeswitch -p herald"
$run run $P $J -t 2 -w 1 -q -d $w/short.db > $w/short.log 2>&1; echo "short rc=$?"; head -40 $w/short.log
$run run $P $J -t 2 -w 1 -q -d $w/short.db > $w/short2.log 2>&1; echo "again rc=$?"; tail -3 $w/short2.log
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('pragma integrity_check').fetchall(), c.execute('select count(*) from runs').fetchall())" $w/short.db
ps -eo comm | grep -c -E 'nvidia-cuda-mps|tally-run' | sed 's/^/processes left: /'
rm -f $w/bad.db
cd $w && tar cJf $out/call1.tar.xz . && ls -la $out
