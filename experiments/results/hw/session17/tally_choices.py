#!/usr/bin/env python3
"""tally_choices.py HW.csv SIM.csv: Tally's configuration choices (TALLY_TALLY_LOG) on
the H100 and in the simulator, shape by shape: for each kernel shape (name, grid,
block) chosen in both, the original's time, the pick (mode and blocks per SM), its
speed and estimated latency on each side, and, where the picks differ, how the
simulator timed the H100's pick. Shapes are those of the first run in each log."""
import csv
import sys


def load(path):
    runs, cur = [], None
    for row in csv.reader(open(path)):
        if not row:
            continue
        if row[0].startswith("#"):
            cur = {}
            runs.append(cur)
            continue
        name, grid, block, mode, bps, t, speed, lat, chosen = row
        ent = cur.setdefault((name, grid, block), {"cands": {}, "pick": None})
        key = (mode, int(bps))
        ent["cands"][key] = (int(t), float(speed), int(lat))
        if chosen == "1":
            ent["pick"] = key
        if mode == "whole" and ent["pick"] is None and chosen == "1":
            ent["pick"] = key
    for run in runs:
        for ent in run.values():
            if ent["pick"] is None:
                ent["pick"] = ("whole", 0)
    return runs


h, s = load(sys.argv[1]), load(sys.argv[2])
same = diff = 0
rows = []
for hr, sr in zip(h, s):
    for k, he in hr.items():
        se = sr.get(k)
        if not se:
            continue
        hp, sp = he["pick"], se["pick"]
        t0h, t0s = he["cands"][("whole", 0)][0], se["cands"][("whole", 0)][0]
        if hp == sp:
            same += 1
            continue
        diff += 1
        rows.append((t0h, k, hp, sp, he, se))
print(f"shapes chosen in both: {same + diff}; the same pick {same}, a different one {diff}")
mode_pairs = {}
for r in rows:
    mode_pairs[(r[2][0], r[3][0])] = mode_pairs.get((r[2][0], r[3][0]), 0) + 1
print("different picks, H100 -> simulator modes:", ", ".join(f"{a}->{b} {n}" for (a, b), n in sorted(mode_pairs.items())))
print("\nlongest 25 (original us on the H100 / simulated; pick: mode bps speed latency us)")
for t0h, k, hp, sp, he, se in sorted(rows, key=lambda r: -r[0])[:25]:
    hc, sc = he["cands"][hp], se["cands"][sp]
    sim_of_hw = se["cands"].get(hp)
    hw_of_sim = he["cands"].get(sp)
    print(f"{k[0][:44]:44s} {k[1]:>12s} {t0h/1e3:7.1f}/{se['cands'][('whole', 0)][0]/1e3:7.1f} | "
          f"H100 {hp[0]:5s}{hp[1]:2d} {hc[1]:.2f} {hc[2]/1e3:5.1f} (sim {sim_of_hw[1] if sim_of_hw else float('nan'):.2f}) | "
          f"sim {sp[0]:5s}{sp[1]:2d} {sc[1]:.2f} {sc[2]/1e3:5.1f} (H100 {hw_of_sim[1] if hw_of_sim else float('nan'):.2f})")
