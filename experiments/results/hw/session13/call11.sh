#!/bin/sh
# Session 13's twelfth and thirteenth device calls: the selftest after its
# calibration check changed (call9 failed the 5 us targets at 5280 ns; call10:
# the machine's doing, not the cache change's). The first run (selftest.txt)
# had a below-the-floor rule that did not apply (5184 ns, PASS either way);
# the second (selftest_tol.txt) has the 5% or 250 ns tolerance.
# Build: build/dev of the commit named in each output's header.
out=${1:?usage: call11.sh OUTDIR}
xz -dc experiments/results/hw/calib.sqlite.xz > /tmp/calib.sqlite; export TALLY_CALIB_DB=/tmp/calib.sqlite
f=$out/${2:-selftest}.txt
git log -1 --format='# build: %h' > $f 2>/dev/null
build/dev/tally-run selftest >> $f 2>&1; echo "selftest rc=$?"; grep -E "calibration|ALL|FAIL" $f
