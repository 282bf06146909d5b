#!/bin/sh
# Every H100 validation of session 16's validate.sh, at model revision 16, with the
# service time compared over the requests that ended inside the measured window
# (tally-validate since session 17: the drain after the window runs without
# training and hid the contention's error), plus this session's runs: the same-seed
# repeat of seed 5 (call2.sh), the tally -k run (call1.sh) and the held-out seed 6
# (call3.sh). Databases unpacked first (xz -dk FILE.db.xz). From the repository root:
#   sh experiments/results/hw/session17/validate.sh [BUILD [OUTDIR]]
# The files in this folder were made at revision 16 (e67fbe9; seed 6's at 799fb17,
# where churn was still off by default); those in rev17/ with OUTDIR rev17 at revision
# 17 (contention churn on).
b=${1:-build}; d=experiments/results/hw/session17; hw=experiments/results/hw; s16=$hw/session16
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
v validation_graph_node_s4 $g $s16/graph_node_s4.db
v validation_graph_node_s5 $g $s16/graph_node_s5.db
v validation_graph_node_s5_rep $g $d/graph_node_s5_rep.db
v validation_graph_node_s6 $g $d/graph_node_s6.db
v validation_tallyk_s5 $g $d/tallyk_s5.db
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
v validation_tgs_s4 $g $s16/tgs_s4.db
