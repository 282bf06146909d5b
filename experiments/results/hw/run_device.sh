#!/bin/sh
# run_device.sh: the hardware runs of this folder, on the device machine, from
# the repository root, with tally-run built here first:
#     make BUILD=build/dev TALLY_STATIC_DEPS=1 build/dev/tally-run
# (carried to the device as build/dev). Usage:
#     experiments/results/hw/run_device.sh OUTDIR STEP...
# Steps:
#   diag       mobilenet-b1 + resnet50-train under tally, tgs, pipeswitch and
#              priority-streams, 5 s after 1 s, per-kernel records (-k):
#              OUTDIR/diag.db
#   diag-gaps  the diag runs (tally, pipeswitch, priority-streams only) into a
#              scratch database, summarised by gaps.py: OUTDIR/diag_gaps.csv
#   eager-A    the eager headline spec, alone + the five policies that keep
#              every job's kernels whole (priority-streams, time-slicing, mps,
#              mps-priority, herald), 8 s after 2 s, 2 repetitions:
#              OUTDIR/eager_A.db
#   eager-B    the same spec under tally, tgs, pipeswitch: OUTDIR/eager_B.db
#   eager-rep3 a third repetition of every policy: OUTDIR/eager_3.db starts
#              as a copy of this folder's headline_eager.db.xz, unpacked (the first two
#              are found there and skipped)
#   eager-rep4 a fourth repetition of every policy, the same way (OUTDIR/eager_4.db
#              from headline_eager.db.xz); this build records the replay's
#              back-to-back gap in the database (meta hw_stream_gap_ns)
#   be-alone   resnet50-train alone under the policies that hold best-effort
#              work on the host (tally, tgs, pipeswitch) and under
#              priority-streams, 5 s after 1 s: the cost of their host
#              round trips with no other job (OUTDIR/be_alone.db)
#   graph-smoke  selftest (with its CUDA-graph checks), then the graph headline
#              spec 2 s after 1 s under priority-streams, tally, mps and
#              time-slicing: OUTDIR/graph_smoke.db
#   graph-rep1 the graph headline spec (tally_headline.json: every job launched
#              as CUDA graphs), all six policies, 8 s after 2 s, repetition 1:
#              OUTDIR/graph_1.db
#   graph-rep2 repetition 2 on a copy of graph_1.db from GRAPH_DB (default:
#              this folder's headline_graph.db.xz, unpacked): OUTDIR/graph_2.db
#   tally-gap  tally_gap/spec.json (MobileNet beside training under tally
#              variants, 2 s after 1 s) with per-kernel records; prints
#              graph_diag.py and tally_gap/analyze.py and leaves the slim
#              database as OUTDIR/tally_gap_slim.db.xz
#   graph-diag the graph headline spec under tally and priority-streams (and
#              each job alone), 2 s after 1 s, per-kernel records (-k):
#              OUTDIR/graph_diag.db
# The calibration cache is this folder's calib.sqlite.xz (unpacked to OUTDIR and
# used from there, so that new entries come back).
set -u
out=${1:?usage: run_device.sh OUTDIR STEP...}
shift
B=${B:-build/dev/tally-run}   # another build: B=build/dev1/tally-run run_device.sh ...
spec=experiments/specs/tally_headline_eager.json
xz -dc experiments/results/hw/calib.sqlite.xz > "$out/calib.sqlite"
export TALLY_CALIB_DB="$out/calib.sqlite"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
git log -1 --format='build: %h %s' 2>/dev/null || true
for step in "$@"; do
    echo "== $(date +%T) $step"
    case $step in
    diag)
        h100=traces/bundled/h100
        $B run -J "name=mobilenet-b1,trace=$h100/mobilenetv3_infer_b1.json.gz,role=inference,load=0.5,model_mb=50" \
               -J "name=resnet50-train,trace=$h100/resnet50_train_b32_steps.json.gz,role=training,model_mb=100" \
               -p tally -p tgs -p pipeswitch -p priority-streams -t 5 -w 1 -S 1 -k -q -d "$out/diag.db"
        echo "rc=$?" ;;
    diag-gaps)
        h100=traces/bundled/h100
        rm -f /tmp/diag_gaps.db
        $B run -J "name=mobilenet-b1,trace=$h100/mobilenetv3_infer_b1.json.gz,role=inference,load=0.5,model_mb=50" \
               -J "name=resnet50-train,trace=$h100/resnet50_train_b32_steps.json.gz,role=training,model_mb=100" \
               -p tally -p pipeswitch -p priority-streams -t 5 -w 1 -S 1 -k -q -d /tmp/diag_gaps.db
        echo "rc=$?"
        python3 experiments/results/hw/gaps.py /tmp/diag_gaps.db > "$out/diag_gaps.csv"
        cat "$out/diag_gaps.csv" ;;
    eager-A)
        $B run -s $spec -t 8 -w 2 -r 2 -p priority-streams -p time-slicing -p mps -p mps-priority \
               -p herald -q -d "$out/eager_A.db"
        echo "rc=$?" ;;
    eager-rep3)
        xz -dc experiments/results/hw/headline_eager.db.xz > "$out/eager_3.db"
        $B run -s $spec -t 8 -w 2 -r 3 -p priority-streams -p time-slicing -p mps -p mps-priority \
               -p herald -p tally -p tgs -p pipeswitch -q -d "$out/eager_3.db"
        echo "rc=$?" ;;
    eager-rep4)
        xz -dc experiments/results/hw/headline_eager.db.xz > "$out/eager_4.db"
        $B run -s $spec -t 8 -w 2 -r 4 -p priority-streams -p time-slicing -p mps -p mps-priority \
               -p herald -p tally -p tgs -p pipeswitch -q -d "$out/eager_4.db"
        echo "rc=$?"
        sqlite3 "$out/eager_4.db" "SELECT key, value FROM meta" 2>/dev/null || true ;;
    eager-B)
        $B run -s $spec -t 8 -w 2 -r 2 -p tally -p tgs -p pipeswitch -q -d "$out/eager_B.db"
        echo "rc=$?" ;;
    be-alone)
        h100=traces/bundled/h100
        $B run -J "name=resnet50-train,trace=$h100/resnet50_train_b32_steps.json.gz,role=training,model_mb=100" \
               -p tally -p tgs -p pipeswitch -p priority-streams -t 5 -w 1 -S 1 -q -d "$out/be_alone.db"
        echo "rc=$?" ;;
    graph-smoke)
        $B selftest
        echo "rc=$?"
        $B run -s experiments/specs/tally_headline.json -t 2 -w 1 -r 1 -p priority-streams -p tally -p mps \
               -p time-slicing -q -d "$out/graph_smoke.db"
        echo "rc=$?" ;;
    graph-rep1)
        $B run -s experiments/specs/tally_headline.json -t 8 -w 2 -r 1 -q -d "$out/graph_1.db"
        echo "rc=$?" ;;
    graph-rep2)
        if [ -n "${GRAPH_DB:-}" ]; then cp "$GRAPH_DB" "$out/graph_2.db"
        else xz -dc experiments/results/hw/headline_graph.db.xz > "$out/graph_2.db"; fi
        $B run -s experiments/specs/tally_headline.json -t 8 -w 2 -r 2 -q -d "$out/graph_2.db"
        echo "rc=$?" ;;
    tally-gap)
        rm -f /tmp/tally_gap.db /tmp/tally_gap_slim.db
        $B run -s experiments/results/hw/tally_gap/spec.json -k -q -d /tmp/tally_gap.db
        echo "rc=$?"
        python3 experiments/results/hw/graph_diag.py /tmp/tally_gap.db
        python3 experiments/results/hw/slim_db.py /tmp/tally_gap.db /tmp/tally_gap_slim.db 100 &&
            python3 experiments/results/hw/tally_gap/analyze.py /tmp/tally_gap_slim.db &&
            xz -c /tmp/tally_gap_slim.db > "$out/tally_gap_slim.db.xz" ;;
    graph-diag)
        $B run -s experiments/specs/tally_headline.json -t 2 -w 1 -r 1 -p tally -p priority-streams \
               -k -q -d "$out/graph_diag.db"
        echo "rc=$?" ;;
    *) echo "unknown step $step"; exit 64 ;;
    esac
done
echo "== $(date +%T) done"
