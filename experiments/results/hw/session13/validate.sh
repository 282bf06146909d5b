#!/bin/sh
# Validations at model revision 13 (pack_foreign and crowding_warps on the H100)
# of the node-calibrated graph runs (seeds 1-3: ../session12/node/graph_node.db,
# graph_node_s2.db, graph_node_s3.db; every policy, 8 s), the same at revision 12
# (both options off: *_rev12) and with pack_foreign 2 (every kernel placed beside
# another job packs, not only one that waited: *_pack2), and the session 11-12 runs of both headline specs
# and the 30 s tally/tgs runs at revision 13 (seed 1: rev13/; seed 2, call4.sh: here), with the parameters of the
# earlier sessions' validations. Databases unpacked first (xz -dk). From the
# repository root: sh experiments/results/hw/session13/validate.sh [BUILD]
b=${1:-build}; d=experiments/results/hw/session13; hw=experiments/results/hw
g=experiments/specs/tally_headline.json; ea=experiments/specs/tally_headline_eager.json
v() { # OUT SPEC DB [extra tally-validate options]
  o=$1; sp=$2; db=$3; shift 3
  $b/tally-validate -q -j 1 --sim-param launch_latency_ns=12500 --sim-param callback_launch_latency_ns=1100 \
    "$@" -m $o.md -c $o.csv $sp $db > /dev/null || echo "validate $o failed" >&2
}
rev12="--sim-param pack_foreign=0 --sim-param crowding_warps=0"
mkdir -p $d/rev13 $d/options
for n in 1 2 3; do
  case $n in 1) db=$hw/session12/node/graph_node.db;; *) db=$d/graph_node_s$n.db;; esac
  v $d/validation_graph_node_s$n $g $db
  v $d/validation_graph_node_s${n}_rev12 $g $db $rev12
  v $d/validation_graph_node_s${n}_pack2 $g $db --sim-param pack_foreign=2
  # the experimental options (off by default): carveout, and carveout with dram_share
  v $d/options/validation_graph_node_s${n}_carveout $g $db --sim-param carveout=1
  v $d/options/validation_graph_node_s${n}_carveout_dram $g $db --sim-param carveout=1 --sim-param dram_share=1
  v $d/options/validation_graph_node_s${n}_dram $g $db --sim-param dram_share=1
done
v $d/rev13/validation_graph_s11 $g $hw/session11/graph_s11.db
v $d/rev13/validation_graph_s12 $g $hw/session12/graph_s12.db
v $d/rev13/validation_graph_s12r3 $g $hw/session12/graph_s12r3.db
v $d/rev13/validation_graph_long_node_s1 $g $hw/session12/node/graph_long_node_s1.db
v $d/validation_graph_long_node_s2 $g $d/graph_long_node_s2.db
v $d/rev13/validation_eager_s11 $ea $hw/session11/eager_s11.db
v $d/rev13/validation_eager_s12 $ea $hw/session12/eager_s12.db
v $d/rev13/validation_eager_s12r3 $ea $hw/session12/eager_s12r3.db
v $d/rev13/validation_eager_4rep $ea $hw/headline_eager.db --sim-param stream_gap_ns=5950
