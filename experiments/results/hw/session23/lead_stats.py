#!/usr/bin/env python3
"""lead_stats.py: from session 16's call 9 (MobileNetV3 beside ResNet-50 training under
tgs, graph jobs, 4 s, seed 4, -k; ../session16/call9/) and its simulated twin, the
requests' lead (request start to its first kernel's start) far from training (over
2 ms since a training kernel ended), its quantiles and autocorrelation, and the TGS
controller's observations (high-priority solo / wall time per 10 ms window): their
quantiles, the recent best they are compared with, and a linear fit against the
training kernel time in the window."""
import csv, os, statistics as st
d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "session16", "call9")


def q(v, p):
    v = sorted(v)
    return v[int(p * (len(v) - 1))]


for w in ("hw", "sim"):
    rows = list(csv.DictReader(open(os.path.join(d, "tgsk_mob_%s_requests.csv" % w))))
    far = [int(r["lead_ns"]) / 1e3 for r in rows if int(r["since_training_end_ns"]) > 2_000_000]
    x = [min(v, 300) for v in far]  # outliers clipped for the autocorrelation
    m = st.mean(x)
    ac = [sum((x[i] - m) * (x[i + k] - m) for i in range(len(x) - k)) / sum((v - m) ** 2 for v in x)
          for k in (1, 5, 20)]
    print("%-3s lead far from training: %d requests, us p1 %.0f p10 %.0f p50 %.0f p90 %.0f p99 %.0f;"
          " autocorrelation (clipped at 300 us) lag 1 %.2f, 5 %.2f, 20 %.2f" %
          (w, len(far), q(far, .01), q(far, .1), q(far, .5), q(far, .9), q(far, .99), *ac))
    win = list(csv.DictReader(open(os.path.join(d, "tgsk_mob_%s_windows.csv" % w))))
    ob = [float(r["observation"]) for r in win]
    be = [float(r["best"]) for r in win]
    tx = [float(r["training_ns"]) / 1e6 for r in win]
    mx, my = st.mean(tx), st.mean(ob)
    b = sum((a - mx) * (c - my) for a, c in zip(tx, ob)) / sum((a - mx) ** 2 for a in tx)
    res = [c - (my + b * (a - mx)) for a, c in zip(tx, ob)]
    print("    windows %d: observation p10 %.3f p50 %.3f p90 %.3f max %.3f; best p50 %.3f;"
          " drops %d; fit %.3f %+.3f/ms of training, residual sd %.4f" %
          (len(ob), q(ob, .1), q(ob, .5), q(ob, .9), max(ob), q(be, .5),
           sum(int(r["drop"]) for r in win), my - b * mx, b, st.pstdev(res)))
