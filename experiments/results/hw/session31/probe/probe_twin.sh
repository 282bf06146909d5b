#!/bin/sh
# Session 19's sharing-probe variants twinned at a parameter set and compared with
# the H100 (call 9). From the repository root, after make:
#   sh experiments/results/hw/session31/probe/probe_twin.sh TAG [--sim-param K=V ...]
# writes $OUT (default /tmp/probe_twin)/pv_TAG.csv (sm_kernels.py's summary) and
# pv_TAG.txt (compare_probe.py: each kernel's time over its time alone, H100 and
# simulated); probe_score.py pv_*.txt scores them.
set -e
R=$(pwd); H=$R/experiments/results/hw/session19; out=${OUT:-/tmp/probe_twin}
tag=${1:?usage: probe_twin.sh TAG [tally-validate options]}; shift
[ -f "$H/probe/probe_variants_nokernels.db" ] || xz -dk "$H/probe/probe_variants_nokernels.db.xz"
mkdir -p "$out"
python3 "$H/probe/make_probe.py" "$out/specs" > /dev/null
cd "$out/specs"
rm -f "pv_$tag.db"*
"$R/build/tally-validate" -q -j 2 -k "$@" -d "pv_$tag.db" probe_variants.json \
    "$H/probe/probe_variants_nokernels.db" > /dev/null
python3 "$H/sm_kernels.py" "pv_$tag.db" > "$out/pv_$tag.csv"
python3 "$H/probe/compare_probe.py" "$H/probe/probe_variants_kernels_hw.csv" "$out/pv_$tag.csv" > "$out/pv_$tag.txt"
