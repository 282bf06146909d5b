#!/bin/sh
# Session 19's ninth device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz): the sharing probe's five variants
# (probe/make_probe.py, probe_variants.json: a compute job at the greater priority beside
# a memory job, under mps and priority streams), with per-kernel records and
# TALLY_SM_TRACE=1. One archive: call9.tar.xz.
out=${1:?usage: call9.sh OUTDIR}
hw=experiments/results/hw; s19=$hw/session19; run=build/dev/tally-run; w=/tmp/call9; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
python3 $s19/probe/make_probe.py /tmp/probe || exit 1
t0=$(date +%s)
TALLY_SM_TRACE=1 $run run -s /tmp/probe/probe_variants.json -k -q -d $w/probe.db > $w/probe.log 2>&1
echo "rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $w/probe.log
python3 $s19/sm_kernels.py $w/probe.db > $w/probe_kernels.csv; cat $w/probe_kernels.csv
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('delete from kernels'); c.commit(); c.execute('vacuum')" $w/probe.db
cd $w && tar cJf $out/call9.tar.xz . && ls -la $out
