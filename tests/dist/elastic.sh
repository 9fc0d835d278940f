#!/bin/sh
# cputrain-run and elastic world size. The reference is a fixed 2-rank run
# (batch 2 x accumulation 3: a global batch of 12) of cputrain-qa started by
# cputrain-run; then, each ending with its parameters within 1e-6:
#   - 3 ranks (batch 2 x accumulation 2), one SIGKILLed after checkpoint-4:
#     the group restarts at 3 and resumes from the newest checkpoint;
#   - elastic (--nnodes 2:3): the killed slot is dropped, 2 ranks resume
#     with accumulation 3, then a slot is added back (--grow_file, SIGUSR1)
#     and 3 ranks finish with accumulation 2;
#   - the same with one launcher per node meeting at --rdzv_endpoint, with
#     a secret: the node of rank 2 killed, a new one joining later, while
#     strangers (garbage, a silent connection, a launcher with another
#     secret) and members sending malformed messages are dropped and
#     logged by address, and change no round;
#   - torchrun's protocol without the launcher (Debian's torchrun does not
#     run under Python 3.11: its Std enum parsing fails in start_processes):
#     ranks started by hand at 3, resumed by hand at 2 with
#     TORCHELASTIC_RESTART_COUNT=1 from checkpoint-4;
# and the launcher's exit codes, per-rank logs, signal forwarding and bad
# arguments; a rendezvous without a secret warns once. 36 examples, dropout
# on, adam_epsilon 1e-4: as ddp_equiv.sh.
# Expects B and PYTHON. Ends with "elastic: N passed, M failed".
set -u
: "${B:=build}" "${PYTHON:=/usr/bin/python3}"
qa=$(pwd)/$B/bin/cputrain-qa
run=$(pwd)/$B/bin/cputrain-run
dir=$(pwd)/$B/elastic-test
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "elastic: ok: $1"; }
bad() { failed=$((failed + 1)); echo "elastic: FAILED: $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

rm -rf "$dir"
mkdir -p "$dir"
. tests/dist/demo_data.sh
demo_data "$dir/data" || { bad "demo data"; exit 1; }

args="--config_name $dir/data/config.json --tokenizer_name $dir/data
--train_file $dir/data/train.json --max_train_samples 36 --do_train --max_steps 14
--learning_rate 1e-3 --adam_epsilon 1e-4 --max_seq_length 96 --doc_stride 32
--save_strategy steps --save_steps 2 --seed 42 --logging_steps 5 --ddp_timeout 60
--per_device_train_batch_size 2"
. tests/dist/master_port.sh
port=$(first_master_port)

# wait_until COMMAND: polls it (at most 120 s, a guard against a hang, not a
# measurement); 1 when it never held.
wait_until() {
    n=0
    until eval "$1"; do
        n=$((n + 1))
        [ "$n" -le 1200 ] || return 1
        sleep 0.1
    done
}
same() { "$PYTHON" tests/dist/compare_models.py "$dir/two/model.safetensors" "$1/model.safetensors" 1e-6; }

# The worker: cputrain-qa itself (exec keeps the pid), with a watcher that
# SIGKILLs it once checkpoint-$KILL_AFTER is complete when RANK is $KILL_RANK
# at TORCHELASTIC_RESTART_COUNT 0, and, when WORLD_SIZE is $GROW_AT_WORLD, has
# rank 0 ask the launcher for one more slot after checkpoint-$GROW_AFTER.
cat > "$dir/worker.sh" <<'EOF'
#!/bin/sh
out=$1
shift
me=$$
wait_for() { # wait_for CHECKPOINT: 1 once it is complete, 0 when cputrain-qa is gone
    while kill -0 "$me" 2> /dev/null; do
        [ -f "$out/checkpoint-$1/cputrain_checkpoint_complete" ] && return 0
        sleep 0.05
    done
    return 1
}
if [ "${KILL_RANK:-}" = "$RANK" ] && [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then
    if [ "${KILL_NODE:-}" = 1 ]; then # the whole node: its launcher, then its workers
        launcher=$PPID
        (wait_for "$KILL_AFTER" && kill -9 "$launcher") &
    else
        (wait_for "$KILL_AFTER" && kill -9 "$me") &
    fi
fi
if [ "${GROW_AT_WORLD:-}" = "$WORLD_SIZE" ] && [ "$RANK" = 0 ]; then
    launcher=$PPID
    (wait_for "$GROW_AFTER" && echo 1 > "$GROW_FILE" && kill -USR1 "$launcher") &
fi
exec "$@" --output_dir "$out"
EOF
chmod +x "$dir/worker.sh"

# Fixed 2 ranks: the reference.
port=$((port + 1))
if "$run" --nproc_per_node 2 --master_port $port --log_dir "$dir/two-logs" \
    "$qa" $args --gradient_accumulation_steps 3 --output_dir "$dir/two" > "$dir/two.log" 2>&1; then
    ok "cputrain-run: 2 ranks x batch 2 x accumulation 3"
else
    bad "cputrain-run: 2 ranks x batch 2 x accumulation 3"; tail -n 5 "$dir/two.log"
    tail -n 5 "$dir"/two-logs/attempt_0/*/stderr.log
    echo "elastic: $passed passed, $failed failed"
    exit 1
fi
check "per-rank logs: attempt_0/{0,1}/{stdout,stderr}.log, rank 0 logs the steps" \
    '[ -f "$dir/two-logs/attempt_0/1/stdout.log" ] && [ -f "$dir/two-logs/attempt_0/1/stderr.log" ] &&
     grep -q "\"step\": 14" "$dir/two-logs/attempt_0/0/stderr.log" "$dir/two-logs/attempt_0/0/stdout.log" &&
     ! grep -q "\"step\": 14" "$dir/two-logs/attempt_0/1/stderr.log" "$dir/two-logs/attempt_0/1/stdout.log"'
check "the workers saw the launcher's environment (2 processes, torchrun's variables)" \
    'grep -q "2 processes (backend shm, launcher torchrun)" "$dir/two-logs/attempt_0/0/stderr.log"'

# 3 ranks, rank 1 SIGKILLed after checkpoint-4; the group restarts at 3.
port=$((port + 1))
KILL_RANK=1 KILL_AFTER=4 "$run" --nproc_per_node 3 --max_restarts 1 --master_port $port \
    --log_dir "$dir/kill-logs" "$dir/worker.sh" "$dir/kill" "$qa" $args \
    --gradient_accumulation_steps 2 > "$dir/kill.log" 2>&1
rc=$?
check "3 ranks, one SIGKILLed after checkpoint-4: restarted, exit 0 (got $rc)" '[ "$rc" = 0 ]'
check "the launcher named the killed rank and how" \
    'grep -q "rank 1 (local_rank 1, pid [0-9]*) failed: killed by signal 9 (SIGKILL)" "$dir/kill.log" &&
     grep -q "restarting the group (restart 1 of 1)" "$dir/kill.log"'
check "the restarted ranks resumed (TORCHELASTIC_RESTART_COUNT 1, attempt_1 logs)" \
    'grep -q "resuming from .*checkpoint-" "$dir/kill-logs/attempt_1/0/stderr.log"'
check "3 ranks killed and restarted = fixed 2 ranks (1e-6)" 'same "$dir/kill"'

# Elastic: the killed slot is dropped (2 ranks, accumulation 3), then one
# is added back after checkpoint-8 (3 ranks, accumulation 2).
port=$((port + 1))
: > "$dir/grow"
KILL_RANK=2 KILL_AFTER=4 GROW_AT_WORLD=2 GROW_AFTER=8 GROW_FILE="$dir/grow" \
    "$run" --nnodes 2:3 --nproc_per_node 3 --max_restarts 2 --drop_after 1 \
    --grow_file "$dir/grow" --master_port $port --log_dir "$dir/el-logs" \
    "$dir/worker.sh" "$dir/elastic" "$qa" $args --gradient_accumulation_steps 2 \
    > "$dir/elastic.log" 2>&1
rc=$?
check "elastic 3 -> 2 -> 3: exit 0 (got $rc)" '[ "$rc" = 0 ]'
check "elastic: the slot dropped (3 -> 2) and one added (2 -> 3)" \
    'grep -q "dropped (3 -> 2 workers)" "$dir/elastic.log" &&
     grep -q "1 slot added (2 -> 3 workers)" "$dir/elastic.log"'
check "elastic: 2 ranks kept the global batch 12 with accumulation 3" \
    'grep -q "global batch of 12 .*this run has 2 ranks and keeps it: gradient_accumulation_steps 2 -> 3" "$dir/el-logs/attempt_1/0/stderr.log"'
check "elastic: 3 ranks again, the checkpoint of 2 ranks gives accumulation 2" \
    'grep -q "was trained by 2 ranks, this run has 3; its global batch 12" "$dir/el-logs/attempt_2/0/stderr.log"'
check "elastic: the widening stopped the ranks with a checkpoint (SIGTERM)" \
    'grep -q "SIGUSR1: new slots requested" "$dir/elastic.log" &&
     grep -q "SIGTERM received" "$dir/el-logs/attempt_1/0/stderr.log"'
check "elastic 3 -> 2 -> 3 = fixed 2 ranks (1e-6)" 'same "$dir/elastic"'

# Several machines' launchers (one node each here, on 127.0.0.1): the
# rendezvous of --nnodes 2:3 --rdzv_endpoint. The node holding rank 2 is
# killed after checkpoint-4 (its launcher SIGKILLed, its worker follows);
# the two left go on (accumulation 3); once they have saved a checkpoint a
# fourth launcher joins, and three finish (accumulation 2). Every launcher
# (and so every worker) holds the job's secret. Before the nodes join, a
# stranger connects and stays silent, one sends garbage (the old line
# protocol's "JOIN 1 0" and "FAIL 1"), and a launcher with another secret
# tries to join; in round 1, members of the job (a Python peer holding the
# secret) send malformed messages. None of them may count as a node, force
# a restart or hold up the round.
port=$((port + 1))
rdzv="--nnodes 2:3 --nproc_per_node 1 --rdzv_endpoint 127.0.0.1:$port --rdzv_id multi
--rdzv_conf last_call_timeout=1,join_timeout=120 --max_restarts 2"
secret=7f3c9a1e5b2d4f6081a3c5e7092b4d6f8e1a3c5b7d9f0e2c4a6b8d0f1e3c5a79
printf '%s\n' "$secret" > "$dir/secret"
chmod 600 "$dir/secret"
node() { # node NAME: a launcher in the background; its pid in $node_pid
    CPUTRAIN_DIST_SECRET_FILE="$dir/secret" KILL_RANK=2 KILL_AFTER=4 KILL_NODE=1 \
        "$run" $rdzv --log_dir "$dir/$1-logs" \
        "$dir/worker.sh" "$dir/multi" "$qa" $args --gradient_accumulation_steps 2 \
        > "$dir/$1.log" 2>&1 &
    node_pid=$!
}
stranger() { # stranger MODE NAME [LINE]: its output in $dir/NAME.out
    RDZV_ID=multi CPUTRAIN_DIST_SECRET=$secret \
        "$PYTHON" tests/dist/rdzv_stranger.py "$1" "$port" ${3:+"$3"} > "$dir/$2.out" 2>&1
}
sport() { sed -n 's/^port //p' "$dir/$1.out"; } # the stranger's own port
node n0; p0=$node_pid
wait_until 'grep -q "hosting 127.0.0.1" "$dir/n0.log"'
stranger silent silent &
silent_pid=$!
wait_until 'grep -q "^port" "$dir/silent.out"'
stranger garbage garbage
CPUTRAIN_DIST_SECRET=another-secret-of-32-bytes-or-so "$run" $rdzv true > "$dir/wrong.log" 2>&1
wrong_rc=$?
node n1; p1=$node_pid
node n2; p2=$node_pid
if wait_until 'grep -q "round 1: 3 nodes" "$dir/n0.log"'; then
    # still connected, silent, when the round formed: it held nobody up
    silent_open=$(grep -c "^closed" "$dir/silent.out")
    stranger member bad-nproc "JOIN 0 0"
    stranger member bad-host "JOIN 1 1"
    stranger member bad-number "JOIN 99999999999999999999 0"
    stranger member bad-long "JOIN 1 0$(printf '%0700d' 0)"
fi
if wait_until 'grep -q "round 2: node 0 of 2" "$dir/n0.log"' &&
    wait_until 'grep -q "saved checkpoint" "$dir/n0-logs/attempt_1/0/stderr.log" 2> /dev/null'; then
    node n3; p3=$node_pid
    wait "$p0"; rc0=$?
    wait "$p1"; rc1=$?
    wait "$p2"; rc2=$?
    wait "$p3"; rc3=$?
    wait "$silent_pid"
    lost=0
    for rc in $rc1 $rc2; do [ "$rc" = 137 ] && lost=$((lost + 1)); done
    check "rendezvous: the host and the surviving nodes exit 0, the killed one 137 (got $rc0 $rc1 $rc2, $rc3)" \
        '[ "$rc0" = 0 ] && [ "$rc3" = 0 ] && [ "$lost" = 1 ] && [ $((rc1 + rc2)) = 137 ]'
    check "rendezvous: rounds of 3, 2 and 3 nodes" \
        'grep -q "round 1: 3 nodes" "$dir/n0.log" && grep -q "round 2: 2 nodes" "$dir/n0.log" &&
         grep -q "round 3: 3 nodes" "$dir/n0.log" && grep -q "left the round" "$dir/n0.log" &&
         grep -q "a node joins" "$dir/n0.log"'
    check "rendezvous: 2 nodes kept the global batch 12 with accumulation 3" \
        'grep -q "this run has 2 ranks and keeps it: gradient_accumulation_steps 2 -> 3" "$dir/n0-logs/attempt_1/0/stderr.log"'
    check "rendezvous: the ranks met over tcp (one rank per node)" \
        'grep -q "3 processes (backend tcp, launcher torchrun)" "$dir/n0-logs/attempt_0/0/stderr.log"'
    check "rendezvous 3 -> 2 -> 3 nodes = fixed 2 ranks (1e-6)" 'same "$dir/multi"'
    check "rendezvous: 8 admitted (4 launchers, 4 members of the malformed tests), the workers authenticated too" \
        '[ "$(grep -c "proved it holds the job.s secret" "$dir/n0.log")" = 8 ] &&
         grep -q "every launcher proves it holds the job.s secret" "$dir/n0.log" &&
         ! grep -q "no secret is set" "$dir"/n*.log "$dir"/n*-logs/attempt_*/0/stderr.log'
    check "rendezvous: the strangers changed no round (restarts 0, 1, 1; attempts 0-2 only)" \
        'grep -q "round 1: 3 nodes, 3 workers (restart 0 of 2)" "$dir/n0.log" &&
         grep -q "round 2: 2 nodes, 2 workers (restart 1 of 2)" "$dir/n0.log" &&
         grep -q "round 3: 3 nodes, 3 workers (restart 1 of 2)" "$dir/n0.log" &&
         ! grep -q "round 4" "$dir/n0.log" && [ -d "$dir/n0-logs/attempt_2" ] &&
         [ ! -d "$dir/n0-logs/attempt_3" ] && [ "$(grep -c "left the round" "$dir/n0.log")" = 1 ]'
    check "rendezvous: garbage dropped before a byte was parsed, logged by address" \
        'grep -q "refused a stranger at 127.0.0.1:$(sport garbage): not this protocol" "$dir/n0.log" &&
         grep -q "^closed" "$dir/garbage.out"'
    check "rendezvous: round 1 formed while a silent stranger was connected (closed later, never a node)" \
        '[ "${silent_open:-1}" = 0 ] && grep -q "^closed" "$dir/silent.out" &&
         ! grep -q "127.0.0.1:$(sport silent) proved" "$dir/n0.log"'
    check "rendezvous: a launcher with another secret refused (exit $wrong_rc), logged by address" \
        '[ "$wrong_rc" = 1 ] && grep -q "cannot join at 127.0.0.1:$port: .*authentication failed" "$dir/wrong.log" &&
         grep -q "refused a stranger at 127.0.0.1:[0-9]*: authentication failed" "$dir/n0.log"'
    members_dropped() { # each admitted (the host proved itself), then closed, by address
        for b in bad-nproc bad-host bad-number bad-long; do
            grep -q "^admitted" "$dir/$b.out" && grep -q "^closed" "$dir/$b.out" || return 1
        done
        grep -q "at 127.0.0.1:$(sport bad-nproc) sent .JOIN 0 0., not this protocol: dropped" "$dir/n0.log" &&
        grep -q "at 127.0.0.1:$(sport bad-host) sent .JOIN 1 1., not this protocol: dropped" "$dir/n0.log" &&
        grep -q "at 127.0.0.1:$(sport bad-number) sent .JOIN 99999999999999999999 0., not this protocol" "$dir/n0.log" &&
        grep -q "at 127.0.0.1:$(sport bad-long) sent a line of more than 511 bytes" "$dir/n0.log"
    }
    check "rendezvous: members sending malformed JOINs (nproc 0, a second host, overflow, 700 bytes) dropped, none a node" \
        members_dropped
else
    bad "rendezvous: the group did not re-form at 2 nodes"; tail -n 5 "$dir"/n*.log
    for p in $p0 $p1 $p2; do kill -9 "$p" 2> /dev/null; done
fi

# torchrun's protocol by hand: what its elastic agent gives a restarted
# group (new RANK / WORLD_SIZE, TORCHELASTIC_RESTART_COUNT), no launcher.
ranks() { # ranks WORLD RESTART OUT EXTRA...
    world=$1 restart=$2 out=$3
    shift 3
    port=$((port + 1))
    r=0
    pids=""
    while [ "$r" -lt "$world" ]; do
        RANK=$r WORLD_SIZE=$world LOCAL_RANK=$r LOCAL_WORLD_SIZE=$world GROUP_RANK=0 \
            MASTER_ADDR=127.0.0.1 MASTER_PORT=$port TORCHELASTIC_RESTART_COUNT=$restart \
            TORCHELASTIC_RUN_ID=elastic-test OMP_NUM_THREADS=1 \
            "$qa" $args "$@" --output_dir "$out" > "$out.$restart.rank$r.log" 2>&1 &
        pids="$pids $!"
        r=$((r + 1))
    done
    status=0
    for p in $pids; do wait "$p" || status=1; done
    return $status
}
if ranks 3 0 "$dir/by-hand" --gradient_accumulation_steps 2; then
    # as if it had died after step 5: the checkpoints after 4 go, and a
    # restart at 2 ranks with the job's arguments continues from
    # checkpoint-4 (run_qa's rule: the newest one)
    for s in 6 8 10 12 14; do rm -rf "$dir/by-hand/checkpoint-$s"; done
    ranks 2 1 "$dir/by-hand" --gradient_accumulation_steps 2
    rc=$?
else
    rc=1
fi
check "env protocol: 3 ranks to step 4, then 2 ranks (restart 1) resume: exit 0" '[ "$rc" = 0 ]'
check "env protocol: 3 -> 2 ranks = fixed 2 ranks (1e-6)" 'same "$dir/by-hand"'

# 3 ranks' checkpoint-4 (12 = 2 x 3 x 2) resumed by 2 ranks asking for
# batch 4: 6 per rank, which 4 does not divide, so the per-rank batch
# becomes 3 (accumulation 2); and by 5 ranks, which 12 does not split over.
mkdir -p "$dir/rebatch" "$dir/five"
cp -r "$dir/by-hand/checkpoint-4" "$dir/rebatch/"
cp -r "$dir/by-hand/checkpoint-4" "$dir/five/"
ranks 2 1 "$dir/rebatch" --per_device_train_batch_size 4 --gradient_accumulation_steps 1
rc=$?
check "per-rank batch: 2 ranks asking for batch 4 train with 3 x accumulation 2 (exit $rc)" \
    '[ "$rc" = 0 ] && grep -q "gradient_accumulation_steps 1 -> 2, per_device_train_batch_size 4 -> 3" "$dir/rebatch.1.rank0.log"'
check "per-rank batch 3 x 2 ranks x 2 = fixed 2 ranks (1e-6)" 'same "$dir/rebatch"'
ranks 5 1 "$dir/five" --gradient_accumulation_steps 2
rc=$?
check "5 ranks refused: the global batch 12 does not split over 5 (exit $rc), nothing written" \
    '[ "$rc" != 0 ] && grep -q "its global batch 12 (batch 2 x 3 ranks x accumulation 2) does not split over 5 ranks" "$dir/five.1.rank0.log" &&
     [ "$(ls "$dir/five")" = checkpoint-4 ]'

# Exit codes, signals, arguments.
"$run" --nproc_per_node 2 --max_restarts 1 sh -c '[ "$RANK" = 1 ] && exit 7; exit 0' \
    > "$dir/exit.log" 2>&1
rc=$?
check "a worker exiting 7 twice (1 restart): exit 7, rank 1 named (got $rc)" \
    '[ "$rc" = 7 ] && grep -q "rank 1 failed (exit code 7) and the 1 restart are used up" "$dir/exit.log"'
"$run" --nproc_per_node 2 sh -c '[ "$RANK" = 0 ] && kill -SEGV $$; sleep 30' > "$dir/segv.log" 2>&1
rc=$?
check "a worker killed by SIGSEGV: exit 139, the other stopped at once (got $rc)" \
    '[ "$rc" = 139 ] && grep -q "rank 0 (local_rank 0, pid [0-9]*) failed: killed by signal 11 (SIGSEGV)" "$dir/segv.log"'
rm -f "$dir"/ready.*
"$run" --nproc_per_node 2 sh -c 'trap "echo term \$RANK > $0/got.\$RANK; exit 143" TERM;
    touch $0/ready.$RANK; while :; do sleep 0.05; done' "$dir" > "$dir/term.log" 2>&1 &
launcher=$!
wait_until '[ -f "$dir/ready.0" ] && [ -f "$dir/ready.1" ]' 
kill -TERM "$launcher"
wait "$launcher"
rc=$?
check "SIGTERM to the launcher reaches each worker once; exit 143 (got $rc)" \
    '[ "$rc" = 143 ] && [ -f "$dir/got.0" ] && [ -f "$dir/got.1" ] &&
     grep -q "SIGTERM received: forwarding it to the 2 running workers" "$dir/term.log"'
"$run" --nproc_per_node 2 --tee 3 --log_dir "$dir/tee" sh -c 'echo "hello $RANK"' > "$dir/tee.out" 2> /dev/null
check "--tee: lines prefixed [rankN]: here and kept in the files" \
    'grep -qx "\[rank1\]:hello 1" "$dir/tee.out" && grep -qx "hello 1" "$dir/tee/attempt_0/1/stdout.log"'
check "the environment: RANK, WORLD_SIZE, LOCAL_*, GROUP_RANK, MASTER_*, TORCHELASTIC_*" \
    '[ "$("$run" --nproc_per_node 2 --max_restarts 3 --rdzv_id job7 --master_port 23456 sh -c \
        "[ \$RANK = 1 ] && echo \$RANK \$WORLD_SIZE \$LOCAL_RANK \$LOCAL_WORLD_SIZE \$GROUP_RANK \$MASTER_ADDR \$MASTER_PORT \$TORCHELASTIC_RESTART_COUNT \$TORCHELASTIC_MAX_RESTARTS \$TORCHELASTIC_RUN_ID; exit 0" 2> /dev/null)" = \
        "1 2 1 2 0 127.0.0.1 23456 0 3 job7" ]'
ports=$("$run" --standalone --nproc_per_node 2 sh -c 'echo $MASTER_PORT' 2> /dev/null | sort -u)
check "--standalone: one free port for both workers (got $ports)" \
    '[ "$(echo "$ports" | wc -l)" = 1 ] && [ "$ports" -ge 1 ] && [ "$ports" != 29500 ]'
check "PET_* variables (a PyTorchJob's) are read, the command line wins" \
    '[ "$(PET_NPROC_PER_NODE=3 "$run" sh -c "[ \$RANK = 0 ] && echo \$WORLD_SIZE; exit 0" 2> /dev/null)" = 3 ] &&
     [ "$(PET_NPROC_PER_NODE=3 "$run" --nproc-per-node 1 sh -c "echo \$WORLD_SIZE" 2> /dev/null)" = 1 ]'

# A silent stranger at its handshake deadline (5 s, longer than the run
# above): one node whose program waits until the host has dropped it.
port=$((port + 1))
CPUTRAIN_DIST_SECRET_FILE="$dir/secret" "$run" --nnodes 1:2 --nproc_per_node 1 \
    --rdzv_endpoint 127.0.0.1:$port --rdzv_conf last_call_timeout=0.1 sh -c 'n=0
    until grep -q "did not finish the handshake" "$0"; do
        n=$((n + 1)); [ "$n" -le 1200 ] || exit 1; sleep 0.1
    done' "$dir/silent1.log" > "$dir/silent1.log" 2>&1 &
launcher=$!
wait_until 'grep -q "hosting 127.0.0.1" "$dir/silent1.log"'
stranger silent silent1
wait "$launcher"
rc=$?
check "rendezvous: a silent stranger dropped at its handshake deadline, logged by address (exit $rc)" \
    '[ "$rc" = 0 ] && grep -q "^closed" "$dir/silent1.out" &&
     grep -q "refused a stranger at 127.0.0.1:$(sport silent1): did not finish the handshake in time" "$dir/silent1.log" &&
     grep -q "round 1: 1 node, 1 worker (restart 0 of 0)" "$dir/silent1.log" && ! grep -q "round 2" "$dir/silent1.log"'

# A rendezvous without a secret: one node (--nnodes 1:2) hosts, runs and
# ends; it says once that the endpoint must be reachable from trusted hosts.
port=$((port + 1))
"$run" --nnodes 1:2 --nproc_per_node 1 --rdzv_endpoint 127.0.0.1:$port \
    --rdzv_conf last_call_timeout=0.1 true > "$dir/nosecret.log" 2>&1
rc=$?
check "rendezvous without a secret: exit $rc, warned once (reachable from trusted hosts only)" \
    '[ "$rc" = 0 ] && [ "$(grep -c "no secret is set" "$dir/nosecret.log")" = 1 ] &&
     grep -q "must be reachable only from trusted hosts" "$dir/nosecret.log"'
CPUTRAIN_DIST_SECRET=x CPUTRAIN_DIST_SECRET_FILE="$dir/secret" "$run" --nnodes 1:2 \
    --nproc_per_node 1 --rdzv_endpoint 127.0.0.1:$port true > "$dir/twosecrets.log" 2>&1
rc=$?
check "rendezvous: both secret variables set refused (exit $rc), named" \
    '[ "$rc" = 2 ] && grep -q "both CPUTRAIN_DIST_SECRET_FILE and CPUTRAIN_DIST_SECRET are set" "$dir/twosecrets.log"'

refused() { # refused WHAT EXPECTED-TEXT ARGS...: exit 2 and the reason
    what=$1 text=$2
    shift 2
    "$run" "$@" > "$dir/refused.log" 2>&1
    rc=$?
    check "refused: $what" '[ "$rc" = 2 ] && grep -q -- "$text" "$dir/refused.log"'
}
refused "--nproc_per_node 0" "expected a number of workers in \[1, 1024\]" --nproc_per_node 0 true
refused "--nproc_per_node 4x" "expected a number of workers" --nproc_per_node 4x true
refused "--nnodes 3:2" "expected N or MIN:MAX" --nnodes 3:2 true
refused "--nnodes 2:4 with 1 worker" "must lie within it" --nnodes 2:4 --nproc_per_node 1 true
refused "--master_port 0" "expected a port in \[1, 65535\]" --master_port 0 true
refused "--rdzv_endpoint without a port" "expected HOST:PORT" --rdzv_endpoint host true
refused "--redirects 0:1,1:2" "per-rank maps" --redirects 0:1,1:2 --log_dir "$dir/x" true
refused "--tee without --log_dir" "which is not given" --tee 3 true
refused "an unknown option" "unknown option '--monitor_interval'" --monitor_interval 5 true
refused "no PROGRAM" "no PROGRAM to run" --nproc_per_node 2
refused "--nnodes 2 without --node_rank" "needs its --node_rank" --nnodes 2 true
PET_MAX_RESTARTS=-1 "$run" true > "$dir/refused.log" 2>&1
rc=$?
check "refused: PET_MAX_RESTARTS=-1 (exit 2, named)" \
    '[ "$rc" = 2 ] && grep -q "environment PET_MAX_RESTARTS=.-1." "$dir/refused.log"'

echo "elastic: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
