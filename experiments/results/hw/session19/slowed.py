#!/usr/bin/env python3
"""Per H100 validation (the CSVs of validate_all.sh, in validate/): inference rows, p99
within 10%, the rows tally-validate marks "hw slowed" (3 or more slow phases beyond the
simulator's), p99 within 10% among the rows that are not, and among the rows whose queue
grows on neither side (with how many of them are slowed); then every slowed row.
    python3 slowed.py validate/*.csv > slowed.txt"""
import csv, sys

def slowed(r):
    return r['slow_phases_hw'] != '' and float(r['slow_phases_hw']) >= float(r['slow_phases_sim']) + 3

rows = []
print('%-36s %9s %9s %18s %22s' % ('validation', 'p99 ok', 'slowed', 'p99 ok, unslowed',
                                   'steady rows: ok, slowed'))
for path in sys.argv[1:]:
    inf = [r for r in csv.DictReader(open(path)) if r['role'] == 'inference' and r['p99_err'] != '']
    ok = lambda rs: sum(abs(float(r['p99_err'])) <= 0.10 for r in rs)
    s = [r for r in inf if slowed(r)]
    u = [r for r in inf if not slowed(r)]
    name = path.split('/')[-1][len('validation_'):-4]
    st = [r for r in inf if r['queue_grows_sim'] == '0' and r['queue_grows_hw'] == '0']
    print('%-36s %6d/%-2d %6d/%-2d %15d/%-2d %15d/%-2d %3d' % (name, ok(inf), len(inf), len(s), len(inf), ok(u),
          len(u), ok(st), len(st), sum(slowed(r) for r in st)))
    rows += [(name, r) for r in s]
print('\nslowed rows: validation, pair, policy, job, slow phases sim / hw, p99 error, service-time error')
for name, r in rows:
    print('%-24s %-28s %-16s %-13s %3s / %-4s p99 %+5.0f%%  svc %+5.1f%%' % (
        name, r['job_set'], r['policy'], r['job'], r['slow_phases_sim'], r['slow_phases_hw'],
        100 * float(r['p99_err']), 100 * float(r['service_err'] or 0)))
