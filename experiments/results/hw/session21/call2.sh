#!/bin/sh
# Session 21's second device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz): the gap probe (gap_probe/make_gap_probe.py): a
# chain of 5 us kernels launched one by one (no graphs), alone and beside a job of 1 ms kernels
# on 16 SMs, one of 5 us kernels on 16 SMs and one of 1 ms kernels on every SM, under mps
# and priority streams (1 s after 0.3 s), with per-kernel records; gap_probe/gap_stats.py
# summarizes each job's back-to-back gaps here and the database comes back without its
# kernel records. One archive: call2.tar.xz.
out=${1:?usage: call2.sh OUTDIR}
hw=experiments/results/hw; s21=$hw/session21; run=build/dev/tally-run; w=/tmp/call2; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
python3 $s21/gap_probe/make_gap_probe.py /tmp/gp || exit 1
t0=$(date +%s)
$run run -s /tmp/gp/gap_probe_eager.json -k -q -d $w/gap_probe_eager.db > $w/gap_probe_eager.log 2>&1
echo "gap_probe_eager rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $w/gap_probe_eager.log
python3 $s21/gap_probe/gap_stats.py $w/gap_probe_eager.db > $w/gap_stats_eager_hw.csv; cat $w/gap_stats_eager_hw.csv
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('delete from kernels'); c.commit(); c.execute('vacuum')" $w/gap_probe_eager.db
cp $TALLY_CALIB_DB $w/calib.sqlite
cd $w && tar cJf $out/call2.tar.xz . && ls -la $out
