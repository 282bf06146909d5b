#!/usr/bin/env bash
# launch_cost under each tracer configuration, ROUNDS rounds (5),
# configurations rotated (CONFIGS, default all but lite_every_off); PIN (e.g.
# 4-7) pins every run with taskset. From the
# repository root, with the tracer built in $B:
#   B=build/device experiments/results/tracer/launch_cost/run.sh > results.txt
set -u
B=${B:-build/device}
D=experiments/results/tracer/launch_cost
nvcc -O2 -arch=sm_90 -o /tmp/launch_cost $D/launch_cost.cu || exit 1
P=""
[ -n "${PIN:-}" ] && P="taskset -c $PIN"
T="$P $B/tally-trace -q -o /tmp/lc.json"
S="--iteration-sync stream:1"
run() {
    case $1 in
    untraced) $P /tmp/launch_cost untraced ;;
    gpu_only) $T $S --host-timeline none -- /tmp/launch_cost gpu_only ;;
    gpu_only_discard) TALLY_TRACE_DISCARD_RECORDS=1 $T $S --host-timeline none -- /tmp/launch_cost gpu_only_discard ;;
    lite) $T $S -- /tmp/launch_cost lite ;;
    lite_sample) $T $S --latency-sample 10 -- /tmp/launch_cost lite_sample ;;
    lite_noqueued) $T $S --launch-times off -- /tmp/launch_cost lite_noqueued ;;
    lite_launchcb) $T $S --launch-times callback -- /tmp/launch_cost lite_launchcb ;;
    # recording only the window's first iteration: the launches after it run
    # with CUPTI's GPU activity kinds off (what --record-every's skipped
    # iterations cost)
    lite_every_off) $T $S --record-every 100000 -- /tmp/launch_cost lite_every_off ;;
    esac
}
read -r -a C <<< "${CONFIGS:-untraced gpu_only gpu_only_discard lite lite_sample lite_noqueued lite_launchcb}"
for r in $(seq 1 "${ROUNDS:-5}"); do
    for i in $(seq 0 $((${#C[@]} - 1))); do
        run "${C[$(((i + r) % ${#C[@]}))]}"
    done
done
