#!/bin/sh
# The session's 8 s hardware runs of both headline specs (seeds 1-3; launch-
# calibrated graph jobs) validated at model revision 12 (MPS client priority
# ignored on the H100), parameters as ../validate.sh. Databases unpacked first
# (xz -dk). From the repository root: sh experiments/results/hw/session12/rev12/validate.sh [BUILD]
b=${1:-build}; d=experiments/results/hw/session12/rev12; s12=experiments/results/hw/session12
s11=experiments/results/hw/session11
v() { # NAME SPEC DB
  $b/tally-validate -q -j 1 --sim-param launch_latency_ns=12500 --sim-param callback_launch_latency_ns=1100 \
    -m $d/validation_$1.md -c $d/validation_$1.csv $2 $3 > /dev/null || echo "validate $1 failed" >&2
}
g=experiments/specs/tally_headline.json; ea=experiments/specs/tally_headline_eager.json
v eager_s11 $ea $s11/eager_s11.db
v eager_s12 $ea $s12/eager_s12.db
v eager_s12r3 $ea $s12/eager_s12r3.db
v graph_s11 $g $s11/graph_s11.db
v graph_s12 $g $s12/graph_s12.db
v graph_s12r3 $g $s12/graph_s12r3.db
# the eager headline's four repetitions of sessions 4-6 (../../headline_eager.db.xz,
# unpacked; made before the context reset, eager jobs only), with the command of
# ../../validation_eager.md, at revision 12
$b/tally-validate -q -j 1 --sim-param stream_gap_ns=5950 --sim-param launch_latency_ns=12500 \
  --sim-param callback_launch_latency_ns=1100 -m $d/validation_eager_4rep.md -c $d/validation_eager_4rep.csv \
  $ea experiments/results/hw/headline_eager.db > /dev/null || echo "validate eager_4rep failed" >&2
