#!/usr/bin/env python3
"""The backfill probe: does a lower-priority kernel dispatch blocks while a
higher-priority kernel waits for room? (FACTS.md's published rule: no, a level
dispatches only when every higher level is empty.) Three jobs under priority
streams, one context:
  fill (training, rank 1): a 2 ms memory kernel 'elementwise_kernel_fill', 132
    blocks of 256 threads with 120 KB of shared memory each: one block on every
    SM, whose shared memory leaves no SM room for another such block (memory, so
    that the simulator does not starve the compute kernels placed beside it);
  high (inference, rank 0): requests of one 100 us kernel 'xmma_gemm_high',
    132 blocks of 128 threads with 120 KB of shared memory, that cannot start
    while a fill block holds an SM;
  low (training, rank 2): a stream of 50 us kernels 'xmma_gemm_low', 132
    blocks of 64 threads, no shared memory, 30 us of host time apart: they fit
    beside a fill block.
With the published rule, no low kernel starts between a high request's launch
and its kernel's start; if the GPU backfills, low kernels keep starting.
    python3 make_backfill.py DIR   (writes the traces and backfill.json into DIR)"""
import json, os, sys

out = sys.argv[1] if len(sys.argv) > 1 else '.'
os.makedirs(out, exist_ok=True)

def trace(path, name, grid, block, regs, smem, us, iters, host_after_us):
    """iters iterations of one kernel, each followed by a synchronize and
    host_after_us of host time."""
    ev, t, corr = [], 1000000, 100
    dur = int(us * 1000)
    for it in range(iters):
        m = {"type": "marker", "name": "ProfilerStep#%d" % it, "start_ns": t, "end_ns": 0}
        ev.append(m)
        gpu = t + 10000
        corr += 1
        ev.append({"type": "api", "name": "cudaLaunchKernel", "tid": 1, "start_ns": t, "end_ns": t + 4000,
                   "corr": corr})
        ev.append({"type": "kernel", "name": name, "stream": 7, "corr": corr, "start_ns": gpu,
                   "end_ns": gpu + dur, "grid": [grid, 1, 1], "block": [block, 1, 1], "regs": regs,
                   "dynamic_smem": smem})
        t = gpu + dur + 2000
        corr += 1
        ev.append({"type": "api", "name": "cudaStreamSynchronize", "tid": 1, "start_ns": t - 1000,
                   "end_ns": t, "corr": corr, "stream": 7})
        t += int(host_after_us * 1000)
        m["end_ns"] = t - 500
    json.dump({"format": "tally-trace", "version": 1, "gpu": {"name": "NVIDIA H100 80GB HBM3"},
               "truncated": False, "events": ev}, open(os.path.join(out, path), "w"))

KB = 1024
trace("fill.json", "elementwise_kernel_fill", 132, 256, 32, 120 * KB, 2000, 20, 20)
trace("high.json", "xmma_gemm_high", 132, 128, 32, 120 * KB, 100, 20, 10)
trace("low.json", "xmma_gemm_low", 132, 64, 32, 0, 50, 20, 30)
json.dump({"name": "backfill-probe", "gpu": "H100", "duration_s": 2, "warmup_s": 0.5, "seed": 1,
           "repetitions": 1, "kernels": True, "policies": ["priority-streams"],
           "job_sets": [[{"name": "high", "trace": "high.json", "role": "inference", "priority": 0,
                          "arrival": {"kind": "poisson", "rate": 200}},
                         {"name": "fill", "trace": "fill.json", "role": "training", "priority": 1},
                         {"name": "low", "trace": "low.json", "role": "training", "priority": 2}]]},
          open(os.path.join(out, "backfill.json"), "w"), indent=1)
