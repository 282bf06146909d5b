#!/bin/sh
# Session 14's second device call: what slows kernels on disjoint SMs (the
# lead of call 1: beside ViT-B/16 every kernel of both jobs is slower on the
# H100 than the simulator has it, compute kernels too). (1) The GPU's SM clock,
# power and throttle reasons every 100 ms (nvidia-smi) while the graph headline
# spec runs every job alone and the pairs under priority-streams, mps and
# time-slicing, 3 s after 1 s, seed 1, node-calibrated (smi.csv; the runs'
# start times are in clocks.db's runs.created, their lengths in wall_s).
# (2) ../bandwidth2/run.sh: kernels on disjoint SMs, streaming and FMA victims
# beside streaming, FMA, L2 and idle neighbours, with the clocks logged too;
# twice, the victim launched at once and 2 ms after its neighbour (lead_us),
# packed as bandwidth2.tar.gz.
# Build: build/dev of the commit that adds this file.
out=${1:?usage: call2.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,enforced.power.limit --format=csv,noheader
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 100 > $out/smi.csv 2>&1 &
smi=$!
trap 'kill $smi 2>/dev/null' EXIT
t0=$(date +%s)
timeout 200 build/dev/tally-run run -s experiments/specs/tally_headline.json -t 3 -w 1 -r 1 -S 1 \
  -p priority-streams -p mps -p time-slicing -q -d $out/clocks.db > $out/clocks.log 2>&1
echo "clocks rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $out/clocks.log
python3 - $out/clocks.db <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for r in c.execute("select run_id, policy, created, wall_s from runs"): print(*r)
c.execute("pragma wal_checkpoint(truncate)"); c.close()
PY
kill $smi 2>/dev/null
for lead in 0 2000; do
  timeout 150 sh $hw/bandwidth2/run.sh /tmp/bw2_lead$lead lead_us=$lead > /tmp/bandwidth2_$lead.log 2>&1
  echo "bandwidth2 lead_us=$lead rc=$?"; grep -v "^ *#" /tmp/bw2_lead$lead/summary.txt | head -60
done
tar czf $out/bandwidth2.tar.gz -C /tmp bw2_lead0 bw2_lead2000 bandwidth2_0.log bandwidth2_2000.log
ls -la $out
