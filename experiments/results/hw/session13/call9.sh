#!/bin/sh
# Session 13's tenth device call: after tl_calib_mem came to hold a
# tl_calib_key (the in-memory calibration cache), tally-run selftest, and the
# fidelity of two bundled traces (cached calibrations looked up in memory;
# every kernel must be found: "calibrated 0" in the log) and a short graph run
# (node calibrations). Build: build/dev of the commit that adds this file.
out=${1:?usage: call9.sh OUTDIR}
xz -dc experiments/results/hw/calib.sqlite.xz > /tmp/calib.sqlite; export TALLY_CALIB_DB=/tmp/calib.sqlite
build/dev/tally-run selftest > $out/selftest.txt 2>&1; echo "selftest rc=$?"; grep -E "ALL|FAIL" $out/selftest.txt | head -3
build/dev/tally-run fidelity -t 1 -w 0.2 traces/bundled/h100/vit_b16_infer_b1.json.gz traces/bundled/h100/resnet50_train_b32_steps.json.gz > $out/fidelity.txt 2>&1; echo "fidelity rc=$?"; cat $out/fidelity.txt | grep -v "^tally-run: \(graph\|back\)" | tail -8
build/dev/tally-run run -s experiments/specs/tally_headline.json -p tally -t 1 -w 0.5 -r 1 -S 1 -q -d /tmp/g.db > $out/graph.log 2>&1; echo "graph rc=$?"; grep -i -E "calibrat" $out/graph.log | head -4; grep -E "^[a-z-]+ +- +0 " $out/graph.log | head -8
