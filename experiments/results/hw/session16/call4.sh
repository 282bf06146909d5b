#!/bin/sh
# Session 16's fifth device run: call3.sh's pair (ResNet-50 b8 beside ResNet-50
# training under tgs, 4 s after 1 s, seed 4, -k, the controller's window log) with the
# context workers polling for 20 ms after their last work before they sleep
# (TALLY_WORKER_SPIN_US, the new default) and, taking turns, with 0 (they sleep at
# once, as before): does the 41 us the H100's requests lost to a sleeping worker go,
# and does TGS's controller read fewer drops? The databases stay on the device; what
# comes back is graph_diag.py's and tgs_windows.py's output and their CSVs.
# Build: c3c2107 (the spin was reverted after this run: it made no difference), carried as build/dev/tally-run.xz.
out=${1:?usage: call4.sh OUTDIR}
hw=experiments/results/hw; H=traces/bundled/h100; d=$hw/session16
[ -x build/dev/tally-run ] || xz -dk build/dev/tally-run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
for spin in 20000 0 20000b 0b; do
  db=/tmp/spin_$spin.db; rm -f $db $out/tgs_spin_$spin.csv
  TALLY_WORKER_SPIN_US=${spin%b} TALLY_TGS_LOG=$out/tgs_spin_$spin.csv build/dev/tally-run run \
    -J "name=resnet50-b8,trace=$H/resnet50_infer_b8.json.gz,role=inference,load=0.5,model_mb=50,graph=1" \
    -J "name=resnet50-train,trace=$H/resnet50_train_b32_steps.json.gz,role=training,model_mb=100,graph=1" \
    -p tgs -t 4 -w 1 -S 4 -k -q -d $db > $out/spin_$spin.log 2>&1
  echo "spin $spin rc=$?"; grep -E "^(tgs|alone) " $out/spin_$spin.log
  python3 $hw/graph_diag.py $db > $out/graph_diag_spin_$spin.txt 2>&1; cat $out/graph_diag_spin_$spin.txt
  python3 $d/tgs_windows.py $db 3 $out/tgs_spin_$spin.csv "H100 spin $spin" $out/spin_$spin > $out/tgs_windows_spin_$spin.txt 2>&1
  cat $out/tgs_windows_spin_$spin.txt
done
cd $out && tar cJf spin.tar.xz *.csv *.txt *.log && rm -f *.csv *.txt *.log; ls -la
