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
    # recording one iteration of ten (and twenty): the iterations between
    # should cost what lite_every_off's do, unless toggling the kinds leaves
    # something on
    lite_every10) $T $S --record-every 10 -- /tmp/launch_cost lite_every10 ;;
    lite_every20) $T $S --record-every 20 -- /tmp/launch_cost lite_every20 ;;
    # the same with less left on, to find what the +0.5 us of lite_every_off
    # is: no API callback at all (synchronize-completed callbacks only); GPU
    # records only, no host timeline; no event or stream records either
    every_off_completion) $T $S --record-every 100000 --sync-records completion -- /tmp/launch_cost every_off_completion ;;
    every_off_none) $T $S --record-every 100000 --host-timeline none -- /tmp/launch_cost every_off_none ;;
    every_off_noevent) $T $S --record-every 100000 --activities -event,-stream -- /tmp/launch_cost every_off_noevent ;;
    every_off_min) $T $S --record-every 100000 --sync-records completion --activities kernel,memcpy,memset,sync -- /tmp/launch_cost every_off_min ;;
    esac
}
read -r -a C <<< "${CONFIGS:-untraced gpu_only gpu_only_discard lite lite_sample lite_noqueued lite_launchcb}"
for r in $(seq 1 "${ROUNDS:-5}"); do
    for i in $(seq 0 $((${#C[@]} - 1))); do
        run "${C[$(((i + r) % ${#C[@]}))]}"
    done
done
