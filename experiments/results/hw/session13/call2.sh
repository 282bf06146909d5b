#!/bin/sh
# Session 13's third device call (the second was the placement probe,
# ../placement/README.md): tally-run crowding, the synthetic kernels' block
# times at 1..occupancy blocks an SM, and the fit of the simulator's crowding
# rule (crowding, crowding_memory). Build: build/dev of the commit that adds this file.
out=${1:?usage: call2.sh OUTDIR}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
build/dev/tally-run crowding --csv $out/crowding.csv > $out/crowding.txt 2>&1; echo "crowding rc=$?"
cat $out/crowding.txt
