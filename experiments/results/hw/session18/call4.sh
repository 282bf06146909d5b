#!/bin/sh
# Session 18's fourth device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz): do the H100 replay's p99 outliers at low load come
# from the event loop's idle sleep? sleep.json (MobileNetV3 beside ResNet-50 training
# under tally, and each alone; graph jobs; 2 repetitions of 8 s after 2 s, seed 6) twice,
# taking turns: the loop sleeping until 60 us before its next timer when nothing is on
# the GPU (the default), and spinning (TALLY_SLEEP_MARGIN_US=-1); both with
# TALLY_TIMER_LOG.
out=${1:?usage: call4.sh OUTDIR}
hw=experiments/results/hw; d=$hw/session18
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
for turn in sleep spin sleep2 spin2; do
  case $turn in spin*) m=-1 ;; *) m=60 ;; esac
  t0=$(date +%s)
  TALLY_SLEEP_MARGIN_US=$m TALLY_TIMER_LOG=$out/timers_$turn.csv build/dev/tally-run run -s $d/sleep.json \
    -q -d $out/$turn.db > $out/$turn.log 2>&1
  echo "$turn rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +[0-9] +mobilenet" $out/$turn.log
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)')" $out/$turn.db
done
xz -9 -T0 $out/*.db $out/*.csv; ls -la $out
