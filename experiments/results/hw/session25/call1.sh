#!/bin/sh
# Session 25's device run (build: build/dev of the commit that adds this file, carried
# as build/dev/tally-run.xz): tally-run after this session's runner and metrics changes
# (model revision 22): the selftest; an offered load far beyond the GPU refused on
# hardware both ways, with no worker or MPS daemon left behind: MobileNetV3 at 2e6
# requests a second under MPS (the cap on waiting requests; exit 65) and ResNet-50 b8
# at 3e5 a second for 0.1 s under MPS (69 s of work: the drain's 60 s limit ends the
# run with requests in flight in the worker; exit 65); then the graph headline at a new
# seed, 17 (8 s after 2 s, every policy), held out from revisions 21-22, written with
# the new throughput. One archive comes back: call1.tar.xz.
out=${1:?usage: call1.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call1; mkdir -p $w
H=traces/bundled/h100
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
$run info > $w/info.txt 2>&1
$run selftest > $w/selftest.txt 2>&1; echo "selftest rc=$?"; grep -c PASS $w/selftest.txt; tail -3 $w/selftest.txt
left() { ps -eo comm | grep -c -E 'nvidia-cuda-mps|tally-run' | sed "s/^/$1: processes left: /"; }
t0=$(date +%s)
$run run -p mps -J trace=$H/mobilenetv3_infer_b1.json.gz,role=inference,rate=2e6 -t 2 -w 0.5 \
  -d $w/flood.db > $w/flood.txt 2>&1; echo "flood rc=$? (65 expected) in $(( $(date +%s) - t0 )) s"
tail -3 $w/flood.txt; left flood
t0=$(date +%s)
$run run -p mps -J trace=$H/resnet50_infer_b8.json.gz,role=inference,rate=3e5 -t 0.1 -w 0 \
  -d $w/drain.db > $w/drain.txt 2>&1; echo "drain rc=$? (65 expected) in $(( $(date +%s) - t0 )) s"
tail -3 $w/drain.txt; left drain
t0=$(date +%s)
TALLY_GPU_SAMPLE_LOG=$w/clocks_s17.csv $run run -s experiments/specs/tally_headline.json \
  -t 8 -w 2 -r 1 -S 17 -q -d $w/graph_node_s17.db > $w/graph_node_s17.log 2>&1
echo "graph rc=$? in $(( $(date +%s) - t0 )) s"; grep -i "warning" $w/graph_node_s17.log | head -5
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)'); print(c.execute(\"select min(value), max(value) from metrics where name in ('gpu_sm_mhz_min', 'gpu_sm_mhz_max')\").fetchall())" $w/graph_node_s17.db
left graph
rm -f $w/flood.db* $w/drain.db*; xz -9 $w/clocks_s17.csv $w/graph_node_s17.db
cd $w && tar cJf $out/call1.tar.xz . && ls -la $out
