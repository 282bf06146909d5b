#!/bin/sh
# Session 32's device run (build/dev/tally-run.xz built from the tree at the commit that
# adds this script): session 19's sharing-probe variants (session19/probe/make_probe.py,
# probe_variants.json: five compute/memory pairs under mps and priority streams, and
# each job alone) with per-kernel records (-k) and per-block records of the launches
# enqueued in 5 ms of every 250 ms (TALLY_BLOCK_TRACE, backend/block_trace.h), summed up
# by block_probe.py there (the raw records, about 1 GB of CSV, stay on the machine).
#   sh call1.sh OUTDIR
out=${1:?usage: call1.sh OUTDIR}
hw=experiments/results/hw; s19=$hw/session19; s32=$hw/session32; run=build/dev/tally-run
w=/tmp/call1; rm -rf $w; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
python3 $s19/probe/make_probe.py /tmp/probe > /dev/null || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $out/gpu.txt 2>&1
t0=$(date +%s)
TALLY_BLOCK_TRACE=$w/bt $run run -s /tmp/probe/probe_variants.json -k -q -d $w/probe.db > $w/probe.log 2>&1
echo "probe rc=$? in $(( $(date +%s) - t0 )) s"; du -sh $w/bt; ls $w/bt | wc -l
grep -E "^[a-z-]+ +- +0 " $w/probe.log
python3 $s19/sm_kernels.py $w/probe.db > $out/probe_kernels.csv
t0=$(date +%s)
python3 $s32/block_probe.py $w/bt $w/probe.db --sample $w/blocks_sample.csv > $out/blocks_summary.csv
echo "block_probe rc=$? in $(( $(date +%s) - t0 )) s"; cat $out/blocks_summary.csv
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('delete from kernels'); c.commit(); c.execute('vacuum')" $w/probe.db
xz -9 -T16 $w/blocks_sample.csv && cp $w/blocks_sample.csv.xz $out/
xz -9 $w/probe.db && cp $w/probe.db.xz $w/probe.log $out/
ls -la $out
