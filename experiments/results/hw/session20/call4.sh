#!/bin/sh
# Session 20's fourth device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz): compute beside compute (grid/make_grid.py,
# grid_cc.json: ViT-B/16's 32x32 GEMM shape beside one-wave compute kernels of 8 warps
# an SM lasting 50 us, 0.5 ms and 5 ms, and of 4 warps at 50 us), under mps, with
# per-kernel records and TALLY_SM_TRACE=1, summarized here by
# ../session19/sm_kernels.py; the database comes back without its kernel records. One
# archive: call4.tar.xz.
out=${1:?usage: call4.sh OUTDIR}
hw=experiments/results/hw; s20=$hw/session20; run=build/dev/tally-run; w=/tmp/call4; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
python3 $s20/grid/make_grid.py /tmp/grid || exit 1
t0=$(date +%s)
TALLY_SM_TRACE=1 $run run -s /tmp/grid/grid_cc.json -k -q -d $w/grid_cc.db > $w/grid_cc.log 2>&1
echo "grid_cc rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $w/grid_cc.log
python3 $hw/session19/sm_kernels.py $w/grid_cc.db > $w/grid_cc_kernels.csv; cat $w/grid_cc_kernels.csv
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('delete from kernels'); c.commit(); c.execute('vacuum')" $w/grid_cc.db
cp $TALLY_CALIB_DB $w/calib.sqlite
cd $w && tar cJf $out/call4.tar.xz . && ls -la $out
