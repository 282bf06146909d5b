#!/bin/sh
# Session 13's fifth device call. (1) tally-run crowding again with the build
# that fits the warp form (call2's crowding.txt printed an earlier linear fit of
# the same kind of measurement). (2) ../../placement/placement.cu's one-kernel
# backgrounds (cmp-one, tiny-one and two new ones, half-one and spin264-one):
# does a kernel that finds room at its arrival, beside another kernel's blocks,
# spread (pack_foreign 1) or pack (pack_foreign 2)? (3) The graph headline's
# tally and tgs runs, 30 s after 2 s, seed 2, node-calibrated (seed 1:
# ../session12/node/graph_long_node_s1).
# Build: build/dev of the commit that adds this file.
out=${1:?usage: call4.sh OUTDIR}
hw=experiments/results/hw
build/dev/tally-run crowding --csv $out/crowding.csv > $out/crowding.txt 2>&1; echo "crowding rc=$?"
tail -2 $out/crowding.txt
nvcc -O2 -arch=sm_90 -o /tmp/placement $hw/placement/placement.cu && mkdir -p $out/p && /tmp/placement $out/p -one
echo "placement rc=$?"; cat $out/p/summary.txt; gzip -9 $out/p/blocks.csv
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
build/dev/tally-run run -s experiments/specs/tally_headline.json -p tally -p tgs -t 30 -w 2 -r 1 -S 2 -q \
  -d $out/graph_long_node_s2.db > $out/graph_long_node_s2.log 2>&1
echo "rc=$?"; grep -E "^[a-z-]+ +- +0 " $out/graph_long_node_s2.log; grep -c warning $out/graph_long_node_s2.log
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)'); c.close()" $out/graph_long_node_s2.db
