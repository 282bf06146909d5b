#!/bin/sh
# Session 10's first device call: TGS with the high-priority wall time counted
# from when the work went to the GPU (tl_launch_result.submitted_ns, 1441978)
# against the build before it (2bf4c5e), each over the graph headline spec under
# tgs, 8 s after 2 s, one repetition (alone runs included); then the new build
# on the eager headline spec under tgs. Builds: build/dev (1441978) and
# build/dev0 (2bf4c5e), each `make BUILD=build/dev TALLY_STATIC_DEPS=1
# build/dev/tally-run` in its checkout. Validation of the databases: see
# ../diag_tgs/graph/README.md ("Session 10").
out=${1:?usage: call1.sh OUTDIR}
hw=experiments/results/hw
export TALLY_CALIB_DB=/tmp/calib.sqlite; cp $hw/calib.sqlite $TALLY_CALIB_DB
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
for b in dev0 dev; do
  rm -f $out/tgs_graph_$b.csv
  TALLY_TGS_LOG=$out/tgs_graph_$b.csv build/$b/tally-run run -s experiments/specs/tally_headline.json \
    -p tgs -t 8 -w 2 -r 1 -q -d $out/tgs_graph_$b.db > $out/tgs_graph_$b.log 2>&1
  echo "$b graph rc=$?"; grep "^tgs \|^alone " $out/tgs_graph_$b.log
done
rm -f $out/tgs_eager_dev.csv
TALLY_TGS_LOG=$out/tgs_eager_dev.csv build/dev/tally-run run -s experiments/specs/tally_headline_eager.json \
  -p tgs -t 8 -w 2 -r 1 -q -d $out/tgs_eager_dev.db > $out/tgs_eager_dev.log 2>&1
echo "dev eager rc=$?"; grep "^tgs \|^alone " $out/tgs_eager_dev.log
