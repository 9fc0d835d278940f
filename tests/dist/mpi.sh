#!/bin/sh
# The public ct_dist API from a launcher's environment: dist_api_test under
# Open MPI's mpirun and under MPICH's (Hydra, the launcher family of Intel
# MPI) with 2 and 3 ranks — the mpi backend through the plugin of that MPI,
# found beside the library, picked by auto from the launcher — and
# started by a shell loop the way torchrun does (RANK, WORLD_SIZE,
# LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT) for shm and tcp.
# Each run passes when every rank exits 0. Without mpirun or the plugin the
# mpi runs are SKIPPED, and then the script exits 77 (unless one failed).
# Expects B (build dir); `make check` builds $B/tests/dist_api_test.
set -u
: "${B:=build}"
bin=$PWD/$B/tests/dist_api_test
MPIRUN_OPENMPI=${MPIRUN_OPENMPI:-mpirun.openmpi --allow-run-as-root --oversubscribe}
MPIRUN_MPICH=${MPIRUN_MPICH:-mpirun.mpich}
# A hang must end the run, not the CI job; every collective is bounded by
# ct_dist's timeout (1800 s by default, not settable from the environment).
LIMIT=${DIST_TEST_LIMIT:-300}
passed=0
failed=0
skipped=0
tmp=$(mktemp -d /tmp/ct-dist-mpi.XXXXXX) || exit 1
. tests/dist/master_port.sh
port=$(first_master_port)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

# Another launcher's variables would win over mpirun's (torchrun's come first).
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT PMI_RANK PMI_SIZE \
    MPI_LOCALRANKID MPI_LOCALNRANKS CPUTRAIN_DIST_BACKEND CPUTRAIN_DIST_JOB CPUTRAIN_PLUGIN_DIR

verdict() { # name status
    if [ "$2" -eq 0 ]; then
        passed=$((passed + 1))
        echo "mpi.sh: $1: ok"
    else
        failed=$((failed + 1))
        echo "mpi.sh: $1: FAILED (status $2)"
    fi
}

if [ ! -x "$bin" ]; then
    echo "mpi.sh: $bin is not built (make $B/tests/dist_api_test)"
    echo "mpi.sh: 0 passed, 1 failed"
    exit 1
fi

# MPI N, then variables for the ranks: mpirun -n N of that MPI (openmpi or
# mpich); membership from its environment, the launcher checked.
run_mpi() {
    mpi=$1 n=$2
    shift 2
    if [ "$mpi" = openmpi ]; then cmd=$MPIRUN_OPENMPI launcher=openmpi; else
        cmd=$MPIRUN_MPICH launcher=pmi; fi
    name="$mpi: mpirun -n $n${1:+ ($*)}"
    echo "==== mpi.sh: $name"
    timeout -k 10 "$LIMIT" env "$@" $cmd -n "$n" "$bin" --backend mpi --launcher "$launcher"
    verdict "$name" $?
}

# torchrun's variables set by hand, one background process per rank.
run_loop() { # backend n
    backend=$1
    n=$2
    port=$((port + 1))
    job=ctdist-$$-$backend
    name="$backend, $n ranks from RANK/WORLD_SIZE/... (port $port)"
    echo "==== mpi.sh: $name"
    pids=
    r=0
    while [ "$r" -lt "$n" ]; do
        RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 \
            MASTER_PORT=$port CPUTRAIN_DIST_BACKEND=$backend CPUTRAIN_DIST_JOB=$job \
            timeout -k 10 "$LIMIT" "$bin" --backend "$backend" >"$tmp/$backend.$r" 2>&1 &
        pids="$pids $!"
        r=$((r + 1))
    done
    st=0
    for p in $pids; do
        wait "$p" || st=1
    done
    cat "$tmp/$backend".*
    # No shared memory left behind by the job.
    if ls /dev/shm/cputrain-"$job"-* >/dev/null 2>&1; then
        echo "mpi.sh: left in /dev/shm:" /dev/shm/cputrain-"$job"-*
        rm -f /dev/shm/cputrain-"$job"-*
        st=1
    fi
    verdict "$name" "$st"
}

# PLUGIN MPI: both runs of that MPI, or SKIPPED saying why.
mpi_runs() {
    if [ ! -f "$B/lib/cputrain/$1" ]; then
        echo "mpi.sh: $2: SKIPPED (no $1: its MPI's development files missing at build time)"
        skipped=$((skipped + 2))
    elif ! command -v "mpirun.$2" >/dev/null 2>&1; then
        echo "mpi.sh: $2: SKIPPED (no mpirun.$2)"
        skipped=$((skipped + 2))
    else
        run_mpi "$2" 2 # auto: launched by that MPI's mpirun and its plugin loads, so mpi
        run_mpi "$2" 3 CPUTRAIN_DIST_BACKEND=mpi
    fi
}
mpi_runs dist-mpi.so openmpi
mpi_runs dist-mpich.so mpich
run_loop shm 3
run_loop tcp 2

if [ "$skipped" -gt 0 ]; then
    echo "mpi.sh: $passed passed, $failed failed, $skipped skipped"
else
    echo "mpi.sh: $passed passed, $failed failed"
fi
[ "$failed" -eq 0 ] || exit 1
[ "$skipped" -eq 0 ] || exit 77
exit 0
