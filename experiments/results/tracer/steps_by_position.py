"""Per-step times of the overhead runs by step position mod N, relative to each
run's median (steps 11 on): with --record-every N the recorded step stands out,
and the comparison is within one process, free of the run-to-run spread.
  python3 steps_by_position.py OVH_DIR CONFIG [N]   (ovh_CONFIG_*.json files)"""
import glob, json, statistics, sys
d, cfg = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 10
by = [[] for _ in range(n)]
for f in sorted(glob.glob("%s/ovh_%s_*.json" % (d, cfg))):
    s = json.load(open(f))["step_s"]
    med = statistics.median(s[10:])
    for i, x in enumerate(s):
        if i >= 10:
            by[i % n].append(x / med)
print(cfg, " ".join("%d:%.3f" % (m, statistics.median(v)) for m, v in enumerate(by) if v))
