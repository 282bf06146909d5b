#!/bin/sh
# Every H100 validation of both headline specs, at the current defaults, into OUTDIR
# (one validation_NAME.md and .csv per hardware database): the node-calibrated graph
# runs (seeds 1-6 and the seed-5 repeat, every policy, 8 s; session 18's seeds 1, 2, 6-8 and session 19's seeds 9-10 and session 21's seeds 11-12, session 22's 13-14, session 24's 15-16, session 25's 17, session 26's 18 and session 27's 19-21, session 28's 22-23, session 29's 24-25, with
# the run's time 0 after the setup), the tally -k run, the
# launch-calibrated ones (s11, s12, s12r3), the one-carveout runs of session 14
# (simulated with carveout 0 from their meta hw_synth_carveout), the 30 s tally/tgs
# runs (node seeds 1-2), the eager runs (s11, s12, s12r3, the four repetitions of
# headline_eager.db) and session 16's tgs run, with the parameters of the earlier
# sessions' validations. Further tally-validate options (e.g. --sim-param K=V) apply to
# every one. Databases unpacked first (xz -dk FILE.db.xz). From the repository root:
#   sh experiments/results/hw/validate_all.sh BUILD OUTDIR [tally-validate options]
b=${1:?usage: validate_all.sh BUILD OUTDIR [options]}; o=${2:?usage: validate_all.sh BUILD OUTDIR [options]}
shift 2
hw=experiments/results/hw; s16=$hw/session16; s17=$hw/session17
mkdir -p "$o"
g=experiments/specs/tally_headline.json; ea=experiments/specs/tally_headline_eager.json
v() { # OUT SPEC DB [extra tally-validate options]
  f=$1; sp=$2; db=$3; shift 3
  $b/tally-validate -q -j 2 --sim-param launch_latency_ns=12500 --sim-param callback_launch_latency_ns=1100 \
    "$@" -m $o/$f.md -c $o/$f.csv $sp $db > /dev/null || echo "validate $o/$f failed" >&2
}
v validation_graph_node_s1 $g $hw/session12/node/graph_node.db "$@"
v validation_graph_node_s2 $g $hw/session13/graph_node_s2.db "$@"
v validation_graph_node_s3 $g $hw/session13/graph_node_s3.db "$@"
v validation_graph_node_s4 $g $s16/graph_node_s4.db "$@"
v validation_graph_node_s5 $g $s16/graph_node_s5.db "$@"
v validation_graph_node_s5_rep $g $s17/graph_node_s5_rep.db "$@"
v validation_graph_node_s6 $g $s17/graph_node_s6.db "$@"
v validation_graph_node_s1b $g $hw/session18/graph_node_s1b.db "$@"
v validation_graph_node_s2b $g $hw/session18/graph_node_s2b.db "$@"
v validation_graph_node_s6b $g $hw/session18/graph_node_s6b.db "$@"
v validation_graph_node_s7 $g $hw/session18/graph_node_s7.db "$@"
v validation_graph_node_s8 $g $hw/session18/graph_node_s8.db "$@"
v validation_graph_node_s9 $g $hw/session19/graph_node_s9.db "$@"
v validation_graph_node_s10 $g $hw/session19/graph_node_s10.db "$@"
v validation_graph_node_s11 $g $hw/session21/call3/graph_node_s11.db "$@"
v validation_graph_node_s12 $g $hw/session21/call4/graph_node_s12.db "$@"
v validation_graph_node_s13 $g $hw/session22/call1/graph_node_s13.db "$@"
v validation_graph_node_s14 $g $hw/session22/call2/graph_node_s14.db "$@"
v validation_graph_node_s15 $g $hw/session24/call1/graph_node_s15.db "$@"
v validation_graph_node_s16 $g $hw/session24/call4/graph_node_s16.db "$@"
v validation_graph_node_s17 $g $hw/session25/call1/graph_node_s17.db "$@"
v validation_graph_node_s18 $g $hw/session26/call1/graph_node_s18.db "$@"
v validation_graph_node_s19 $g $hw/session27/call1/graph_node_s19.db "$@"
v validation_graph_node_s20 $g $hw/session27/call2/graph_node_s20.db "$@"
v validation_graph_node_s21 $g $hw/session27/call2/graph_node_s21.db "$@"
v validation_graph_node_s22 $g $hw/session28/call1/graph_node_s22.db "$@"
v validation_graph_node_s23 $g $hw/session28/call1/graph_node_s23.db "$@"
v validation_graph_node_s24 $g $hw/session29/call1/graph_node_s24.db "$@"
v validation_graph_node_s25 $g $hw/session29/call1/graph_node_s25.db "$@"
v validation_tallyk_s5 $g $s17/tallyk_s5.db "$@"
v validation_graph_s11 $g $hw/session11/graph_s11.db "$@"
v validation_graph_s12 $g $hw/session12/graph_s12.db "$@"
v validation_graph_s12r3 $g $hw/session12/graph_s12r3.db "$@"
v validation_carve100 $g $hw/session14/call3/carve100_100ms.db "$@"
v validation_carve100_s2 $g $hw/session14/call5/carve100_s2.db "$@"
v validation_graph_long_node_s1 $g $hw/session12/node/graph_long_node_s1.db "$@"
v validation_graph_long_node_s2 $g $hw/session13/graph_long_node_s2.db "$@"
v validation_eager_s11 $ea $hw/session11/eager_s11.db "$@"
v validation_eager_s12 $ea $hw/session12/eager_s12.db "$@"
v validation_eager_s12r3 $ea $hw/session12/eager_s12r3.db "$@"
v validation_eager_4rep $ea $hw/headline_eager.db --sim-param stream_gap_ns=5950 "$@"
v validation_tgs_s4 $g $s16/tgs_s4.db "$@"
