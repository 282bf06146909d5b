#!/bin/sh
# validate_pooled.sh, for a chosen subset of the graph headline's H100 databases.
# From the repository root:
#   sh experiments/results/hw/session28/search/pooled_subset.sh BUILD OUTDIR SET [tally-validate options]
# SET: fit | held | all, or a quoted list of .db paths. Same options as
# validate_pooled.sh (launch_latency_ns=12500, callback_launch_latency_ns=1100, -j 2),
# no plot. Writes OUTDIR/validation_graph_pooled.md, .csv, .txt.
b=${1:?usage: pooled_subset.sh BUILD OUTDIR SET [options]}; o=${2:?usage}; set_=${3:?usage}
shift 3
hw=experiments/results/hw
FIT="$hw/session18/graph_node_s1b.db $hw/session18/graph_node_s6b.db $hw/session18/graph_node_s8.db \
 $hw/session19/graph_node_s10.db $hw/session21/call4/graph_node_s12.db $hw/session22/call2/graph_node_s14.db \
 $hw/session24/call4/graph_node_s16.db $hw/session26/call1/graph_node_s18.db $hw/session27/call2/graph_node_s20.db"
HELD="$hw/session18/graph_node_s2b.db $hw/session18/graph_node_s7.db $hw/session19/graph_node_s9.db \
 $hw/session21/call3/graph_node_s11.db $hw/session22/call1/graph_node_s13.db $hw/session24/call1/graph_node_s15.db \
 $hw/session25/call1/graph_node_s17.db $hw/session27/call1/graph_node_s19.db $hw/session27/call2/graph_node_s21.db"
case "$set_" in
  fit) dbs=$FIT ;;
  held) dbs=$HELD ;;
  all) dbs="$FIT $HELD" ;;
  *) dbs=$set_ ;;
esac
mkdir -p "$o"
$b/tally-validate -q -j 2 --sim-param launch_latency_ns=12500 --sim-param callback_launch_latency_ns=1100 \
  "$@" -m "$o/validation_graph_pooled.md" -c "$o/validation_graph_pooled.csv" \
  experiments/specs/tally_headline.json $dbs > "$o/validation_graph_pooled.txt"
