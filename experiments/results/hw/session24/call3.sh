#!/bin/sh
# Session 24's third device run (the build carried in calls 1-2, build/dev/tally-run.xz):
# call 2's pair probe found no long gap after memory kernels of many blocks, and the
# long gaps of ViT-B/16 and the training in session 23's table turned out to be memset
# nodes between the two kernels (README.md). ResNet-50 b8's, after its batch norms, have
# no memset between. This probe takes those shapes (pair_probe/make_probe.py ... bn);
# the real ResNet-50 b8 trace alone with -k beside it, on the same machine, as the
# control. 2 s after 0.5 s each. One archive comes back: call3.tar.xz.
out=${1:?usage: call3.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call3; mkdir -p $w
p=$hw/session24/pair_probe
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
python3 $p/make_probe.py $w/probe_bn.json bn || exit 1
$run run -p priority-streams -J trace=$w/probe_bn.json,role=training,graph=1,name=probe_bn \
  -t 2 -w 0.5 -k -q -d $w/probe_bn.db > $w/probe_bn.log 2>&1; echo "probe rc=$?"
python3 $p/pair_gaps.py $w/probe_bn.db > $w/pair_gaps_bn.txt; sed -n '/alone/,/priority/p' $w/pair_gaps_bn.txt
$run run -p priority-streams -J trace=traces/bundled/h100/resnet50_infer_b8.json.gz,role=training,graph=1,name=rb8 \
  -t 2 -w 0.5 -k -q -d $w/rb8.db > $w/rb8.log 2>&1; echo "rb8 rc=$?"
python3 $p/pair_gaps.py $w/rb8.db > $w/pair_gaps_rb8.txt
ps -eo comm | grep -c -E 'nvidia-cuda-mps|tally-run' | sed 's/^/processes left: /'
rm -f $w/probe_bn.json; xz -9 $w/probe_bn.db $w/rb8.db
cd $w && tar cJf $out/call3.tar.xz . && ls -la $out
