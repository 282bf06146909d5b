#!/usr/bin/env bash
# The tracer's overhead on ResNet-50 training, measured in lockstep: two runs
# of resnet50_train.py at the same time, taking turns step by step (--turns:
# A's step, then B's, then A's...), so that both see the same machine state a
# step apart. This machine's host-bound steps drift by 10-30% over seconds
# and between processes (experiments/results/tracer/README.md), far more than
# the cost being measured; the step-by-step ratio of two neighbours in time is
# not. Each PAIR is A:B, configurations from the list below; list both orders
# (baseline:X and X:baseline) so that going first or second, and the CPU set
# (PIN_A, PIN_B), cancel; baseline:baseline is the null test (expect 1.000).
# Whoever waits for its turn sleeps in read(2); its GPU is idle; each step
# starts with the GPU handed over from the other context (~0.1 ms, paid by both).
#
# From the repository root, the tracer built in $B:
#   PAIRS="baseline:baseline baseline:lite_every lite_every:baseline" \
#   PIN_A=2-7 PIN_B=8-13 B=build/device OUT=DIR experiments/results/tracer/lockstep/run.sh
# Variables: PAIRS, STEPS (200), BATCH (32), REPEATS (1: the PAIRS list
# repeated), WARMUP (20 steps dropped from each side), TIMEOUT_S (300 a pair),
# RECORD_EVERY (10), LATENCY_SAMPLE (10). Writes OUT/pairs.csv and
# OUT/summary.csv (summarize.py) and keeps each side's step times.
set -u
B=${B:-build/device}
STEPS=${STEPS:-200}
O=${OUT:-/tmp/lockstep}
WL=${WL:-traces/tracer/workloads}
D=experiments/results/tracer/lockstep
mkdir -p "$O"
if ls "$O"/p*_[AB]_*.json >/dev/null 2>&1; then
    # pair numbers restart at 1: older files would be mixed into the summary
    echo "run.sh: $O already holds pair files (p*_A_*.json): use an empty OUT" >&2
    exit 73
fi
W=$(mktemp -d /tmp/lockstep.XXXXXX)
export PYTHONUNBUFFERED=1

# side CONFIG JSON IN OUT PIN: the command line of one side
side() {
    local pin="" run t="$B/tally-trace -q -o $2.trace.json --iteration-sync device:1"
    [ -n "$5" ] && pin="taskset -c $5"
    run="python3 $WL/resnet50_train.py --steps $STEPS --batch ${BATCH:-32} --json $2 --turns $3,$4"
    case $1 in
    baseline) echo "$pin $run" ;;
    lite) echo "$pin $t -- $pin $run" ;;
    lite_every) echo "$pin $t --record-every ${RECORD_EVERY:-10} -- $pin $run" ;;
    # recording the window's first iteration only: every later step is an
    # unrecorded one (what --record-every's steps between records cost), with
    # the default host timeline, or with GPU records only (nothing but the
    # iteration syncs' callbacks left on)
    # --record-every 10 from iteration START_AFTER (100) on: the steps before
    # the window have never had the GPU kinds turned back on (split_window.py
    # compares them with the unrecorded steps inside it)
    lite_every_late) echo "$pin $t --record-every ${RECORD_EVERY:-10} --start-after-iterations ${START_AFTER:-100} -- $pin $run" ;;
    # (needs the tracer of commit aa8467e: the flush experiment, taken out)
    lite_every_late_flush) echo "env TALLY_TRACE_FLUSH_AFTER_RECORD=1 $pin $t --record-every ${RECORD_EVERY:-10} --start-after-iterations ${START_AFTER:-100} -- $pin $run" ;;
    # (needs the tracer of commit b71884b: the per-context experiment, taken out)
    lite_every_late_ctx) echo "env TALLY_TRACE_TOGGLE_CONTEXT=1 $pin $t --record-every ${RECORD_EVERY:-10} --start-after-iterations ${START_AFTER:-100} -- $pin $run" ;;
    every_off) echo "$pin $t --record-every 100000 -- $pin $run" ;;
    every_off_none) echo "$pin $t --record-every 100000 --host-timeline none -- $pin $run" ;;
    lite_every_completion) echo "$pin $t --record-every ${RECORD_EVERY:-10} --sync-records completion -- $pin $run" ;;
    lite_sample) echo "$pin $t --latency-sample ${LATENCY_SAMPLE:-10} -- $pin $run" ;;
    gpu_only) echo "$pin $t --host-timeline none -- $pin $run" ;;
    torch_profiler) echo "$pin $run --profiler" ;;
    *) echo "unknown configuration '$1'" >&2; return 1 ;;
    esac
}

n=0
for r in $(seq 1 "${REPEATS:-1}"); do
    for pair in ${PAIRS:-baseline:baseline baseline:lite_every lite_every:baseline}; do
        n=$((n + 1))
        a=${pair%%:*} b=${pair##*:}
        ja="$O/p${n}_A_$a.json" jb="$O/p${n}_B_$b.json"
        ab="$W/ab$n" ba="$W/ba$n"
        mkfifo "$ab" "$ba"
        ca=$(side "$a" "$ja" "$ba" "$ab" "${PIN_A:-}") || exit 64
        cb=$(side "$b" "$jb" "$ab" "$ba" "${PIN_B:-}") || exit 64
        echo "== pair $n: A=$a B=$b ($(date +%T))" >&2
        # hold the FIFOs open (a FIFO's bytes die with its last opener) and
        # give A the first turn
        exec 7<>"$ba" 8<>"$ab"
        printf t >&7
        timeout "${TIMEOUT_S:-300}" $ca > "$W/a$n.log" 2>&1 &
        pa=$!
        timeout "${TIMEOUT_S:-300}" $cb > "$W/b$n.log" 2>&1 &
        pb=$!
        # one side failing leaves the other waiting for its turn: end it
        wait -n $pa $pb || kill $pa $pb 2>/dev/null
        wait $pa; ra=$?
        wait $pb; rb=$?
        exec 7>&- 8>&-
        tail -n 1 "$W/a$n.log" "$W/b$n.log" >&2
        [ "$ra" = 0 ] && [ "$rb" = 0 ] || echo "pair $n failed: A exit $ra, B exit $rb" >&2
        rm -f "$ab" "$ba" "$ja.trace.json" "$jb.trace.json"
    done
done
python3 $D/summarize.py "$O" "${WARMUP:-20}"
