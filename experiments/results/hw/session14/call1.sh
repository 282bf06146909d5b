#!/bin/sh
# Session 14's first device call. (1) The graph headline spec under
# priority-streams and mps, and every job alone, 3 s after 1 s, seed 1, with
# per-kernel records (-k), graph jobs node-calibrated: each training and
# inference kernel's time on the H100 beside the other job, against the
# simulator's (perkernel.py). The database is cut to each run's first 300 ms of
# kernels (slim_db.py) so that it comes back. (2) The MPS placement probe
# (../placement_mps/run.sh): is an inference-like kernel of another carveout
# placed the same way when the two jobs are MPS clients, not streams of one
# context?
# Build: build/dev of the commit that adds this file.
out=${1:?usage: call1.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$(date +%s)
timeout 240 build/dev/tally-run run -s experiments/specs/tally_headline.json -t 3 -w 1 -r 1 -S 1 \
  -p priority-streams -p mps -k -q -d /tmp/pk.db > $out/perkernel.log 2>&1
echo "perkernel rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $out/perkernel.log
python3 $hw/slim_db.py /tmp/pk.db $out/perkernel_slim.db 300 && xz -9 $out/perkernel_slim.db
ls -la $out
t0=$(date +%s)
mkdir -p $out/placement_mps
timeout 270 sh $hw/placement_mps/run.sh $out/placement_mps > /tmp/placement_mps.log 2>&1
echo "placement_mps rc=$? in $(( $(date +%s) - t0 )) s"; tail -40 /tmp/placement_mps.log
