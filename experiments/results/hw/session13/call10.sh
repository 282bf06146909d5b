#!/bin/sh
# Session 13's eleventh device call: call9's selftest failed its two 5 us
# calibrations (5280 ns, +5.6%; 5120 ns in call1). Is it the calibration cache's
# key change (c339f79) or the machine's floor? The selftest of the build
# before it (cf83f37, carried as build/devprev) and after it (build/dev),
# taking turns, twice, on one machine.
out=${1:?usage: call10.sh OUTDIR}
xz -dc experiments/results/hw/calib.sqlite.xz > /tmp/calib.sqlite; export TALLY_CALIB_DB=/tmp/calib.sqlite
for i in 1 2; do
  for b in devprev dev; do
    build/$b/tally-run selftest > $out/selftest_${b}_$i.txt 2>&1
    echo "$b $i rc=$? $(grep -c PASS $out/selftest_${b}_$i.txt) pass; $(grep -E 'tiny' $out/selftest_${b}_$i.txt | sed 's/selftest: calibration //' | tr -s ' ' | tr '\n' ';')"
  done
done
