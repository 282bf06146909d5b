"""rule.py MATRIX.txt: the co-residency rule set against the H100's matrix.
Rule (sim carveout 2): S's blocks join an SM that F's blocks configured iff what
S's occupancy takes in shared memory (its blocks an SM alone x (dynamic +
static + 1 KB reserved)) fits in F's configured carveout (Nsight Compute's
launch__shared_mem_config_size, ncu.txt's summary at the end of MATRIX.txt).
Shapes with an explicit carveout preference are counted apart. Prints the pairs
where the rule and the H100 differ, per variant."""
import re
import sys

txt = open(sys.argv[1]).read()
shapes = {}
for m in re.finditer(r"^\s*(\d+) (t\S+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", txt, re.M):
    i, name, thr, dyn, pref, regs, st, occ, warps, smem = m.groups()
    shapes[int(i)] = dict(name=name, occ=int(occ), smem=int(smem), pref=pref)
for m in re.finditer(r"^\s+(\d+) void spin<\d+>\(Args\)\s+\d+\s+\d+\s+\d+\s+(\d+)", txt, re.M):
    shapes[int(m.group(1))]['config'] = int(m.group(2))
grids = re.findall(r"==== variant (\w+).*?\nclass.*?\nF \\ S[^\n]*\n((?:t\S+[^\n]*\n)+)", txt, re.S)
for variant, grid in grids:
    agree = total = 0
    miss = []
    for row in grid.strip().split("\n"):
        parts = row.split()
        f = next(i for i, s in shapes.items() if s['name'] == parts[0])
        for s_i, cls in enumerate(parts[1:]):
            if cls not in ('co', 'wait'):
                continue
            F, S = shapes[f], shapes[s_i]
            if F['pref'] != 'none' or S['pref'] != 'none':
                continue
            pred = 'co' if S['occ'] * S['smem'] <= F['config'] else 'wait'
            total += 1
            agree += pred == cls
            if pred != cls:
                miss.append("%s -> %s: H100 %s, rule %s (S needs %d B, F's carveout %d B)" %
                            (F['name'], S['name'], cls, pred, S['occ'] * S['smem'], F['config']))
    print("variant %s: the rule agrees on %d of %d pairs without a carveout preference" % (variant, agree, total))
    for x in miss:
        print("  " + x)
