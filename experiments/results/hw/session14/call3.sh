#!/bin/sh
# Session 14's third device call: the graph headline spec with every synthetic
# kernel preferring one shared-memory carveout (TALLY_SYNTH_CARVEOUT=100), so
# that SMs hold blocks of any two kernels together, as the simulator assumes
# with its carveout rule off: every job alone and the pairs under
# priority-streams, mps and time-slicing, 8 s after 2 s, seed 1, node-calibrated,
# with per-kernel records cut to each run's first 300 ms. Set against the
# simulator with carveout 0 (the default), this separates the carveout rule's
# part in the validation's misses from the contention model's.
# Build: build/dev of the commit that adds this file.
out=${1:?usage: call3.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$(date +%s)
TALLY_SYNTH_CARVEOUT=100 timeout 420 build/dev/tally-run run -s experiments/specs/tally_headline.json \
  -t 8 -w 2 -r 1 -S 1 -p priority-streams -p mps -p time-slicing -k -q -d /tmp/c100.db > $out/carve100.log 2>&1
echo "carve100 rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $out/carve100.log
python3 $hw/slim_db.py /tmp/c100.db $out/carve100_slim.db 300 && xz -9 $out/carve100_slim.db
python3 - $out/carve100_slim.db.xz <<'PY'
import lzma, sqlite3, sys, tempfile
with tempfile.NamedTemporaryFile(suffix='.db') as t:
    t.write(lzma.open(sys.argv[1]).read()); t.flush()
    c = sqlite3.connect(t.name)
    print("meta:", c.execute("select key, value from meta").fetchall())
PY
ls -la $out
