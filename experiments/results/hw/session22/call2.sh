#!/bin/sh
# Session 22's second device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz; build/lcb carries a prebuilt tests/test_tracer with
# the CMocka, jansson and SQLite libraries the device lacks):
# 1. the tracer after the split of inject.c into single-purpose files: built on the
#    device, then every test of tests/test_tracer.c, the GPU ones included;
# 2. the graph headline at another new seed, 14, as call 1 (8 s after 2 s).
# One archive comes back: call2.tar.xz.
out=${1:?usage: call2.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call2; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
make -f cuda.mk tracer BUILD=build/device > $w/tracer_build.log 2>&1; echo "tracer build rc=$?"
LD_LIBRARY_PATH=$PWD/build/lcb TALLY_BUILD=build/device build/lcb/test_tracer > $w/tests_tracer.txt 2>&1
echo "test_tracer rc=$?"; tail -4 $w/tests_tracer.txt
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
$run info > $w/info.txt 2>&1
t0=$(date +%s)
TALLY_GPU_SAMPLE_LOG=$w/clocks_s14.csv $run run -s experiments/specs/tally_headline.json \
  -t 8 -w 2 -r 1 -S 14 -q -d $w/graph_node_s14.db > $w/graph_node_s14.log 2>&1
echo "graph rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "training" $w/graph_node_s14.log | head -8
grep -i "warning" $w/graph_node_s14.log | head -5
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)'); print(c.execute(\"select min(value), max(value) from metrics where name in ('gpu_sm_mhz_min', 'gpu_sm_mhz_max')\").fetchall())" $w/graph_node_s14.db
xz -9 $w/clocks_s14.csv
cd $w && tar cJf $out/call2.tar.xz . && ls -la $out
