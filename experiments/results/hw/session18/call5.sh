#!/bin/sh
# Session 18's fifth device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz; the run's time 0 after the setup, call 2's fix):
# the graph headline spec, every policy, 8 s after 2 s, seeds 1 and 2 again (run
# before the fix in sessions 12-13, graph_node.db and graph_node_s2.db), for
# before/after pairs like call 2's seed 6.
out=${1:?usage: call5.sh OUTDIR}
hw=experiments/results/hw
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for s in 1 2; do
  t0=$(date +%s)
  build/dev/tally-run run -s experiments/specs/tally_headline.json -t 8 -w 2 -r 1 -S $s -q \
    -d $out/graph_node_s${s}b.db > $out/graph_node_s${s}b.log 2>&1
  echo "seed $s rc=$? in $(( $(date +%s) - t0 )) s"
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)')" $out/graph_node_s${s}b.db
  xz -9 -T0 $out/graph_node_s${s}b.db
done
ls -la $out
