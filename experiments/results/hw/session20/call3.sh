#!/bin/sh
# Session 20's third device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz): which block's length decides how much a memory
# block gets beside compute blocks (grid/make_grid.py, grid_cross.json: 5 ms memory
# kernels beside 50 us and 0.5 ms compute kernels, 40 us memory kernels beside 5 ms
# compute kernels, and 5 ms memory kernels beside 5 ms 4-warp compute kernels), under mps, with per-kernel records and TALLY_SM_TRACE=1, summarized
# here by ../session19/sm_kernels.py; the database comes back without its kernel
# records. One archive: call3.tar.xz.
out=${1:?usage: call3.sh OUTDIR}
hw=experiments/results/hw; s20=$hw/session20; run=build/dev/tally-run; w=/tmp/call3; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
python3 $s20/grid/make_grid.py /tmp/grid || exit 1
t0=$(date +%s)
TALLY_SM_TRACE=1 $run run -s /tmp/grid/grid_cross.json -k -q -d $w/grid_cross.db > $w/grid_cross.log 2>&1
echo "grid_cross rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $w/grid_cross.log
python3 $hw/session19/sm_kernels.py $w/grid_cross.db > $w/grid_cross_kernels.csv; cat $w/grid_cross_kernels.csv
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('delete from kernels'); c.commit(); c.execute('vacuum')" $w/grid_cross.db
cp $TALLY_CALIB_DB $w/calib.sqlite
cd $w && tar cJf $out/call3.tar.xz . && ls -la $out
