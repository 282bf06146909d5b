#!/bin/sh
# Session 13's seventh device call: the shared-memory carveout the driver
# configures per launch, read with Nsight Compute (call5's ncu run failed at a
# launch of 48 KB dynamic shared memory; carveout_rule.cu now stops at 40 KB
# and checks every launch): (1) carveout_rule.cu's kernels; (2) the backend's
# synthetic kernels (the first 40 launches of tally-run crowding).
# Build: build/dev of the commit that adds this file.
out=${1:?usage: call6.sh OUTDIR}
p=experiments/results/hw/placement
m=launch__shared_mem_config_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps,launch__occupancy_limit_registers,launch__occupancy_limit_blocks
nvcc -O2 -arch=sm_90 -o /tmp/cr $p/carveout_rule.cu || exit 1
ncu --metrics $m --csv /tmp/cr > $out/carveout_rule_ncu.csv 2> $out/carveout_rule_ncu.err
echo "ncu rc=$?"; wc -l $out/carveout_rule_ncu.csv; grep -c ERROR $out/carveout_rule_ncu.err
ncu --metrics $m --csv --launch-count 40 build/dev/tally-run crowding > $out/synth_ncu.csv 2> $out/synth_ncu.err
echo "ncu synth rc=$?"; wc -l $out/synth_ncu.csv; grep -c ERROR $out/synth_ncu.err
