#!/bin/sh
# Validations of the node-calibrated graph runs (call4.sh: graph_node, 8 s, every
# policy, seed 1; call5.sh: graph_long_node_s1, 30 s, tally and tgs) at model
# revision 12, with the parameters of the session's other validations; and the
# 8 s run at revision 11 (mps_client_priority=1) for comparison. Databases
# unpacked first (xz -dk). From the repository root:
#   sh experiments/results/hw/session12/node/validate.sh [BUILD]
b=${1:-build}; d=experiments/results/hw/session12/node; g=experiments/specs/tally_headline.json
v() { # NAME DB [extra tally-validate options]
  n=$1; db=$2; shift 2
  $b/tally-validate -q -j 1 --sim-param launch_latency_ns=12500 --sim-param callback_launch_latency_ns=1100 \
    "$@" -m $d/validation_$n.md -c $d/validation_$n.csv $g $db > /dev/null || echo "validate $n failed" >&2
}
v graph_node $d/graph_node.db
v graph_long_node_s1 $d/graph_long_node_s1.db
v graph_node_rev11 $d/graph_node.db --sim-param mps_client_priority=1
