#!/bin/sh
# Session 16's second device call: why TGS's training is 13-38% faster in the
# simulator than on the H100 beside ResNet-50 b8 and ViT-B/16 (node-calibrated graph
# runs). The graph headline under tgs only, 8 s after 2 s, seed 4 (call1.sh's), with
# the controller's per-window record (TALLY_TGS_LOG, policies/tgs.c: the same code in
# both worlds), to compare with the simulated twin's (../diag_tgs/windows/compare.py).
# Build: build/dev of the commit that adds this file (carried as build/dev/tally-run.xz).
out=${1:?usage: call2.sh OUTDIR}
hw=experiments/results/hw
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
rm -f $out/tgs_windows_hw.csv
TALLY_TGS_LOG=$out/tgs_windows_hw.csv build/dev/tally-run run -s experiments/specs/tally_headline.json \
  -p tgs -t 8 -w 2 -r 1 -S 4 -q -d $out/tgs_s4.db > $out/tgs_s4.log 2>&1
echo "tgs rc=$?"; grep -E "^(tgs|alone) " $out/tgs_s4.log
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)')" $out/tgs_s4.db
xz -9 $out/tgs_s4.db $out/tgs_windows_hw.csv
