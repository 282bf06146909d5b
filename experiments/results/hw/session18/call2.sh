#!/bin/sh
# Session 18's second device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz): the graph headline spec, every policy, 8 s after
# 2 s, seed 6 (as session17/call3.sh), after the fix found by call 1: the run's time 0
# is now after the policy's setup (tl_dev_begin), where before, under the policies
# that put jobs in worker processes (mps, mps-priority, time-slicing, tgs), the setup's
# 0.13-0.38 s became a backlog of late arrivals that a growing queue never worked off.
# TALLY_TIMER_LOG checks that the first arrivals now fire on time.
out=${1:?usage: call2.sh OUTDIR}
hw=experiments/results/hw
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$(date +%s)
TALLY_TIMER_LOG=$out/timers_s6.csv build/dev/tally-run run -s experiments/specs/tally_headline.json \
  -t 8 -w 2 -r 1 -S 6 -q -d $out/graph_node_s6b.db > $out/graph_node_s6b.log 2>&1
echo "graph rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $out/graph_node_s6b.log
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute(\"select key, value from meta where key like 'hw_%'\").fetchall()); c.execute('pragma wal_checkpoint(truncate)')" $out/graph_node_s6b.db
xz -9 -T0 $out/graph_node_s6b.db $out/timers_s6.csv; ls -la $out
