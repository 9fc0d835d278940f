#!/bin/sh
# The sharded optimizer (optim_shard, ZeRO stage 1) trains the model that
# one rank does: cputrain-qa at global batch 12 with 2, 3 and 4 ranks (each
# rank updating 1/N of the parameters and keeping 1/N of AdamW's moments)
# ends within 1e-6 of 1 rank x batch 12 after 10 steps, on shm, tcp and mpi;
# also with gradient accumulation, and with clipping that bites
# (max_grad_norm 0.05, whose global norm is assembled from the shards).
# Checkpoints hold one optimizer file per shard and resume at another world
# size (2 -> 1, 3, 4 and 1 -> 3), ending where the uninterrupted run does;
# world size 1 writes the single optimizer.safetensors, byte for byte the
# same with optim_shard on or off. Uses the ddp_equiv.sh setup (dropout on,
# adam_epsilon 1e-4). Also the default: sharded on shm, not on tcp and mpi
# (see optim_shard() in trainer.c). Expects B and PYTHON. Ends with
# "optim_shard: N passed, M failed".
set -u
: "${B:=build}" "${PYTHON:=/usr/bin/python3}"
qa=$B/bin/cputrain-qa
dir=$B/optim-shard-test
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "optim_shard: ok: $1"; }
bad() { failed=$((failed + 1)); echo "optim_shard: FAILED: $1"; }

rm -rf "$dir"
mkdir -p "$dir"
. tests/dist/demo_data.sh
demo_data "$dir/data" || { bad "demo data"; exit 1; }

args="--config_name $dir/data/config.json --tokenizer_name $dir/data
--train_file $dir/data/train.json --max_train_samples 36 --do_train --max_steps 10
--learning_rate 1e-3 --adam_epsilon 1e-4 --max_seq_length 96 --doc_stride 32
--save_strategy no --seed 42 --logging_steps 1 --ddp_timeout 120 --optim_shard true"

# ranks BACKEND WORLD NAME EXTRA...: WORLD ranks, torchrun's way (mpirun for mpi).
. tests/dist/master_port.sh
port=$(first_master_port)
ranks() {
    backend=$1 world=$2 name=$3
    shift 3
    if [ "$backend" = mpi ]; then
        mpirun --allow-run-as-root --oversubscribe -n "$world" -x OMP_NUM_THREADS=1 \
            "$qa" $args --ddp_backend mpi "$@" --output_dir "$dir/$name" \
            > "$dir/$name.rank0.log" 2>&1 || { tail -n 5 "$dir/$name.rank0.log"; return 1; }
        return 0
    fi
    port=$((port + 1))
    r=0
    pids=""
    while [ "$r" -lt "$world" ]; do
        RANK=$r WORLD_SIZE=$world LOCAL_RANK=$r LOCAL_WORLD_SIZE=$world MASTER_ADDR=127.0.0.1 \
            MASTER_PORT=$port OMP_NUM_THREADS=1 CPUTRAIN_DIST_JOB="shard-test-$$-$name" \
            "$qa" $args --ddp_backend "$backend" "$@" --output_dir "$dir/$name" \
            > "$dir/$name.rank$r.log" 2>&1 &
        pids="$pids $!"
        r=$((r + 1))
    done
    status=0
    for p in $pids; do wait "$p" || status=1; done
    [ "$status" -eq 0 ] || { tail -n 5 "$dir/$name".rank*.log; return 1; }
}

# same REF NAME [TOL]: NAME's parameters equal REF's.
same() {
    "$PYTHON" tests/dist/compare_models.py "$dir/$1/model.safetensors" \
        "$dir/$2/model.safetensors" "${3:-1e-6}"
}

one() { # NAME EXTRA...: one rank, two threads
    name=$1
    shift
    OMP_NUM_THREADS=2 "$qa" $args "$@" --output_dir "$dir/$name" > "$dir/$name.log" 2>&1 ||
        { tail -n 5 "$dir/$name.log"; return 1; }
}

check() { # TEXT COMMAND...
    text=$1
    shift
    if "$@"; then ok "$text"; else bad "$text"; fi
}

check "1 rank x batch 12" one one --per_device_train_batch_size 12
check "1 rank x batch 12, max_grad_norm 0.05" one one-clip --per_device_train_batch_size 12 \
    --max_grad_norm 0.05
# The clipping run must actually clip: its logged grad_norm is above 0.05.
check "  ... and it clips (grad_norm > 0.05 logged)" "$PYTHON" -c '
import json, re, sys
norms = [float(m) for m in re.findall(r"\"grad_norm\": ([0-9.e+-]+)", open(sys.argv[1]).read())]
sys.exit(0 if norms and min(norms) > 0.05 else 1)' "$dir/one-clip.log"

plugin=$B/lib/cputrain/dist-mpi.so
backends="shm tcp"
if command -v mpirun > /dev/null 2>&1 && [ -f "$plugin" ]; then
    backends="shm tcp mpi"
else
    bad "mpi: mpirun or $plugin missing (scripts/install-deps.sh installs Open MPI)"
fi

