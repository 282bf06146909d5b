#!/bin/sh
# Session 21's fourth device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz), on a fresh machine: the graph headline at a new seed, 12,
# held out from model revision 19 (8 s after 2 s, every policy), with every GPU clock sample
# (TALLY_GPU_SAMPLE_LOG); the database records the GPU's UUID. One archive comes back:
# call4.tar.xz.
out=${1:?usage: call4.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call4; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
$run info > $w/info.txt 2>&1
t0=$(date +%s)
TALLY_GPU_SAMPLE_LOG=$w/clocks_s12.csv $run run -s experiments/specs/tally_headline.json \
  -t 8 -w 2 -r 1 -S 12 -q -d $w/graph_node_s12.db > $w/graph_node_s12.log 2>&1
echo "graph rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $w/graph_node_s12.log | head -8
grep -i "warning" $w/graph_node_s12.log | head -5
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)'); print(c.execute(\"select key, value from meta where key like 'hw_%'\").fetchall()); print(c.execute(\"select min(value), max(value) from metrics where name in ('gpu_sm_mhz_min', 'gpu_sm_mhz_max')\").fetchall())" $w/graph_node_s12.db
cd $w && tar cJf $out/call4.tar.xz . && ls -la $out
