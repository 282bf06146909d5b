#!/usr/bin/env bash
# tally's training throughput, simulated against the H100's headline runs, as
# residency_speedup varies (experimental simulator parameter, default 0). No GPU:
# the hardware side is experiments/results/hw/headline_eager.db. From the
# repository root after `make`:
#   experiments/results/hw/residency/sweep.sh > experiments/results/hw/residency/sweep.csv
set -eu
[ -f experiments/results/hw/headline_eager.db ] || xz -dk experiments/results/hw/headline_eager.db.xz
echo "residency_speedup,pair,training_sim_it_s,training_hw_it_s,error"
for r in ${R:-0 0.05 0.1 0.15 0.2 0.3 0.5 0.7 0.9}; do
    f=$(mktemp /tmp/residency.XXXXXX.csv)
    build/tally-validate -q --sim-param stream_gap_ns=5950 --sim-param residency_speedup="$r" \
        -c "$f" experiments/specs/tally_headline_eager.json experiments/results/hw/headline_eager.db >/dev/null
    awk -F, -v r="$r" '$4 == "tally" && $7 == "training" {printf "%s,%s,%.3f,%.3f,%+.4f\n", r, $2, $15, $16, $17}' "$f"
    rm -f "$f"
done
