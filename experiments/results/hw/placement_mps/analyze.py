"""placement_mps's runs: per scenario, per victim launch and as medians over the
launches, the victim's wait (first block start - launch stamp), span, SMs used,
most blocks on one SM and median block time; and the background: on the SMs the
victim used, the gap from the last background block end to the victim's first
block there, whether background blocks started there while the victim waited
(after the launch, before its first block on that SM), and the background
kernels' durations and gaps with and without a victim in their window.
    python3 analyze.py OUTDIR [-q]     (-q: no per-launch tables)
OUTDIR holds raw/SCENARIO/ folders (run.sh's, before packing; or any folders
with a launches.csv) or run.sh's *.tar.gz (members raw/SCENARIO/FILE).
Python 3 standard library only."""
import collections
import csv
import io
import os
import statistics
import sys
import tarfile

US = 1e3  # ns a microsecond


def load(outdir):
    """{scenario: {file name: text}} from folders or tarballs under outdir."""
    sc = collections.defaultdict(dict)
    for root, _dirs, files in os.walk(outdir):
        if 'launches.csv' in files:
            name = os.path.basename(root)
            for f in files:
                if f.endswith(('.csv', '.txt', '.log')):
                    with open(os.path.join(root, f), encoding='utf-8', errors='replace') as fh:
                        sc[name][f] = fh.read()
        for f in files:
            if f.endswith('.tar.gz'):
                with tarfile.open(os.path.join(root, f), 'r:gz') as t:
                    for m in t.getmembers():
                        parts = m.name.split('/')
                        if not m.isfile() or len(parts) < 2:
                            continue
                        name, fname = parts[-2], parts[-1]
                        if name in sc and fname in sc[name] and not fname.endswith('.log'):
                            continue  # unpacked copy already read
                        data = t.extractfile(m).read().decode('utf-8', 'replace')
                        sc[name][fname] = data
    return {k: v for k, v in sc.items() if 'launches.csv' in v}


def rows(text):
    """The CSV's rows as dicts, one at a time (the background's blocks run to
    hundreds of thousands of rows)."""
    return csv.DictReader(io.StringIO(text)) if text else iter(())


def meta(text):
    d = {}
    for line in (text or '').splitlines():
        if '=' in line:
            k, v = line.split('=', 1)
            d[k.strip()] = v.strip()
    return d


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, w=7, p=1):
    if x is None:
        return '%*s' % (w, '-')
    if isinstance(x, int):
        return '%*d' % (w, x)
    return '%*.*f' % (w, p, x)


def bg_state(kernels, stamp):
    """Where the launch stamp fell in the background: busy (a kernel running),
    gap (between two kernels), before, after (the background over), none."""
    if not kernels:
        return 'none', None
    if stamp < kernels[0]['start']:
        return 'before', None
    for k in kernels:
        if k['start'] <= stamp < k['end']:
            return 'busy', k
    if stamp >= kernels[-1]['end']:
        return 'after', None
    return 'gap', None


