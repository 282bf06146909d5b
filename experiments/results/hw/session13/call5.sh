#!/bin/sh
# Session 13's sixth device call: is the placement of ../placement/ decided by
# the SMs' shared-memory carveout? (1) Nsight Compute's
# launch__shared_mem_config_size for kernels of several block sizes, dynamic
# shared memory and registers (placement/carveout_rule.cu). (2) placement.cu's
# one-kernel backgrounds and cmp-seq with every kernel's preferred carveout set
# to the same value: if the victim then shares SMs with the background and
# spreads, the carveout is what kept it off them.
out=${1:?usage: call5.sh OUTDIR}
p=experiments/results/hw/placement
nvcc -O2 -arch=sm_90 -o /tmp/cr $p/carveout_rule.cu && nvcc -O2 -arch=sm_90 -o /tmp/placement $p/placement.cu || exit 1
ncu --metrics launch__shared_mem_config_size,launch__block_size,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps,launch__occupancy_limit_registers,launch__occupancy_limit_blocks --csv /tmp/cr > $out/carveout_rule_ncu.csv 2> $out/carveout_rule_ncu.err
echo "ncu rc=$?"; wc -l $out/carveout_rule_ncu.csv; tail -3 $out/carveout_rule_ncu.err
mkdir -p $out/same_one $out/same_cmp
/tmp/placement $out/same_one -one carveout; echo "rc=$?"; /tmp/placement $out/same_cmp cmp-seq/v64/greater carveout; echo "rc=$?"
grep -E "one/|cmp-seq" $out/same_one/summary.txt $out/same_cmp/summary.txt
gzip -9 $out/same_one/blocks.csv $out/same_cmp/blocks.csv
