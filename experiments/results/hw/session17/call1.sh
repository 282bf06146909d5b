#!/bin/sh
# Session 17's first device run: the graph headline spec under tally alone (and the
# alone runs it needs), 8 s after 2 s, seed 5 (as session16/call10.sh), with per-kernel
# records (-k), to see how the training uses the inference's idle time on the H100:
# tally_gaps.py on the device; the database back without the kernels, and a copy
# whose kernels table keeps the first 500 ms of each run (slim_db.py).
# Build: build/dev of the commit that adds this file (carried as build/dev/tally-run.xz).
out=${1:?usage: call1.sh OUTDIR}
hw=experiments/results/hw; d=$hw/session17
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
db=/tmp/tallyk_s5.db; rm -f $db
t0=$(date +%s)
build/dev/tally-run run -s experiments/specs/tally_headline.json -p tally -t 8 -w 2 -r 1 -S 5 -k -q \
  -d $db > $out/tallyk_s5.log 2>&1
echo "rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $out/tallyk_s5.log
python3 $d/tally_gaps.py $db tally 2>&1 | tee $out/tally_gaps_hw.txt
python3 $hw/slim_db.py $db $out/tallyk_s5_500ms.db 500
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('delete from kernels'); c.commit(); c.execute('vacuum')" $db
cp $db $out/tallyk_s5.db
xz -9 -T0 $out/tallyk_s5.db $out/tallyk_s5_500ms.db; ls -l $out