def analyze_launch(L, vblocks, bblocks, kernels, kidx):
    """One victim launch. vblocks: (sm, start, end) rel. to the stamp;
    bblocks: (kernel, sm, start, end) rel. to the stamp; kernels: absolute."""
    r = {}
    stamp = L['stamp']
    starts = [s for _, s, _ in vblocks]
    r['blocks'] = len(vblocks)
    if not vblocks:
        return r
    first = min(starts)
    r['wait'] = first / US
    r['cut'] = first > 1200 * US  # bg_blocks.csv leaves out the middle of such a wait
    r['call'] = (L['after'] - stamp) / US
    r['span'] = (max(e for _, _, e in vblocks) - first) / US
    r['spread'] = (max(starts) - first) / US
    per = collections.Counter(sm for sm, _, _ in vblocks)
    r['sms'] = len(per)
    r['maxsm'] = max(per.values())
    r['blk'] = med([(e - s) / US for _, s, e in vblocks])
    state, k0 = bg_state(kernels, stamp)
    r['state'] = state
    if k0 is not None:
        # the kernel running at the launch: how far it had come when the victim's
        # first block started (0 its start, 1 its end), and that block's start
        # after its end (negative: the victim started before it ended)
        dur = k0['end'] - k0['start']
        r['k0_frac'] = (stamp + first - k0['start']) / dur if dur > 0 else None
        r['first_after_k0_end'] = (stamp + first - k0['end']) / US
    # background kernels that started after the launch, before the victim's first block
    r['bgk_started_waiting'] = sum(1 for k in kernels if stamp < k['start'] < stamp + first)
    if not kernels:
        return r
    vfirst = {}
    vlast = {}
    for sm, s, e in vblocks:
        vfirst[sm] = min(vfirst.get(sm, s), s)
        vlast[sm] = max(vlast.get(sm, e), e)
    bysm = collections.defaultdict(list)
    for k, sm, s, e in bblocks:
        bysm[sm].append((k, s, e))
    resident = set(sm for sm, l in bysm.items() if any(s <= 0 < e for _, s, e in l))
    r['bg_sms_at_launch'] = len(resident)
    gaps, started, lastst, drain, held, shared, began = [], [], [], [], [], 0, 0
    for sm, f in vfirst.items():
        l = bysm.get(sm, [])
        ended = [(e, k) for k, s, e in l if e <= f]
        if ended:
            e, k = max(ended)
            gaps.append((f - e) / US)
            kk = kidx.get(k)
            if kk is not None:
                # how long before its kernel's end this SM drained (> 0: the
                # kernel still ran elsewhere), and whether by more than 1.5 of
                # its blocks' time (and 20 us): blocks of it were still being
                # started elsewhere, not here
                d = (kk['end'] - stamp - e) / US
                drain.append(d)
                held.append(d > max(20.0, 1.5 * kk['med_block'] / US))
        n = sum(1 for _, s, _ in l if 0 <= s < f)
        started.append(n)
        began += n > 0
        st = [s for _, s, _ in l if s < f]
        if st:
            lastst.append(max(st) / US)
        if any(s < vlast[sm] and e > f for _, s, e in l):
            shared += 1
    r['gap'] = med(gaps)
    r['gap_min'] = min(gaps) if gaps else None
    r['vsm_bg_started'] = began  # victim SMs where bg blocks started while it waited there
    r['vsm_bg_started_frac'] = began / len(vfirst)
    r['bg_started_per_vsm'] = med(started)
    r['bg_last_start'] = med(lastst)  # last bg block start before the victim's, rel. launch
    r['drain_before_kend'] = med(drain)
    r['drain_held'] = sum(held) / len(held) if held else None
    r['shared_sms'] = shared
    # the other SMs: bg block starts per SM during the whole wait (launch .. first block)
    others = [sm for sm in bysm if sm not in vfirst]
    if others:
        r['bg_started_per_other_sm'] = med([sum(1 for _, s, _ in bysm[sm] if 0 <= s < first) for sm in others])
    return r


def bg_throughput(kernels, windows):
    """Durations and gaps of the background's kernels, with a victim window
    [stamp, last end] overlapping them and without (the first two kernels left out)."""
    def hit(a, b):
        return any(s < b and e > a for s, e in windows)
    dw, dn, gw, gn = [], [], [], []
    ks = kernels[2:]
    for i, k in enumerate(ks):
        (dw if hit(k['start'], k['end']) else dn).append((k['end'] - k['start']) / US)
        if i + 1 < len(ks):
            a, b = k['end'], ks[i + 1]['start']
            g = (b - a) / US
            (gw if hit(a, b) or hit(k['start'], ks[i + 1]['end']) else gn).append(g)
    return dw, dn, gw, gn


