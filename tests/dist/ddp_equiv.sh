#!/bin/sh
# Data-parallel training is equivalent to a bigger batch: cputrain-qa with
# 2 ranks x batch 4 and 4 ranks x batch 2 must end with the parameters of
# 1 rank x batch 8 after 10 optimizer steps (fp32), for each backend — shm
# and tcp with ranks started the torchrun way (RANK, WORLD_SIZE, ... in the
# environment), mpi under Open MPI's and MPICH's mpirun. 36 training
# examples make the 10 steps cross an epoch boundary with a short last
# batch (9 per rank for 4 ranks),
# and one run uses gradient accumulation (2 ranks x 2 x 2 micro-batches).
#
# Dropout is on (each example's masks are its own, whatever rank and batch
# it lands in), and adam_epsilon is 1e-4: a few parameters
# (the QA bias, the last LayerNorm bias, the attention key biases) have a
# gradient that is zero in exact arithmetic, so what they get is rounding
# noise, which AdamW with a tiny epsilon would turn into full-size steps of
# random sign in any two runs that add in a different order.
# Expects B and PYTHON. Ends with "ddp: N passed, M failed".
set -u
: "${B:=build}" "${PYTHON:=/usr/bin/python3}"
qa=$B/bin/cputrain-qa
dir=$B/ddp-test
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ddp: ok: $1"; }
bad() { failed=$((failed + 1)); echo "ddp: FAILED: $1"; }

rm -rf "$dir"
mkdir -p "$dir"
. tests/dist/demo_data.sh
demo_data "$dir/data" || { bad "demo data"; exit 1; }

args="--config_name $dir/data/config.json --tokenizer_name $dir/data
--train_file $dir/data/train.json --max_train_samples 36 --do_train --max_steps 10
--learning_rate 1e-3 --adam_epsilon 1e-4 --max_seq_length 96 --doc_stride 32
--save_strategy no --seed 42 --logging_steps 5 --ddp_timeout 120"

# ranks BACKEND WORLD NAME EXTRA...: WORLD ranks started as torchrun does.
. tests/dist/master_port.sh
port=$(first_master_port)
ranks() {
    backend=$1 world=$2 name=$3
    shift 3
    port=$((port + 1))
    r=0
    pids=""
    while [ "$r" -lt "$world" ]; do
        RANK=$r WORLD_SIZE=$world LOCAL_RANK=$r LOCAL_WORLD_SIZE=$world MASTER_ADDR=127.0.0.1 \
            MASTER_PORT=$port OMP_NUM_THREADS=1 CPUTRAIN_DIST_JOB="ddp-test-$$-$name" \
            "$qa" $args --ddp_backend "$backend" "$@" --output_dir "$dir/$name" \
            > "$dir/$name.rank$r.log" 2>&1 &
        pids="$pids $!"
        r=$((r + 1))
    done
    status=0
    for p in $pids; do wait "$p" || status=1; done
    [ "$status" -eq 0 ] || { tail -n 5 "$dir/$name".rank*.log; return 1; }
}

# same NAME: its parameters equal the 1 x 8 run's (max abs difference).
same() {
    "$PYTHON" tests/dist/compare_models.py "$dir/one/model.safetensors" \
        "$dir/$1/model.safetensors" 1e-6
}

if "$qa" $args --per_device_train_batch_size 8 --output_dir "$dir/one" > "$dir/one.log" 2>&1; then
    ok "1 rank x batch 8"
else
    bad "1 rank x batch 8"; tail -n 5 "$dir/one.log"; echo "ddp: $passed passed, $failed failed"
    exit 1
fi

for backend in shm tcp; do
    for world in 2 4; do
        name=$backend-$world
        if ranks "$backend" "$world" "$name" --per_device_train_batch_size $((8 / world)) &&
            same "$name"; then
            ok "$backend: $world ranks x batch $((8 / world)) = 1 x 8"
        else
            bad "$backend: $world ranks x batch $((8 / world)) = 1 x 8"
        fi
    done
done
if ranks shm 2 accumulate --per_device_train_batch_size 2 --gradient_accumulation_steps 2 &&
    same accumulate; then
    ok "shm: 2 ranks x batch 2 x accumulation 2 = 1 x 8"
else
    bad "shm: 2 ranks x batch 2 x accumulation 2 = 1 x 8"
fi

