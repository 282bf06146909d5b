#!/usr/bin/env python3
"""Call 1's (and call 2's) event-loop timer logs (TALLY_TIMER_LOG): per run (a "#" line
starts each device open; the first is tally-run's own probe), when the first timer was
set, and per callback the lateness (fired - due) and per second of the run its mean.
Callbacks are named from CALLBACKS.csv (offset from cu_timer -> function, made with nm
on the unstripped build of call 1: timers_callbacks.csv); without it, offsets.
    python3 timers.py timers.csv.xz [timers_callbacks.csv]"""
import collections, csv, lzma, sys

names = {}
if len(sys.argv) > 2:
    names = {int(r['offset']): r['callback'] for r in csv.DictReader(open(sys.argv[2]))}
runs = []
for line in lzma.open(sys.argv[1], 'rt'):
    if line.startswith('#'):
        runs.append([])
        continue
    due, set_wall, fired, logical, cb = map(int, line.split(','))
    runs[-1].append((due, set_wall, fired, names.get(cb, str(cb))))
for i, r in enumerate(runs):
    if not r:
        continue
    print('open %d: %d timers; first set at %.3f ms' % (i, len(r), r[0][1] / 1e6))
    by = collections.defaultdict(list)
    sec = collections.defaultdict(list)
    for due, set_wall, fired, n in r:
        by[n].append(fired - due)
        sec[int(fired // 1e9)].append(fired - due)
    for n, v in sorted(by.items(), key=lambda x: -len(x[1])):
        v.sort()
        print('  %-20s n %6d  late mean %9.1f us  p50 %8.1f  p99 %9.1f  max %9.1f' % (
            n, len(v), sum(v) / len(v) / 1e3, v[len(v) // 2] / 1e3, v[int(len(v) * .99)] / 1e3, v[-1] / 1e3))
    print('  mean by second of the run (us): ' +
          ' '.join('%d:%.0f' % (k, sum(v) / len(v) / 1e3) for k, v in sorted(sec.items())))
