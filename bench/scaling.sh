#!/bin/sh
# How data-parallel training scales when the links are slow: cputrain-qa on
# 1, 2 and 4 "hosts", each a network namespace with one NIC into a bridge
# (tests/dist/fake_hosts.sh), both directions of every NIC shaped with tc
# tbf to 1 Gbit/s and 10 Gbit/s; backends tcp (ranks started the torchrun
# way, RANK/WORLD_SIZE/MASTER_ADDR in the environment, one per namespace)
# and mpi (Open MPI's mpirun in the switch namespace, each rank moved into
# its host's namespace by a wrapper, MPI's traffic over TCP on the veths
# only); models bert-tiny (4.4 M parameters) and bert-base (110 M), both
# from their configuration (random init), vocabulary 30522, on the demo
# data (data/demo/generate.py), bf16, sequence length SEQ.
#
# Weak scaling, as DDP is used: every rank trains BATCH examples a step
# with one thread, so the single-rank run is the compute time of a step.
# This machine has 2 cores: with 2 ranks each has its own, with 4 two share
# a core, so 4-rank step times carry doubled compute. That is why each
# configuration also prints the communication on its own, as the trainer's
# reducer measures it (lib/train/ddp.c, rank 0): allreduce seconds per step,
# the part of them after backward had ended (exposed; the rest overlapped
# backward), and an efficiency with the compute of the 1-rank run,
#   eff = T1 / (T1 + exposed),
# what the N ranks would reach with a core each; eff_raw = T1 / TN is the
# plain ratio on this oversubscribed machine. Each run's line in the
# results file ends with the load average when it finished. Before the runs, the link is
# measured with bench/allreduce_bench (tcp, 2 and 4 ranks, up to 32 MiB, the
# size of the reducer's buckets): bus bandwidth and small-message latency.
# Then bench/scaling_model.py predicts 8..256 ranks from these figures and
# checks itself against the measured 2- and 4-rank points.
#   sh bench/scaling.sh [BUILD_DIR]
# Environment: MODELS ("bert-tiny bert-base"), RATES ("1gbit 10gbit"),
# RANKS ("1 2 4"), BACKENDS ("tcp mpi"), STEPS (optimizer steps per run of
# bert-tiny, 20) and BASE_STEPS (of bert-base, 4; the first step of a run
# is not counted),
# BATCH (per rank, 4), SEQ (128), PYTHON. Needs root, ip and tc; ~10 minutes
# with the defaults.
set -u
B=${1:-build}
: "${MODELS:=bert-tiny bert-base}" "${RATES:=1gbit 10gbit}" "${RANKS:=1 2 4}"
: "${BACKENDS:=tcp mpi}" "${BATCH:=4}" "${SEQ:=128}" "${PYTHON:=/usr/bin/python3}"
: "${STEPS:=20}" "${BASE_STEPS:=4}"
here=$(cd "$(dirname "$0")" && pwd)
qa=$PWD/$B/bin/cputrain-qa
arb=$PWD/$B/bench/allreduce_bench
dir=$PWD/$B/bench-scaling
for f in "$qa" "$arb"; do
    [ -x "$f" ] || { echo "scaling.sh: no $f (make B=$B all $B/bench/allreduce_bench)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "scaling.sh: needs root (network namespaces, tc)" >&2; exit 1; }
for c in ip tc taskset; do
    command -v "$c" > /dev/null 2>&1 || { echo "scaling.sh: no $c" >&2; exit 1; }
done
case " $BACKENDS " in *" mpi "*)
    if ! command -v mpirun > /dev/null 2>&1 || [ ! -f "$B/lib/cputrain/dist-mpi.so" ]; then
        echo "scaling.sh: mpi skipped (mpirun or $B/lib/cputrain/dist-mpi.so missing)"
        BACKENDS=$(echo "$BACKENDS" | sed 's/mpi//')
    fi ;;
esac

