#!/bin/sh
# The guide's multi-node row on one machine: 4 ranks on 2 "hosts" (network
# namespaces with a NIC each into a bridge, tests/dist/fake_hosts.sh),
# 2 ranks per host, cputrain-qa training 10 steps of the demo model
# (dropout on, as in tests/dist/ddp_equiv.sh) at batch 2 per rank,
# started three ways, each with the default ddp_backend (auto):
#   torchrun  what torchrun --nnodes 2 --nproc_per_node 2 (and a PyTorchJob
#             whose pods run torchrun) gives each process: RANK, WORLD_SIZE,
#             LOCAL_RANK 0/1, LOCAL_WORLD_SIZE 2, MASTER_ADDR = host 0's
#             address, MASTER_PORT; auto picks tcp (the world spans hosts)
#   pods      a PyTorchJob whose 4 pods run cputrain-qa directly: RANK,
#             WORLD_SIZE, MASTER_* only, 4 hosts of one rank
#   mpirun    Open MPI's mpirun -n 4, 2 per host (the guide's
#             `mpirun -f hostfile -n 4 -ppn 2` is MPICH / Intel MPI syntax;
#             Open MPI's is `--hostfile hostfile --map-by ppr:2:node`). It
#             would start remote ranks over ssh, and there is no sshd here:
#             mpirun runs in the switch namespace instead, PMIx's server
#             reachable over the bridge, and a wrapper moves rank r into
#             host r/2 with the local rank and size that host's Open MPI
#             daemon would set; MPI traffic over TCP on the veths only.
#             auto picks mpi.
#   mpirun.mpich  the guide's line itself, `mpirun -f hostfile -n 4 -ppn 2
#             -genv OMP_NUM_THREADS=1 cputrain-qa ...`, under MPICH's Hydra
#             (Intel MPI's launcher family) from host 0, host 1's proxy
#             started by an `ssh` that enters its namespace; auto picks the
#             MPICH-ABI mpi plugin.
# Each must end with the parameters of 1 rank x batch 8 (within 1e-6), and
# the ranks must print what docs/distributed.md says: rank 0 the training log, the
# others only their placement (and warnings). Needs root and `ip`, else
# SKIPPED (exit 77); the mpirun parts need each MPI's mpirun and plugin.
# Expects B and PYTHON. Ends with "multinode: N passed, M failed".
set -u
: "${B:=build}" "${PYTHON:=/usr/bin/python3}"
qa=$PWD/$B/bin/cputrain-qa
dir=$PWD/$B/multinode-test
LIMIT=${DIST_TEST_LIMIT:-300}
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "multinode: ok: $1"; }
bad() { failed=$((failed + 1)); echo "multinode: FAILED: $1"; }
check() { # description, then a command that must succeed
    what=$1
    shift
    if "$@"; then ok "$what"; else bad "$what"; fi
}
skip() {
    echo "multinode: SKIPPED ($1)"
    echo "multinode: 0 passed, 0 failed, 1 skipped"
    exit 77
}

[ -x "$qa" ] || { echo "multinode: no $qa"; echo "multinode: 0 passed, 1 failed"; exit 1; }
[ "$(id -u)" = 0 ] || skip "needs root"
command -v ip > /dev/null 2>&1 || skip "no ip command (iproute2)"
. tests/dist/fake_hosts.sh
trap fh_down EXIT
trap 'exit 1' INT TERM HUP
rm -rf "$dir"
mkdir -p "$dir"
fh_up 4 2> "$dir/netns.err" || skip "network namespaces: $(cat "$dir/netns.err")"

. tests/dist/demo_data.sh
demo_data "$dir/data" || { bad "demo data"; exit 1; }
args="--config_name $dir/data/config.json --tokenizer_name $dir/data
--train_file $dir/data/train.json --max_train_samples 36 --do_train --max_steps 10
--learning_rate 1e-3 --adam_epsilon 1e-4 --max_seq_length 96 --doc_stride 32
--save_strategy no --seed 42 --logging_steps 5 --report_to none --ddp_timeout 120
--log_level_replica info"
export CPUTRAIN_DIST_SECRET=multinode-test-$$

