#!/bin/sh
# Session 18's third device run (build: as call2.sh): the graph headline spec, every
# policy, 8 s after 2 s, seeds 7 and 8: two more node-calibrated runs with the run's
# time 0 after the setup (call 2's fix), never simulated before this session.
out=${1:?usage: call3.sh OUTDIR}
hw=experiments/results/hw
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for s in 7 8; do
  t0=$(date +%s)
  build/dev/tally-run run -s experiments/specs/tally_headline.json -t 8 -w 2 -r 1 -S $s -q \
    -d $out/graph_node_s$s.db > $out/graph_node_s$s.log 2>&1
  echo "seed $s rc=$? in $(( $(date +%s) - t0 )) s"
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)')" $out/graph_node_s$s.db
  xz -9 -T0 $out/graph_node_s$s.db
done
ls -la $out
