#!/bin/sh
# Session 19's first device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz): where do the replay's host stalls come from?
# The H100 machine's own stalls first (tally-run jitter: a spinning thread, then
# 100 us sleeps at Linux's default timer slack and at 1 ns), then session 18's
# sleep.json (MobileNetV3 beside ResNet-50 training under tally, and each alone;
# 2 x 8 s after 2 s, seed 6) four times, taking turns between the default loop and
# TALLY_TIMER_SLACK_NS=1, each with TALLY_TIMER_LOG, while a spinning probe on the
# last CPU logs every stall of 50 us or more (its clock is the timer logs' origin's).
out=${1:?usage: call1.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
{ nproc; grep -m1 -o hypervisor /proc/cpuinfo; uname -r; head -1 /proc/stat; cat /proc/loadavg
  cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>&1; ls /sys/devices/system/cpu/cpu0/cpuidle 2>&1
  ps -eo pcpu,pid,comm --sort=-pcpu | head -8; } > $out/machine.txt 2>&1
last=$(( $(nproc) - 1 ))
$run jitter -q -t 20 --threshold-us 10 --csv $out/jitter_spin_idle.csv > $out/jitter.txt
$run jitter -q -t 5 --sleep-us 100 >> $out/jitter.txt
$run jitter -q -t 5 --sleep-us 100 --timer-slack-ns 1 >> $out/jitter.txt
taskset -c $last $run jitter -q -t 420 --threshold-us 50 --csv $out/jitter_during.csv > $out/jitter_during.txt &
probe=$!
for turn in a1 b1 a2 b2; do
  case $turn in b*) s=1 ;; *) s= ;; esac
  t0=$(date +%s)
  TALLY_TIMER_SLACK_NS=$s TALLY_TIMER_LOG=$out/timers_$turn.csv $run run -s $hw/session18/sleep.json \
    -q -d $out/$turn.db > $out/$turn.log 2>&1
  echo "$turn rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +[0-9] +mobilenet" $out/$turn.log
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)')" $out/$turn.db
done
kill -INT $probe 2>/dev/null; sleep 1; kill $probe 2>/dev/null
cat $out/jitter.txt $out/machine.txt
xz -9 -T0 $out/*.db $out/*.csv; ls -la $out
