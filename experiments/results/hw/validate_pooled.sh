#!/bin/sh
# The graph headline's H100 runs since the replay's setup fix (session 18), every
# seed pooled in one validation: session 18's seeds 1, 2, 6, 7 and 8, session 19's 9
# and 10, session 21's 11 and 12, session 22's 13 and 14, session 24's 15 and 16,
# session 25's 17, session 26's 18, session 27's 19-21,
# session 28's 22-23, session 29's 24-25 (every policy, 8 s after 2 s; each simulated with
# its own seed and what its database recorded of the replay, the runs matched within
# each; every row is the mean over the 22 runs). Options as validate_all.sh's graph runs; more
# tally-validate options (e.g. --sim-param K=V) apply. Databases unpacked first
# (xz -dk FILE.db.xz). From the repository root:
#   sh experiments/results/hw/validate_pooled.sh BUILD OUTDIR [tally-validate options]
# writes OUTDIR/validation_graph_pooled.md, .csv, .txt and the plot in
# OUTDIR/validation_graph_pooled_plot.
b=${1:?usage: validate_pooled.sh BUILD OUTDIR [options]}; o=${2:?usage: validate_pooled.sh BUILD OUTDIR [options]}
shift 2
hw=experiments/results/hw
mkdir -p "$o"
$b/tally-validate -q -j 2 --sim-param launch_latency_ns=12500 --sim-param callback_launch_latency_ns=1100 \
  "$@" -m "$o/validation_graph_pooled.md" -c "$o/validation_graph_pooled.csv" \
  -P "$o/validation_graph_pooled_plot" -f png experiments/specs/tally_headline.json \
  $hw/session18/graph_node_s1b.db $hw/session18/graph_node_s2b.db $hw/session18/graph_node_s6b.db \
  $hw/session18/graph_node_s7.db $hw/session18/graph_node_s8.db \
  $hw/session19/graph_node_s9.db $hw/session19/graph_node_s10.db \
  $hw/session21/call3/graph_node_s11.db $hw/session21/call4/graph_node_s12.db \
  $hw/session22/call1/graph_node_s13.db $hw/session22/call2/graph_node_s14.db \
  $hw/session24/call1/graph_node_s15.db $hw/session24/call4/graph_node_s16.db \
  $hw/session25/call1/graph_node_s17.db $hw/session26/call1/graph_node_s18.db \
  $hw/session27/call1/graph_node_s19.db $hw/session27/call2/graph_node_s20.db \
  $hw/session27/call2/graph_node_s21.db \
  $hw/session28/call1/graph_node_s22.db $hw/session28/call1/graph_node_s23.db \
  $hw/session29/call1/graph_node_s24.db $hw/session29/call1/graph_node_s25.db \
  > "$o/validation_graph_pooled.txt"
