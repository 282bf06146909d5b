#!/bin/sh
# Validations at model revision 14 (carveout 2 and mps_order 1 on the H100, the
# defaults; no option given) of every H100 run of both headline specs: the
# node-calibrated graph runs (seeds 1-3 and the held-out seed 4 of call1.sh, every policy, 8 s), the launch-calibrated
# ones (s11, s12, s12r3), the one-carveout runs of session 14 (TALLY_SYNTH_CARVEOUT=100,
# simulated with carveout 0 from their meta hw_synth_carveout), the 30 s tally/tgs
# runs (node-calibrated seeds 1-2) and the eager runs (s11, s12, s12r3, the four
# repetitions of headline_eager.db), with the parameters of the earlier sessions'
# validations. Databases unpacked first (xz -dk FILE.db.xz). From the repository root:
#   sh experiments/results/hw/session16/validate.sh [BUILD [OUTDIR]]
# The files in this folder were made at revision 14 (eb79348); those in rev15/ with
# OUTDIR rev15 at revision 15 (1d1e883, slice_restart on), those in rev16/ at revision
# 16 (8b47a36, slice_overtime on). Also the tgs run of call2.sh.
b=${1:-build}; d=experiments/results/hw/session16; hw=experiments/results/hw
o=$d/${2:-.}; mkdir -p $o
g=experiments/specs/tally_headline.json; ea=experiments/specs/tally_headline_eager.json
v() { # OUT SPEC DB [extra tally-validate options]
  f=$1; sp=$2; db=$3; shift 3
  $b/tally-validate -q -j 2 --sim-param launch_latency_ns=12500 --sim-param callback_launch_latency_ns=1100 \
    "$@" -m $o/$f.md -c $o/$f.csv $sp $db > /dev/null || echo "validate $o/$f failed" >&2
}
v validation_graph_node_s1 $g $hw/session12/node/graph_node.db
v validation_graph_node_s2 $g $hw/session13/graph_node_s2.db
v validation_graph_node_s3 $g $hw/session13/graph_node_s3.db
v validation_graph_node_s4 $g $d/graph_node_s4.db
v validation_graph_node_s5 $g $d/graph_node_s5.db
v validation_graph_s11 $g $hw/session11/graph_s11.db
v validation_graph_s12 $g $hw/session12/graph_s12.db
v validation_graph_s12r3 $g $hw/session12/graph_s12r3.db
v validation_carve100 $g $hw/session14/call3/carve100_100ms.db
v validation_carve100_s2 $g $hw/session14/call5/carve100_s2.db
v validation_graph_long_node_s1 $g $hw/session12/node/graph_long_node_s1.db
v validation_graph_long_node_s2 $g $hw/session13/graph_long_node_s2.db
v validation_eager_s11 $ea $hw/session11/eager_s11.db
v validation_eager_s12 $ea $hw/session12/eager_s12.db
v validation_eager_s12r3 $ea $hw/session12/eager_s12r3.db
v validation_eager_4rep $ea $hw/headline_eager.db --sim-param stream_gap_ns=5950
v validation_tgs_s4 $g $d/tgs_s4.db
