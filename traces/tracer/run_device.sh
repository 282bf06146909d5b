#!/usr/bin/env bash
# run_device.sh: everything the tracer needs a GPU for, in one go (< 5 min on
# an H100 with the defaults and BERT_KERNEL set; ~7 min with REPEATS=5
# DEADLINE_S=420, the invocation for the --launch-times decision below).
#
#   traces/tracer/run_device.sh [OUTDIR]     (from the repository root)
#
# 1. builds the tracer (make -f cuda.mk tracer; without make, the same
#    commands by hand: needs only nvcc, CUPTI, cc);
# 2. traces the test program in the default lite host-timeline mode (kept
#    with its manifest, for traces/captured/), with --sync-records activity
#    and completion, in the full mode, a crash, a Python program that never
#    touches CUDA, and (unless SKIP_OUTSIDE_SIGNALS) programs killed from
#    outside (SIGTERM, SIGKILL), stop-after-seconds;
#    runs tests/test_tracer.c when a prebuilt copy is given in TRACER_TEST_BIN
#    (every field, lite and full, windows, signals, reset, fork, gzip);
# 3. traces torchvision ResNet-50 training and transformers BERT inference,
#    unchanged, in HOST_TIMELINE mode (default lite), compressed; the BERT
#    iteration kernel is BERT_KERNEL (or the first line of BERT_KERNEL_FILE,
#    e.g. workloads/bert_iteration_kernel.txt: the one found on 2026-11-23),
#    else found in a whole-run BERT trace (16 s more); with LAUNCHCB_CAPTURE=1
#    (default) ResNet-50 once more with --launch-times callback (and the test
#    program, into results.tar.gz); with COMPLETION_CAPTURE=1 (default 0 since
#    the launch-time captures: the 8-file limit) once more with
#    --sync-records completion; with SAMPLE_CAPTURE=1 (default 0) once more
#    with --latency-sample LATENCY_SAMPLE; then, for each ResNet-50 capture: mean and
#    median launch-to-start lead (a kernel's GPU start minus its launch call's
#    start), launch call durations, back-to-back GPU gaps, kernels per
#    iteration;
# 4. measures the overhead on ResNet-50 training, STEPS steps, configurations
#    interleaved (each repeat starts one configuration later in the list, so
#    that none always follows the same one), REPEATS times each (CONFIGS; all
#    tracer runs use --iteration-sync device:1; with PIN_CPUS, e.g. 4-11,
#    every run, baseline included, is pinned to those CPUs with taskset):
#      baseline        no tracer
#      lite            tally-trace (default: --host-timeline lite, waits from
#                      callbacks on the synchronize/event calls, queued times)
#      lite_activity   lite, waits from CUPTI's SYNCHRONIZATION and CUDA_EVENT
#                      activity kinds (--sync-records activity; the default
#                      until 2026-11-23: +22% there)
#      lite_noqueued   lite without kernel queued timestamps (--queued-times off)
#      lite_sample     lite with queued timestamps in one iteration of every
#                      LATENCY_SAMPLE (10) only (--latency-sample)
#      lite_every      lite recording one iteration of every RECORD_EVERY (10)
#                      only (--record-every)
#      lite_launchcb_driver  the same with the driver's launch callbacks only
#                      (TALLY_TRACE_LAUNCH_DOMAINS=driver, experimental)
#      lite_launchcb   lite with launch times from callbacks on the launch,
#                      copy and memset calls (--launch-times callback; no
#                      latency timestamps)
#      lite_completion lite with no runtime/driver API callback at all: waits
#                      and iteration syncs from synchronize-domain completions
#                      (--sync-records completion)
#      lite_completion_noqueued  both
#      lite_nosync     lite without sync/event records (queued times only)
#      full            --host-timeline full (every API call recorded)
#      gpu_only        --host-timeline none (kernels, copies, memsets; the
#                      iteration sync and cudaDeviceReset callbacks stay)
#      gpu_only_discard  the same, records not parsed (TALLY_TRACE_DISCARD_RECORDS=1,
#                      experimental: CUPTI's cost without ours; empty trace)
#      gpu_only_nosync gpu_only without --iteration-sync (no synchronize callbacks)
#      torch_profiler  the PyTorch profiler (CPU + CUDA activities)
#    New runs stop being started DEADLINE_S seconds after the start (a run
#    takes ~13 s), so that the whole call stays within its time;
#    The log gets the GPU's gap between back-to-back ops and the launch-to-
#    start lead in each traced run of the first repeat (latency timestamps
#    on or off, launch callbacks);
# 5. with TALLY_SIM (a prebuilt build/tally-sim; libraries from
#    TRACER_TEST_LIBS), `tally-sim info` and `fidelity` on the captures and
#    `info` on the lite traces of the first overhead repeat.
#
# OUTDIR (default $OUT) gets at most 8 files: log.txt, results.tar.gz (the
# rest), overhead_summary.csv, the captures resnet50_train_b32.json.gz,
# resnet50_train_b32_launchcb.json.gz (or, with COMPLETION_CAPTURE=1 and
# LAUNCHCB_CAPTURE=0, resnet50_train_b32_completion.json.gz),
# bert_infer_b1.json.gz, testprog_lite.json.gz and testprog_lite.manifest
# (the whole-run BERT trace, when made, and the test program's launch-time
# capture go into results.tar.gz; with both ResNet-50 variants on, the
# completion one does too).
#
# Variables: REPEATS (3), STEPS (60), CONFIGS (baseline lite lite_noqueued
# lite_launchcb), DEADLINE_S (250), HOST_TIMELINE (lite), BERT_KERNEL,
# BERT_KERNEL_FILE, LAUNCHCB_CAPTURE (1), COMPLETION_CAPTURE (0), SAMPLE_CAPTURE
# (0), LATENCY_SAMPLE (10), OVERHEAD_ONLY (unset; set: build, then step 4 only),
# BATCH (32: the overhead runs' batch size), PIN_CPUS,
# SKIP_OUTSIDE_SIGNALS, TRACER_TEST_BIN, TRACER_TEST_LIBS, TALLY_SIM, BUILD.
#
# The --launch-times decision (one call of the device tool, < 10 min):
#   SKIP_OUTSIDE_SIGNALS=1 REPEATS=5 DEADLINE_S=420 PIN_CPUS=2-9 \
#   BERT_KERNEL_FILE=traces/tracer/workloads/bert_iteration_kernel.txt \
#   traces/tracer/run_device.sh "$OUT"
# (add TRACER_TEST_BIN/TRACER_TEST_LIBS/TALLY_SIM for a prebuilt
# tests/test_tracer and tally-sim, as in experiments/results/tracer/README.md).
set -u
T_START=$(date +%s)
OUTDIR=${1:-${OUT:-/tmp/tracer-out}}
mkdir -p "$OUTDIR"
exec > >(tee "$OUTDIR/log.txt") 2>&1
B=${BUILD:-build/device}
W=$(mktemp -d /tmp/tracer.XXXXXX)
T=$B/tally-trace
P=$B/tracer_testprog
WL=traces/tracer/workloads
REPEATS=${REPEATS:-3}
CONFIGS=${CONFIGS:-baseline lite lite_noqueued lite_launchcb}
STEPS=${STEPS:-60}
DEADLINE_S=${DEADLINE_S:-250}
HOST_TIMELINE=${HOST_TIMELINE:-lite}
LATENCY_SAMPLE=${LATENCY_SAMPLE:-10}
export PYTHONUNBUFFERED=1
elapsed() { echo $(($(date +%s) - T_START)); }
say() { echo; echo "== $(date +%T) (+$(elapsed) s) $*"; }
# The host_timeline object and counts of a trace, one line each.
summary() {
    python3 - "$@" <<'EOF'
import gzip, json, sys
for p in sys.argv[1:]:
    try:
        t = json.load(gzip.open(p, "rt") if p.endswith(".gz") else open(p))
    except Exception as e:
        print(p, "unreadable:", e); continue
    h = t.get("host_timeline", {})
    keep = {k: v for k, v in h.items() if not isinstance(v, str) or k == "mode"}
    print(p.rsplit("/", 1)[-1], "end=%s truncated=%s" % (t["end"], t["truncated"]),
          "sync_records=%s launch_times=%s" % (t["options"].get("sync_records"),
                                               t["options"].get("launch_times")),
          "counts", t["counts"], "host_timeline", keep)
EOF
}
# What a trace says about launch times and the GPU, a few lines each: the
# launch-to-start lead (GPU start of a kernel minus its call's start: how far
# the host ran ahead), launch call durations, back-to-back GPU gaps (< 10 us
# apart: ~1.1 us untraced, ~2.3 us with latency timestamps on), kernels per
# iteration (iteration# ranges), calls estimated or timed.
leads() {
    python3 - "$@" <<'EOF'
import bisect, gzip, json, statistics, sys
def q(v, f):
    return v[min(len(v) - 1, int(f * len(v)))] if v else 0
for p in sys.argv[1:]:
    try:
        t = json.load(gzip.open(p, "rt") if p.endswith(".gz") else open(p))
    except Exception as e:
        print(p, "unreadable:", e); continue
    ev = t["events"]
    api = {e["corr"]: e for e in ev if e["type"] == "api"}
    lead, dur = [], []
    for e in ev:
        if e["type"] == "kernel" and e.get("corr") in api:
            a = api[e["corr"]]
            lead.append(e["start_ns"] - a["start_ns"]); dur.append(a["end_ns"] - a["start_ns"])
    lead.sort(); dur.sort()
    ops = sorted((e["start_ns"], e["end_ns"]) for e in ev if e["type"] in ("kernel", "memcpy", "memset"))
    g = sorted(b[0] - a[1] for a, b in zip(ops, ops[1:]) if 0 <= b[0] - a[1] < 10000)
    its = sorted((e["start_ns"], e["end_ns"]) for e in ev
                 if e["type"] == "marker" and e["name"].startswith("iteration#"))
    ks = sorted(e["start_ns"] for e in ev if e["type"] == "kernel")
    per = [bisect.bisect_left(ks, b) - bisect.bisect_left(ks, a) for a, b in its]
    h = t.get("host_timeline", {})
    est = sum(1 for e in ev if e["type"] == "api" and e.get("estimated"))
    print("== %s launch_times=%s latency_timestamps=%s launches=%s queued=%s timed=%s clamped=%s "
          "calls %d (estimated %d)" % (p.rsplit("/", 1)[-1], t["options"].get("launch_times"),
          h.get("latency_timestamps"), h.get("launches"), h.get("launches_queued"),
          h.get("launches_timed"), h.get("launches_clamped"), len(api), est))
    if lead:
        print("  launch-to-start lead us: mean %.1f median %.1f p10 %.1f p90 %.1f (n %d); "
              "launch call us: mean %.2f median %.2f p90 %.2f" % (
              statistics.mean(lead) / 1e3, q(lead, .5) / 1e3, q(lead, .1) / 1e3, q(lead, .9) / 1e3,
              len(lead), statistics.mean(dur) / 1e3, q(dur, .5) / 1e3, q(dur, .9) / 1e3))
    if g:
        print("  back-to-back gaps ns: n %d median %.0f p10 %d p90 %d" % (
              len(g), statistics.median(g), q(g, .1), q(g, .9)))
    if per:
        print("  kernels per iteration: %d iterations, min %d max %d median %d" % (
              len(per), min(per), max(per), statistics.median(per)))
    if h.get("launches_copied"):
        # --latency-sample: sampled iterations have the wider GPU gaps; the
        # copied ones' leads should look like the sampled ones'
        print("  latency_sample=%s launches_copied=%s; per iteration: median back-to-back gap ns "
              "/ mean launch lead us" % (t["options"].get("latency_sample"), h.get("launches_copied")))
        kl = sorted((e["start_ns"], e["start_ns"] - api[e["corr"]]["start_ns"]) for e in ev
                    if e["type"] == "kernel" and e.get("corr") in api)
        row = []
        for a, b in its:
            gi = [y[0] - x[1] for x, y in zip(ops, ops[1:]) if a <= x[0] < b and 0 <= y[0] - x[1] < 10000]
            li = [v for st, v in kl if a <= st < b]
            row.append("%.0f/%.0f" % (statistics.median(gi) if gi else -1,
                                      statistics.mean(li) / 1e3 if li else -1))
        print("   ", " ".join(row))
EOF
}