. "$here/../tests/dist/fake_hosts.sh"
trap fh_down EXIT
trap 'exit 1' INT TERM HUP
rm -rf "$dir"
mkdir -p "$dir"
: > "$dir/results"
"$PYTHON" data/demo/generate.py "$dir/data" > /dev/null || { echo "demo data failed" >&2; exit 1; }
"$PYTHON" - "$dir" <<'EOF' || exit 1
import json, sys
base = json.load(open(sys.argv[1] + "/data/config.json"))
for name, h, l, a, i in (("bert-tiny", 128, 2, 2, 512), ("bert-base", 768, 12, 12, 3072)):
    c = dict(base, vocab_size=30522, hidden_size=h, num_hidden_layers=l, num_attention_heads=a,
             intermediate_size=i, max_position_embeddings=512)
    json.dump(c, open(f"{sys.argv[1]}/{name}.json", "w"), indent=1)
EOF
export CPUTRAIN_DIST_SECRET=scaling-bench-$$ # the ranks authenticate, and no warning

# What each rank runs in its host: wrapper ppn HOSTNS-PREFIX -- command...
# (mpirun starts all ranks in the switch namespace, as one node: the wrapper
# moves rank r into host r / ppn and tells it it is local rank r % ppn of
# ppn, as the Open MPI daemon of that host would; core r % 2.)
cat > "$dir/in_host.sh" <<EOF
#!/bin/sh
r=\$OMPI_COMM_WORLD_RANK ppn=\$1
shift
export OMPI_COMM_WORLD_LOCAL_RANK=\$((r % ppn)) OMPI_COMM_WORLD_LOCAL_SIZE=\$ppn
exec ip netns exec ct-h\$((r / ppn))-$fh_tag taskset -c \$((r % 2)) "\$@"
EOF
chmod +x "$dir/in_host.sh"

steps_for() { [ "$1" = bert-base ] && echo "$BASE_STEPS" || echo "$STEPS"; }
qa_args() { # model
    echo "--config_name $dir/$1.json --tokenizer_name $dir/data --train_file $dir/data/train.json
--do_train --max_steps $(steps_for "$1") --learning_rate 1e-4 --max_seq_length $SEQ --doc_stride 32
--bf16 --use_cpu --save_strategy no --seed 42 --logging_steps 1 --report_to none --ddp_timeout 600
--per_device_train_batch_size $BATCH"
}

