#!/bin/sh
# The carveout co-residency matrix (carveout_matrix.cu) and, under Nsight
# Compute, the carveout the driver configures for each shape alone.
#   sh experiments/results/hw/carveout_matrix/run.sh OUTDIR      (from the repo root)
# Writes OUTDIR/matrix.txt, OUTDIR/pairs.csv, OUTDIR/ncu.txt, OUTDIR/run.log
# (4 files). Bounded to ~4 minutes: compile 40 s, matrix 120 s, ncu 80 s.
out=${1:?usage: run.sh OUTDIR}
d=$(dirname "$0")
mkdir -p "$out" || exit 1
log=$out/run.log
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
{
    echo "== $(date -u) $(hostname)"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv 2>&1 | head -3
    "$NVCC" --version | tail -2
} > "$log" 2>&1
timeout 40 "$NVCC" -O2 -arch=sm_90 -o /tmp/cm "$d/carveout_matrix.cu" >> "$log" 2>&1
rc=$?; echo "compile rc=$rc" >> "$log"
[ $rc -eq 0 ] || { cat "$log"; exit 1; }

timeout 120 /tmp/cm "$out" >> "$log" 2>&1
echo "matrix rc=$?" >> "$log"

m=launch__shared_mem_config_size,launch__block_size,launch__shared_mem_per_block_dynamic,launch__registers_per_thread
timeout 80 "$NCU" --metrics $m --csv /tmp/cm "$out/ncu_probe" ncu > "$out/ncu.txt" 2>&1
echo "ncu rc=$?" >> "$log"

# one line per profiled launch: kernel, block, dynamic smem, registers, carveout
{
    echo
    echo "Nsight Compute, each shape alone (ncu.txt): launch id, kernel, block size, dynamic smem B, regs, carveout B (launch__shared_mem_config_size)"
    awk -F'","' 'NF >= 15 && $13 ~ /^launch__/ {
        id = $1; sub(/^"/, "", id); v = $15; sub(/"$/, "", v); gsub(/,/, "", v)
        if (!(id in name)) { order[n++] = id; name[id] = $5 }
        val[id, $13] = v
    } END {
        for (i = 0; i < n; i++) { id = order[i]
            printf "  %3s %-22s %6s %8s %4s %8s\n", id, name[id], val[id, "launch__block_size"],
                val[id, "launch__shared_mem_per_block_dynamic"], val[id, "launch__registers_per_thread"],
                val[id, "launch__shared_mem_config_size"] }
        if (!n) print "  (no launches parsed: see ncu.txt)"
    }' "$out/ncu.txt"
} > "$out/ncu_summary.tmp"
cat "$out/ncu_summary.tmp" >> "$log"
[ -f "$out/matrix.txt" ] && cat "$out/ncu_summary.tmp" >> "$out/matrix.txt"
rm -f "$out/ncu_summary.tmp"
rmdir "$out/ncu_probe" 2>/dev/null
tail -40 "$log"
ls -l "$out"
