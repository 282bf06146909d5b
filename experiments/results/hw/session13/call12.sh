#!/bin/sh
# Session 13's fourteenth device call: ../bandwidth/disjoint.cu, whether kernels
# on disjoint SMs slow each other through DRAM bandwidth (the lead of this
# session's README). Output: OUTDIR/disjoint.txt.
out=${1:?usage: call12.sh OUTDIR}
nvcc -O2 -arch=sm_90 -o /tmp/disjoint experiments/results/hw/bandwidth/disjoint.cu && /tmp/disjoint > $out/disjoint.txt 2>&1
echo "rc=$?"; cat $out/disjoint.txt