port=$((20000 + $$ % 20000))
# run MODEL RATE BACKEND N: one training run, its rank 0 log in $dir/NAME.log.
run() {
    name=$1-$2-$3-$4 n=$4
    out=$dir/$name
    port=$((port + 1))
    if [ "$n" = 1 ]; then
        ip netns exec "$(fh_ns 0)" env OMP_NUM_THREADS=1 taskset -c 0 "$qa" $(qa_args "$1") \
            --output_dir "$out" > "$out.log" 2>&1
    elif [ "$3" = mpi ]; then
        # PMIx's server must be reachable from the hosts: over the bridge.
        ip netns exec "$(fh_switch)" env PMIX_MCA_ptl_tcp_remote_connections=1 \
            PMIX_MCA_ptl_tcp_if_include=10.233.0.0/24 \
            mpirun --allow-run-as-root --oversubscribe --bind-to none -n "$n" \
            --mca btl tcp,self --mca btl_tcp_if_include 10.233.0.0/24 \
            --mca oob_tcp_if_include 10.233.0.0/24 -x OMP_NUM_THREADS=1 -x CPUTRAIN_DIST_SECRET \
            "$dir/in_host.sh" 1 "$qa" $(qa_args "$1") --ddp_backend mpi \
            --output_dir "$out" > "$out.log" 2>&1
    else
        pids=""
        r=0
        while [ "$r" -lt "$n" ]; do
            ip netns exec "$(fh_ns "$r")" env RANK=$r WORLD_SIZE=$n LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 \
                MASTER_ADDR="$(fh_addr 0)" MASTER_PORT=$port OMP_NUM_THREADS=1 \
                taskset -c $((r % 2)) "$qa" $(qa_args "$1") --ddp_backend "$3" \
                --output_dir "$out" > "$out.rank$r.log" 2>&1 &
            pids="$pids $!"
            r=$((r + 1))
        done
        status=0
        for p in $pids; do wait "$p" || status=1; done
        cp "$out.rank0.log" "$out.log"
        [ "$status" -eq 0 ]
    fi
    status=$?
    rm -rf "$out" # the trained model: not needed
    if [ "$status" -ne 0 ]; then
        echo "scaling.sh: $name failed"; tail -n 5 "$out.log"
        return 1
    fi
    # step: median seconds a step over the logged steps after the first
    # (logging_steps 1: each entry's samples/s is one step's global batch).
    # step: median and mean seconds a step over the logged steps after the
    # first (logging_steps 1: each entry's samples/s is one step's global
    # batch); the mean goes with the reducer's figures, which are means.
    step=$(grep '"train_samples_per_second"' "$out.log" | grep '"loss"' |
        sed 's/.*"train_samples_per_second": \([0-9.e+-]*\).*/\1/' | tail -n +2 |
        awk -v g=$((BATCH * n)) '{ print g / $1 }' | sort -g |
        awk '{ v[NR] = $1; s += $1 }
            END { if (NR) printf "%.4f mean=%.4f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, s / NR }')
    comm=$(sed -n 's/.*ddp: rank 0: allreduce \([0-9.]*\) s per step, \([0-9.]*\) s of it.*/\1 \2/p' "$out.log")
    [ "$n" = 1 ] && comm="0 0"
    [ -n "$step" ] && [ -n "$comm" ] || { echo "scaling.sh: $name: no step or communication figures"; return 1; }
    echo "run model=$1 rate=$2 backend=$3 ranks=$n step=$step comm=${comm% *} exposed=${comm#* }" \
        "load=$(cut -d' ' -f1 /proc/loadavg)" >> "$dir/results"
}

# bandwidth RATE N: allreduce_bench over tcp between N hosts.
bandwidth() {
    port=$((port + 1))
    pids=""
    r=0
    while [ "$r" -lt "$2" ]; do
        ip netns exec "$(fh_ns "$r")" env RANK=$r WORLD_SIZE=$2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 \
            MASTER_ADDR="$(fh_addr 0)" MASTER_PORT=$port CPUTRAIN_DIST_BACKEND=tcp OMP_NUM_THREADS=1 \
            taskset -c $((r % 2)) "$arb" 32 > "$dir/bw-$1-$2.rank$r" 2>&1 &
        pids="$pids $!"
        r=$((r + 1))
    done
    status=0
    for p in $pids; do wait "$p" || status=1; done
    [ "$status" -eq 0 ] || { echo "scaling.sh: allreduce_bench $1 $2 failed"; tail -n 3 "$dir"/bw-"$1"-"$2".rank*; return 1; }
    # busbw at the largest size; latency: half the 1 KiB time per ring step
    awk -v rate="$1" -v n="$2" '$1 ~ /^[0-9]+$/ { if ($1 == 1024) lat = $3 / (2 * (n - 1)); bw = $5 }
        END { printf "link rate=%s ranks=%d busbw=%s latency_us=%.1f\n", rate, n, bw, lat }' \
        "$dir/bw-$1-$2.rank0" >> "$dir/results"
}

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
echo "# bench/scaling.sh: $(nproc) cores ($cpu), kernel $(uname -r); per rank: batch $BATCH," \
    "1 thread, bf16, seq $SEQ; 4 ranks share 2 cores"
echo "host cpu=$cpu cores=$(nproc) kernel=$(uname -r) batch=$BATCH seq=$SEQ" >> "$dir/results"
failed=0
maxn=1
for n in $RANKS; do [ "$n" -gt "$maxn" ] && maxn=$n; done
# The 1-rank runs (unshaped: they send nothing) come first and again last;
# the model takes the faster of the two (the less disturbed on a shared
# machine) and the table shows both.
baseline() {
    fh_up 1 || { echo "scaling.sh: cannot set up a namespace"; exit 1; }
    for m in $MODELS; do
        case " $RANKS " in *" 1 "*) run "$m" - - 1 || failed=1 ;; esac
    done
    fh_down
}
baseline
for rate in $RATES; do
    fh_up "$maxn" "$rate" || { echo "scaling.sh: cannot set up $maxn hosts at $rate"; exit 1; }
    for n in $RANKS; do
        [ "$n" -gt 1 ] && { bandwidth "$rate" "$n" || failed=1; }
    done
    for m in $MODELS; do
        for be in $BACKENDS; do
            for n in $RANKS; do
                [ "$n" -gt 1 ] && { run "$m" "$rate" "$be" "$n" || failed=1; }
            done
        done
    done
    fh_down
done

baseline
"$PYTHON" "$here/scaling_model.py" "$dir/results" "$dir" || failed=1
exit "$failed"