# group_by_length groups over the job's batch (batch x ranks x accumulation),
# so 2 ranks x 4 still train as 1 x 8: 120 examples give megabatches of 24.
if "$qa" $args --max_train_samples 120 --group_by_length --per_device_train_batch_size 8 \
    --output_dir "$dir/grouped-one" > "$dir/grouped-one.log" 2>&1 &&
    ranks shm 2 grouped-2 --max_train_samples 120 --group_by_length \
        --per_device_train_batch_size 4 &&
    "$PYTHON" tests/dist/compare_models.py "$dir/grouped-one/model.safetensors" \
        "$dir/grouped-2/model.safetensors" 1e-6; then
    ok "shm: group_by_length, 2 ranks x batch 4 = 1 x 8"
else
    bad "shm: group_by_length, 2 ranks x batch 4 = 1 x 8"
fi

# Resuming a 2-rank run from its checkpoint-5 ends bit-identical to the
# uninterrupted run (rank 0 wrote the checkpoint; both ranks read it).
if ranks shm 2 saving --per_device_train_batch_size 4 --save_strategy steps --save_steps 5 &&
    rm -rf "$dir/saving/checkpoint-10" &&
    ranks shm 2 saving --per_device_train_batch_size 4 --save_strategy steps --save_steps 5 \
        --resume_from_checkpoint "$dir/saving/checkpoint-5" &&
    "$PYTHON" tests/dist/compare_models.py "$dir/shm-2/model.safetensors" \
        "$dir/saving/model.safetensors" 0; then
    ok "shm: 2 ranks resumed from checkpoint-5 = uninterrupted"
else
    bad "shm: 2 ranks resumed from checkpoint-5 = uninterrupted"
fi

# Everything on (dropout, bf16, gradient checkpointing, group_by_length, 2
# ranks): recomputing layers in backward changes no bit, and a run resumed
# from checkpoint-5 ends bit-identical to the uninterrupted one.
all="--bf16 --group_by_length --max_train_samples 120 --per_device_train_batch_size 4
--save_strategy steps --save_steps 5"
if ranks shm 2 all-plain $all && ranks shm 2 all-ckpt $all --gradient_checkpointing &&
    "$PYTHON" tests/dist/compare_models.py "$dir/all-plain/model.safetensors" \
        "$dir/all-ckpt/model.safetensors" 0 &&
    rm -rf "$dir/all-ckpt/checkpoint-10" &&
    ranks shm 2 all-ckpt $all --gradient_checkpointing \
        --resume_from_checkpoint "$dir/all-ckpt/checkpoint-5" &&
    "$PYTHON" tests/dist/compare_models.py "$dir/all-plain/model.safetensors" \
        "$dir/all-ckpt/model.safetensors" 0; then
    ok "shm: dropout+bf16+group_by_length: checkpointed = plain, and resumed = uninterrupted"
else
    bad "shm: dropout+bf16+group_by_length: checkpointed = plain, and resumed = uninterrupted"
fi

# Only rank 0 writes: one log entry per step in rank 0's log alone.
if grep -q '"step": 10' "$dir/shm-2.rank0.log" && ! grep -q '"step": 10' "$dir/shm-2.rank1.log"; then
    ok "only rank 0 logs"
else
    bad "only rank 0 logs"
fi

# mpi under each MPI's own mpirun: Open MPI's, and MPICH's Hydra with the
# guide's Intel MPI syntax (-genv); auto picks the plugin of the launcher.
mpi_rows() { # MPI PLUGIN, then the launcher's command line up to -n
    mpi=$1 plugin=$B/lib/cputrain/$2
    shift 2
    if ! command -v "$1" > /dev/null 2>&1 || [ ! -f "$plugin" ]; then
        bad "$mpi: $1 or $plugin missing (scripts/install-deps.sh installs Open MPI and MPICH)"
        return
    fi
    for world in 2 4; do
        name=$mpi-$world
        if "$@" -n "$world" "$qa" $args --ddp_backend auto --log_level info \
            --per_device_train_batch_size $((8 / world)) --output_dir "$dir/$name" \
            > "$dir/$name.log" 2>&1 && grep -q "backend mpi" "$dir/$name.log" && same "$name"; then
            ok "$mpi: $world ranks x batch $((8 / world)) = 1 x 8 (auto chose mpi)"
        else
            bad "$mpi: $world ranks x batch $((8 / world)) = 1 x 8"; tail -n 5 "$dir/$name.log"
        fi
    done
}
mpi_rows openmpi dist-mpi.so mpirun.openmpi --allow-run-as-root --oversubscribe \
    -x OMP_NUM_THREADS=1
mpi_rows mpich dist-mpich.so mpirun.mpich -genv OMP_NUM_THREADS 1

echo "ddp: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
