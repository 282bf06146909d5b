#!/bin/sh
# Session 14's fourth device call: tally-run crowding after its occupancy came to be
# tl_occupancy over the device's limits (e487347; session 13's crowding.csv is the
# reference: the same occupancies, 32 and 8, and ratios within the noise), and the
# selftest. Build: build/dev of the commit that adds this file, carried
# compressed (build/dev/tally-run.xz: the tracked tree is ~61.5 MiB, and the
# stripped binary beside it passes the device tool's 64 MiB).
out=${1:?usage: call4.sh OUTDIR}
[ -f build/dev/tally-run.xz ] && xz -dkf build/dev/tally-run.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
build/dev/tally-run crowding --csv $out/crowding.csv > $out/crowding.txt 2>&1; echo "crowding rc=$?"
cat $out/crowding.txt
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc experiments/results/hw/calib.sqlite.xz > $TALLY_CALIB_DB
build/dev/tally-run selftest > $out/selftest.txt 2>&1; echo "selftest rc=$?"; grep -ci fail $out/selftest.txt; tail -5 $out/selftest.txt
