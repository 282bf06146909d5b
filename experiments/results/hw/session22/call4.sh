#!/bin/sh
# Session 22's fourth device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz): the backfill probe (backfill/make_backfill.py):
# under priority streams, does the H100 dispatch a lower-priority kernel's blocks while
# a higher-priority kernel waits for room? 2 s after 0.5 s, kernel records; then
# backfill/backfill_stats.py on the database. One archive comes back: call4.tar.xz.
out=${1:?usage: call4.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call4; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
python3 $hw/session22/backfill/make_backfill.py $w/probe || exit 1
t0=$(date +%s)
$run run -s $w/probe/backfill.json -q -d $w/backfill_hw.db > $w/backfill_hw.log 2>&1
echo "probe rc=$? in $(( $(date +%s) - t0 )) s"; tail -8 $w/backfill_hw.log
python3 $hw/session22/backfill/backfill_stats.py $w/backfill_hw.db | tee $w/backfill_stats_hw.txt
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)')" $w/backfill_hw.db
xz -9 $w/backfill_hw.db
cd $w && tar cJf $out/call4.tar.xz . && ls -la $out
