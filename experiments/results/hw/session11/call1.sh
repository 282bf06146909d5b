#!/bin/sh
# Session 11's first device call.
# A: session 10's prepared test (../session10/next/call.sh): which part of tally
#    lengthens MobileNetV3's in-graph gaps when it runs alone.
# B: the eager headline spec under priority-streams and tgs, 4 s after 1 s, one
#    repetition, to read the launch lag and idle-stream start latency that
#    tally-run records since session 10 (cuda_launch_lag_*, cuda_start_latency_*)
#    and to run session 10's backend refactors (5197e47) on the GPU.
# Build (here, then carry build/dev/tally-run):
#   git apply experiments/results/hw/session10/next/tally_hp_plain.patch
#   make BUILD=build/dev TALLY_STATIC_DEPS=1 build/dev/tally-run; git checkout policies/tally.c
# Without its environment variables the patched build is tally as committed.
out=${1:?usage: call1.sh OUTDIR}
hw=experiments/results/hw
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
mkdir -p $out/next
sh $hw/session10/next/call.sh $out/next
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
build/dev/tally-run run -s experiments/specs/tally_headline_eager.json -p priority-streams -p tgs \
  -t 4 -w 1 -r 1 -q -d $out/eager_lat.db > $out/eager_lat.log 2>&1
echo "eager rc=$?"; grep -E "^[a-z-]+ +- +0 " $out/eager_lat.log
sqlite3 -header $out/eager_lat.db "select r.run_id, r.policy, m.name, m.value from metrics m join runs r using(run_id) where m.name like 'cuda_%lag%' or m.name like 'cuda_start%' or m.name like 'cuda_clock%' order by 1,3" 2>&1 || \
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print(*r) for r in c.execute(\"select run_id,name,value from metrics where name like 'cuda_%lag%' or name like 'cuda_start%' or name like 'cuda_clock%' order by 1,2\")]" $out/eager_lat.db
