#!/bin/sh
# Session 13's ninth device call: the shared-memory carveout the driver
# configures for the replay's own synthetic kernels, for every kernel shape of
# the bundled H100 traces (Nsight Compute over tally-run fidelity, the first
# 3000 launches of each trace, which cover an iteration), summarized per shape
# (block size, registers, dynamic and static shared memory) into carveouts.csv.
# Build: build/dev of the commit that adds this file.
out=${1:?usage: call8.sh OUTDIR}
xz -dc experiments/results/hw/calib.sqlite.xz > /tmp/calib.sqlite; export TALLY_CALIB_DB=/tmp/calib.sqlite
m=launch__shared_mem_config_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,launch__grid_size
for t in traces/bundled/h100/*.json.gz; do
  n=$(basename $t .json.gz)
  ncu --metrics $m --csv --launch-count 3000 build/dev/tally-run fidelity -t 0.2 -w 0 $t > /tmp/ncu_$n.csv 2> /tmp/ncu_$n.err
  echo "$n rc=$? $(wc -l < /tmp/ncu_$n.csv) lines"
done
python3 - $out/carveouts.csv /tmp/ncu_*.csv <<'PY'
import csv, sys, collections
shapes = collections.Counter()
for f in sys.argv[2:]:
    hdr, d = None, {}
    for r in csv.reader(open(f)):
        if r and r[0] == 'ID': hdr = r; continue
        if not hdr or len(r) != len(hdr): continue
        x = dict(zip(hdr, r))
        d.setdefault(x['ID'], {'name': x['Kernel Name'].split('(')[0]})[x['Metric Name']] = x['Metric Value'].replace(',', '')
    for m in d.values():
        try:
            k = (m['name'], int(m['launch__block_size']), int(m['launch__registers_per_thread']),
                 int(m['launch__shared_mem_per_block_dynamic']), int(m['launch__shared_mem_per_block_static']),
                 int(m['launch__shared_mem_config_size']) // 1024)
        except (KeyError, ValueError):
            continue
        shapes[k] += 1
with open(sys.argv[1], 'w') as o:
    o.write('kernel,threads,regs,dynamic_smem,static_smem,carveout_kb,launches\n')
    for k, n in sorted(shapes.items()):
        o.write('%s,%d,%d,%d,%d,%d,%d\n' % (k + (n,)))
print(len(shapes), 'shapes')
PY
