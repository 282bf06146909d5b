#!/bin/sh
# validate_all.sh at the defaults and with the candidates, then compare_validations.py.
#   sh experiments/results/hw/session28/search/validate_all_runs.sh OUTROOT
r=${1:-/work/s28out/all}
d=experiments/results/hw/session28/search
mkdir -p $r
for c in def c3ch20 p2c1mix; do
  case $c in
    def) a="" ;;
    c3ch20) a="--sim-param crowding_warps=3 --sim-param contention.churn_slowdown=2.0" ;;
    p2c1mix) a="--sim-param pack_foreign=2 --sim-param carveout=1 --sim-param contention.churn_block_ns=8000 --sim-param gap_beside_ctx_ns=600 --sim-param slice_launch_ns=3000 --sim-param idle_switch_ns=110000 --sim-param contention.mem_alpha=1.5" ;;
  esac
  t0=$(date +%s)
  sh experiments/results/hw/validate_all.sh build $r/$c $a
  echo "$c $(( $(date +%s) - t0 )) s"
  [ $c = def ] || python3 experiments/results/hw/session19/compare_validations.py $r/def $r/$c > $r/compare_$c.txt
done
