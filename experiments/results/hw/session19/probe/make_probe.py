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
probe_prio.json: the same with the GEMM job at the greater priority, priority streams.
    python3 make_probe.py DIR   (writes the three into DIR)"""
import json, os, sys

out = sys.argv[1] if len(sys.argv) > 1 else '.'
os.makedirs(out, exist_ok=True)

def trace(path, name, n, grid, block, regs, dur_ns, launch_ns=4000):
    ev, t, corr = [], 1000000, 100
    for it in range(40):
        start = t
        ev.append({"type": "marker", "name": "ProfilerStep#%d" % it, "start_ns": start, "end_ns": 0})
        gpu = t + 20000
        for k in range(n):
            corr += 1
            ev.append({"type": "api", "name": "cudaLaunchKernel", "tid": 1, "start_ns": t, "end_ns": t + launch_ns,
                       "corr": corr})
            ev.append({"type": "kernel", "name": name, "stream": 7, "corr": corr, "start_ns": gpu,
                       "end_ns": gpu + dur_ns, "grid": [grid, 1, 1], "block": [block, 1, 1], "regs": regs})
            t += launch_ns + 1000
            gpu += dur_ns + 1200
        corr += 1
        t = max(t, gpu) + 2000
        ev.append({"type": "api", "name": "cudaStreamSynchronize", "tid": 1, "start_ns": t - 1000, "end_ns": t,
                   "corr": corr, "stream": 7})
        t += 10000
        ev[[i for i, e in enumerate(ev) if e.get("name") == "ProfilerStep#%d" % it][0]]["end_ns"] = t - 5000
    json.dump({"format": "tally-trace", "version": 1, "gpu": {"name": "NVIDIA H100 80GB HBM3"},
               "truncated": False, "events": ev}, open(os.path.join(out, path), "w"))

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
