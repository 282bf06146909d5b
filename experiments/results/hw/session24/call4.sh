#!/bin/sh
# Session 24's fourth device run (call 1's build, build/dev/tally-run.xz; tally-run's
# replay has not changed since): the graph headline at a new seed, 16 (8 s after 2 s,
# every policy), made after model revision 21 was chosen: held out from it. One archive
# comes back: call4.tar.xz.
out=${1:?usage: call4.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call4; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
$run info > $w/info.txt 2>&1
t0=$(date +%s)
TALLY_GPU_SAMPLE_LOG=$w/clocks_s16.csv $run run -s experiments/specs/tally_headline.json \
  -t 8 -w 2 -r 1 -S 16 -q -d $w/graph_node_s16.db > $w/graph_node_s16.log 2>&1
echo "graph rc=$? in $(( $(date +%s) - t0 )) s"; grep -i "warning" $w/graph_node_s16.log | cut -c1-120 | head -8
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)'); print(c.execute(\"select min(value), max(value) from metrics where name in ('gpu_sm_mhz_min', 'gpu_sm_mhz_max')\").fetchall())" $w/graph_node_s16.db
ps -eo comm | grep -c -E 'nvidia-cuda-mps|tally-run' | sed 's/^/processes left: /'
xz -9 $w/clocks_s16.csv $w/graph_node_s16.db
cd $w && tar cJf $out/call4.tar.xz . && ls -la $out
