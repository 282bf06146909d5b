#!/bin/sh
# Session 29's device run (build/dev/tally-run.xz built from the tree at the commit
# that adds this script): tally-run's selftest on this session's build (the results
# database and calibration cache now open through tl_results_sqlite_open and make
# missing folders), then the graph headline at two new seeds, 24 and 25
# (8 s after 2 s, every policy), held out from everything fitted so far. Each
# database is compressed into OUTDIR as soon as its run ends, so a run cut by the
# call's time limit keeps the one before. Run as two calls:
#   sh call1.sh OUT 24;  NO_SELFTEST=1 sh call1.sh OUT 25
# (the second call's output printed the selftest's lines without running it, a
# slip in the script as it ran, mended here).
out=${1:?usage: call1.sh OUTDIR [SEED...]}; shift; seeds=${*:-24 25}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call1; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite
xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
left() { ps -eo comm | grep -c -E 'nvidia-cuda-mps|tally-run' | sed "s/^/$1: processes left: /"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $out/gpu.txt 2>&1
if [ -z "${NO_SELFTEST:-}" ]; then
  t0=$(date +%s)
  $run selftest > $out/selftest.txt 2>&1; echo "selftest rc=$? in $(( $(date +%s) - t0 )) s"
  tail -3 $out/selftest.txt; left selftest
fi
for s in $seeds; do
  t0=$(date +%s)
  TALLY_GPU_SAMPLE_LOG=$w/clocks_s$s.csv $run run -s experiments/specs/tally_headline.json \
    -t 8 -w 2 -r 1 -S $s -q -d $w/graph_node_s$s.db > $w/graph_node_s$s.log 2>&1
  echo "graph s$s rc=$? in $(( $(date +%s) - t0 )) s"; grep -i "warning" $w/graph_node_s$s.log | head -5
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)'); print(c.execute(\"select min(value), max(value) from metrics where name in ('gpu_sm_mhz_min', 'gpu_sm_mhz_max')\").fetchall())" $w/graph_node_s$s.db
  left "graph s$s"
  xz -9 $w/clocks_s$s.csv $w/graph_node_s$s.db
  cp $w/graph_node_s$s.db.xz $w/clocks_s$s.csv.xz $w/graph_node_s$s.log $out/
done
ls -la $out
