#!/bin/sh
# The simulator's crowding_warps (sim/README.md, "Crowding") swept against
# the node-calibrated graph runs (session12/node/graph_node.db: seed 1,
# session13/graph_node_s2.db: seed 2; every policy, 8 s) and the eager runs of
# session 12 (session12/eager_s12.db): the validation summary per value.
# Databases unpacked first (xz -dk). From the repository root after `make`:
#   sh experiments/results/hw/session13/crowding/sweep.sh [VALUES] > OUT.txt
# P: further tally-validate options, e.g. P="--sim-param pack_foreign=1".
hw=experiments/results/hw
for c in ${1:-0 4.74}; do
  for db in $hw/session12/node/graph_node.db $hw/session13/graph_node_s2.db $hw/session12/eager_s12.db; do
    case $db in *eager*) spec=experiments/specs/tally_headline_eager.json;; *) spec=experiments/specs/tally_headline.json;; esac
    f=$(mktemp /tmp/crowd.XXXXXX); m=$f.md
    build/tally-validate -q -j 4 --sim-param launch_latency_ns=12500 --sim-param callback_launch_latency_ns=1100 \
      --sim-param crowding_warps=$c $P -c $f -m $m $spec $db > /dev/null 2>&1 || echo "validate failed: $db" >&2
    echo "== crowding_warps=$c $P $(basename $db)"
    sed -n '/^## Summary/,/^## tally/p' $m | grep -E "^- (inference p99 latency|inference mean service|training|policies in|the same order)" | cut -c1-200
    python3 experiments/results/hw/session13/crowding/rows.py $f | grep -E "priority-streams|mps |tally|tgs" | grep -v mps-priority
    rm -f $f $m
  done
done
