#!/usr/bin/env python3
"""The sharing grid (session 20): what a compute kernel's blocks cost a memory kernel's on
the same SMs, and the reverse, as the compute kernel's warps per SM and the memory
kernel's block length vary. The sharing probe of session 19 (../../session19/probe/)
found memory kernels of short blocks 3.5-6x slower beside compute blocks on every SM of
the H100 and one of long blocks 1.26x, where the simulator starves both beside any
compute block (its co-runs, ../../contention.csv, had 8 to 48 compute warps per SM).

Compute kernels (one wave, 50 us alone, 20 an iteration, 64 registers):
  w2: 132 blocks of 64 threads (2 warps an SM), w4: 132 of 128, w8: 132 of 256,
  w16: 264 of 256 (two blocks, 16 warps an SM);
memory kernels: short: 3788 blocks of 256 threads, 10.8 us alone (8 an SM, 4 waves of
  ~2.7 us blocks: ResNet-50's layout kernel); long: 528 blocks of 256 threads, 40 us
  (4 an SM, one wave of 40 us blocks).
Each compute/memory pair as two training jobs in closed loops under mps (2 s after
0.5 s), the compute job at priority 0 (mps ignores it), and each job alone.
    python3 make_grid.py DIR   (writes the traces and grid.json into DIR)"""
import json, os, sys

def trace(path, k):
    """40 iterations of one kernel shape k = (name, blocks, threads, registers, us
    alone, kernels an iteration): launches 5 us apart, the kernels back to back 1.2 us
    apart on one stream, a synchronize, 10 us of host time (the session 19 probe's
    trace_v)."""
    name, grid, block, regs, us, n = k
    ev, t, corr = [], 1000000, 100
    dur = int(us * 1000)
    for it in range(40):
        m = {"type": "marker", "name": "ProfilerStep#%d" % it, "start_ns": t, "end_ns": 0}
        ev.append(m)
        gpu = t + 20000
        for _ in range(n):
            corr += 1
            ev.append({"type": "api", "name": "cudaLaunchKernel", "tid": 1, "start_ns": t, "end_ns": t + 4000, "corr": corr})
            ev.append({"type": "kernel", "name": name, "stream": 7, "corr": corr, "start_ns": gpu, "end_ns": gpu + dur,
                       "grid": [grid, 1, 1], "block": [block, 1, 1], "regs": regs, "dynamic_smem": 0})
            t += 5000
            gpu += dur + 1200
        corr += 1
        t = max(t, gpu) + 2000
        ev.append({"type": "api", "name": "cudaStreamSynchronize", "tid": 1, "start_ns": t - 1000, "end_ns": t,
                   "corr": corr, "stream": 7})
        t += 10000
        m["end_ns"] = t - 5000
    json.dump({"format": "tally-trace", "version": 1, "gpu": {"name": "NVIDIA H100 80GB HBM3"},
               "truncated": False, "events": ev}, open(path, "w"))

COMPUTE = {
    "w2": ("xmma_gemm_grid_w2", 132, 64, 64, 50, 20),
    "w4": ("xmma_gemm_grid_w4", 132, 128, 64, 50, 20),
    "w8": ("xmma_gemm_grid_w8", 132, 256, 64, 50, 20),
    "w16": ("xmma_gemm_grid_w16", 264, 256, 64, 50, 20),
}
MEMORY = {
    "short": ("nhwcToNchwKernel_grid", 3788, 256, 32, 10.8, 40),
    "long": ("bn_fw_grid_longblocks", 528, 256, 32, 40, 15),
}

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    for tag, k in list(COMPUTE.items()) + list(MEMORY.items()):
        trace(os.path.join(out, "%s.json" % tag), k)
    sets = [[{"name": "%s-c" % c, "trace": "%s.json" % c, "role": "training", "priority": 0},
             {"name": "%s-m%s" % (m, c), "trace": "%s.json" % m, "role": "training", "priority": 1}]
            for m in MEMORY for c in COMPUTE]
    json.dump({"name": "sharing-grid", "gpu": "H100", "duration_s": 2, "warmup_s": 0.5, "seed": 1,
               "repetitions": 1, "policies": ["mps"], "job_sets": sets},
              open(os.path.join(out, "grid.json"), "w"), indent=1)
