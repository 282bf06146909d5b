#!/bin/sh
# Session 11's sixth device call: where MobileNetV3's slowest requests lose their
# time on the H100 (the multi-millisecond stalls behind its p99, README.md): the
# job alone and under priority streams (one job), graphs, 15 s after 1 s, with
# per-kernel records, broken down by ../stall_diag.py; nvidia-smi samples the SM
# clock, power and clock-event reasons every 100 ms meanwhile (smi.csv).
# Build: build/dev of the commit that adds this file.
out=${1:?usage: call6.sh OUTDIR}
hw=experiments/results/hw
H=traces/bundled/h100
M="name=mobilenet-b1,trace=$H/mobilenetv3_infer_b1.json.gz,role=inference,load=0.5,model_mb=50,graph=1"
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
f=clocks_event_reasons.active
nvidia-smi --help-query-gpu | grep -q "$f" || f=clocks_throttle_reasons.active
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,$f --format=csv -lms 100 > $out/smi.csv 2>&1 &
smi=$!
rm -f /tmp/st.db
build/dev/tally-run run -J "$M" -p priority-streams -t 15 -w 1 -S 1 -k -q -d /tmp/st.db > $out/run.log 2>&1
echo "rc=$?"; kill $smi
grep -E "^[a-z-]+ +- +0 " $out/run.log
python3 $hw/stall_diag.py /tmp/st.db 15 | tee $out/stall_diag.txt
echo "clock samples:"; cut -d, -f2 $out/smi.csv | sort | uniq -c | sort -rn | head
cut -d, -f6 $out/smi.csv | sort | uniq -c | sort -rn | head