def scenario(name, files, quiet, summary):
    mv, mb = meta(files.get('meta_victim.txt')), meta(files.get('meta_bg.txt'))
    print('== %s' % name)
    print('   victim: %s, %s iters, alone %s us (calibration), carveout %s; clock %s, bound gap %s ns; %s of %s launches'
          % (mv.get('victim', '?'), mv.get('victim_iters', '?'), mv.get('victim_alone_us', '?'),
             mv.get('carveout', '?'), mv.get('clock_method', '?'), mv.get('clock_bound_gap_ns', '?'),
             mv.get('launches', '?'), mv.get('launches_asked', '?')))
    if mb:
        print('   background: %s, %s iters, alone %s us a kernel, %s kernels, %s ms launch to done'
              % (mb.get('bg', '?'), mb.get('bg_iters', '?'), mb.get('bg_alone_us', '?'),
                 mb.get('kernels', '?'), mb.get('host_launch_to_done_ms', '?')))
    launches = []
    for r in rows(files.get('launches.csv')):
        launches.append({'i': int(r['launch']), 'stamp': int(r['stamp_ns']), 'after': int(r['after_ns']),
                         'synced': int(r['synced_ns']), 'first': int(r['first_ns']),
                         'last_end': int(r['last_end_ns'])})
    vb = collections.defaultdict(list)
    for r in rows(files.get('victim_blocks.csv')):
        vb[int(r['launch'])].append((int(r['sm']), int(r['start']), int(r['end'])))
    bb = collections.defaultdict(list)
    for r in rows(files.get('bg_blocks.csv')):
        bb[int(r['launch'])].append((int(r['kernel']), int(r['sm']), int(r['start']), int(r['end'])))
    kernels = []
    for r in rows(files.get('bg_kernels.csv')):
        if int(r['blocks']) > 0:
            kernels.append({'k': int(r['kernel']), 'start': int(r['start_ns']), 'end': int(r['end_ns']),
                            'blocks': int(r['blocks']), 'med_block': int(r['med_block_ns'])})
    kernels.sort(key=lambda k: k['start'])
    kidx = {k['k']: k for k in kernels}
    res = []
    for L in launches:
        r = analyze_launch(L, vb.get(L['i'], []), bb.get(L['i'], []), kernels, kidx)
        r['i'] = L['i']
        res.append(r)
    cols = [('i', 'launch', 3, 0), ('state', 'bg at launch', 6, 0), ('wait', 'wait us', 7, 1),
            ('call', 'launch call us', 5, 1), ('span', 'span us', 6, 1), ('sms', 'SMs used', 4, 0),
            ('maxsm', 'most blocks on one SM', 3, 0), ('blk', 'median block us', 6, 1),
            ('k0_frac', 'running bg kernel done (0-1) at the first victim block', 5, 2),
            ('first_after_k0_end', 'first victim block - that kernel end, us', 7, 1),
            ('bgk_started_waiting', 'bg kernels started while the victim waited', 3, 0),
            ('bg_sms_at_launch', 'SMs with a bg block at the launch', 4, 0),
            ('gap', 'victim SMs: median first victim block - last bg end there, us', 6, 1),
            ('gap_min', 'least of those', 6, 1),
            ('vsm_bg_started_frac', 'share of victim SMs where bg blocks started while it waited there', 5, 2),
            ('bg_started_per_vsm', 'bg blocks started there (median a victim SM)', 5, 1),
            ('bg_started_per_other_sm', 'bg blocks started during the wait on the other SMs (median an SM)', 5, 1),
            ('bg_last_start', 'victim SMs: last bg block start there before the victim, rel. launch, us', 7, 1),
            ('drain_before_kend', 'victim SMs: drained how long before their last bg block\'s kernel ended, us', 6, 1),
            ('drain_held', 'share of victim SMs drained more than 1.5 of that kernel\'s median block time (and 20 us) before it ended', 5, 2),
            ('shared_sms', 'victim SMs where bg blocks ran beside the victim\'s', 4, 0)]
    if not quiet and res:
        print('   columns: ' + '; '.join('%s = %s' % (k, d) for k, d, _, _ in cols))
        print('   ' + ' '.join('%*s' % (max(w, len(k)), k) for k, _, w, _ in cols))
        for r in res:
            cells = []
            for k, _, w, p in cols:
                v = r.get(k)
                w = max(w, len(k))
                cells.append('%*s' % (w, v) if isinstance(v, str) else fmt(v, w, p))
            print('   ' + ' '.join(cells))
    busy = [r for r in res if r.get('state') == 'busy']
    for label, sel in (('all launches', res), ('launches with a bg kernel running at the launch', busy)):
        if not sel or (label.startswith('launches with') and not kernels):
            continue
        print('   medians over %d %s:' % (len(sel), label))
        line = []
        for k, d, _, p in cols[2:]:
            v = med([r.get(k) for r in sel])
            if v is not None:
                line.append('%s %s' % (k, fmt(v, 0, p)))
        print('     ' + ', '.join(line))
    states = collections.Counter(r.get('state', '-') for r in res)
    ncut = sum(1 for r in res if r.get('cut'))
    if ncut:
        print('   %d launches waited over 1.2 ms: their background blocks from 1 ms after the launch to 200 us before '
              'the first victim block were not recorded, so the counts of blocks started while waiting are low' % ncut)
    print('   bg at the launch: ' + ', '.join('%s %d' % kv for kv in sorted(states.items())))
    dw = dn = gw = gn = []
    if kernels:
        windows = [(L['stamp'], max(L['last_end'], L['synced'])) for L in launches]
        dw, dn, gw, gn = bg_throughput(kernels, windows)
        print('   background kernels: with a victim in their window %d, median %s us (mean %s); without %d, median %s us (mean %s)'
              % (len(dw), fmt(med(dw), 0), fmt(statistics.mean(dw) if dw else None, 0), len(dn), fmt(med(dn), 0),
                 fmt(statistics.mean(dn) if dn else None, 0)))
        print('   gaps between them: with a victim %d, median %s us (max %s); without %d, median %s us (max %s)'
              % (len(gw), fmt(med(gw), 0, 2), fmt(max(gw) if gw else None, 0), len(gn), fmt(med(gn), 0, 2),
                 fmt(max(gn) if gn else None, 0)))
        nb = max(1, len(busy) + states.get('gap', 0))
        if dw and dn:
            lost = sum(dw) + sum(gw) - len(dw) * med(dn) - len(gw) * (med(gn) or 0)
            print('   background time lost to the victims: %.1f us in all, %.1f us a victim launch beside it'
                  % (lost, lost / nb))
    sel = busy if kernels else res
    summary.append((name, len(sel), len(res), {k: med([r.get(k) for r in sel]) for k, _, _, _ in cols[2:]},
                    med(dw) if kernels else None, med(dn) if kernels else None))
    print()


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('-')]
    quiet = '-q' in sys.argv[1:]
    outdir = args[0] if args else '.'
    sc = load(outdir)
    if not sc:
        print('no scenario (a folder with launches.csv, or run.sh\'s *.tar.gz) under %s' % outdir)
        return 1
    summary = []
    order = sorted(sc, key=lambda n: (not n.startswith('mps'), 'alone' not in n, n))
    for name in order:
        scenario(name, sc[name], quiet, summary)
    print('== summary (medians over the launches with a background kernel running at the launch; alone: all)')
    hdr = ('scenario', 'n', 'wait', 'span', 'SMs', 'max/SM', 'blk', 'vSMbg', 'gap', 'drainK', 'held', 'shared',
           'bgK+v', 'bgK')
    print('%-28s %5s %7s %7s %4s %6s %6s %6s %6s %7s %5s %6s %7s %7s' % hdr)
    for name, n, tot, m, dw, dn in summary:
        print('%-28s %5s %s %s %s %s %s %s %s %s %s %s %s %s'
              % (name, '%d/%d' % (n, tot), fmt(m['wait'], 7), fmt(m['span'], 7), fmt(m['sms'], 4, 0),
                 fmt(m['maxsm'], 6, 0), fmt(m['blk'], 6), fmt(m['vsm_bg_started_frac'], 6, 2), fmt(m['gap'], 6),
                 fmt(m['drain_before_kend'], 7), fmt(m['drain_held'], 5, 2), fmt(m['shared_sms'], 6, 0),
                 fmt(dw, 7), fmt(dn, 7)))
    print('n: launches counted/all; wait, span, blk (median block): us; vSMbg: share of the victim\'s SMs where '
          'background blocks started while it waited there; gap: first victim block - last background block end '
          'on its SM, us; drainK: how long before their kernel ended the victim\'s SMs drained, us; held: share '
          'drained more than 1.5 blocks\' time (and 20 us) before; shared: victim SMs with background blocks beside its own; bgK+v, bgK: median '
          'background kernel, us, with and without a victim in its window')
    return 0


if __name__ == '__main__':
    sys.exit(main())
