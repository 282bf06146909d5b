#!/bin/sh
# One line per validation: p99, service time and training within their bounds, and the
# p99-overhead rankings with overloaded policies tied. From this folder's parent:
#   sh session15/summary.sh session14/rankings session15/turns session15/turns_carveout2
for dir in "$@"; do
  for f in $dir/validation_*.md; do
    p99=$(grep -m1 "p99 latency within" $f | sed 's/.*: //')
    svc=$(grep -m1 "service time" $f | sed 's/.*: //')
    tr=$(grep -m1 "training throughput within" $f | sed 's/.*: //')
    rk=$(grep -m1 "overloaded\|with two policies" $f | grep -o "p99 overhead [0-9]* of [0-9]*" | head -1)
    echo "$f | p99 $p99 | svc $svc | training $tr | $rk"
  done
done
