#!/bin/sh
# Session 19's fifth device run (build: build/dev of the commit that adds this file,
# carried as build/dev/tally-run.xz): on how many SMs do ViT-B/16's kernels run beside
# ResNet-50 training under MPS? With TALLY_SM_TRACE=1 (new) every synthetic block marks
# its SM and each kernel record's avg_sms is the count of SMs the launch ran on. The
# graph headline's ViT pair under MPS and priority streams, and each job alone (4 s
# after 1 s, seed 6, -k); the selftest first, since the synthetic kernels changed.
# sm_kernels.py summarizes per job and kernel on the device (the database is too large
# to come back). One archive comes back: call5.tar.xz.
out=${1:?usage: call5.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call5; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
$run selftest > $w/selftest.txt 2>&1; echo "selftest rc=$?"; tail -3 $w/selftest.txt
python3 - <<'PY' > $w/vit_pair.json
import json, os
s = json.load(open('experiments/specs/tally_headline.json'))
s['job_sets'] = [js for js in s['job_sets'] if any(j['name'].startswith('vit') for j in js)]
for js in s['job_sets']:
    for j in js: j['trace'] = os.path.abspath('traces/bundled/h100/' + j['trace'].split('/')[-1])
print(json.dumps(s))
PY
t0=$(date +%s)
TALLY_SM_TRACE=1 $run run -s $w/vit_pair.json -p mps -p priority-streams -t 4 -w 1 -r 1 -S 6 -k -q \
  -d $w/smk.db > $w/smk.log 2>&1
echo "rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +0 " $w/smk.log
python3 experiments/results/hw/session19/sm_kernels.py $w/smk.db > $w/smk_kernels.csv
head -30 $w/smk_kernels.csv
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('delete from kernels'); c.commit(); c.execute('vacuum')" $w/smk.db
cd $w && tar cJf $out/call5.tar.xz smk.db smk.log smk_kernels.csv selftest.txt vit_pair.json && ls -la $out
