"""torchvision ResNet-50 training loop (SGD, batch 32, synthetic data).

Nothing in it knows about tracing: it is the program tally-trace runs
unchanged. Each step ends with torch.cuda.synchronize() so that its wall time
is a true iteration time (and so that --iteration-sync 1 marks steps).

  python3 resnet50_train.py [--steps N] [--batch B] [--profiler] [--json OUT]

--profiler wraps the loop in the PyTorch profiler (CPU + CUDA activities),
for the overhead comparison. Per-step times go to --json (seconds).
"""
import argparse
import json
import time

import torch
import torchvision


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--profiler", action="store_true")
    p.add_argument("--json", default="")
    a = p.parse_args()

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
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
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