for backend in $backends; do
    for world in 2 3 4; do
        name=$backend-$world
        check "$backend: $world ranks x batch $((12 / world)), sharded = 1 x 12" \
            eval 'ranks $backend $world $name --per_device_train_batch_size $((12 / world)) &&
                  same one $name'
    done
    check "$backend: 2 ranks x batch 3 x accumulation 2, sharded = 1 x 12" \
        eval 'ranks $backend 2 $backend-accum --per_device_train_batch_size 3 \
                  --gradient_accumulation_steps 2 && same one $backend-accum'
    check "$backend: 3 ranks x batch 4, max_grad_norm 0.05, sharded = 1 x 12" \
        eval 'ranks $backend 3 $backend-clip --per_device_train_batch_size 4 \
                  --max_grad_norm 0.05 && same one-clip $backend-clip'
done

# The sharded run is the unsharded one (shm: the same additions, so 0).
check "shm: 2 ranks, optim_shard false = optim_shard true, bit for bit" \
    eval 'ranks shm 2 shm-2-unsharded --per_device_train_batch_size 6 --optim_shard false &&
          same shm-2 shm-2-unsharded 0'
check "  ... and the sharded rank 0 kept half the moments" "$PYTHON" -c '
import re, sys
def moments(p):
    return float(re.search(r"optimizer_moments ([0-9.]+) MiB", open(p).read()).group(1))
full, mine = moments(sys.argv[1]), moments(sys.argv[2])
print("  optimizer_moments: unsharded %.1f MiB, sharded rank 0 %.1f MiB" % (full, mine))
sys.exit(0 if mine < 0.75 * full else 1)' "$dir/shm-2-unsharded.rank0.log" "$dir/shm-2.rank0.log"

# Checkpoints: per shard at world 2, resumable at 1, 3 and 4 ranks.
save="--save_strategy steps --save_steps 5"
check "shm: 2 ranks save per-shard optimizer state" \
    eval 'ranks shm 2 saved2 --per_device_train_batch_size 6 $save &&
          [ -f $dir/saved2/checkpoint-5/optimizer-shard-0-of-2.safetensors ] &&
          [ -f $dir/saved2/checkpoint-5/optimizer-shard-1-of-2.safetensors ] &&
          [ ! -e $dir/saved2/checkpoint-5/optimizer.safetensors ] &&
          ! ls -d $dir/saved2/tmp-checkpoint-* 2> /dev/null && same one saved2'
for to in 1 3 4; do
    name=resume2to$to
    mkdir -p "$dir/$name"
    cp -r "$dir/saved2/checkpoint-5" "$dir/$name/"
    if [ "$to" -eq 1 ]; then
        run="one $name --per_device_train_batch_size 12 $save"
    else
        run="ranks shm $to $name --per_device_train_batch_size $((12 / to)) $save"
    fi
    check "shm: 2-rank checkpoint-5 resumed with $to rank(s) = uninterrupted 1 x 12" \
        eval "$run --resume_from_checkpoint $dir/$name/checkpoint-5 && same one $name"
done
check "  ... the 3 ranks said they resharded 2 shards" \
    grep -q "optimizer state of 2 shards resharded for 3 ranks" "$dir/resume2to3.rank0.log"
check "  ... resumed with 3 ranks, it saves 3 shards" \
    eval '[ -f $dir/resume2to3/checkpoint-10/optimizer-shard-2-of-3.safetensors ]'
check "1 rank saves the single optimizer.safetensors, the same bytes with optim_shard on" \
    eval 'one saved1 --per_device_train_batch_size 12 $save --optim_shard false &&
          one saved1-on --per_device_train_batch_size 12 $save --optim_shard true &&
          cmp $dir/saved1/checkpoint-5/optimizer.safetensors \
              $dir/saved1-on/checkpoint-5/optimizer.safetensors &&
          ! ls $dir/saved1/checkpoint-5/optimizer-shard-* 2> /dev/null'
for backend in tcp $(echo "$backends" | grep -o mpi); do
    name=resume1to3-$backend
    mkdir -p "$dir/$name"
    cp -r "$dir/saved1/checkpoint-5" "$dir/$name/"
    check "$backend: 1-rank checkpoint-5 resumed with 3 sharded ranks = uninterrupted" \
        eval "ranks $backend 3 $name --per_device_train_batch_size 4 $save \
                  --resume_from_checkpoint $dir/$name/checkpoint-5 && same one $name"
done

# A shard set with a file missing is refused, naming it, before anything
# is trained.
mkdir -p "$dir/missing"
cp -r "$dir/saved2/checkpoint-5" "$dir/missing/"
rm "$dir/missing/checkpoint-5/optimizer-shard-1-of-2.safetensors"
if ranks shm 2 missing --per_device_train_batch_size 6 \
    --resume_from_checkpoint "$dir/missing/checkpoint-5" > /dev/null; then
    bad "a shard set missing optimizer-shard-1-of-2 is refused"
elif grep -q "optimizer-shard-1-of-2.safetensors" "$dir/missing.rank0.log" &&
    [ ! -e "$dir/missing/model.safetensors" ]; then
    ok "a shard set missing optimizer-shard-1-of-2 is refused, naming it"
