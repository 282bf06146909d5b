#!/usr/bin/env python3
"""The sharing probe's two traces (tally-trace flat form), from the H100 replay of the
graph headline under MPS (session 19, calls 4-5), where ViT-B/16's GEMMs ran packed on
few SMs and the training's layout kernels reached nearly every SM:
  gemm_probe.json: iterations of 20 compute kernels 'xmma_gemm_probe', 336 blocks of 64
    threads, 64 registers, 33 us each (ViT's 32x32 GEMM alone), then a synchronize;
  layout_probe.json: iterations of 40 memory kernels 'nhwcToNchwKernel_probe', 3788
    blocks of 256 threads, 32 registers, 10.8 us each (ResNet-50's layout kernel alone),
    then a synchronize.
and probe.json, the spec: both as training jobs (closed loops, so they co-run all the
time) under mps and priority streams (both at one priority), 3 s after 0.5 s, seed 1;
probe_prio.json: the same with the GEMM job at the greater priority, priority streams;
probe_variants.json: five compute/memory pairs (VARIANTS below), the compute job at the
greater priority, under mps and priority streams, 2 s after 0.5 s.
    python3 make_probe.py DIR   (writes them all into DIR)"""
import json, os, sys

out = sys.argv[1] if len(sys.argv) > 1 else '.'
os.makedirs(out, exist_ok=True)

def trace_v(path, k):
    """40 iterations of one kernel shape k = (name, blocks, threads, registers, dynamic
    shared memory, us alone, kernels an iteration): launches 5 us apart, the kernels
    back to back 1.2 us apart on one stream, a synchronize, 10 us of host time."""
    name, grid, block, regs, smem, us, n = k
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
                       "grid": [grid, 1, 1], "block": [block, 1, 1], "regs": regs, "dynamic_smem": smem})
            t += 5000
            gpu += dur + 1200
        corr += 1
        t = max(t, gpu) + 2000
        ev.append({"type": "api", "name": "cudaStreamSynchronize", "tid": 1, "start_ns": t - 1000, "end_ns": t,
                   "corr": corr, "stream": 7})
        t += 10000
        m["end_ns"] = t - 5000
    json.dump({"format": "tally-trace", "version": 1, "gpu": {"name": "NVIDIA H100 80GB HBM3"},
               "truncated": False, "events": ev}, open(os.path.join(out, path), "w"))

def trace(path, name, n, grid, block, regs, dur_ns):
    """One of the first two traces: a variant's trace without shared memory."""
    trace_v(path, (name, grid, block, regs, 0, dur_ns / 1000, n))

trace("gemm_probe.json", "xmma_gemm_probe", 20, 336, 64, 64, 33000)
trace("layout_probe.json", "nhwcToNchwKernel_probe", 40, 3788, 256, 32, 10800)
json.dump({"name": "sharing-probe", "gpu": "H100", "duration_s": 3, "warmup_s": 0.5, "seed": 1,
           "repetitions": 1, "policies": ["mps", "priority-streams"],
           "job_sets": [[{"name": "gemm", "trace": "gemm_probe.json", "role": "training"},
                         {"name": "layout", "trace": "layout_probe.json", "role": "training"}]]},
          open(os.path.join(out, "probe.json"), "w"), indent=1)
# the GEMM job at the greater priority (0; the layout job 1), under priority streams
json.dump({"name": "sharing-probe-prio", "gpu": "H100", "duration_s": 3, "warmup_s": 0.5, "seed": 1,
           "repetitions": 1, "policies": ["priority-streams"],
           "job_sets": [[{"name": "gemm", "trace": "gemm_probe.json", "role": "training", "priority": 0},
                         {"name": "layout", "trace": "layout_probe.json", "role": "training", "priority": 1}]]},
          open(os.path.join(out, "probe_prio.json"), "w"), indent=1)

# Variants (call 9): a compute job at the greater priority beside a memory job, each
# pair under mps and under priority streams. (compute: name, blocks, threads, regs,
# smem bytes, us alone, per iteration; memory: the same)
VARIANTS = [
    ("v1", ("xmma_gemm_probe", 336, 64, 64, 0, 33, 20), ("nhwcToNchwKernel_probe", 3788, 256, 32, 0, 10.8, 40)),
    ("v2", ("fprop_implicit_gemm_probe128", 168, 128, 96, 0, 40, 16), ("nhwcToNchwKernel_probe", 3788, 256, 32, 0, 10.8, 40)),
    ("v3", ("gemm_probe256_smem", 132, 256, 128, 49152, 60, 10), ("nhwcToNchwKernel_probe", 3788, 256, 32, 0, 10.8, 40)),
    ("v4", ("xmma_gemm_probe", 336, 64, 64, 0, 33, 20), ("elementwise_probe512", 6000, 512, 32, 0, 20, 30)),
    ("v5", ("xmma_gemm_probe", 336, 64, 64, 0, 33, 20), ("bn_fw_probe_longblocks", 528, 256, 32, 0, 40, 15)),
]

job_sets = []
for tag, comp, mem in VARIANTS:
    trace_v("%s_compute.json" % tag, comp)
    trace_v("%s_memory.json" % tag, mem)
    job_sets.append([{"name": "%s-compute" % tag, "trace": "%s_compute.json" % tag, "role": "training", "priority": 0},
                     {"name": "%s-memory" % tag, "trace": "%s_memory.json" % tag, "role": "training", "priority": 1}])
json.dump({"name": "sharing-probe-variants", "gpu": "H100", "duration_s": 2, "warmup_s": 0.5, "seed": 1,
           "repetitions": 1, "policies": ["mps", "priority-streams"], "job_sets": job_sets},
          open(os.path.join(out, "probe_variants.json"), "w"), indent=1)
