#!/bin/sh
# Session 18's first device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz):
#  1. timers.json (MobileNetV3 beside ResNet-50 training, graph jobs; mps, tgs,
#     time-slicing, tally and the alone runs; 4 s after 1 s, seed 6) with
#     TALLY_TIMER_LOG: where the event loop's timer lateness (cuda_timer_late_mean_ns:
#     3-4 ms under MPS, 0.4-0.9 ms under tgs and time slicing, 30-50 us under tally
#     and alone in session 17's runs) comes from, and whether it lasts past the warm-up.
#  2. psk_rb8.json (ResNet-50 b8 beside ResNet-50 training under priority streams, 4 s
#     after 1 s, seed 6) with per-kernel records: the training there is 8-10% slower
#     simulated than on the H100 on every node-calibrated run.
out=${1:?usage: call1.sh OUTDIR}
hw=experiments/results/hw; d=$hw/session18
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$(date +%s)
TALLY_TIMER_LOG=$out/timers.csv build/dev/tally-run run -s $d/timers.json -q -d $out/timers.db \
  > $out/timers.log 2>&1
echo "timers rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $out/timers.log
t0=$(date +%s)
build/dev/tally-run run -s $d/psk_rb8.json -k -q -d $out/psk_rb8.db > $out/psk_rb8.log 2>&1
echo "psk rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $out/psk_rb8.log
for db in timers psk_rb8; do
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)'); c.close()" $out/$db.db
done
xz -9 -T0 $out/timers.db $out/timers.csv $out/psk_rb8.db; ls -la $out