same() { # NAME: its parameters equal the 1 x 8 run's
    "$PYTHON" tests/dist/compare_models.py "$dir/one/model.safetensors" \
        "$dir/$1/model.safetensors" 1e-6
}
# prints NAME: rank 0's log has the training log, the summary and the
# reducer's communication time (lib/train/ddp.c); every other rank's (at
# --log_level_replica info; by default they print warnings only) has its
# placement line and no training line, and no error.
prints() {
    grep -q '"step": 10' "$dir/$1.rank0.log" && grep -q '"train_runtime"' "$dir/$1.rank0.log" ||
        { echo "rank 0 of $1: no training log"; return 1; }
    grep -q 'ddp: rank 0: allreduce [0-9.]* s per step, [0-9.]* s of it after backward ended' \
        "$dir/$1.rank0.log" || { echo "rank 0 of $1: no communication time"; return 1; }
    for r in 1 2 3; do
        f=$dir/$1.rank$r.log
        # (placement names the rank within its host)
        grep -q "placement: rank [0-9]* -> " "$f" || { echo "rank $r of $1: no placement line"; return 1; }
        ! grep -q '"step"\|"train_runtime"\|error' "$f" || { echo "rank $r of $1 logs:"; cat "$f"; return 1; }
    done
}
# backend NAME BACKEND LOCAL_WORLD: rank 0 and rank 2 (the first of the
# second host: a main process of its node, log_on_each_node) say which
# backend and locality they got; the others keep what they joined with to
# themselves (cputrain-qa says the arguments' and the job's messages once
# per node).
backend() {
    grep -q "dist: rank 0 of 4 (local 0 of $3), backend $2" "$dir/$1.rank0.log" &&
        grep -q "dist: rank 2 of 4 (local $((2 % $3)) of $3), backend $2" "$dir/$1.rank2.log" ||
        { grep -h "dist: rank" "$dir/$1".rank*.log; return 1; }
}
# apart NAME PPN: each rank printed its network namespace (the wrapper's
# "netns" line): the same within a host, different across hosts, none the
# test's own.
apart() {
    mine=$(readlink /proc/self/ns/net)
    for r in 0 1 2 3; do
        sed -n 's/^netns \(net:\[[0-9]*\]\)$/\1/p' "$dir/$1.rank$r.log" > "$dir/$1.ns$r"
        [ -s "$dir/$1.ns$r" ] && ! grep -qF "$mine" "$dir/$1.ns$r" || return 1
    done
    for r in 0 1 2 3; do
        for q in 0 1 2 3; do
            if [ $((r / $2)) -eq $((q / $2)) ]; then
                cmp -s "$dir/$1.ns$r" "$dir/$1.ns$q" || return 1
            else
                ! cmp -s "$dir/$1.ns$r" "$dir/$1.ns$q" || return 1
            fi
        done
    done
}
# in_host NS command...: the command in namespace NS, after printing it.
in_host='echo "netns $(readlink /proc/self/ns/net)"; exec "$0" "$@"'

if "$qa" $args --per_device_train_batch_size 8 --output_dir "$dir/one" > "$dir/one.log" 2>&1; then
    ok "1 rank x batch 8"
else
    bad "1 rank x batch 8"; tail -n 5 "$dir/one.log"
fi

# env_ranks NAME PPN [LOCAL]: 4 ranks, rank r in host r / PPN; LOCAL=no
# leaves the LOCAL_* variables out (a pod without torchrun).
. tests/dist/master_port.sh
port=$(first_master_port)
env_ranks() {
    name=$1 ppn=$2 pids=""
    port=$((port + 1))
    for r in 0 1 2 3; do
        local_env="LOCAL_RANK=$((r % ppn)) LOCAL_WORLD_SIZE=$ppn"
        [ "${3:-}" = no ] && local_env=
        ip netns exec "$(fh_ns $((r / ppn)))" sh -c "$in_host" env RANK=$r WORLD_SIZE=4 $local_env \
            MASTER_ADDR="$(fh_addr 0)" MASTER_PORT=$port OMP_NUM_THREADS=1 \
            timeout -k 10 "$LIMIT" "$qa" $args --per_device_train_batch_size 2 \
            --output_dir "$dir/$name" > "$dir/$name.rank$r.log" 2>&1 &
        pids="$pids $!"
    done
    status=0
    for p in $pids; do wait "$p" || status=1; done
    [ "$status" -eq 0 ] || { tail -n 3 "$dir/$name".rank*.log; return 1; }
}

if env_ranks torchrun 2; then
    ok "torchrun env, 2 hosts x 2 ranks: all ranks exit 0"
    check "torchrun env: auto picks tcp, local ranks 0/1 of 2" backend torchrun tcp 2
    check "torchrun env: ranks 0, 1 in host 0's namespace, 2, 3 in host 1's" apart torchrun 2
    check "torchrun env: rank 0 listens on host 0's address" \
        grep -q "rank 0 listens on $(fh_addr 0) port" "$dir/torchrun.rank0.log"
    check "torchrun env: 2 hosts x 2 ranks x batch 2 = 1 x 8" same torchrun
    check "torchrun env: rank 0 logs training, ranks 1-3 only their placement" prints torchrun
else
    bad "torchrun env, 2 hosts x 2 ranks"
fi

if env_ranks pods 1 no; then
    ok "PyTorchJob pods without torchrun, 4 hosts x 1 rank: all ranks exit 0"
    check "pods: auto picks tcp, each rank local 0 of 1" backend pods tcp 1
    check "pods: each rank in a namespace of its own" apart pods 1
    check "pods: 4 ranks x batch 2 = 1 x 8" same pods
    check "pods: rank 0 logs training, ranks 1-3 only their placement" prints pods
else
    bad "PyTorchJob pods without torchrun, 4 hosts x 1 rank"
fi

if command -v mpirun.openmpi > /dev/null 2>&1 && [ -f "$B/lib/cputrain/dist-mpi.so" ]; then
    cat > "$dir/in_host.sh" << EOF
