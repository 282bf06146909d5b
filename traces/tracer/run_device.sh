#!/usr/bin/env bash
# run_device.sh: everything the tracer needs a GPU for, in one go.
#
#   traces/tracer/run_device.sh [OUTDIR]     (from the repository root)
#
# 1. builds the tracer (make -f cuda.mk tracer: needs only nvcc, CUPTI, cc);
# 2. traces the test program (every field is checked by tests/test_tracer.c,
#    which runs here too when a prebuilt copy is given in TRACER_TEST_BIN);
#    programs killed from outside (SIGTERM, SIGKILL), stop-after-seconds, a
#    Python program that never touches CUDA;
# 3. traces torchvision ResNet-50 training and transformers BERT inference,
#    unchanged, and keeps the compressed traces;
# 4. measures the overhead on ResNet-50 training side by side (CONFIGS,
#    interleaved, REPEATS times each): no tracer, tally-trace (default
#    activities), tally-trace --activities all (API queries too), tally-trace
#    recording GPU work only, the PyTorch profiler.
# Results land in OUTDIR (default $OUT) as results.tar.gz and log.txt.
set -u
OUTDIR=${1:-${OUT:-/tmp/tracer-out}}
mkdir -p "$OUTDIR"
exec > >(tee "$OUTDIR/log.txt") 2>&1
B=${BUILD:-build/device}
W=$(mktemp -d /tmp/tracer.XXXXXX)
T=$B/tally-trace
P=$B/tracer_testprog
WL=traces/tracer/workloads
REPEATS=${REPEATS:-4}
CONFIGS=${CONFIGS:-baseline tally_trace tally_trace_all tally_trace_gpu_only torch_profiler}
STEPS=${STEPS:-60}
export PYTHONUNBUFFERED=1
say() { echo; echo "== $(date +%T) $*"; }

say environment
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
nvcc --version | tail -1
python3 -c 'import torch, torchvision, transformers; print("torch", torch.__version__, "torchvision", torchvision.__version__, "transformers", transformers.__version__)'
ls /usr/local/cuda/lib64/libcupti.so* 2>&1 | head -2

say build
if command -v make >/dev/null; then
    make -f cuda.mk tracer BUILD="$B" || { echo "BUILD FAILED"; exit 1; }
else # the same commands as cuda.mk
    mkdir -p "$B"; D=traces/tracer; F="-std=c11 -D_GNU_SOURCE -O2 -g -I/usr/local/cuda/include"
    cc $F -fPIC -fvisibility=hidden -shared -o "$B/libtally_trace.so" $D/inject.c $D/store.c \
        $D/options.c $D/write.c -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 \
        -lcupti -ldl -lpthread -lstdc++ &&
    cc $F -o "$B/tally-trace" $D/tally_trace.c $D/options.c -ldl &&
    nvcc -O2 -gencode arch=compute_90,code=sm_90 -o "$B/tracer_testprog" $D/testprog.cu -ldl ||
        { echo "BUILD FAILED"; exit 1; }
fi

say "test program: 6 iterations, NVTX step# markers"
mkdir -p "$W/tp"
$T --gzip -o "$W/tp/testprog_steps.json" --iteration-marker 'step#' -- $P steps 6 \
    > "$W/tp/testprog_steps.manifest"; echo "rc=$?"
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
python3 - "$W/tp" <<'EOF'
import gzip, json, os, sys
d = sys.argv[1]
for f in sorted(os.listdir(d)):
    if ".json" not in f: continue
    p = os.path.join(d, f)
    t = json.load(gzip.open(p, "rt") if f.endswith(".gz") else open(p))
    kinds = {}
    for e in t["events"]: kinds[e["type"]] = kinds.get(e["type"], 0) + 1
    print(f, "end=%s truncated=%s reason=%r incomplete=%d" % (t["end"], t["truncated"],
          t["truncation_reason"], t["incomplete_records"]), kinds, t["counts"])
t = json.load(gzip.open(os.path.join(d, "testprog_steps.json.gz"), "rt"))
print("gpu:", t.get("gpu")); print("device:", t["devices"][0]); print("streams:", t["stream_info"])
seen = set()
for e in t["events"]:
    if e["type"] == "kernel" and e["name"].startswith("tt_spin") and e["name"] not in seen:
        seen.add(e["name"]); print("kernel", e, "dur", e["end_ns"] - e["start_ns"])
names = {}
for e in t["events"]:
    if e["type"] == "api":
        k = e["api"] + ":" + e["name"] + (" stream" if "stream" in e else "") + (" event" if "event" in e else "")
        names[k] = names.get(k, 0) + 1
print("api calls:", sorted(names.items()))
print("markers:", [(e["name"], e["end_ns"] - e["start_ns"]) for e in t["events"] if e["type"] == "marker"][:12])
EOF
grep -E "^launch 0 " "$W/tp/testprog_steps.manifest"

if [ -n "${TRACER_TEST_BIN:-}" ] && [ -x "$TRACER_TEST_BIN" ]; then
    say "CMocka tests/test_tracer.c (prebuilt)"
    LD_LIBRARY_PATH=${TRACER_TEST_LIBS:-} TALLY_BUILD=$B "$TRACER_TEST_BIN"; echo "rc=$?"
fi

say "BERT inference, whole run (40 requests)"
mkdir -p "$W/torch"
$T --gzip -o "$W/torch/bert_infer_full.json" -- python3 $WL/bert_infer.py --requests 40; echo "rc=$?"
K=$(python3 $WL/pick_iteration_kernel.py "$W/torch/bert_infer_full.json.gz" 40)
echo "iteration kernel: $K"
say "BERT inference, requests 5..24 by --iteration-kernel"
$T --gzip -o "$W/torch/bert_infer_b1.json" --iteration-kernel "$K" --start-after-iterations 5 \
    --stop-after-iterations 20 -- python3 $WL/bert_infer.py --requests 40; echo "rc=$?"
printf '%s\n' "$K" > "$W/torch/bert_iteration_kernel.txt"

say "ResNet-50 training, 20 steps after 10 (iteration = device synchronize)"
$T --gzip -o "$W/torch/resnet50_train_b32.json" --iteration-sync device:1 \
    --start-after-iterations 10 --stop-after-iterations 20 -- \
    python3 $WL/resnet50_train.py --steps 40; echo "rc=$?"

say "overhead: ResNet-50 training, $STEPS steps, $REPEATS repeats, interleaved: $CONFIGS"
mkdir -p "$W/ovh"
RUN="python3 $WL/resnet50_train.py --steps $STEPS"
for r in $(seq 1 "$REPEATS"); do
    for c in $CONFIGS; do
        j="$W/ovh/ovh_${c}_$r.json"
        case $c in
        baseline) $RUN --json "$j" ;;
        tally_trace) $T -o "/tmp/ovh_trace_$r.json" --iteration-sync device:1 -- $RUN --json "$j" ;;
        tally_trace_all) $T -q -o "/tmp/ovh_all_$r.json" --activities all -- $RUN --json "$j" ;;
        tally_trace_gpu_only)
            $T -q -o "/tmp/ovh_gpu_$r.json" --activities kernel,memcpy,memset -- $RUN --json "$j" ;;
        torch_profiler) $RUN --profiler --json "$j" ;;
        esac
    done
done
ls -la /tmp/ovh_trace_*.json
python3 $WL/summarize_overhead.py "$W/ovh" 10

say pack
rm -f "$W/tp/term.json" "$W/tp/stop1s.json" # summarized above; too large to bring back
ls -laR "$W"
tar czf "$OUTDIR/results.tar.gz" -C "$W" .
ls -la "$OUTDIR"
