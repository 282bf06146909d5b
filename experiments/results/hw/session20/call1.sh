#!/bin/sh
# Session 20's first device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz):
#  1. the sharing grid (grid/make_grid.py): compute kernels of 2, 4, 8 and 16 warps an SM
#     beside memory kernels of short and long blocks, under mps, with per-kernel records
#     and TALLY_SM_TRACE=1 (the SMs each launch ran on); summarized here by
#     ../session19/sm_kernels.py, the database returned without its kernel records;
#  2. two ResNet-50 b32 training graphs at one priority (two_trainings.json) under mps
#     and priority streams: stream_order's held-out check on real traces.
# The calibration cache comes back too (the grid's new shapes). One archive: call1.tar.xz.
out=${1:?usage: call1.sh OUTDIR}
hw=experiments/results/hw; s20=$hw/session20; run=build/dev/tally-run; w=/tmp/call1; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
python3 $s20/grid/make_grid.py /tmp/grid || exit 1
t0=$(date +%s)
TALLY_SM_TRACE=1 $run run -s /tmp/grid/grid.json -k -q -d $w/grid.db > $w/grid.log 2>&1
echo "grid rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $w/grid.log
python3 $hw/session19/sm_kernels.py $w/grid.db > $w/grid_kernels.csv; cat $w/grid_kernels.csv
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('delete from kernels'); c.commit(); c.execute('vacuum')" $w/grid.db
t0=$(date +%s)
$run run -s $s20/two_trainings.json -q -d $w/two_trainings.db > $w/two_trainings.log 2>&1
echo "two trainings rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $w/two_trainings.log
cp $TALLY_CALIB_DB $w/calib.sqlite
cd $w && tar cJf $out/call1.tar.xz . && ls -la $out