say environment
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
nvcc --version | tail -1
python3 -c 'from importlib.metadata import version as v; print("torch", v("torch"), "torchvision", v("torchvision"), "transformers", v("transformers"))'
nproc; [ -n "${PIN_CPUS:-}" ] && echo "overhead runs pinned to CPUs $PIN_CPUS"
ls /usr/local/cuda/lib64/libcupti.so* 2>&1 | head -2

say build
if command -v make >/dev/null; then
    # -B: a kept build folder may predate the sources' split
    make -B -f cuda.mk tracer BUILD="$B" || { echo "BUILD FAILED"; exit 1; }
else # the same commands as cuda.mk
    mkdir -p "$B"; D=traces/tracer
    F="-std=c11 -D_GNU_SOURCE -O2 -g -I/usr/local/cuda/include -I/usr/local/cuda/extras/CUPTI/include"
    L="-L/usr/local/cuda/lib64 -L/usr/local/cuda/extras/CUPTI/lib64"
    L="$L -Wl,-rpath,/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/extras/CUPTI/lib64"
    cc $F -fPIC -fvisibility=hidden -shared -o "$B/libtally_trace.so" $D/inject.c $D/devices.c \
        $D/activity.c $D/activity_kinds.c $D/iterations.c $D/callbacks.c $D/flush.c $D/lite.c \
        $D/lite_sample.c $D/hostcalls.c $D/store.c $D/options.c $D/write.c \
        $L -lcupti -ldl -lpthread -lstdc++ &&
    cc $F -o "$B/tally-trace" $D/tally_trace.c $D/options.c -ldl &&
    nvcc -O2 -gencode arch=compute_90,code=sm_90 -o "$B/tracer_testprog" $D/testprog.cu -ldl ||
        { echo "BUILD FAILED"; exit 1; }
