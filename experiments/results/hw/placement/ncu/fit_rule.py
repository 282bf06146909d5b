"""How well simple rules predict the shared-memory carveout the driver chose
(ncu's launch__shared_mem_config_size in carveout_rule_ncu.csv): carveout = the
smallest H100 option >= max(floor, min(nmax, m x occupancy without shared
memory) x (the block's shared memory + 1 KB reserved, in 128-byte units)).
    python3 fit_rule.py carveout_rule_ncu.csv"""
import csv, itertools, math, sys

rows = list(csv.reader(open(sys.argv[1] if len(sys.argv) > 1 else 'carveout_rule_ncu.csv')))
hdr, d = None, {}
for r in rows:
    if r and r[0] == 'ID':
        hdr = r
        continue
    if not hdr or len(r) != len(hdr):
        continue
    x = dict(zip(hdr, r))
    d.setdefault(int(x['ID']), {})[x['Metric Name']] = x['Metric Value'].replace(',', '')
pts = []
for i, m in sorted(d.items()):
    pts.append((int(m['launch__block_size']), int(m['launch__registers_per_thread']),
                int(m['launch__shared_mem_per_block_dynamic']) + int(m['launch__shared_mem_per_block_static']),
                int(m['launch__shared_mem_config_size']) // 1024))
opts = [0, 8, 16, 32, 64, 100, 132, 164, 196, 228]


def occ_other(thr, regs):
    warps = (thr + 31) // 32
    rpw = ((regs * 32 + 255) // 256) * 256
    return min(32, 64 // warps, 65536 // (rpw * warps))


def rule(thr, regs, sm, m, nmax, floor):
    n = min(nmax, m * occ_other(thr, regs))
    need = max(floor * 1024, n * math.ceil((sm + 1024) / 128) * 128)
    return next((o for o in opts if o * 1024 >= need), 228)


res = []
for m, nmax, floor in itertools.product([1, 1.5, 2, 3, 4], [16, 32], [0, 8, 16, 32]):
    res.append((sum(rule(t, r, s, m, nmax, floor) == c for t, r, s, c in pts), m, nmax, floor))
res.sort(key=lambda x: (-x[0], x[1:]))
print("launches:", len(pts))
print("right  m  nmax floor(KB)")
for ok, m, nmax, floor in res[:8]:
    print("%5d %4g %4d %4d" % (ok, m, nmax, floor))
print("\nthreads regs smem_B chosen_KB rule(1,32,0) rule(1,32,32)")
for t, r, s, c in pts:
    print("%7d %4d %6d %9d %12d %13d" % (t, r, s, c, rule(t, r, s, 1, 32, 0), rule(t, r, s, 1, 32, 32)))
