#!/usr/bin/env python3
"""Kernel by kernel, one job of one run in two mps_kernels.py summaries (call 4: the H100's
mpsk_hw.csv and a twin's, mpsk_sim.csv or mpsk_sim_pack2.csv): launches, mean time and
its ratio over the job's alone run on each side, sorted by the simulator's deficit in ms
at the H100's launch counts. The ratios quoted in README.md ("ViT's largest GEMM 3.60x
against 2.71x", ...) come from it:
    python3 kernel_ratios.py mpsk_hw.csv mpsk_sim.csv mps vit-b16-b1 vit-b16-b1+resnet50-train"""
import csv, sys

def load(path, pol, job, jobset):
    d = {}
    for r in csv.DictReader(l for l in open(path) if not l.startswith('#')):
        if r['policy'] == pol and r['job'] == job and r['job_set'] == jobset:
            d[r['kernel']] = (int(r['launches']), float(r['mean_us']), float(r['total_ms']))
    return d

hw_path, sim_path, pol, job, jobset = sys.argv[1:6]
h, s = load(hw_path, pol, job, jobset), load(sim_path, pol, job, jobset)
ah, as_ = load(hw_path, 'alone', job, job), load(sim_path, 'alone', job, job)
print('total kernel ms: hw %.1f sim %.1f' % (sum(v[2] for v in h.values()), sum(v[2] for v in s.values())))
print('diff_ms,launches_hw,launches_sim,alone_us_hw,hw_us,sim_us,hw_x,sim_x,kernel')
rows = []
for k in h:
    if k in s and k in ah and k in as_:
        rows.append((s[k][1] * h[k][0] / 1e3 - h[k][2], k))
for d, k in sorted(rows):
    print('%.1f,%d,%d,%.2f,%.2f,%.2f,%.2f,%.2f,"%s"' % (d, h[k][0], s[k][0], ah[k][1], h[k][1], s[k][1],
          h[k][1] / ah[k][1], s[k][1] / as_[k][1], k[:90]))
