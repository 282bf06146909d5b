#!/bin/sh
# Prepared in session 10, not run yet (the session's device time was spent):
# which part of tally lengthens MobileNetV3's in-graph gaps when it is the only
# job (../README.md, "Tally's longer MobileNetV3 gaps need no training job").
# Build (here, then carry build/dev/tally-run):
#   git apply experiments/results/hw/session10/next/tally_hp_plain.patch
#   make BUILD=build/dev TALLY_STATIC_DEPS=1 build/dev/tally-run; git checkout policies/tally.c
# Without its environment variables the patched build is tally as committed.
# Each run: MobileNetV3 alone, graphs, 2 s after 1 s, per-kernel records; then
# graph_diag.py (median request: lead, busy, gaps). Expected from session 10:
# priority-streams ~238 us of gaps a request, tally ~293.
out=${1:?usage: call.sh OUTDIR}
hw=experiments/results/hw
H=traces/bundled/h100
M="name=mobilenet-b1,trace=$H/mobilenetv3_infer_b1.json.gz,role=inference,load=0.5,model_mb=50,graph=1"
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
run() { # name policy [env...]
  n=$1; p=$2; shift 2
  rm -f /tmp/n_$n.db
  env "$@" build/dev/tally-run run -J "$M" -p $p -t 2 -w 1 -S 1 -k -q -d /tmp/n_$n.db > $out/$n.log 2>&1
  echo "== $n rc=$?"; python3 $hw/graph_diag.py /tmp/n_$n.db | tee $out/$n.diag
}
run prio priority-streams X=1
run tally tally X=1
run tally_plain tally TALLY_DEBUG_HP=plain
run tally_nohook tally TALLY_DEBUG_HP=nohook
run tally_noarrived tally TALLY_DEBUG_ARRIVED=off
run tally_plain_noarrived tally TALLY_DEBUG_HP=plain TALLY_DEBUG_ARRIVED=off
