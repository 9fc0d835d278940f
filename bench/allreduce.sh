#!/bin/sh
# Allreduce bandwidth per backend on this machine: bench/allreduce_bench with
# 2 ranks for shm and tcp (started the torchrun way: RANK, WORLD_SIZE, ... in
# the environment, as tests/dist/ddp_equiv.sh does) and mpi (under mpirun),
# 1 KiB .. MAX_MIB MiB; then, per size >= 1 MiB, the three bandwidths side by
# side and shm's ratio to each.
#   sh bench/allreduce.sh [BUILD_DIR]
# Environment: MAX_MIB (256), WORLD (2), ROUNDS (3: the backends run in
# turn, the order reversed every other round; the summary keeps each size's
# best round, the least disturbed on a shared machine), DTYPE (f32|bf16).
set -u
B=${1:-build}
: "${MAX_MIB:=256}" "${WORLD:=2}" "${ROUNDS:=3}" "${DTYPE:=f32}"
bench=$B/bench/allreduce_bench
plugin_dir=$B/lib/cputrain
out=$B/bench-allreduce
[ -x "$bench" ] || { echo "allreduce.sh: no $bench (make B=$B $bench)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"

port=$((20000 + $$ % 20000))
# ranks BACKEND LOG: WORLD ranks of the bench started as torchrun does.
ranks() {
    port=$((port + 1))
    r=0
    pids=""
    while [ "$r" -lt "$WORLD" ]; do
        RANK=$r WORLD_SIZE=$WORLD LOCAL_RANK=$r LOCAL_WORLD_SIZE=$WORLD MASTER_ADDR=127.0.0.1 \
            MASTER_PORT=$port OMP_NUM_THREADS=1 CPUTRAIN_DIST_BACKEND=$1 \
            CPUTRAIN_DIST_JOB="allreduce-bench-$$-$port" \
            "$bench" "$MAX_MIB" "$DTYPE" > "$2.rank$r" 2>&1 &
        pids="$pids $!"
        r=$((r + 1))
    done
    status=0
    for p in $pids; do wait "$p" || status=1; done
    cp "$2.rank0" "$2"
    [ "$status" -eq 0 ] || { tail -n 3 "$2".rank*; return 1; }
}

run() { # BACKEND ROUND
    log=$out/$1.$2
    if [ "$1" = mpi ]; then
        if ! command -v mpirun > /dev/null 2>&1 || [ ! -f "$plugin_dir/dist-mpi.so" ]; then
            echo "allreduce.sh: mpi skipped (mpirun or $plugin_dir/dist-mpi.so missing)"
            return 0
        fi
        mpirun --allow-run-as-root --oversubscribe -n "$WORLD" -x OMP_NUM_THREADS=1 \
            -x CPUTRAIN_DIST_BACKEND=mpi -x CPUTRAIN_PLUGIN_DIR="$plugin_dir" \
            "$bench" "$MAX_MIB" "$DTYPE" > "$log" 2>&1 || { tail -n 5 "$log"; return 1; }
    else
        ranks "$1" "$log" || return 1
    fi
    echo "== $1, round $2"
    cat "$log"
}

failed=0
round=1
while [ "$round" -le "$ROUNDS" ]; do
    if [ $((round % 2)) -eq 1 ]; then order="shm tcp mpi"; else order="mpi tcp shm"; fi
    for backend in $order; do
        run "$backend" "$round" || { echo "allreduce.sh: $backend failed"; failed=1; }
    done
    round=$((round + 1))
done

# The summary: per size >= 1 MiB and backend, the best round's busbw.
echo
echo "== summary: $WORLD ranks, $DTYPE sum, busbw GB/s (best of $ROUNDS rounds), sizes >= 1 MiB"
for f in "$out"/shm.* "$out"/tcp.* "$out"/mpi.*; do
    [ -f "$f" ] || continue
    b=$(basename "$f")
    awk -v be="${b%%.*}" '$1 ~ /^[0-9]+$/ && NF == 5 { print be, $1, $5 }' "$f"
done | awk '
    { if (!(($1, $2) in bw) || $3 > bw[$1, $2]) bw[$1, $2] = $3; size[$2] = 1 }
    function show(be, s) { return ((be, s) in bw) ? sprintf("%9.3f", bw[be, s]) : sprintf("%9s", "-") }
    function ratio(a, b, s) {
        return ((a, s) in bw && (b, s) in bw && bw[b, s] > 0) ? sprintf("%8.2f", bw[a, s] / bw[b, s]) : sprintf("%8s", "-")
    }
    END {
        printf "%10s %9s %9s %9s %8s %8s\n", "size", "shm", "tcp", "mpi", "shm/tcp", "shm/mpi"
        n = 0
        for (s in size) if (s + 0 >= 1048576) list[++n] = s + 0
        for (i = 2; i <= n; i++) { v = list[i]; for (j = i - 1; j >= 1 && list[j] > v; j--) list[j + 1] = list[j]; list[j + 1] = v }
        for (i = 1; i <= n; i++) {
            s = list[i]
            printf "%7d MiB %s %s %s %s %s\n", s / 1048576, show("shm", s), show("tcp", s), show("mpi", s), ratio("shm", "tcp", s), ratio("shm", "mpi", s)
        }
    }'
exit "$failed"
