#!/bin/sh
# Each mpi plugin on its own under its MPI's launcher (tests/dist/
# mpi_plugin_test.c): Open MPI's dist-mpi.so under mpirun.openmpi, the
# MPICH-ABI dist-mpich.so under Hydra's mpirun.mpich, each with 2, 3 and 4
# ranks: the collectives, then a stuck rank's timeout. The --timeout runs
# may end with mpirun failing by design (a rank leaves without
# MPI_Finalize): the verdict is one "PASS timeout" line per waiting rank.
# A plugin that was not built (its MPI's development files missing) is
# SKIPPED, said so; the script then exits 77 unless one failed.
# Expects B. Ends with "mpi_plugins: N passed, M failed[, K skipped]".
set -u
: "${B:=build}"
bin=$B/tests/mpi_plugin_test
passed=0
failed=0
skipped=0
log=$B/tests/mpi_timeout.log
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT

verdict() { # name status
    if [ "$2" -eq 0 ]; then
        passed=$((passed + 1))
        echo "mpi_plugins: ok: $1"
    else
        failed=$((failed + 1))
        echo "mpi_plugins: FAILED: $1"
    fi
}

plugin_runs() { # plugin, then the launcher's command line
    plugin=$1
    shift
    if [ ! -f "$plugin" ] || ! command -v "$1" > /dev/null 2>&1; then
        echo "mpi_plugins: SKIPPED: $plugin under $1 (not built, or no $1)"
        skipped=$((skipped + 1))
        return
    fi
    for n in 2 3 4; do
        timeout -k 10 300 "$@" -n "$n" "$bin" "$plugin"
        verdict "$(basename "$plugin") under $1 -n $n: collectives" $?
        timeout -k 10 300 "$@" -n "$n" "$bin" "$plugin" --timeout > "$log" 2>&1
        grep -c '^PASS timeout' "$log" | grep -qx $((n - 1))
        st=$?
        [ "$st" -eq 0 ] || cat "$log"
        verdict "$(basename "$plugin") under $1 -n $n: a stuck rank's timeout" "$st"
    done
}

plugin_runs "$B/lib/cputrain/dist-mpi.so" mpirun.openmpi --allow-run-as-root --oversubscribe -q
plugin_runs "$B/lib/cputrain/dist-mpich.so" mpirun.mpich

if [ "$skipped" -gt 0 ]; then
    echo "mpi_plugins: $passed passed, $failed failed, $skipped skipped"
else
    echo "mpi_plugins: $passed passed, $failed failed"
fi
[ "$failed" -eq 0 ] || exit 1
[ "$skipped" -eq 0 ] || exit 77
