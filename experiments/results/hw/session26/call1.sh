#!/bin/sh
# Session 26's device run (build: build/dev of the commit that adds this file, carried
# as build/dev/tally-run.xz): the selftest of the build after this session's changes
# (metrics of a job with nothing finished: not stored; the readers' fixes), then the
# graph headline at a new seed, 18 (8 s after 2 s, every policy), for the pooled
# validation (validate_pooled.sh). One archive comes back: call1.tar.xz.
out=${1:?usage: call1.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call1; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
$run info > $w/info.txt 2>&1
$run selftest > $w/selftest.txt 2>&1; echo "selftest rc=$?"; grep -c PASS $w/selftest.txt; tail -3 $w/selftest.txt
left() { ps -eo comm | grep -c -E 'nvidia-cuda-mps|tally-run' | sed "s/^/$1: processes left: /"; }
t0=$(date +%s)
TALLY_GPU_SAMPLE_LOG=$w/clocks_s18.csv $run run -s experiments/specs/tally_headline.json \
  -t 8 -w 2 -r 1 -S 18 -q -d $w/graph_node_s18.db > $w/graph_node_s18.log 2>&1
echo "graph rc=$? in $(( $(date +%s) - t0 )) s"; grep -i "warning" $w/graph_node_s18.log | head -5
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)'); print(c.execute(\"select min(value), max(value) from metrics where name in ('gpu_sm_mhz_min', 'gpu_sm_mhz_max')\").fetchall())" $w/graph_node_s18.db
left graph
xz -9 $w/clocks_s18.csv $w/graph_node_s18.db
cd $w && tar cJf $out/call1.tar.xz . && ls -la $out
