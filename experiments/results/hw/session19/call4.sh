#!/bin/sh
# Session 19's fourth device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz): per-kernel records (-k) of the graph headline
# under MPS only (each inference beside ResNet-50 training, and every job alone; 4 s
# after 1 s, seed 6), to see where the simulator's service times differ under MPS:
# MobileNetV3 -5 to -7%, ViT-B/16 -13 to -15%, ResNet-50 b8 +5 to +7% on every run.
# One archive comes back: call4.tar.xz.
out=${1:?usage: call4.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call4; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
t0=$(date +%s)
$run run -s experiments/specs/tally_headline.json -p mps -t 4 -w 1 -r 1 -S 6 -k -q -d $w/mpsk.db > $w/mpsk.log 2>&1
echo "rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $w/mpsk.log
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)'); print(c.execute('select count(*) from kernels').fetchone())" $w/mpsk.db
cd $w && tar cJf $out/call4.tar.xz . && ls -la $out
