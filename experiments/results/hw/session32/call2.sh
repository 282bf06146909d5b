#!/bin/sh
# Session 32's second device run (build/dev/tally-run.xz from the tree at the commit that
# adds this script): call1.sh again on three of the probe's pairs (v1, v2, v4: the memory
# kernel 3.5-5.9x slower beside the GEMM shapes), with block_probe.py's co-residency
# table (block durations by the blocks of each job on their SM) and a sample of v1's
# blocks.
#   sh call2.sh OUTDIR
out=${1:?usage: call2.sh OUTDIR}
hw=experiments/results/hw; s19=$hw/session19; s32=$hw/session32; run=build/dev/tally-run
w=/tmp/call2; rm -rf $w; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
python3 $s19/probe/make_probe.py /tmp/probe > /dev/null || exit 1
python3 - <<'PY' || exit 1
import json
s = json.load(open("/tmp/probe/probe_variants.json"))
s["job_sets"] = [js for js in s["job_sets"] if js[0]["name"].split("-")[0] in ("v1", "v2", "v4")]
s["name"] = "sharing-probe-blocks"
json.dump(s, open("/tmp/probe/probe_blocks.json", "w"), indent=1)
PY
t0=$(date +%s)
TALLY_BLOCK_TRACE=$w/bt $run run -s /tmp/probe/probe_blocks.json -k -q -d $w/probe.db > $w/probe.log 2>&1
echo "probe rc=$? in $(( $(date +%s) - t0 )) s"; du -sh $w/bt
python3 $s19/sm_kernels.py $w/probe.db > $out/probe_kernels.csv
t0=$(date +%s)
SAMPLE_JOBS=v1 python3 $s32/block_probe.py $w/bt $w/probe.db --coresidency $out/blocks_coresidency.csv \
    --sample $w/blocks_sample_v1.csv > $out/blocks_summary.csv
echo "block_probe rc=$? in $(( $(date +%s) - t0 )) s"; cat $out/blocks_summary.csv
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('delete from kernels'); c.commit(); c.execute('vacuum')" $w/probe.db
xz -9 -T16 $w/blocks_sample_v1.csv && cp $w/blocks_sample_v1.csv.xz $out/
xz -9 $w/probe.db && cp $w/probe.db.xz $w/probe.log $out/
ls -la $out
