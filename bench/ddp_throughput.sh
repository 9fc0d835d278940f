#!/bin/sh
# Training throughput of cputrain-qa, one rank against two on this machine:
# the demo data, the demo model (data/demo/generate.py) or CONFIG, bf16,
# sequence length 128, global batch 16 either way —
#   1 rank  x batch 16, OMP_NUM_THREADS=2
#   2 ranks x batch 8,  OMP_NUM_THREADS=1 each, for shm, tcp (ranks started
#                       the torchrun way, as tests/dist/ddp_equiv.sh does),
#                       mpi (Open MPI's plugin under mpirun.openmpi) and
#                       mpich (the MPICH-ABI plugin under Hydra's
#                       mpirun.mpich, backend mpi); BACKEND-shard with the
#                       sharded optimizer (optim_shard true), BACKEND alone
#                       without (optim_shard false)
# so both use the machine's cores (2 here) in full. Each run's figure is
# train_samples_per_second from rank 0's output_dir/train_results.json (all
# ranks' samples over the training time), each rank's peak RSS
# (/usr/bin/time's maximum resident set), and the CPU seconds (user +
# system, all ranks) per optimizer step: on a machine shared with other
# jobs the samples/s say how much of the CPU the run got, the CPU seconds
# how much work a step took. The runs go in turns, the order
# reversed every other round (a shared machine drifts), and the summary
# prints each configuration's median, min and max, the ratios of median
# and max to the one-rank ones, and the median of the ranks' peak RSS.
#   sh bench/ddp_throughput.sh [BUILD_DIR]
# Environment: STEPS (optimizer steps per run, 300), ROUNDS (4), SEQ (128),
# BATCH (global batch, 16), CONFIG (config.json or built-in name such as
# bert-base-uncased; the demo model's), CONFIGS (which runs, "one shm
# shm-shard tcp tcp-shard mpi mpi-shard mpich mpich-shard"), PYTHON.
set -u
B=${1:-build}
: "${STEPS:=300}" "${ROUNDS:=4}" "${SEQ:=128}" "${BATCH:=16}" "${PYTHON:=/usr/bin/python3}"
: "${CONFIGS:=one shm shm-shard tcp tcp-shard mpi mpi-shard mpich mpich-shard}"
qa=$B/bin/cputrain-qa
dir=$B/bench-ddp
[ -x "$qa" ] || { echo "ddp_throughput.sh: no $qa (make B=$B all)" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
: > "$dir/results"
"$PYTHON" data/demo/generate.py "$dir/data" > /dev/null || { echo "demo data failed" >&2; exit 1; }

: "${CONFIG:=$dir/data/config.json}"
args="--config_name $CONFIG --tokenizer_name $dir/data
--train_file $dir/data/train.json --do_train --max_steps $STEPS --learning_rate 1e-3
--warmup_ratio 0.1 --max_seq_length $SEQ --doc_stride 32 --bf16 --use_cpu
--save_strategy no --seed 42 --logging_steps $STEPS --ddp_timeout 300"
half=$((BATCH / 2))

configs=$CONFIGS
# without_mpi NAME PLUGIN: drop NAME's runs when its mpirun or plugin is missing.
without_mpi() {
    if ! command -v "mpirun.$1" > /dev/null 2>&1 || [ ! -f "$B/lib/cputrain/$2" ]; then
        echo "ddp_throughput.sh: $1 skipped (mpirun.$1 or $B/lib/cputrain/$2 missing)"
        configs=$(echo "$configs" | tr ' ' '\n' | grep -v "^$3" | tr '\n' ' ')
    fi
}
without_mpi openmpi dist-mpi.so 'mpi\(-shard\)\{0,1\}$'
without_mpi mpich dist-mpich.so mpich
rss="/usr/bin/time -f %M_%U_%S -o"

# figure OUT_DIR: train_samples_per_second of a finished run.
figure() {
    "$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["train_samples_per_second"])' \
        "$1/train_results.json" 2> /dev/null
}

port=$((20000 + $$ % 20000))
# run CONFIG NAME: one run; appends "CONFIG samples/s rss-rank0-KiB rss-rank1-KiB"
# to $dir/results.
run() {
    out=$dir/$2
    backend=${1%-shard}
    shard=false
    [ "$backend" = "$1" ] || shard=true
    case $1 in
    one)
        OMP_NUM_THREADS=2 $rss "$out.rss0" "$qa" $args --per_device_train_batch_size "$BATCH" \
            --output_dir "$out" > "$out.log" 2>&1 ;;
    mpi | mpi-shard)
        mpirun.openmpi --allow-run-as-root --oversubscribe -n 2 -x OMP_NUM_THREADS=1 \
            sh -c 'exec /usr/bin/time -f %M_%U_%S -o "$0.rss$OMPI_COMM_WORLD_RANK" "$@"' "$out" \
            "$qa" $args --ddp_backend mpi --optim_shard $shard \
            --per_device_train_batch_size "$half" --output_dir "$out" > "$out.log" 2>&1 ;;
    mpich*)
        mpirun.mpich -n 2 -genv OMP_NUM_THREADS 1 \
            sh -c 'exec /usr/bin/time -f %M_%U_%S -o "$0.rss$PMI_RANK" "$@"' "$out" \
            "$qa" $args --ddp_backend mpi --optim_shard $shard \
            --per_device_train_batch_size "$half" --output_dir "$out" > "$out.log" 2>&1 ;;
    *)
        port=$((port + 1))
        pids=""
        for r in 0 1; do
            RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
                MASTER_PORT=$port OMP_NUM_THREADS=1 CPUTRAIN_DIST_JOB="ddp-bench-$$-$2" \
                $rss "$out.rss$r" "$qa" $args --ddp_backend "$backend" --optim_shard $shard \
                --per_device_train_batch_size "$half" \
                --output_dir "$out" > "$out.rank$r.log" 2>&1 &
            pids="$pids $!"
        done
        status=0
        for p in $pids; do wait "$p" || status=1; done
        cp "$out.rank0.log" "$out.log"
        [ "$status" -eq 0 ] ;;
    esac
    status=$?
    v=$(figure "$out")
    if [ "$status" -ne 0 ] || [ -z "$v" ]; then
        echo "ddp_throughput.sh: $2 failed"; tail -n 5 "$out.log"
        return 1
    fi
    t0=$(tail -n 1 "$out.rss0" 2> /dev/null)
    t1=$(tail -n 1 "$out.rss1" 2> /dev/null)
    m0=${t0%%_*} m1=${t1%%_*}
    cpu=$(echo "${t0:-0_0_0} ${t1:-0_0_0}" | tr '_' ' ' |
        awk -v s="$STEPS" '{ printf "%.3f", ($2 + $3 + $5 + $6) / s }')
    echo "$1 $v ${m0:--} ${m1:--} $cpu" >> "$dir/results"
    printf '%-14s %-28s %8s samples/s %7s CPU-s/step  peak RSS %s / %s MiB  (load %s)\n' \
        "$2" "$(label "$1")" "$v" "$cpu" "$(mib "$m0")" "$(mib "$m1")" \
        "$(cut -d' ' -f1-3 /proc/loadavg)"
}

