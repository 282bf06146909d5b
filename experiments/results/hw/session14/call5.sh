#!/bin/sh
# Session 14's fifth device call: the graph headline spec with every synthetic
# kernel preferring one shared-memory carveout (TALLY_SYNTH_CARVEOUT=100), so
# that SMs hold blocks of any two kernels together, as the simulator assumes
# with its carveout rule off: every job alone and the pairs under
# priority-streams, mps and time-slicing, 8 s after 2 s, seed 2, node-calibrated, without
# per-kernel records: a second repetition of call 3. Set against the
# simulator with carveout 0 (the default), this separates the carveout rule's
# part in the validation's misses from the contention model's.
# Build: build/dev of the commit that adds this file (carried as build/dev/tally-run.xz).
out=${1:?usage: call5.sh OUTDIR}
[ -f build/dev/tally-run.xz ] && xz -dkf build/dev/tally-run.xz
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$(date +%s)
TALLY_SYNTH_CARVEOUT=100 timeout 420 build/dev/tally-run run -s experiments/specs/tally_headline.json \
  -t 8 -w 2 -r 1 -S 2 -p priority-streams -p mps -p time-slicing -q -d $out/carve100_s2.db > $out/carve100_s2.log 2>&1
echo "carve100_s2 rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $out/carve100_s2.log
python3 - $out/carve100_s2.db <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print("meta:", c.execute("select key, value from meta").fetchall())
c.execute("pragma wal_checkpoint(truncate)"); c.execute("vacuum"); c.close()
PY
xz -9 $out/carve100_s2.db
ls -la $out
