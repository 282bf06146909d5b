#!/bin/sh
# Session 20's second device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz): the sharing grid's pairs held together longer
# (grid/make_grid.py, grid_long.json: 8-warp compute kernels of 50 us, 0.5 ms and 5 ms
# beside long-block memory kernels as long, the 2-warp one at 5 ms, and the 8-warp one
# at 5 ms beside short-block memory kernels), under mps, with per-kernel records and
# TALLY_SM_TRACE=1, summarized here by ../session19/sm_kernels.py; the database comes
# back without its kernel records. One archive: call2.tar.xz.
out=${1:?usage: call2.sh OUTDIR}
hw=experiments/results/hw; s20=$hw/session20; run=build/dev/tally-run; w=/tmp/call2; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
python3 $s20/grid/make_grid.py /tmp/grid || exit 1
t0=$(date +%s)
TALLY_SM_TRACE=1 $run run -s /tmp/grid/grid_long.json -k -q -d $w/grid_long.db > $w/grid_long.log 2>&1
echo "grid_long rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $w/grid_long.log
python3 $hw/session19/sm_kernels.py $w/grid_long.db > $w/grid_long_kernels.csv; cat $w/grid_long_kernels.csv
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('delete from kernels'); c.commit(); c.execute('vacuum')" $w/grid_long.db
cp $TALLY_CALIB_DB $w/calib.sqlite
cd $w && tar cJf $out/call2.tar.xz . && ls -la $out
