#!/bin/sh
# Session 17's fourth device run: Tally's configuration choices on the H100 (the tally
# policy's TALLY_TALLY_LOG: every training kernel shape's original and candidates,
# timed on the GPU, and the pick), the graph headline under tally, 2 s after 1 s, seed
# 5; the same log from the simulator compares them shape by shape (tally_choices.py).
# Build: build/dev of the commit that adds this file (carried as build/dev/tally-run.xz).
out=${1:?usage: call4.sh OUTDIR}
hw=experiments/results/hw
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
rm -f $out/tally_choices_hw.csv
TALLY_TALLY_LOG=$out/tally_choices_hw.csv build/dev/tally-run run -s experiments/specs/tally_headline.json \
  -p tally -t 2 -w 1 -r 1 -S 5 -q -d /tmp/choices.db > $out/tally_choices.log 2>&1
echo "rc=$?"; grep -E "^tally " $out/tally_choices.log
wc -l $out/tally_choices_hw.csv; grep -c ',1$' $out/tally_choices_hw.csv
