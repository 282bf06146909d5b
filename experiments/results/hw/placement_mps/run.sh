#!/bin/sh
# placement_mps: does the victim wait for whole SMs to drain when the background
# is another process, both clients of one MPS server? (README.md)
#   sh experiments/results/hw/placement_mps/run.sh OUTDIR     (from the repository root)
# Under a private MPS daemon (its own pipe and log folders under /tmp), as two
# client processes: the victim alone; beside cmp-seq and memlong-seq; the same
# with every kernel's preferred carveout equal (carveout); the two backgrounds
# with the background's client at below-normal MPS priority (bglow). Then the
# daemon is stopped (always, also on error) and the one-process references run
# without MPS: alone, beside each background, with carveout.
# Whole run bounded to ~225 s of wall time: each program gets at most 40 s, and
# a run that would start with less than 15 s left is skipped.
# OUTDIR ends with: run.log, analysis.txt (analyze.py), and the raw files packed
# as mps_cmp.tar.gz, mps_memlong.tar.gz, same_cmp.tar.gz, same_memlong.tar.gz
# (members raw/SCENARIO/FILE; KEEP_RAW=1 keeps OUTDIR/raw/ unpacked instead).
# Environment: N (victim launches, 20), MS (background length, 80 ms).
out=${1:?usage: sh run.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
N=${N:-20}
MS=${MS:-80}
BIN=/tmp/placement_mps
start=$(date +%s)
deadline=$((start + 225))
mkdir -p "$out/raw" || exit 1
log=$out/run.log
: > "$log"
say() { echo "$*" | tee -a "$log"; }

# seconds a program may take now (at most 40), or fail when under 15 are left
budget() {
    left=$((deadline - $(date +%s)))
    [ $left -ge 15 ] || return 1
    [ $left -gt 40 ] && left=40
    echo $left
}

say "placement_mps run $(date -u +%Y-%m-%dT%H:%M:%SZ) N=$N MS=$MS"
nvidia-smi --query-gpu=name,driver_version,compute_mode --format=csv,noheader >> "$log" 2>&1
/usr/local/cuda/bin/nvcc --version 2>/dev/null | tail -1 >> "$log"
NVCC=nvcc
command -v nvcc > /dev/null 2>&1 || NVCC=/usr/local/cuda/bin/nvcc
$NVCC -O2 -arch=sm_90 -o $BIN "$here/placement_mps.cu" >> "$log" 2>&1 || { say "compile failed"; exit 1; }
say "compiled in $(($(date +%s) - start)) s"

# one run: NAME MODE BG [opts]; MODE pair (bg + victim as two processes), alone,
# same (one process); BGENV is put before the background process's command
run1() {
    name=$1 mode=$2 bg=$3
    shift 3
    d=$out/raw/$name
    rm -rf "$d" && mkdir -p "$d" || return 1
    t=$(budget) || { say "$name: skipped (time budget)"; return 1; }
    t0=$(date +%s)
    case $mode in
    pair)
        env $BGENV timeout $t $BIN bg $bg "$d" ms=$MS "$@" 2> "$d/bg.log" &
        bp=$!
        timeout $t $BIN victim "$d" n=$N "$@" 2> "$d/victim.log"
        vr=$?
        wait $bp
        br=$?
        say "$name: victim rc=$vr bg rc=$br ($(($(date +%s) - t0)) s) $BGENV"
        ;;
    alone)
        timeout $t $BIN alone "$d" n=$N "$@" 2> "$d/victim.log"
        say "$name: alone rc=$? ($(($(date +%s) - t0)) s)"
        ;;
    same)
        timeout $t $BIN same $bg "$d" n=$N ms=$MS "$@" 2> "$d/victim.log"
        say "$name: same rc=$? ($(($(date +%s) - t0)) s)"
        ;;
    esac
    cat "$d"/*.log >> "$log" 2>/dev/null
}

# ------------------------------------------------------------------ MPS part
ctl=
for c in $(command -v nvidia-cuda-mps-control 2>/dev/null) /usr/bin/nvidia-cuda-mps-control \
    /usr/local/nvidia/bin/nvidia-cuda-mps-control /usr/local/cuda/bin/nvidia-cuda-mps-control; do
    [ -x "$c" ] && { ctl=$c; break; }
done
mps_root=
mps_on=0
stop_mps() {
    [ $mps_on = 1 ] || return 0
    mps_on=0
    echo quit | "$ctl" > /dev/null 2>&1
    i=0
    while [ $i -lt 50 ] && [ -e "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid" ]; do
        sleep 0.1
        i=$((i + 1))
    done
    say "mps: daemon stopped (quit sent; pid file $([ -e "$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid" ] && echo still there || echo gone))"
    mkdir -p "$out/raw/mps_logs" && cp "$CUDA_MPS_LOG_DIRECTORY"/*.log "$out/raw/mps_logs/" 2>/dev/null
    say "mps: control.log lines naming a client: $(grep -ci client "$CUDA_MPS_LOG_DIRECTORY/control.log" 2>/dev/null)"
}
trap 'stop_mps' EXIT
trap 'exit 130' INT TERM

if [ -z "$ctl" ]; then
    say "mps: nvidia-cuda-mps-control not found (PATH, /usr/bin, /usr/local/nvidia/bin, /usr/local/cuda/bin): running only the one-process parts"
else
    mps_root=$(mktemp -d /tmp/placement-mps-XXXXXX)
    export CUDA_MPS_PIPE_DIRECTORY=$mps_root/pipe CUDA_MPS_LOG_DIRECTORY=$mps_root/log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if "$ctl" -d >> "$log" 2>&1; then
        mps_on=1
        i=0
        while [ $i -lt 50 ] && ! [ -e "$CUDA_MPS_PIPE_DIRECTORY/control" ]; do
            sleep 0.1
            i=$((i + 1))
        done
        if [ -e "$CUDA_MPS_PIPE_DIRECTORY/control" ]; then
            say "mps: daemon $ctl started (pipe $CUDA_MPS_PIPE_DIRECTORY)"
        else
            say "mps: daemon started but no control pipe in $CUDA_MPS_PIPE_DIRECTORY after 5 s"
            stop_mps
        fi
    else
        say "mps: $ctl -d failed"
    fi
fi

if [ $mps_on = 1 ]; then
    BGENV=
    run1 mps_alone alone -
    say "mps: server list after the first client: $(echo get_server_list | "$ctl" 2>&1 | tr '\n' ' ')"
    run1 mps_cmp-seq pair cmp-seq
    run1 mps_memlong-seq pair memlong-seq
    run1 mps_cmp-seq_carveout pair cmp-seq carveout
    run1 mps_memlong-seq_carveout pair memlong-seq carveout
    BGENV=CUDA_MPS_CLIENT_PRIORITY=1
    run1 mps_cmp-seq_bglow pair cmp-seq
    run1 mps_memlong-seq_bglow pair memlong-seq
    BGENV=
    say "mps: server list at the end: $(echo get_server_list | "$ctl" 2>&1 | tr '\n' ' ')"
    stop_mps
fi

# ------------------------------------------------------------------ one process, no MPS
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
run1 same_alone alone -
run1 same_cmp-seq same cmp-seq
run1 same_memlong-seq same memlong-seq
run1 same_cmp-seq_carveout same cmp-seq carveout
run1 same_memlong-seq_carveout same memlong-seq carveout

python3 "$here/analyze.py" "$out" > "$out/analysis.txt" 2>> "$log"
say "analyze.py rc=$? ($(wc -l < "$out/analysis.txt") lines in analysis.txt)"
# pack NAME PATTERN...: the existing raw/PATTERN folders into NAME.tar.gz
pack() {
    name=$1
    shift
    pats=$*
    set --
    for p in $(cd "$out" && for g in $pats; do echo raw/$g; done); do
        [ -d "$out/$p" ] && set -- "$@" "$p"
    done
    [ $# -gt 0 ] || return 0
    tar czf "$out/$name.tar.gz" -C "$out" "$@" && say "packed $name.tar.gz: $* ($(du -k "$out/$name.tar.gz" | cut -f1) KB)"
}
if [ "${KEEP_RAW:-0}" != 1 ]; then
    ok=1
    pack mps_cmp 'mps_alone' 'mps_cmp-seq*' 'mps_logs' || ok=0
    pack mps_memlong 'mps_memlong-seq*' || ok=0
    pack same_cmp 'same_alone' 'same_cmp-seq*' || ok=0
    pack same_memlong 'same_memlong-seq*' || ok=0
    [ $ok = 1 ] && rm -rf "$out/raw"
fi
say "done in $(($(date +%s) - start)) s"
