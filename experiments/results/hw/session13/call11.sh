#!/bin/sh
# Session 13's twelfth device call: the selftest after its below-the-floor
# calibration check (call9 failed the 5 us targets at a 5.28 us floor; call10:
# the machine's, not the cache change's). Build: build/dev of the commit that adds this file.
out=${1:?usage: call11.sh OUTDIR}
xz -dc experiments/results/hw/calib.sqlite.xz > /tmp/calib.sqlite; export TALLY_CALIB_DB=/tmp/calib.sqlite
build/dev/tally-run selftest > $out/selftest.txt 2>&1; echo "selftest rc=$?"; grep -E "calibration|ALL|FAIL" $out/selftest.txt
