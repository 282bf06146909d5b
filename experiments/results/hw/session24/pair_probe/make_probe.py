#!/usr/bin/env python3
"""make_probe.py OUT.json [bn]: a synthetic graph-job trace (our format) to find what sets
the long gaps after memory kernels of many blocks that the H100 replay shows
(../../session23/graph_gaps.txt). One iteration of 20 units; each unit is a fixed
sequence of kernel pairs, so that each pair's gap can be told apart by its position:
the previous kernel many blocks or few, long or short; the next one compute of one
register variant or another, or memory. Names pick the kind (traces/work_kind.c:
'gemm' is compute, the rest memory); registers pick the compiled variant. With 'bn': ResNet-50 b8's batch-norm shapes
(64-256 threads a block, 2048-8192 blocks, 3-9 us), which its alone replays follow
with 2.4-4.1 us gaps, before its elementwise kernels and before other kernels."""
import json, sys
K = {  # name: (blocks, threads, regs, smem, dur_ns)
    'elementwise_many_long':  (16384, 256, 32, 0, 150000),
    'elementwise_many_short': (16384, 256, 32, 0, 15000),
    'reduce_few_long':        (132, 256, 32, 0, 150000),
    'reduce_few_short':       (64, 256, 32, 0, 5000),
    'copy_small':             (64, 256, 32, 0, 5000),
    'gemm_a':                 (132, 128, 128, 0, 30000),
    'gemm_b':                 (132, 128, 32, 0, 30000),
    'gemm_c_smem':            (132, 128, 128, 49152, 30000),
}
UNIT = ['elementwise_many_long', 'gemm_a',        # 0->1  M many long -> C (variant a)
        'elementwise_many_short', 'gemm_a',       # 2->3  M many short -> C a
        'reduce_few_long', 'gemm_a',              # 4->5  M few long -> C a
        'elementwise_many_long', 'gemm_b',        # 6->7  M many long -> C (variant b)
        'elementwise_many_long', 'copy_small',    # 8->9  M many long -> M small
        'elementwise_many_long', 'elementwise_many_long',  # 10->11 M many long -> itself
        'gemm_a', 'gemm_b',                       # 12->13 C -> C
        'reduce_few_short', 'gemm_a',             # 14->15 M few short -> C a
        'elementwise_many_long', 'gemm_c_smem']   # 16->17 M many long -> C with 48 KB smem
if sys.argv[2:] == ['bn']:
    K = {'bn_fw_inf_2048x64': (2048, 64, 19, 0, 3000), 'bn_fw_inf_8192x64': (8192, 64, 19, 0, 7000),
         'bn_fw_inf_4096x256': (4096, 256, 19, 0, 8000), 'elementwise_392x128': (392, 128, 28, 0, 1500),
         'elementwise_1568x128': (1568, 128, 32, 0, 4300), 'gemm_a': (132, 128, 128, 0, 30000),
         'elementwise_2048x256': (2048, 256, 32, 0, 3000)}
    UNIT = ['bn_fw_inf_2048x64', 'elementwise_392x128',       # as in the trace
            'bn_fw_inf_8192x64', 'elementwise_1568x128',
            'bn_fw_inf_4096x256', 'elementwise_1568x128',
            'bn_fw_inf_2048x64', 'gemm_a',                     # before a compute kernel
            'elementwise_2048x256', 'elementwise_392x128',     # 256-thread blocks before
            'bn_fw_inf_2048x64', 'bn_fw_inf_2048x64',          # before itself
            'elementwise_392x128', 'elementwise_1568x128']     # small before small
names = [''] + sorted(K)
ops, t = [], 0
for u in range(20):
    for n in UNIT:
        b, th, r, sm, d = K[n]
        ops.append({'kind': 'kernel', 'name': names.index(n), 'stream': 0, 'host_gap_ns': 1000,
                    'host_call_ns': 2000, 'gpu_start_ns': t, 'dur_ns': d, 'grid': [b, 1, 1],
                    'block': [th, 1, 1], 'regs': r, 'static_smem': 0, 'dynamic_smem': sm})
        t += d + 1200
it = {'start_ns': 0, 'tail_host_ns': 0, 'traced_ns': t, 'traced_busy_ns': t - 1200 * len(ops), 'ops': ops}
json.dump({'format': 'tally-trace', 'version': 1, 'gpu': {'name': 'NVIDIA H100 80GB HBM3'},
           'source': 'tally', 'split': 'whole', 'streams': [7], 'strings': names,
           'iterations': [it, dict(it, start_ns=t)]}, open(sys.argv[1], 'w'))
