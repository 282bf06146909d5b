#!/bin/sh
# The simulator's twin of the sharing grid (call 1), its long pairs (call 2), its cross
# pairs (call 3), its compute pairs (call 4) or session 19's probe variants (call 9), with extra simulator parameters, compared kernel by
# kernel with the H100 (compare_kernels.py). From the repository root:
#   sh experiments/results/hw/session20/grid/twin.sh grid|long|cross|cc|variants NAME [KEY=VALUE ...]
set -e
u="usage: twin.sh grid|long|cross|cc|variants NAME [KEY=VALUE ...]"
what=${1:?$u}; name=${2:?$u}
shift 2; args=""
for kv in "$@"; do args="$args --sim-param $kv"; done
hw=experiments/results/hw; g=$hw/session20/grid; out=${TWIN_DIR:-/tmp}
case $what in
grid)     python3 $g/make_grid.py $out/grid > /dev/null; spec=$out/grid/grid.json; ref=$g/grid_kernels_hw.csv ;;
long)     python3 $g/make_grid.py $out/grid > /dev/null; spec=$out/grid/grid_long.json; ref=$g/grid_long_kernels_hw.csv ;;
cross)    python3 $g/make_grid.py $out/grid > /dev/null; spec=$out/grid/grid_cross.json; ref=$g/grid_cross_kernels_hw.csv ;;
cc)       python3 $g/make_grid.py $out/grid > /dev/null; spec=$out/grid/grid_cc.json; ref=$g/grid_cc_kernels_hw.csv ;;
variants) python3 $hw/session19/probe/make_probe.py $out/probe > /dev/null; spec=$out/probe/probe_variants.json
          ref=$hw/session19/probe/probe_variants_kernels_hw.csv ;;
*)        echo "twin.sh: grid, long, cross, cc or variants, not $what" >&2; exit 64 ;;
esac
db=$out/twin_${what}_$name.db
rm -f $db $db-wal $db-shm # a fresh database: --force would add the runs beside the old ones
build/tally-sim run -q -s $spec -k -d $db -t 2 -w 0.5 \
  --sim-param launch_latency_ns=12500 --sim-param callback_launch_latency_ns=1100 $args > /dev/null
python3 $hw/session19/sm_kernels.py $db > $out/twin_${what}_$name.csv
python3 $g/compare_kernels.py $ref $out/twin_${what}_$name.csv
