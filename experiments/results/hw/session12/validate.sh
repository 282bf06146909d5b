#!/bin/sh
# Session 12's validations at model revision 11 (contention.partial_starve on by
# default), of the headline specs' 8 s runs at every policy (session11 call3/call9:
# seed 1; call1 here: seed 2) and the 30 s tally/tgs runs (call2 here: seeds 4, 5),
# with the parameters of the earlier validations. The hardware databases unpacked
# first (xz -dk). Run from the repository root: sh experiments/results/hw/session12/validate.sh [BUILD]
b=${1:-build}; d=experiments/results/hw/session12; e=experiments/results/hw/session11
v() { # NAME SPEC DB [extra tally-validate options]
  n=$1; s=$2; db=$3; shift 3
  $b/tally-validate -q -j 1 --sim-param launch_latency_ns=12500 --sim-param callback_launch_latency_ns=1100 \
    "$@" -m $d/validation_$n.md -c $d/validation_$n.csv $s $db > /dev/null || echo "validate $n failed" >&2
}
g=experiments/specs/tally_headline.json; ea=experiments/specs/tally_headline_eager.json
v graph_s11 $g $e/graph_s11.db
v graph_s12 $g $d/graph_s12.db
v eager_s11 $ea $e/eager_s11.db
v eager_s12 $ea $d/eager_s12.db
v graph_long_s4 $g $d/graph_long_s4.db
v graph_long_s5 $g $d/graph_long_s5.db
# revision 10 (partial_starve off) on the seed-2 runs, for the comparison in README.md
v graph_s12_rev10 $g $d/graph_s12.db --sim-param contention.partial_starve=0
v eager_s12_rev10 $ea $d/eager_s12.db --sim-param contention.partial_starve=0
# the third repetition (call3.sh, seed 3; held out from the revision 11 decision),
# at revision 11 and at revision 10
v graph_s12r3 $g $d/graph_s12r3.db
v eager_s12r3 $ea $d/eager_s12r3.db
v graph_s12r3_rev10 $g $d/graph_s12r3.db --sim-param contention.partial_starve=0
v eager_s12r3_rev10 $ea $d/eager_s12r3.db --sim-param contention.partial_starve=0