fi

# trace_steps BASE WHAT [tally-trace options...]: the test program's 6 NVTX
# step# iterations traced into BASE.json.gz, its manifest beside it
trace_steps() {
    base=$1 what=$2
    shift 2
    say "test program, $what: 6 iterations, NVTX step# markers"
    $T --gzip "$@" -o "$base.json" --iteration-marker 'step#' -- $P steps 6 > "$base.manifest"
    echo "rc=$?"
}
if [ -z "${OVERHEAD_ONLY:-}" ]; then
mkdir -p "$W/tp"
trace_steps "$OUTDIR/testprog_lite" "lite (default)"
trace_steps "$W/tp/testprog_full" "full host timeline" --host-timeline full
trace_steps "$W/tp/testprog_lite_activity" "lite with --sync-records activity" --sync-records activity
trace_steps "$W/tp/testprog_launchcb" "lite with --launch-times callback" --launch-times callback
trace_steps "$W/tp/testprog_completion" "lite with --sync-records completion" --sync-records completion
say "test program: crash (SIGSEGV) after 2 iterations"
$T --gzip -o "$W/tp/testprog_crash.json" -- $P crash > "$W/tp/testprog_crash.manifest"; echo "rc=$?"
if [ -z "${SKIP_OUTSIDE_SIGNALS:-}" ]; then
say "test program: SIGTERM sent to tally-trace from outside"
$T -o "$W/tp/term.json" -- $P hang > /dev/null & wp=$!
sleep 3; kill -TERM $wp; wait $wp; echo "rc=$?"
say "test program: SIGKILL to the program (no file, no temp file)"
$T -o "$W/tp/kill.json" -- $P hang > /dev/null & wp=$!
sleep 3; kill -KILL "$(pgrep -P $wp)"; wait $wp; echo "rc=$?"
say "test program: --stop-after-seconds 1, then SIGTERM at 3 s"
$T -o "$W/tp/stop1s.json" --stop-after-seconds 1 -- $P hang > /dev/null & wp=$!
sleep 3; kill -TERM $wp; wait $wp; echo "rc=$?"
fi
say "python that never touches CUDA"
$T -o "$W/tp/nocuda.json" -- python3 $WL/nocuda.py; echo "rc=$?"
ls -la "$W/tp"
summary "$OUTDIR/testprog_lite.json.gz" "$W"/tp/*.json*
# The lite and the full trace of the same program side by side: launch
# host times (lite: queued) against the recorded cudaLaunchKernel calls.
python3 - "$OUTDIR/testprog_lite.json.gz" "$W/tp/testprog_full.json.gz" "$W/tp/testprog_launchcb.json.gz" \
    "$W/tp/testprog_completion.json.gz" <<'EOF'
import gzip, json, sys
for p in sys.argv[1:]:
    t = json.load(gzip.open(p, "rt"))
    ev = t["events"]
    api = {e["corr"]: e for e in ev if e["type"] == "api"}
    print("==", p.rsplit("/", 1)[-1], "mode", t.get("host_timeline", {}).get("mode"),
          t["options"].get("sync_records"))
    print("gpu:", t.get("gpu", {}).get("name"), "streams:", t["stream_info"])
    names = {}
    for e in ev:
        if e["type"] == "api":
            k = e["name"] + (" stream" if "stream" in e else "") + (" event" if "event" in e else "")
            names[k] = names.get(k, 0) + 1
    print("api calls:", sorted(names.items()))
    lead, n = [], 0
    for e in ev:
        if e["type"] == "kernel" and e["name"].startswith("tt_spin"):
            a = api.get(e["corr"])
            if a: lead.append(e["start_ns"] - a["start_ns"])
            n += 1
            if n <= 4:
                print(" kernel %-16s gpu %9d..%9d call %9d..%9d" % (e["name"].split("(")[0],
                      e["start_ns"], e["end_ns"], a["start_ns"] if a else -1, a["end_ns"] if a else -1))
    lead.sort()
    print(" GPU start - call start (ns): min %d median %d max %d over %d launches" %
          (lead[0], lead[len(lead) // 2], lead[-1], len(lead)) if lead else " no launch calls")
    for e in ev:
        if e["type"] == "api" and "Synchronize" in e["name"]:
            print(" first sync:", e); break
    print(" markers:", [(e["name"], e["end_ns"] - e["start_ns"]) for e in ev if e["type"] == "marker"][:12])
EOF
grep -E "^launch 0 " "$OUTDIR/testprog_lite.manifest"

if [ -n "${TRACER_TEST_BIN:-}" ] && [ -x "$TRACER_TEST_BIN" ]; then
    say "CMocka tests/test_tracer.c (prebuilt)"
    LD_LIBRARY_PATH=${TRACER_TEST_LIBS:-} TALLY_BUILD=$B "$TRACER_TEST_BIN"; echo "rc=$?"
fi

HT="--host-timeline $HOST_TIMELINE"
mkdir -p "$W/torch"
if [ -z "${BERT_KERNEL:-}" ] && [ -n "${BERT_KERNEL_FILE:-}" ] && [ -s "$BERT_KERNEL_FILE" ]; then
    BERT_KERNEL=$(head -1 "$BERT_KERNEL_FILE")
fi
if [ -n "${BERT_KERNEL:-}" ]; then
    K=$BERT_KERNEL
else
    say "BERT inference, whole run (40 requests), $HT"
    $T $HT --gzip -o "$W/torch/bert_infer_full.json" -- python3 $WL/bert_infer.py --requests 40; echo "rc=$?"
    K=$(python3 $WL/pick_iteration_kernel.py "$W/torch/bert_infer_full.json.gz" 40)
fi
echo "iteration kernel: $K"
say "BERT inference, requests 5..24 by --iteration-kernel, $HT"
$T $HT --gzip -o "$OUTDIR/bert_infer_b1.json" --iteration-kernel "$K" --start-after-iterations 5 \
    --stop-after-iterations 20 -- python3 $WL/bert_infer.py --requests 40; echo "rc=$?"
printf '%s\n' "$K" > "$W/torch/bert_iteration_kernel.txt"

say "ResNet-50 training, 20 steps after 10 (iteration = device synchronize), $HT"
$T $HT --gzip -o "$OUTDIR/resnet50_train_b32.json" --iteration-sync device:1 \
    --start-after-iterations 10 --stop-after-iterations 20 -- \
    python3 $WL/resnet50_train.py --steps 40; echo "rc=$?"
if [ "${LAUNCHCB_CAPTURE:-1}" = 1 ]; then
say "ResNet-50 training, the same with --launch-times callback"
$T $HT --launch-times callback --gzip -o "$OUTDIR/resnet50_train_b32_launchcb.json" \
    --iteration-sync device:1 --start-after-iterations 10 --stop-after-iterations 20 -- \
    python3 $WL/resnet50_train.py --steps 40; echo "rc=$?"
fi
if [ "${SAMPLE_CAPTURE:-0}" = 1 ]; then
say "ResNet-50 training, the same with --latency-sample $LATENCY_SAMPLE"
$T $HT --latency-sample "$LATENCY_SAMPLE" --gzip -o "$OUTDIR/resnet50_train_b32_sample.json" \
    --iteration-sync device:1 --start-after-iterations 10 --stop-after-iterations 20 -- \
    python3 $WL/resnet50_train.py --steps 40; echo "rc=$?"
fi
if [ "${COMPLETION_CAPTURE:-0}" = 1 ]; then
# (with the launch-time capture too, into results.tar.gz: 8 files at most)
CD=$OUTDIR; [ "${LAUNCHCB_CAPTURE:-1}" = 1 ] && CD=$W/torch
say "ResNet-50 training, the same with --sync-records completion"
$T $HT --sync-records completion --gzip -o "$CD/resnet50_train_b32_completion.json" \
    --iteration-sync device:1 --start-after-iterations 10 --stop-after-iterations 20 -- \
    python3 $WL/resnet50_train.py --steps 40; echo "rc=$?"
fi
summary $(ls "$OUTDIR"/*.json.gz "$W"/torch/*.json.gz 2>/dev/null)
say "launch times in the captures"
leads $(ls "$OUTDIR"/resnet50_train_b32*.json.gz "$W"/torch/resnet50_train_b32*.json.gz \
    "$OUTDIR"/bert_infer_b1.json.gz "$W"/tp/testprog_launchcb.json.gz 2>/dev/null)

fi # OVERHEAD_ONLY
say "overhead: ResNet-50 training, $STEPS steps, $REPEATS repeats, interleaved: $CONFIGS (new runs until +$DEADLINE_S s)"
mkdir -p "$W/ovh"
PIN=""
if [ -n "${PIN_CPUS:-}" ]; then
    if command -v taskset >/dev/null && taskset -c "$PIN_CPUS" true; then
        PIN="taskset -c $PIN_CPUS"
    else
        echo "PIN_CPUS=$PIN_CPUS: taskset missing or refused: runs are not pinned"
    fi
fi
RUN="$PIN python3 $WL/resnet50_train.py --steps $STEPS --batch ${BATCH:-32}"
TS="--iteration-sync device:1"
T="$PIN $T"
read -r -a CL <<< "$CONFIGS"
stopped=""
for r in $(seq 1 "$REPEATS"); do
    for i in $(seq 0 $((${#CL[@]} - 1))); do
        c=${CL[$(((i + r - 1) % ${#CL[@]}))]}
        if [ "$(elapsed)" -ge "$DEADLINE_S" ]; then
            stopped="repeat $r, before $c"; break 2
        fi
        j="$W/ovh/ovh_${c}_$r.json"
        tr="$W/ovh/trace_${c}_$r.json"
        case $c in
        baseline) $RUN --json "$j" ;;
        lite) $T -q -o "$tr" $TS -- $RUN --json "$j" ;;
        lite_callback) $T -q -o "$tr" $TS --sync-records callback -- $RUN --json "$j" ;;
        lite_activity) $T -q -o "$tr" $TS --sync-records activity -- $RUN --json "$j" ;;
        lite_noqueued) $T -q -o "$tr" $TS --queued-times off -- $RUN --json "$j" ;;
        lite_sample) $T -q -o "$tr" $TS --latency-sample "$LATENCY_SAMPLE" -- $RUN --json "$j" ;;
        lite_every) $T -q -o "$tr" $TS --record-every "${RECORD_EVERY:-10}" -- $RUN --json "$j" ;;
        lite_launchcb) $T -q -o "$tr" $TS --launch-times callback -- $RUN --json "$j" ;;
        lite_launchcb_driver) TALLY_TRACE_LAUNCH_DOMAINS=driver $T -q -o "$tr" $TS --launch-times callback -- $RUN --json "$j" ;;
        lite_completion) $T -q -o "$tr" $TS --sync-records completion -- $RUN --json "$j" ;;
        lite_completion_noqueued) $T -q -o "$tr" $TS --sync-records completion --queued-times off \
            -- $RUN --json "$j" ;;
        lite_nosync) $T -q -o "$tr" $TS --activities kernel,memcpy,memset,nvtx,stream -- $RUN --json "$j" ;;
        full) $T -q -o "$tr" $TS --host-timeline full -- $RUN --json "$j" ;;
        gpu_only) $T -q -o "$tr" $TS --host-timeline none -- $RUN --json "$j" ;;
        gpu_only_discard) TALLY_TRACE_DISCARD_RECORDS=1 $T -q -o "$tr" $TS --host-timeline none -- $RUN --json "$j" ;;
        gpu_only_nosync) $T -q -o "$tr" --host-timeline none -- $RUN --json "$j" ;;
        torch_profiler) $RUN --profiler --json "$j" ;;
        *) echo "unknown configuration $c" ;;
        esac
        # keep the first repeat's traces for the replay check below
        [ "$r" = 1 ] || rm -f "$tr"
    done
done
[ -n "$stopped" ] && echo "DEADLINE: no new runs after +$DEADLINE_S s ($stopped)"
ls -la "$W/ovh"
summary "$W"/ovh/trace_*_1.json
# The GPU's gap between back-to-back ops (< 10 us apart): 1.1 us in the
# full-mode capture, 2.0-2.4 us in every capture with CUPTI's latency
# timestamps on (2026-11-23): the suspected cost of the queued times. And
# each run's launch-to-start lead (queued, callback, or placed: off).
say "launch times and back-to-back gaps in the first repeat's overhead traces"
leads "$W"/ovh/trace_*_1.json
python3 $WL/summarize_overhead.py "$W/ovh" 10
cp "$W/ovh/overhead_summary.csv" "$OUTDIR/" 2>/dev/null

if [ -n "${TALLY_SIM:-}" ] && [ -x "$TALLY_SIM" ]; then
    say "tally-sim: the captures as the simulator reads them"
    export LD_LIBRARY_PATH=${TRACER_TEST_LIBS:-}
    for f in "$OUTDIR"/*.json.gz; do
        timeout 60 "$TALLY_SIM" info "$f" 2>&1 | head -8
    done
    say "tally-sim: first overhead repeat, steps 11.. (step time measured: ovh_*_1.json)"
    for c in $CONFIGS; do
        [ -f "$W/ovh/trace_${c}_1.json" ] && [ "$c" != gpu_only ] || continue
        echo "-- $c"; timeout 60 "$TALLY_SIM" info --skip 11 "$W/ovh/trace_${c}_1.json" 2>&1 | sed -n '5,7p'
    done
    python3 - "$W/ovh" "$CONFIGS" <<'EOF'
import json, os, statistics, sys
for c in sys.argv[2].split():
    p = os.path.join(sys.argv[1], "ovh_%s_1.json" % c)
    if os.path.exists(p):
        s = json.load(open(p))["step_s"][10:]
        print("measured %-16s median step %.3f ms" % (c, 1e3 * statistics.median(s)))
EOF
    say "tally-sim fidelity (replay alone vs traced iteration time)"
    timeout 120 "$TALLY_SIM" fidelity $(ls "$OUTDIR"/resnet50_train_b32*.json.gz \
        "$W"/torch/resnet50_train_b32*.json.gz "$OUTDIR"/bert_infer_b1.json.gz \
        "$W"/torch/bert_infer_full.json.gz "$OUTDIR"/testprog_lite.json.gz \
        "$W"/tp/testprog_launchcb.json.gz "$W"/tp/testprog_completion.json.gz 2>/dev/null) 2>&1 |
        tee "$W/fidelity.csv"
fi

say pack
rm -f "$W/tp/term.json" "$W/tp/stop1s.json" "$W"/ovh/trace_*.json # summarized above; large
ls -laR "$W"
tar czf "$OUTDIR/results.tar.gz" -C "$W" .
ls -la "$OUTDIR"
say "done"
