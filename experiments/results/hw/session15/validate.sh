#!/bin/sh
# Session 15's validations: the MPS clients' turns (mps_order 1, a trial, off by
# default) alone and with the measured carveout rule (carveout 2), against every
# graph run on the H100 with the driver's carveouts (node-calibrated seeds 1-3 of
# sessions 12-13, launch-calibrated s11 and s12 of sessions 11-12), the one-carveout
# runs of session 14 (call3, call5) and the eager runs s11/s12 (no regression).
# The defaults' validations of the same runs are the committed ones of sessions
# 13-14 (session14/rankings/, session14/validation_carve100*). Databases unpacked first
# (xz -dk FILE.db.xz). Kept: turns_carveout2/*.md; every .csv and turns/*.md are
# packed in validation_csv.tar.xz (tar xJf; the device tool's 64 MiB). From the
# repository root:
#   sh experiments/results/hw/session15/validate.sh [BUILD]
b=${1:-build}; d=experiments/results/hw/session15; hw=experiments/results/hw
g=experiments/specs/tally_headline.json; ea=experiments/specs/tally_headline_eager.json
v() { # OUT SPEC DB [extra tally-validate options]
  o=$1; sp=$2; db=$3; shift 3
  $b/tally-validate -q -j 1 --sim-param launch_latency_ns=12500 --sim-param callback_launch_latency_ns=1100 \
    "$@" -m $o.md -c $o.csv $sp $db > /dev/null || echo "validate $o failed" >&2
}
for opt in turns turns_carveout2; do
  case $opt in turns) set -- --sim-param mps_order=1;; *) set -- --sim-param mps_order=1 --sim-param carveout=2;; esac
  mkdir -p $d/$opt
  v $d/$opt/validation_graph_node_s1 $g $hw/session12/node/graph_node.db "$@"
  v $d/$opt/validation_graph_node_s2 $g $hw/session13/graph_node_s2.db "$@"
  v $d/$opt/validation_graph_node_s3 $g $hw/session13/graph_node_s3.db "$@"
  v $d/$opt/validation_graph_s11 $g $hw/session11/graph_s11.db "$@"
  v $d/$opt/validation_graph_s12 $g $hw/session12/graph_s12.db "$@"
  v $d/$opt/validation_carve100 $g $hw/session14/call3/carve100_100ms.db "$@"
  v $d/$opt/validation_carve100_s2 $g $hw/session14/call5/carve100_s2.db "$@"
  v $d/$opt/validation_eager_s11 $ea $hw/session11/eager_s11.db "$@"
  v $d/$opt/validation_eager_s12 $ea $hw/session12/eager_s12.db "$@"
done
