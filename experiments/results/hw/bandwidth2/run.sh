#!/bin/sh
# bandwidth2: disjoint2.cu, kernels on disjoint SMs with an idle-neighbour baseline,
# stream and FMA victims, SM ids and clocks per run (README.md).
#   sh experiments/results/hw/bandwidth2/run.sh OUTDIR [disjoint2 args: reps=7 seed=N target_us=150 lead_us=0]
# (from the repository root). Compiles to /tmp, samples nvidia-smi every 100 ms into
# OUTDIR/smi.csv while the program runs (stopped on exit, also on error), runs the
# program under timeout 120 and prints OUTDIR/summary.txt.
# OUTDIR ends with: summary.txt, runs.csv (from the program), smi.csv, run.log.
out=${1:?usage: sh run.sh OUTDIR [args]}
shift
here=$(cd "$(dirname "$0")" && pwd)
BIN=/tmp/disjoint2
mkdir -p "$out" || exit 1
log=$out/run.log
: > "$log"
NVCC=nvcc
command -v nvcc > /dev/null 2>&1 || NVCC=/usr/local/cuda/bin/nvcc
{
    echo "disjoint2 run $(date -u +%Y-%m-%dT%H:%M:%SZ) args: $*"
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv,noheader 2>&1
    $NVCC --version 2>&1 | tail -1
} >> "$log"
$NVCC -O2 -arch=sm_90 -o $BIN "$here/disjoint2.cu" >> "$log" 2>&1 || { echo "compile failed"; cat "$log"; exit 1; }

# the throttle field was renamed clocks_event_reasons in newer drivers; use whichever this one knows
fields=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active
nvidia-smi --query-gpu=$fields --format=csv,noheader > /dev/null 2>&1 ||
    fields=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
echo "smi fields: $fields" >> "$log"
nvidia-smi --query-gpu=$fields --format=csv,noheader -lms 100 > "$out/smi.csv" 2>> "$log" &
smi=$!
trap 'kill $smi 2>/dev/null; wait $smi 2>/dev/null' EXIT
trap 'exit 130' INT TERM

t0=$(date +%s)
timeout 120 $BIN "$out" "$@" >> "$log" 2>&1
rc=$?
echo "disjoint2 rc=$rc ($(($(date +%s) - t0)) s)" >> "$log"
sleep 0.3 # one more smi sample after the program
cat "$log"
[ -f "$out/summary.txt" ] && cat "$out/summary.txt"
exit $rc
