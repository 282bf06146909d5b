#!/bin/sh
# Session 27's device run (build: build/dev of the commit that adds this file, carried
# as build/dev/tally-run.xz and build/dev/tally-sim.xz, both linked with jansson,
# sqlite3 and zlib statically):
#  1. make bench's script on the device machine's CPU, with the carried tally-sim
#     (one core per simulated run, as on the VM; 5 repetitions, fastest kept);
#  2. the selftest of this session's build (core/sweep.c changed);
#  3. the graph headline at a new seed, 19 (8 s after 2 s, every policy), for the
#     pooled validation (validate_pooled.sh).
# One archive comes back: call1.tar.xz.
out=${1:?usage: call1.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; sim=build/dev/tally-sim; w=/tmp/call1; mkdir -p $w
for b in $run $sim; do [ -x $b ] || xz -dk $b.xz || exit 1; done
lscpu > $w/lscpu.txt 2>&1; nproc >> $w/lscpu.txt; uptime >> $w/lscpu.txt
grep -E "^Model name|^CPU\(s\)|MHz" $w/lscpu.txt
t0=$(date +%s)
BENCH_REPS=5 sh experiments/bench/run.sh build/dev > $w/bench.txt 2>&1
echo "bench rc=$? in $(( $(date +%s) - t0 )) s"; cat $w/bench.txt | tail -12; cp out/bench/bench.csv $w/
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
$run info > $w/info.txt 2>&1
$run selftest > $w/selftest.txt 2>&1; echo "selftest rc=$?"; grep -c PASS $w/selftest.txt; tail -3 $w/selftest.txt
left() { ps -eo comm | grep -c -E 'nvidia-cuda-mps|tally-run' | sed "s/^/$1: processes left: /"; }
t0=$(date +%s)
TALLY_GPU_SAMPLE_LOG=$w/clocks_s19.csv $run run -s experiments/specs/tally_headline.json \
  -t 8 -w 2 -r 1 -S 19 -q -d $w/graph_node_s19.db > $w/graph_node_s19.log 2>&1
echo "graph rc=$? in $(( $(date +%s) - t0 )) s"; grep -i "warning" $w/graph_node_s19.log | head -5
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)'); print(c.execute(\"select min(value), max(value) from metrics where name in ('gpu_sm_mhz_min', 'gpu_sm_mhz_max')\").fetchall())" $w/graph_node_s19.db
left graph
xz -9 $w/clocks_s19.csv $w/graph_node_s19.db
cd $w && tar cJf $out/call1.tar.xz . && ls -la $out
