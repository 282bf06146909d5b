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
Call 2's spec, grid_long.json: long_sets below; call 3's, grid_cross.json: cross_sets;
call 4's, grid_cc.json: cc_sets.
    python3 make_grid.py DIR   (writes the traces, grid.json and grid_long.json into DIR)"""
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

# Call 2: the same pairs held together longer. Kernel durations of 50 us (as above), 0.5 ms
# and 5 ms for the 8-warp compute kernel beside the long-block memory kernel (its blocks as
# long as the kernel: one wave), the 2-warp compute kernel at 5 ms beside it, and the
# 8-warp compute kernel at 5 ms beside the short-block memory kernel (10.8 us kernels, as
# above). The one-wave co-runs of ../../contention.csv starved the memory kernel beside
# 20 ms compute blocks; the grid's 50 us kernels did not.
def long_sets(out):
    shapes = {}
    for us in (50, 500, 5000):
        n = max(1, 1000 // us)  # about 1 ms of kernels an iteration, at least one
        shapes["w8_%d" % us] = ("xmma_gemm_grid_w8_%d" % us, 132, 256, 64, us, n)
        shapes["long_%d" % us] = ("bn_fw_grid_longblocks_%d" % us, 528, 256, 32, us * 0.8, n)
    shapes["w2_5000"] = ("xmma_gemm_grid_w2_5000", 132, 64, 64, 5000, 1)
    shapes["short"] = MEMORY["short"]
    for tag, k in shapes.items():
        trace(os.path.join(out, "%s.json" % tag), k)
    pairs = [("w8_50", "long_50"), ("w8_500", "long_500"), ("w8_5000", "long_5000"),
             ("w2_5000", "long_5000"), ("w8_5000", "short")]
    sets = [[{"name": "%s-c" % c, "trace": "%s.json" % c, "role": "training", "priority": 0},
             {"name": "%s-m%s" % (m, c), "trace": "%s.json" % m, "role": "training", "priority": 1}]
            for c, m in pairs]
    json.dump({"name": "sharing-grid-long", "gpu": "H100", "duration_s": 2, "warmup_s": 0.5, "seed": 1,
               "repetitions": 1, "policies": ["mps"], "job_sets": sets},
              open(os.path.join(out, "grid_long.json"), "w"), indent=1)

# Call 3: which block's length decides it. Long memory blocks (5 ms kernels, one wave)
# beside short compute blocks (8 warps, 50 us and 0.5 ms kernels), and 40 us memory
# blocks beside 5 ms compute blocks. If the compute blocks' turnover is what leaves a
# memory block its share, the first two run as call 2's 50 us and 0.5 ms pairs did and
# the third starves; if the memory block's own length decides, the other way round.
# Also the 4-warp compute kernel at 5 ms beside the 5 ms memory kernel (between call 2's
# 2 warps, not starved, and 8, starved).
def cross_sets(out):
    trace(os.path.join(out, "w4_5000.json"), ("xmma_gemm_grid_w4_5000", 132, 128, 64, 5000, 1))
    pairs = [("w8_50", "long_5000"), ("w8_500", "long_5000"), ("w8_5000", "long_50"),
             ("w4_5000", "long_5000")]
    sets = [[{"name": "%s-c" % c, "trace": "%s.json" % c, "role": "training", "priority": 0},
             {"name": "%s-m%s" % (m, c), "trace": "%s.json" % m, "role": "training", "priority": 1}]
            for c, m in pairs]
    json.dump({"name": "sharing-grid-cross", "gpu": "H100", "duration_s": 2, "warmup_s": 0.5, "seed": 1,
               "repetitions": 1, "policies": ["mps"], "job_sets": sets},
              open(os.path.join(out, "grid_cross.json"), "w"), indent=1)

# Call 4: compute beside compute, the same way. ViT-B/16's 32x32 GEMM shape (336 blocks
# of 64 threads, 33 us alone, 20 an iteration: about 5 warps an SM) beside one-wave
# compute kernels of 8 warps an SM lasting 50 us, 0.5 ms and 5 ms, and of 4 warps at
# 50 us. The one-wave co-runs starved the younger compute kernel and left the older
# untouched (the model's age rule); ViT's GEMMs beside the training run 3.6x their
# alone time on the H100 under MPS and 2.6-2.7x simulated.
def cc_sets(out):
    trace(os.path.join(out, "vitgemm.json"), ("xmma_gemm_grid_vit", 336, 64, 64, 33, 20))
    for w, thr, us in ((8, 256, 50), (8, 256, 500), (8, 256, 5000), (4, 128, 50)):
        n = max(1, 1000 // us)
        trace(os.path.join(out, "conv%d_%d.json" % (w, us)),
              ("implicit_gemm_grid_w%d_%d" % (w, us), 132, thr, 64, us, n))
    sets = [[{"name": "vit-c%s" % b, "trace": "vitgemm.json", "role": "training", "priority": 0},
             {"name": "conv%s" % b, "trace": "conv%s.json" % b, "role": "training", "priority": 1}]
            for b in ("8_50", "8_500", "8_5000", "4_50")]
    json.dump({"name": "sharing-grid-cc", "gpu": "H100", "duration_s": 2, "warmup_s": 0.5, "seed": 1,
               "repetitions": 1, "policies": ["mps"], "job_sets": sets},
              open(os.path.join(out, "grid_cc.json"), "w"), indent=1)

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
    long_sets(out)
    cross_sets(out)
    cc_sets(out)
