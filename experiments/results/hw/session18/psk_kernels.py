#!/usr/bin/env python3
"""Per-kernel comparison of call 1's psk_rb8 run (ResNet-50 b8 beside ResNet-50
training under priority streams, -k) with its simulated twin, inside the measured
window: per job and kernel name, launches, mean duration and mean SMs, H100 and
simulator. Usage (the twin from tally-validate -k -d SIM.db, as in README.md):
    python3 psk_kernels.py HW.db SIM.db > psk_rb8_kernels.csv"""
import sqlite3, sys

def load(path):
    c = sqlite3.connect(path)
    rid, ws, we = c.execute("select run_id, warmup_ns, warmup_ns + duration_ns from runs "
                            "where policy = 'priority-streams'").fetchone()
    q = ("select job_id, name, count(*), avg(end_ns - start_ns), avg(avg_sms), sum(end_ns - start_ns) "
         "from kernels where run_id = ? and start_ns >= ? and end_ns <= ? group by job_id, name")
    return {(r[0], r[1]): r[2:] for r in c.execute(q, (rid, ws, we))}

hw, sim = load(sys.argv[1]), load(sys.argv[2])
print("job,kernel,launches_hw,launches_sim,mean_us_hw,mean_us_sim,mean_err,avg_sms_hw,avg_sms_sim,total_ms_hw,total_ms_sim")
for k in sorted(hw, key=lambda k: (k[0], -hw[k][3])):
    if k not in sim:
        continue
    h, s = hw[k], sim[k]
    print('%d,"%s",%d,%d,%.2f,%.2f,%+.3f,%.1f,%.1f,%.2f,%.2f' % (k[0], k[1].replace('"', "'"), h[0], s[0],
          h[1] / 1e3, s[1] / 1e3, s[1] / h[1] - 1, h[2], s[2], h[3] / 1e6, s[3] / 1e6))
