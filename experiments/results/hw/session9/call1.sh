#!/bin/sh
# Builds (here, then carried): each build/devN is `git apply PATCH; make
# BUILD=build/devN TALLY_STATIC_DEPS=1 build/devN/tally-run; git checkout backend/`
# at bd9e83a (dev: no patch, dev1: tally_gap/session9/single_kernels.patch,
# dev2: graph_launch/session9/node_exit_cost.patch, dev3: tally_gap/session9/
# smem_split.patch, dev4: tally_gap/session9/slot_shuffle.patch).
# Session 9's device call: the three A/B tests prepared in session 8.
#   a: build/dev (HEAD), b: build/dev1 (tally_gap/single_kernels.patch),
#   c: build/dev2 (graph_launch/session9/node_exit_cost.patch); contention_shapes probe.
out=${1:?usage: session9_ab.sh OUTDIR}
hw=experiments/results/hw
h=traces/bundled/h100
mkdir -p "$out/a" "$out/b" "$out/c" "$out/shapes"
echo "== $(date +%T) contention_shapes"
(cd $hw/contention_shapes && nvcc -O2 -arch=sm_90 -o /tmp/cs contention_shapes.cu && /tmp/cs) > "$out/shapes/hw.txt" 2>&1
cat "$out/shapes/hw.txt"
echo "== $(date +%T) tally-gap A (HEAD)"
sh $hw/run_device.sh "$out/a" tally-gap > "$out/a/run.log" 2>&1
python3 - /tmp/tally_gap.db >> "$out/a/run.log" 2>&1 <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("run_metrics rows (job -1):")
for r in db.execute("select run_id, name, value from metrics where job_id=-1 order by run_id, name"):
    print(*r)
PY
echo "== $(date +%T) tally-gap B (single kernels plain)"
B=build/dev1/tally-run sh $hw/run_device.sh "$out/b" tally-gap > "$out/b/run.log" 2>&1
for x in a c; do
  case $x in a) bin=build/dev/tally-run;; c) bin=build/dev2/tally-run;; esac
  echo "== $(date +%T) training + mobilenet alone, graph, build $x"
  export TALLY_CALIB_DB=/tmp/calib_$x.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
  rm -f /tmp/alone_$x.db
  $bin run -J "name=resnet50-train,trace=$h/resnet50_train_b32_steps.json.gz,role=training,model_mb=100,graph=1" \
      -p priority-streams -t 2 -w 1 -S 1 -k -q -d /tmp/alone_$x.db > "$out/$x/alone.log" 2>&1
  $bin run -J "name=resnet50-b8,trace=$h/resnet50_infer_b8.json.gz,role=inference,load=0.5,model_mb=50,graph=1" \
      -p priority-streams -t 2 -w 1 -S 1 -k -q -d /tmp/alone_$x.db >> "$out/$x/alone.log" 2>&1
  python3 $hw/graph_diag.py /tmp/alone_$x.db >> "$out/$x/alone.log" 2>&1
  python3 $hw/slim_db.py /tmp/alone_$x.db /tmp/alone_${x}_slim.db 400 && gzip -c /tmp/alone_${x}_slim.db > "$out/$x/alone_slim.db.gz"
  tail -30 "$out/$x/alone.log"
done
echo "== $(date +%T) done"
