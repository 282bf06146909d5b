#!/usr/bin/env python3
"""The gap probe (session 21): does a CUDA graph's back-to-back gap between kernels grow
when another job's work is on the GPU, and is it the other job's resident blocks or its
launches? Three traces (tally-trace flat form), each job launched as CUDA graphs:
  chain.json: iterations of 100 kernels 'chain_probe', 8 blocks of 128 threads, 5 us;
  long.json:  iterations of 4 kernels 'long_probe', 16 blocks of 256 threads, 1 ms
              (blocks always resident, few launches);
  short.json: iterations of 100 kernels 'short_probe', 16 blocks of 128 threads, 5 us
              (as many launches as the chain);
  wide.json:  as long.json with 132 blocks (one on every SM: the chain's blocks share
              their SMs);
so that the two jobs of a pair never wait for room (at most 140 blocks of at most 256
threads on 132 SMs). The spec gap_probe.json runs chain beside each, as training jobs (closed
loops), under mps and priority streams (one priority), 1 s after 0.3 s, seed 1.
gap_probe_eager.json is the same with every kernel launched on its own (no graphs).
    python3 make_gap_probe.py DIR"""
import json, os, sys

out = sys.argv[1] if len(sys.argv) > 1 else '.'
os.makedirs(out, exist_ok=True)


def trace(path, name, grid, block, us, n, iters=40):
    """iters iterations of n kernels launched 5 us apart, run back to back 1.2 us apart
    on one stream, then a synchronize and 10 us of host time."""
    ev, t, corr, dur = [], 1000000, 100, int(us * 1000)
    for it in range(iters):
        m = {"type": "marker", "name": "ProfilerStep#%d" % it, "start_ns": t, "end_ns": 0}
        ev.append(m)
        gpu = t + 20000
        for _ in range(n):
            corr += 1
            ev.append({"type": "api", "name": "cudaLaunchKernel", "tid": 1, "start_ns": t, "end_ns": t + 4000,
                       "corr": corr})
            ev.append({"type": "kernel", "name": name, "stream": 7, "corr": corr, "start_ns": gpu,
                       "end_ns": gpu + dur, "grid": [grid, 1, 1], "block": [block, 1, 1], "regs": 32,
                       "dynamic_smem": 0})
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


trace("chain.json", "chain_probe", 8, 128, 5, 100)
trace("long.json", "long_probe", 16, 256, 1000, 4)
trace("short.json", "short_probe", 16, 128, 5, 100)
trace("wide.json", "wide_probe", 132, 256, 1000, 4)
for spec, graph in (("gap_probe", True), ("gap_probe_eager", False)):
    job = lambda name: {"name": name, "trace": name + ".json", "role": "training", "graph": graph}
    json.dump({"name": spec.replace('_', '-'), "gpu": "H100", "duration_s": 1, "warmup_s": 0.3, "seed": 1,
               "repetitions": 1, "policies": ["mps", "priority-streams"],
               "job_sets": [[job("chain"), job(o)] for o in ("long", "short", "wide")]},
              open(os.path.join(out, spec + ".json"), "w"), indent=1)
