"""TGS controller windows, hardware against simulator (policies/tgs.c's
TALLY_TGS_LOG lines): per world, over the windows after the warm-up: how many
observed, the observation's quantiles, the best's, the share of windows that
read a drop (observation < 0.95 x best), the mean rate, and the high-priority
solo and wall time per observed window.
  python3 compare.py [WARMUP_S] FILE..."""
import csv, statistics, sys

warm = float(sys.argv[1]) if len(sys.argv) > 2 and not sys.argv[1].endswith(".csv") else 2.0
files = [f for f in sys.argv[1:] if f.endswith(".csv")]


def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else float("nan")


print("file,windows,observed,obs_p10,obs_p50,obs_p90,best_p50,drop_share,mean_rate,"
      "solo_ms_per_obs,wall_ms_per_obs,hp_kernels_per_obs")
for f in files:
    rows = [r for r in csv.reader(l for l in open(f) if not l.startswith("#"))]
    rows = [r for r in rows if int(r[0]) >= warm * 1e9]
    ob = [r for r in rows if r[4] == "1"]
    obs = [float(r[5]) for r in ob]
    best = [float(r[6]) for r in ob if float(r[6]) > 0]
    drops = sum(1 for r in ob if float(r[6]) > 0 and float(r[5]) < 0.95 * float(r[6]))
    print("%s,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.4f,%.3f,%.3f,%.1f" % (
        f.rsplit("/", 1)[-1], len(rows), len(ob), q(obs, .1), q(obs, .5), q(obs, .9),
        q(best, .5), drops / len(ob) if ob else 0, statistics.mean(float(r[8]) for r in rows),
        statistics.mean(float(r[1]) for r in ob) / 1e6, statistics.mean(float(r[2]) for r in ob) / 1e6,
        statistics.mean(float(r[3]) for r in ob)))
