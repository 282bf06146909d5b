#!/bin/sh
# Builds (here, then carried): each build/devN is `git apply PATCH; make
# BUILD=build/devN TALLY_STATIC_DEPS=1 build/devN/tally-run; git checkout backend/`
# at bd9e83a (dev: no patch, dev1: tally_gap/session9/single_kernels.patch,
# dev2: graph_launch/session9/node_exit_cost.patch, dev3: tally_gap/session9/
# smem_split.patch, dev4: tally_gap/session9/slot_shuffle.patch).
# Session 9's second device call: contention_shapes v2 (per-block times),
# build/dev3 (kernels of > 48 KB dynamic shared memory as separate functions)
# on tally_gap/spec.json and the selftest, and the node_exit_cost build's
# (build/dev2) alone runs again with their per-kernel records.
out=${1:?usage: session9_b.sh OUTDIR}
hw=experiments/results/hw
h=traces/bundled/h100
mkdir -p /tmp/o9/d /tmp/o9/c /tmp/o9/shapes
echo "== $(date +%T) contention_shapes v2"
(cd $hw/contention_shapes && nvcc -O2 -arch=sm_90 -o /tmp/cs contention_shapes.cu && /tmp/cs) > /tmp/o9/shapes/hw.txt 2>&1
cat /tmp/o9/shapes/hw.txt
echo "== $(date +%T) tally-gap with build/dev3"
B=build/dev3/tally-run sh $hw/run_device.sh /tmp/o9/d tally-gap > /tmp/o9/d/run.log 2>&1
grep -v "^tally-run: back\|^build" /tmp/o9/d/run.log | tail -32
echo "== $(date +%T) selftest build/dev3"
TALLY_CALIB_DB=/tmp/o9/d/calib.sqlite build/dev3/tally-run selftest > /tmp/o9/d/selftest.txt 2>&1; echo "selftest rc=$?"
grep -c PASS /tmp/o9/d/selftest.txt; grep -v PASS /tmp/o9/d/selftest.txt | tail -8
echo "== $(date +%T) alone, build/dev2"
export TALLY_CALIB_DB=/tmp/calib_c.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
rm -f /tmp/alone_c.db /tmp/alone_c_slim.db
build/dev2/tally-run run -J "name=resnet50-train,trace=$h/resnet50_train_b32_steps.json.gz,role=training,model_mb=100,graph=1" \
    -p priority-streams -t 2 -w 1 -S 1 -k -q -d /tmp/alone_c.db > /tmp/o9/c/alone.log 2>&1
build/dev2/tally-run run -J "name=resnet50-b8,trace=$h/resnet50_infer_b8.json.gz,role=inference,load=0.5,model_mb=50,graph=1" \
    -p priority-streams -t 2 -w 1 -S 1 -k -q -d /tmp/alone_c.db >> /tmp/o9/c/alone.log 2>&1
python3 $hw/slim_db.py /tmp/alone_c.db /tmp/alone_c_slim.db 400 && gzip -c /tmp/alone_c_slim.db > /tmp/o9/c/alone_slim.db.gz
grep "alone \|priority-streams " /tmp/o9/c/alone.log
tar -C /tmp -czf "$out/o9.tgz" o9
echo "== $(date +%T) done"
