#!/bin/sh
# Session 24's device run (build: build/dev of the commit that adds this file, carried
# as build/dev/tally-run.xz): tally-run after tl_cuda_synth_from_plan took over the
# synthetic-launch setup of cu_launch and cu_measure (session 23's review; not run on a
# GPU before) and this session's input checks: the selftest, a bad spec's exit code with
# a GPU present, one trace's solo fidelity (the measure and calibration paths), a short
# graph pair under every policy written twice to one database (the second must skip
# every run), and the graph headline at a new seed, 15 (8 s after 2 s, every policy),
# held out from model revision 20. One archive comes back: call1.tar.xz.
out=${1:?usage: call1.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call1; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
$run info > $w/info.txt 2>&1
$run selftest > $w/selftest.txt 2>&1; echo "selftest rc=$?"; grep -c PASS $w/selftest.txt; tail -3 $w/selftest.txt
$run run -p nope -J trace=traces/bundled/h100/mobilenetv3_infer_b1.json.gz,role=inference,load=0.5 \
  -d $w/bad.db > $w/bad_spec.txt 2>&1; echo "bad spec rc=$? (64 expected)"; cat $w/bad_spec.txt
$run fidelity -t 2 -w 0.5 --csv $w/fidelity.csv traces/bundled/h100/mobilenetv3_infer_b1.json.gz \
  > $w/fidelity.txt 2>&1; echo "fidelity rc=$?"; tail -6 $w/fidelity.txt
J="-J trace=traces/bundled/h100/mobilenetv3_infer_b1.json.gz,role=inference,load=0.5,graph=1,name=mobilenet -J trace=traces/bundled/h100/resnet50_train_b32_steps.json.gz,role=training,graph=1,name=train"
P="-p tally -p tgs -p mps -p mps-priority -p time-slicing -p priority-streams -p pipeswitch -p herald"
$run run $P $J -t 2 -w 1 -q -d $w/short.db > $w/short.log 2>&1; echo "short rc=$?"
$run run $P $J -t 2 -w 1 -q -d $w/short.db > $w/short2.log 2>&1; echo "again rc=$?"; tail -2 $w/short2.log
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('pragma integrity_check').fetchall(), c.execute('select count(*) from runs').fetchall())" $w/short.db
t0=$(date +%s)
TALLY_GPU_SAMPLE_LOG=$w/clocks_s15.csv $run run -s experiments/specs/tally_headline.json \
  -t 8 -w 2 -r 1 -S 15 -q -d $w/graph_node_s15.db > $w/graph_node_s15.log 2>&1
echo "graph rc=$? in $(( $(date +%s) - t0 )) s"; grep -i "warning" $w/graph_node_s15.log | head -5
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)'); print(c.execute(\"select min(value), max(value) from metrics where name in ('gpu_sm_mhz_min', 'gpu_sm_mhz_max')\").fetchall())" $w/graph_node_s15.db
ps -eo comm | grep -c -E 'nvidia-cuda-mps|tally-run' | sed 's/^/processes left: /'
rm -f $w/bad.db; xz -9 $w/clocks_s15.csv $w/short.db $w/graph_node_s15.db
cd $w && tar cJf $out/call1.tar.xz . && ls -la $out
