#!/bin/sh
# Builds (here, then carried): each build/devN is `git apply PATCH; make
# BUILD=build/devN TALLY_STATIC_DEPS=1 build/devN/tally-run; git checkout backend/`
# at bd9e83a (dev: no patch, dev1: tally_gap/session9/single_kernels.patch,
# dev2: graph_launch/session9/node_exit_cost.patch, dev3: tally_gap/session9/
# smem_split.patch, dev4: tally_gap/session9/slot_shuffle.patch).
# Session 9's third device call: MobileNetV3 alone (graph) with the slot pool
# in order and shuffled (tally_gap/session9/slot_shuffle.patch, build/dev4): does a
# graph whose nodes' slots lie scattered over the 105 MB slot array get the
# longer gaps seen beside training under tally?
out=${1:?}
hw=experiments/results/hw
h=traces/bundled/h100
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
for mode in ordered shuffled; do
  rm -f /tmp/m_$mode.db
  if [ $mode = shuffled ]; then export TALLY_DEBUG_SHUFFLE_SLOTS=1; fi
  build/dev4/tally-run run -J "name=mobilenet-b1,trace=$h/mobilenetv3_infer_b1.json.gz,role=inference,load=0.5,model_mb=50,graph=1" \
      -p priority-streams -p tally -t 2 -w 1 -S 1 -k -q -d /tmp/m_$mode.db > $out/$mode.log 2>&1
  echo "== $mode"; grep "alone \|priority-streams \|tally  " $out/$mode.log
  python3 $hw/graph_diag.py /tmp/m_$mode.db | tee -a $out/$mode.log
done
