#!/bin/sh
# The graph headline's validation on the four node-calibrated H100 runs made since the
# start-up fix that no slow phase touched (seeds 1b, 2b, 6b, 9), with extra simulator
# parameters: per run the rows within the goals (p99 and service time within 10%,
# training within 5%) and the training rows outside 5%. Databases unpacked first
# (xz -dk). From the repository root:
#   sh experiments/results/hw/session19/pack_trial.sh NAME [KEY=VALUE ...]
name=${1:?usage: pack_trial.sh NAME [KEY=VALUE ...]}; shift
out=${TRIAL_DIR:-/tmp}; args=""
for kv in "$@"; do args="$args --sim-param $kv"; done
for s in s1b:session18/graph_node_s1b s2b:session18/graph_node_s2b s6b:session18/graph_node_s6b s9:session19/graph_node_s9; do
  n=${s%%:*}; db=experiments/results/hw/${s#*:}.db
  build/tally-validate -q -j 2 --sim-param launch_latency_ns=12500 --sim-param callback_launch_latency_ns=1100 \
    $args -c $out/tr_${name}_$n.csv experiments/specs/tally_headline.json $db > /dev/null 2>&1 ||
    echo "validate $n failed" >&2
done
python3 - "$name" "$out" "$*" <<'PY'
import csv, sys
name, out, params = sys.argv[1], sys.argv[2], sys.argv[3]
tot, lines = [0, 0, 0], []
for n in ('s1b', 's2b', 's6b', 's9'):
    rs = list(csv.DictReader(open('%s/tr_%s_%s.csv' % (out, name, n))))
    inf = [r for r in rs if r['role'] == 'inference']
    tr = [r for r in rs if r['role'] == 'training']
    p = sum(abs(float(r['p99_err'])) <= .1 for r in inf)
    s = sum(abs(float(r['service_err'])) <= .1 for r in inf if r['service_err'])
    t = sum(abs(float(r['throughput_err'])) <= .05 for r in tr)
    te = sum(abs(float(r['throughput_err'])) for r in tr) / len(tr)
    bad = ['%s/%s %+.0f' % (r['policy'], r['job_set'].split('+')[0], 100 * float(r['throughput_err']))
           for r in tr if abs(float(r['throughput_err'])) > .05]
    lines.append('  %-4s p99 %2d/21  svc %2d/21  train %2d/19 (mean %.1f%%)  %s' % (n, p, s, t, 100 * te, ', '.join(bad)))
    tot = [tot[0] + p, tot[1] + s, tot[2] + t]
print('%s (%s): p99 %d/84, svc %d/84, training %d/76' % (name, params or 'defaults', *tot))
print('\n'.join(lines))
PY
