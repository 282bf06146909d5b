"""Hugging Face transformers BERT-base inference, built from BertConfig with
random weights (no download), batch 1, sequence 128, eager PyTorch.

Nothing in it knows about tracing. Each request ends when its output is
copied to the host (.cpu() synchronizes), as a server's would.

  python3 bert_infer.py [--requests N] [--seq S] [--json OUT]
"""
import argparse
import json
import time

import torch
from transformers import BertConfig, BertModel


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--requests", type=int, default=40)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--json", default="")
    a = p.parse_args()

    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = BertModel(BertConfig()).to(dev).eval()
    ids = torch.randint(0, 30522, (1, a.seq))
    mask = torch.ones(1, a.seq, dtype=torch.long)
    times = []
    with torch.inference_mode():
        for _ in range(a.requests):
            t0 = time.perf_counter()
            out = model(input_ids=ids.to(dev), attention_mask=mask.to(dev))
            out.last_hidden_state[:, 0].cpu()
            times.append(time.perf_counter() - t0)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"workload": "bert_infer", "seq": a.seq, "request_s": times}, f)
    print("bert_infer: %d requests, median %.2f ms" %
          (a.requests, 1e3 * sorted(times)[len(times) // 2]))


if __name__ == "__main__":
    main()