mib() { case $1 in '' | -) echo - ;; *) echo $(($1 / 1024)) ;; esac; }

label() {
    case $1 in
    one) echo "1 rank x $BATCH, 2 threads" ;;
    *-shard) echo "2 x $half ${1%-shard} sharded, 1 thread" ;;
    *) echo "2 x $half $1, 1 thread" ;;
    esac
}

echo "# cputrain-qa, $CONFIG, bf16, seq $SEQ, global batch $BATCH, $STEPS steps;" \
    "train_samples_per_second"
failed=0
round=1
while [ "$round" -le "$ROUNDS" ]; do
    order=$configs
    if [ $((round % 2)) -eq 0 ]; then
        order=""
        for c in $configs; do order="$c $order"; done
    fi
    for c in $order; do
        run "$c" "$c-$round" || failed=1
    done
    round=$((round + 1))
done

echo
echo "== summary: $ROUNDS runs each (samples/s); ratios to 1 rank's median and max (the"
echo "   least disturbed run on a shared machine); median CPU seconds per step (all ranks)"
echo "   and 1 rank's CPU-s/step over this one's (above 1: less work per step)"
med() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }
# 1 rank first: the ratios are to it.
ordered=$(for c in $configs; do [ "$c" = one ] && echo one; done
    for c in $configs; do [ "$c" = one ] || echo "$c"; done)
for c in $ordered; do
    rss0=$(awk -v c="$c" '$1 == c && $3 != "-" { print int($3 / 1024) }' "$dir/results" | med)
    rss1=$(awk -v c="$c" '$1 == c && $4 != "-" { print int($4 / 1024) }' "$dir/results" | med)
    cpu=$(awk -v c="$c" '$1 == c { print $5 }' "$dir/results" | med)
    awk -v c="$c" '$1 == c { print $2 }' "$dir/results" | sort -g |
        awk -v l="$(label "$c")" -v rss="$rss0/$rss1" -v cpu="$cpu" '
            { v[NR] = $1 }
            END {
                if (NR == 0) { printf "%s|-|-|-|%s|%s\n", l, cpu, rss; exit }
                m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                printf "%s|%.2f|%.2f|%.2f|%s|%s\n", l, m, v[1], v[NR], cpu, rss
            }'
done | awk -F'|' '
    function ratio(v, b) { return (v != "-" && b != "-" && b > 0) ? sprintf("x%.3f", v / b) : "-" }
    NR == 1 { base = $2; best = $4; cbase = $5
              printf "%-32s %8s %8s %8s %9s %9s %10s %9s  %s\n", "", "median", "min", "max",
                     "median/1", "max/1", "CPU-s/step", "1/CPU", "peak RSS MiB (rank 0/1)" }
    { printf "%-32s %8s %8s %8s %9s %9s %10s %9s  %s\n", $1, $2, $3, $4, ratio($2, base),
             ratio($4, best), $5, ratio(cbase, $5), $6 }'
exit "$failed"
