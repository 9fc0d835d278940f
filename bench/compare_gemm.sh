#!/bin/sh
# Runs gemm_bench and torch_matmul.py on the same shapes in one go, in
# interleaved rounds (the machine is shared and noisy), and prints for each
# shape and layout the best round's median GFLOP/s of each of our variants
# next to torch's, with the ratio ours/torch (bf16 against torch bf16, fp32
# against torch fp32). More rounds steady the ratios where the host's speed
# drifts by a few percent between runs. Both sides run on huge pages where
# that is their best: gemm_bench on the library's own allocation (advised
# for them, as its layers are), torch_matmul.py once on PyTorch's
# allocation and once on huge pages, and torch's better figure counts.
#   bench/compare_gemm.sh [gemm_bench binary] [gemm_bench args: -s MxNxK, -v variant...]
# Environment: THREADS (2), REPEATS (21), ROUNDS (2), PYTHON (/usr/bin/python3).
set -eu
here=$(dirname "$0")
bin=${1:-build/bench/gemm_bench}
[ $# -gt 0 ] && shift
threads=${THREADS:-2}
repeats=${REPEATS:-21}
rounds=${ROUNDS:-2}
case $rounds in
'' | *[!0-9]* | 0) echo "compare_gemm.sh: ROUNDS must be a positive integer, not '$rounds'" >&2; exit 2 ;;
esac
python=${PYTHON:-/usr/bin/python3}
# the same -s shapes go to both programs
shapes=$(printf '%s\n' "$@" | awk 'prev == "-s" { printf " -s %s", $0 } { prev = $0 }')
out=$(mktemp)
trap 'rm -f "$out"' EXIT INT TERM

# How many cores' worth of throughput the machine gives right now: the same
# busy loop once alone, then $threads copies at once. On a shared VM this
# can drop to ~1 (vCPUs time-sliced on the host); read the ratios with it.
spin() { awk 'BEGIN { for (i = 0; i < 4e7; i++) s += i; exit s < 0 }'; }
t0=$(date +%s.%N); spin; t1=$(date +%s.%N)
i=0; while [ "$i" -lt "$threads" ]; do spin & i=$((i + 1)); done; wait
t2=$(date +%s.%N)
echo "# parallel capacity now: $(echo "$t0 $t1 $t2 $threads" | awk '{ printf "%.2f", $4 * ($2 - $1) / ($3 - $2) }') of $threads cores" >>"$out"

round=0
while [ "$round" -lt "$rounds" ]; do
    round=$((round + 1))
    "$bin" -t "$threads" -r "$repeats" "$@" >>"$out"
    # torch's fp32 products run in OpenBLAS, whose threads
    # torch.set_num_threads does not set (at 1 thread they ran on 2)
    # shellcheck disable=SC2086 # the shapes are split on purpose
    OPENBLAS_NUM_THREADS=$threads "$python" "$here/torch_matmul.py" -t "$threads" \
        -r "$repeats" $shapes >>"$out"
done

grep '^#' "$out" | sort -u
# best of the rounds' medians per (layout, shape, variant), then ratios
awk '
$1 == "gemm" || $1 == "torch" {
    key = $2 " " $3 "x" $4 "x" $5 " " $6 " " $7
    if (!(key in best) || $8 > best[key]) best[key] = $8
    if ($1 == "torch") torch[$2 " " $3 "x" $4 "x" $5 " " $7] = best[key]
    else if (!(key in seen)) { seen[key] = 1; order[n++] = key }
}
END {
    printf "%-6s %-16s %-11s %-5s %9s %9s %7s\n", "layout", "MxNxK", "variant", "dtype", "GFLOP/s", "torch", "ratio"
    for (i = 0; i < n; i++) {
        split(order[i], f, " ")
        t = torch[f[1] " " f[2] " " f[4]]
        printf "%-6s %-16s %-11s %-5s %9.1f %9.1f %7.2f\n", f[1], f[2], f[3], f[4], best[order[i]], t, (t > 0 ? best[order[i]] / t : 0)
        if (f[4] == "bf16" && best[order[i]] > top_ours) top_ours = best[order[i]]
        if (f[4] == "bf16" && t > top_torch) top_torch = t
        if (best[order[i]] > top) { top = best[order[i]]; top_row = (f[3] == "openblas" ? "" : "ours ") f[3] " " f[4] " " f[1] " " f[2] }
        if (t > top) { top = t; top_row = "torch " f[4] " " f[1] " " f[2] }
    }
    printf "# best bf16 GEMM figure: ours %.1f, torch %.1f GFLOP/s\n", top_ours, top_torch
    # what a whole step is read against (make bench passes it to
    # cputrain-bench --profile --gemm-peak): any row, either side (OpenBLAS
    # called directly too), either type
    if (top > 0) printf "# best GEMM figure: %.1f GFLOP/s (%s)\n", top, top_row
}' "$out"