else
    bad "a shard set missing optimizer-shard-1-of-2 is refused (message)"
    tail -n 3 "$dir/missing.rank0.log"
fi

# A staging folder is made by the rank that writes into it, never taken
# over: symlinks (and a file) planted under the temporary names before the
# run are removed at its start, not followed; one planted while the run
# goes (here during the save of checkpoint-5, for checkpoint-10's shard)
# fails that save, naming it, and nothing is written where it points.
mkdir -p "$dir/planted" "$dir/elsewhere"
ln -s "$dir/elsewhere" "$dir/planted/tmp-checkpoint-5-shards"
ln -s "$dir/elsewhere" "$dir/planted/tmp-checkpoint-5-shard-1-of-2"
echo x > "$dir/planted/tmp-checkpoint-3-stale"
check "symlinks planted as staging folders before the run are removed, not followed" \
    eval 'ranks shm 2 planted --per_device_train_batch_size 6 $save &&
          [ -f $dir/planted/checkpoint-5/optimizer-shard-1-of-2.safetensors ] &&
          [ -z "$(ls -A $dir/elsewhere)" ] && ! ls -d $dir/planted/tmp-* 2> /dev/null'
mkdir -p "$dir/planted-late"
CPUTRAIN_TEST_CHECKPOINT_PAUSE_MS=1000 ranks shm 2 planted-late --per_device_train_batch_size 6 \
    $save > /dev/null 2>&1 &
late=$!
n=0
until ls -d "$dir"/planted-late/tmp-checkpoint-5-* > /dev/null 2>&1 || [ "$n" -ge 600 ]; do
    sleep 0.05
    n=$((n + 1))
done
ln -s "$dir/elsewhere" "$dir/planted-late/tmp-checkpoint-10-shard-1-of-2"
if wait "$late"; then
    bad "a staging folder planted during the run is refused"
elif grep -q "tmp-checkpoint-10-shard-1-of-2: the optimizer shard's staging folder exists already (a symlink" \
        "$dir/planted-late.rank1.log" && [ -z "$(ls -A "$dir/elsewhere")" ] &&
        [ ! -e "$dir/planted-late/checkpoint-10" ]; then
    ok "a staging folder planted during the run is refused, naming it, nothing written through"
else
    bad "a staging folder planted during the run is refused (message, or written through)"
    tail -n 3 "$dir/planted-late.rank1.log"; ls -la "$dir/elsewhere"
fi

# DistilBERT with sinusoidal positions (a frozen tensor, which no shard
# updates) sharded = 1 rank.
cat > "$dir/data/config_distil.json" <<'JSON'
{"model_type": "distilbert", "architectures": ["DistilBertForQuestionAnswering"],
 "vocab_size": 427, "dim": 64, "n_layers": 2, "n_heads": 2, "hidden_dim": 128,
 "max_position_embeddings": 128, "sinusoidal_pos_embds": true, "dropout": 0.1,
 "attention_dropout": 0.1, "qa_dropout": 0.1, "pad_token_id": 0}
JSON
plain_args=$args
args=$(echo "$args" | sed "s|config.json|config_distil.json|")
check "shm: distilbert, sinusoidal positions, 3 ranks x batch 4, sharded = 1 x 12" \
    eval 'one distil-one --per_device_train_batch_size 12 &&
          ranks shm 3 distil-3 --per_device_train_batch_size 4 && same distil-one distil-3'
args=$plain_args

# The default: sharded with several ranks on shm, not on tcp or mpi.
plain_args=$args
args=$(echo "$args" | sed "s|--optim_shard true||")
check "default: shm 2 ranks shard (optim_shard line, shard files)" \
    eval 'ranks shm 2 default-shm --per_device_train_batch_size 6 $save &&
          grep -q "optim_shard: each of the 2 ranks" $dir/default-shm.rank0.log &&
          [ -f $dir/default-shm/checkpoint-5/optimizer-shard-1-of-2.safetensors ]'
for backend in tcp $(echo "$backends" | grep -o mpi); do
    check "default: $backend 2 ranks do not shard (optimizer.safetensors)" \
        eval 'ranks $backend 2 default-$backend --per_device_train_batch_size 6 $save &&
              ! grep -q "optim_shard: each" $dir/default-$backend.rank0.log &&
              [ -f $dir/default-$backend/checkpoint-5/optimizer.safetensors ] &&
              same one default-$backend'
done
args=$plain_args

# Refused: sharding with save_on_each_node (shards would be split between
# machines' output_dirs).
if ranks shm 2 refused --per_device_train_batch_size 6 --optim_shard true \
    --save_on_each_node > /dev/null; then
    bad "optim_shard true with save_on_each_node is refused"
elif grep -q "optim_shard with save_on_each_node" "$dir/refused.rank0.log"; then
    ok "optim_shard true with save_on_each_node is refused"
else
    bad "optim_shard true with save_on_each_node is refused (message)"; tail -n 3 "$dir/refused.rank0.log"
fi

echo "optim_shard: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
