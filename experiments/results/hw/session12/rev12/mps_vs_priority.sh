#!/bin/sh
# The evidence for model revision 12: mps and mps-priority side by side in every
# hardware run of sessions 11-12 that has both (each pair's inference p50 and
# the training throughput), and the largest relative differences.
# From the repository root: sh experiments/results/hw/session12/rev12/mps_vs_priority.sh
hw=experiments/results/hw
for f in $hw/session11/graph_s11.log $hw/session12/graph_s12.log $hw/session12/graph_s12r3.log \
         $hw/session12/node/graph_node.log $hw/session11/eager_s11.log $hw/session12/eager_s12.log \
         $hw/session12/eager_s12r3.log; do
  awk -v f="$f" '$1=="mps"||$1=="mps-priority" {
      k = $4; if ($5 == "inference") v[$1, k] = $6; else v[$1, "train " inf] = $10
      if ($5 == "inference") inf = k
      if ($1 == "mps-priority" && $5 == "training") {
        a = v["mps", inf]; b = v["mps-priority", inf]; ta = v["mps", "train " inf]; tb = $10
        d = (b - a) / a * 100; dt = (tb - ta) / ta * 100
        printf "%s %s: p50 %s vs %s (%+.1f%%), training %s vs %s it/s (%+.1f%%)\n", f, inf, a, b, d, ta, tb, dt
      } }' "$f"
done | awk '{print} {for (i = 1; i <= NF; i++) if ($i ~ /^\(/) { x = $i; gsub(/[()%+-]/, "", x); if ($(i-1) ~ /it\/s/) { if (x+0 > mt) mt = x+0 } else if (x+0 > mp) mp = x+0 } }
           END {printf "largest difference: p50 %.1f%%, training %.1f%%\n", mp, mt}'
