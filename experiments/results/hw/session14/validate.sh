#!/bin/sh
# Session 14's validations. (1) call3.sh's and call5.sh's runs with every synthetic
# kernel preferring one carveout (call3/carve100_100ms.db, call5/carve100_s2.db;
# unpacked first with xz -dk)
# against the simulator at its defaults (model revision 13: carveout off), at
# revision 12 (pack_foreign 0, crowding_warps 0) and with carveout 1. (2) The
# three node-calibrated runs of session 12-13 with the experimental options
# dram_share (with the DRAM curve re-measured by ../bandwidth2/),
# carveout + dram_share, and carveout 2 (the co-residency rule measured by
# ../carveout_matrix/). (3) The node-calibrated, launch-calibrated and eager runs of
# sessions 11-13 again at the defaults, for the p99-overhead rankings with
# overloaded policies tied (rankings/). From the repository root:
#   sh experiments/results/hw/session14/validate.sh [BUILD]
b=${1:-build}; d=experiments/results/hw/session14; hw=experiments/results/hw
g=experiments/specs/tally_headline.json
v() { # OUT SPEC DB [extra tally-validate options]
  o=$1; sp=$2; db=$3; shift 3
  $b/tally-validate -q -j 1 --sim-param launch_latency_ns=12500 --sim-param callback_launch_latency_ns=1100 \
    "$@" -m $o.md -c $o.csv $sp $db > /dev/null || echo "validate $o failed" >&2
}
mkdir -p $d/options
v $d/validation_carve100 $g $d/call3/carve100_100ms.db
v $d/validation_carve100_rev12 $g $d/call3/carve100_100ms.db --sim-param pack_foreign=0 --sim-param crowding_warps=0
v $d/validation_carve100_carveout $g $d/call3/carve100_100ms.db --sim-param carveout=1
# call5.sh: a second repetition (seed 2), against the defaults
v $d/validation_carve100_s2 $g $d/call5/carve100_s2.db
for n in 1 2 3; do
  case $n in 1) db=$hw/session12/node/graph_node.db;; *) db=$hw/session13/graph_node_s$n.db;; esac
  v $d/options/validation_graph_node_s${n}_dram $g $db --sim-param dram_share=1
  v $d/options/validation_graph_node_s${n}_carveout_dram $g $db --sim-param carveout=1 --sim-param dram_share=1
  v $d/options/validation_graph_node_s${n}_carveout2 $g $db --sim-param carveout=2
done
mkdir -p $d/rankings
ea=experiments/specs/tally_headline_eager.json
v $d/rankings/validation_graph_node_s1 $g $hw/session12/node/graph_node.db
v $d/rankings/validation_graph_node_s2 $g $hw/session13/graph_node_s2.db
v $d/rankings/validation_graph_node_s3 $g $hw/session13/graph_node_s3.db
v $d/rankings/validation_graph_s11 $g $hw/session11/graph_s11.db
v $d/rankings/validation_graph_s12 $g $hw/session12/graph_s12.db
v $d/rankings/validation_graph_s12r3 $g $hw/session12/graph_s12r3.db
v $d/rankings/validation_eager_s11 $ea $hw/session11/eager_s11.db
v $d/rankings/validation_eager_s12 $ea $hw/session12/eager_s12.db
