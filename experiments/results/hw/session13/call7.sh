#!/bin/sh
# Session 13's eighth device call: tally-run contention and crowding after their
# calibration loops became one (tl_calib_proportional): the fits should match
# ../contention.txt and crowding/crowding.txt within the machine's noise.
# Build: build/dev of the commit that adds this file.
out=${1:?usage: call7.sh OUTDIR}
build/dev/tally-run crowding --csv $out/crowding.csv > $out/crowding.txt 2>&1; echo "crowding rc=$?"; tail -2 $out/crowding.txt
build/dev/tally-run contention --csv $out/contention.csv > $out/contention.txt 2>&1; echo "contention rc=$?"; grep -i -E "fit|alpha|starved" $out/contention.txt | head -12
