#!/bin/sh
# Session 24's second device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz): what sets the long gaps after memory kernels of
# many blocks in graph replays (../session23/graph_gaps.txt). pair_probe/make_probe.py
# writes a synthetic graph trace of fixed kernel pairs; tally-run replays it alone and
# under priority streams (one job, so the same) with per-kernel records, 2 s after
# 0.5 s. pair_probe/pair_gaps.py prints each pair's gaps. One archive comes back:
# call2.tar.xz.
out=${1:?usage: call2.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call2; mkdir -p $w
p=$hw/session24/pair_probe
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
python3 $p/make_probe.py $w/probe.json || exit 1
t0=$(date +%s)
$run run -p priority-streams -J trace=$w/probe.json,role=training,graph=1,name=probe \
  -t 2 -w 0.5 -k -q -d $w/probe.db > $w/probe.log 2>&1
echo "probe rc=$? in $(( $(date +%s) - t0 )) s"; tail -3 $w/probe.log
python3 $p/pair_gaps.py $w/probe.db > $w/pair_gaps.txt; head -30 $w/pair_gaps.txt
ps -eo comm | grep -c -E 'nvidia-cuda-mps|tally-run' | sed 's/^/processes left: /'
rm -f $w/probe.json; xz -9 $w/probe.db
cd $w && tar cJf $out/call2.tar.xz . && ls -la $out
