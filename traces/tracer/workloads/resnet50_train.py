"""torchvision ResNet-50 training loop (SGD, batch 32, synthetic data).

Nothing in it knows about tracing: it is the program tally-trace runs
unchanged. Each step ends with torch.cuda.synchronize() so that its wall time
is a true iteration time (and so that --iteration-sync 1 marks steps).

  python3 resnet50_train.py [--steps N] [--batch B] [--profiler] [--json OUT]
                            [--turns IN,OUT]

--profiler wraps the loop in the PyTorch profiler (CPU + CUDA activities),
for the overhead comparison. Per-step times go to --json (seconds).
--turns IN,OUT (two FIFOs): take turns with another copy of this program,
step by step: wait for a byte on IN before each step, write one to OUT after
it. Two runs in lockstep see the same machine state a step apart, so their
step-by-step ratio is free of the machine's drift over seconds, which is
larger than a tracer's cost on this program
(experiments/results/tracer/lockstep/run.sh).
"""
import argparse
import json
import os
import time

import torch
import torchvision


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--profiler", action="store_true")
    p.add_argument("--json", default="")
    p.add_argument("--turns", default="")
    a = p.parse_args()
    turn_in = turn_out = None
    if a.turns:
        # O_RDWR: opening a FIFO so never blocks, whichever side comes first
        fin, fout = a.turns.split(",")
        turn_in, turn_out = os.open(fin, os.O_RDWR), os.open(fout, os.O_RDWR)

    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torchvision.models.resnet50().to(dev)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    crit = torch.nn.CrossEntropyLoss()
    x = torch.randn(a.batch, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (a.batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()

    times = []
    prof = None
    if a.profiler:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
    torch.cuda.synchronize()
    for _ in range(a.steps):
        if turn_in is not None and os.read(turn_in, 1) != b"t":
            raise SystemExit("resnet50_train: --turns: the other side is gone")
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
        if turn_out is not None:
            os.write(turn_out, b"t")
    if prof is not None:
        prof.__exit__(None, None, None)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"workload": "resnet50_train", "batch": a.batch,
                       "profiler": a.profiler, "step_s": times}, f)
    print("resnet50_train: %d steps, median %.2f ms" %
          (a.steps, 1e3 * sorted(times)[len(times) // 2]))


if __name__ == "__main__":
    main()
