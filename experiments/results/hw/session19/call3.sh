#!/bin/sh
# Session 19's third device run, on a fresh machine (the warm one was given back first,
# since the slow phases come with the machine): session 18's sleep.json (MobileNetV3
# beside ResNet-50 training under tally, each alone; 2 x 8 s after 2 s, seed 6), whose
# MobileNetV3 rows show slow phases on some machines, with every GPU clock sample
# (TALLY_GPU_SAMPLE_LOG), every timer (TALLY_TIMER_LOG) and a spinning host probe on
# the last CPU (tally-run jitter, stalls of 50 us or more), to see what moves when the
# requests slow down. One archive comes back: call3.tar.xz.
out=${1:?usage: call3.sh OUTDIR}
hw=experiments/results/hw; run=build/dev/tally-run; w=/tmp/call3; mkdir -p $w
[ -x $run ] || xz -dk $run.xz || exit 1
export TALLY_CALIB_DB=/tmp/calib.sqlite; xz -dc $hw/calib.sqlite.xz > $TALLY_CALIB_DB || exit 1
{ nproc; uname -r; cat /proc/loadavg; nvidia-smi -q -d PERFORMANCE,CLOCK,POWER
  nvidia-smi --query-gpu=pci.bus_id,persistence_mode,clocks.sm,power.limit,vbios_version --format=csv; } > $w/machine.txt 2>&1
last=$(( $(nproc) - 1 ))
taskset -c $last $run jitter -q -t 100 --threshold-us 50 --csv $w/jitter_during.csv > /dev/null &
probe=$!
t0=$(date +%s)
TALLY_GPU_SAMPLE_LOG=$w/clocks.csv TALLY_TIMER_LOG=$w/timers.csv $run run -s $hw/session18/sleep.json \
  -q -d $w/sleep3.db > $w/sleep3.log 2>&1
echo "rc=$? in $(( $(date +%s) - t0 )) s"; grep -E "^[a-z-]+ +- +[0-9] +mobilenet" $w/sleep3.log
kill $probe 2>/dev/null
python3 - $w/sleep3.db <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute('pragma wal_checkpoint(truncate)')
for run, pol in c.execute("select run_id, policy from runs order by run_id").fetchall():
    rows = c.execute("select start_ns, end_ns from requests where run_id=? and job_id=0 order by arrival_ns", (run,)).fetchall()
    if len(rows) < 100: continue
    svc = [e - s for s, e in rows]; med = sorted(svc)[len(svc) // 2]
    ph, k = [], 0
    for (s, e), v in zip(rows, svc):
        if v > 1.6 * med: k += 1; continue
        if k >= 3: ph.append(s)
        k = 0
    m = dict(c.execute("select name, value from metrics where run_id=? and job_id=-1 and name like 'gpu_%'", (run,)).fetchall())
    print(run, pol, 'slow phases', len(ph), 'sm min/mean', m.get('gpu_sm_mhz_min'), m.get('gpu_sm_mhz_mean'), 'dips', m.get('gpu_sm_dip_samples'), 'reasons', m.get('gpu_clock_reasons'))
PY
cd $w && tar cJf $out/call3.tar.xz . && ls -la $out
