#!/bin/sh
# The main job: every policy on the bundled traces, then the plots.
#   experiments/demo.sh [BUILD_DIR]      (make demo runs it)
# Results: out/demo/demo.db; plots: out/demo/plots/*.png (and .svg, .gp, .dat)
set -eu
build=${1:-build}
out=out/demo
mkdir -p "$out/plots"
echo "demo: simulating every policy on the bundled H100 traces (results in $out/demo.db)" >&2
"$build/tally-sim" run --spec experiments/specs/demo.json --db "$out/demo.db"
echo "demo: plotting into $out/plots" >&2
"$build/tally-plot" all --db "$out/demo.db" --experiment demo --out-dir "$out/plots"
"$build/tally-plot" report --db "$out/demo.db" --experiment demo --markdown "$out/report.md"
echo "demo: done. Open $out/plots/demo_tradeoff.png and $out/plots/demo_cdf.png; table in $out/report.md" >&2