#!/bin/sh
# Rank r into host r / 2, local rank r % 2 of 2 (what that host's orted would say).
r=\$OMPI_COMM_WORLD_RANK
export OMPI_COMM_WORLD_LOCAL_RANK=\$((r % 2)) OMPI_COMM_WORLD_LOCAL_SIZE=2
exec ip netns exec ct-h\$((r / 2))-$fh_tag sh -c '$in_host' "\$@" > "$dir/mpirun.rank\$r.log" 2>&1
EOF
    chmod +x "$dir/in_host.sh"
    if ip netns exec "$(fh_switch)" env PMIX_MCA_ptl_tcp_remote_connections=1 \
        PMIX_MCA_ptl_tcp_if_include=10.233.0.0/24 timeout -k 10 "$LIMIT" \
        mpirun.openmpi --allow-run-as-root --oversubscribe --bind-to none -n 4 \
        --mca btl tcp,self --mca btl_tcp_if_include 10.233.0.0/24 \
        --mca oob_tcp_if_include 10.233.0.0/24 -x OMP_NUM_THREADS=1 -x CPUTRAIN_DIST_SECRET \
        "$dir/in_host.sh" "$qa" $args --per_device_train_batch_size 2 \
        --output_dir "$dir/mpirun" > "$dir/mpirun.log" 2>&1; then
        ok "mpirun -n 4, 2 per host: all ranks exit 0"
        check "mpirun: auto picks mpi, local ranks 0/1 of 2" backend mpirun mpi 2
        check "mpirun: ranks 0, 1 in host 0's namespace, 2, 3 in host 1's" apart mpirun 2
        check "mpirun: 2 hosts x 2 ranks x batch 2 = 1 x 8" same mpirun
        check "mpirun: rank 0 logs training, ranks 1-3 only their placement" prints mpirun
    else
        bad "mpirun -n 4, 2 per host"; tail -n 5 "$dir/mpirun.log" "$dir"/mpirun.rank*.log
    fi
else
    bad "mpirun or $B/lib/cputrain/dist-mpi.so missing (scripts/install-deps.sh installs Open MPI)"
fi

# The guide's launch line as written, under MPICH's Hydra (Intel MPI's
# launcher family): mpirun -f hostfile -n 4 -ppn 2 -genv OMP_NUM_THREADS=...
# run from host 0. Hydra starts host 1's proxy with `ssh HOST COMMAND`;
# there is no sshd here, so the `ssh` first in PATH runs COMMAND in that
# host's namespace instead, and HYDRA_IFACE=eth0 has the proxy call back
# to host 0's address (both set outside the command line, as a cluster's
# environment would).
if command -v mpirun.mpich > /dev/null 2>&1 && [ -f "$B/lib/cputrain/dist-mpich.so" ]; then
    mkdir -p "$dir/fake-ssh"
    cat > "$dir/fake-ssh/ssh" << EOF
#!/bin/sh
# ssh [-x ...] HOST COMMAND...: COMMAND in the namespace of host HOST (10.233.0.<i+1>)
while [ \$# -gt 0 ]; do case \$1 in -*) shift ;; *) break ;; esac; done
host=\$1
shift
echo "ssh \$host: \$*" >> "$dir/hydra.ssh.log"
exec ip netns exec ct-h\$((\${host##*.} - 1))-$fh_tag sh -c "\$*"
EOF
    chmod +x "$dir/fake-ssh/ssh"
    printf '%s\n%s\n' "$(fh_addr 0)" "$(fh_addr 1)" > "$dir/hostfile"
    if ip netns exec "$(fh_ns 0)" env PATH="$dir/fake-ssh:$PATH" HYDRA_IFACE=eth0 \
        timeout -k 10 "$LIMIT" \
        mpirun.mpich -f "$dir/hostfile" -n 4 -ppn 2 -genv OMP_NUM_THREADS=1 \
        "$qa" $args --per_device_train_batch_size 2 \
        --output_dir "$dir/hydra" > "$dir/hydra.log" 2>&1; then
        ok "the guide's line under mpirun.mpich, 2 hosts x 2 ranks: exit 0"
        check "mpirun.mpich: auto picks mpi through the MPICH plugin (launcher pmi)" \
            grep -q "dist: rank 0 of 4 (local 0 of 2), backend mpi, launcher pmi" "$dir/hydra.log"
        check "mpirun.mpich: rank 2 is local 0 of 2 on host 1, started there by Hydra's ssh" \
            eval 'grep -q "dist: rank 2 of 4 (local 0 of 2), backend mpi, launcher pmi" \
                      "$dir/hydra.log" && grep -q "^ssh $(fh_addr 1): .*hydra_pmi_proxy" \
                      "$dir/hydra.ssh.log"'
        check "mpirun.mpich: 2 hosts x 2 ranks x batch 2 = 1 x 8" same hydra
    else
        bad "the guide's line under mpirun.mpich, 2 hosts x 2 ranks"; tail -n 8 "$dir/hydra.log"
    fi
else
    bad "mpirun.mpich or $B/lib/cputrain/dist-mpich.so missing (scripts/install-deps.sh installs MPICH)"
fi

echo "multinode: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
