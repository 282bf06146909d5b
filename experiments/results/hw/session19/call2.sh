#!/bin/sh
# Session 19's second device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz). tally-run now samples the GPU's clocks through
# every run (NVML, every 10 ms). First a short check of the sampler on session 18's
# sleep.json (MobileNetV3 beside ResNet-50 training under tally, each alone; 4 s after
# 1 s, seed 6), then the graph headline at a new seed, 9 (8 s after 2 s, every policy),
# both with every clock sample (TALLY_GPU_SAMPLE_LOG) and every timer (TALLY_TIMER_LOG).
# Everything comes back as one archive, call2.tar.xz.
out=${1:?usage: call2.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call2; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
nvidia-smi -q -d PERFORMANCE,CLOCK,POWER > $w/smi_q.txt 2>&1
nvidia-smi --query-gpu=persistence_mode,clocks.sm,clocks.max.sm,clocks.applications.graphics,power.limit --format=csv >> $w/smi_q.txt 2>&1
t0=$(date +%s)
TALLY_GPU_SAMPLE_LOG=$w/clocks_sleep.csv TALLY_TIMER_LOG=$w/timers_sleep.csv $run run -s $hw/session18/sleep.json \
  -t 4 -w 1 -r 1 -q -d $w/sleep_check.db > $w/sleep_check.log 2>&1
echo "check rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $w/sleep_check.log
t0=$(date +%s)
TALLY_GPU_SAMPLE_LOG=$w/clocks_s9.csv TALLY_TIMER_LOG=$w/timers_s9.csv $run run -s experiments/specs/tally_headline.json \
  -t 8 -w 2 -r 1 -S 9 -q -d $w/graph_node_s9.db > $w/graph_node_s9.log 2>&1
echo "graph rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $w/graph_node_s9.log
for db in $w/*.db; do
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)'); print(sys.argv[1], c.execute(\"select run_id, group_concat(name || '=' || value, ' ') from metrics where name like 'gpu_%' and job_id = -1 group by run_id\").fetchall())" $db
done
cd $w && tar cJf $out/call2.tar.xz . && ls -la $out
