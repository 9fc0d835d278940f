#!/bin/sh
# Shell tests of tools/cputrain-topo (built as $B/bin/cputrain-topo): --help,
# usage errors (exit 2), the plan of a synthetic 2-socket machine for 4 local
# ranks line by line, the launcher's LOCAL_WORLD_SIZE as the default, and
# --apply on this machine reading every thread back as planned. Expects B.
# Ends with "topo_cli: N passed, M failed"; exit status 1 when any failed.
set -u
: "${B:=build}"
topo=$B/bin/cputrain-topo
dir=$B/topo-cli-test
passed=0
failed=0

# The plans depend on these; each check sets what it needs.
unset OMP_NUM_THREADS LOCAL_RANK LOCAL_WORLD_SIZE MPI_LOCALRANKID MPI_LOCALNRANKS \
    OMPI_COMM_WORLD_LOCAL_RANK OMPI_COMM_WORLD_LOCAL_SIZE

ok() { passed=$((passed + 1)); echo "topo_cli: ok: $1"; }
bad() { failed=$((failed + 1)); echo "topo_cli: FAILED: $1"; }
# contains FILE TEXT: FILE holds TEXT as a whole line (a fixed string)
contains() { grep -qxF -- "$2" "$1" || { echo "  '$2' not a line of $1:"; sed 's/^/  | /' "$1"; return 1; }; }
# has FILE TEXT: FILE holds TEXT somewhere
has() { grep -qF -- "$2" "$1" || { echo "  '$2' not in $1:"; sed 's/^/  | /' "$1"; return 1; }; }
# run STATUS NAME ARGS...: the tool exits with STATUS; output in $dir/out, $dir/err
run() {
    want=$1
    shift
    "$topo" "$@" > "$dir/out" 2> "$dir/err"
    got=$?
    [ "$got" -eq "$want" ] || { echo "  exit $got, expected $want: $*"; sed 's/^/  err| /' "$dir/err"; return 1; }
}

[ -x "$topo" ] || { echo "topo_cli: $topo is not built"; echo "topo_cli: 0 passed, 1 failed"; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"

if run 0 --help && has "$dir/out" "usage: cputrain-topo" && has "$dir/out" "--local-world-size N"; then
    ok "--help"
else bad "--help"; fi

if run 2 --frobnicate && has "$dir/err" "unknown argument '--frobnicate'"; then
    ok "unknown argument: exit 2"
else bad "unknown argument: exit 2"; fi

if run 2 --local-world-size 0 && has "$dir/err" "--local-world-size '0'"; then
    ok "bad --local-world-size: exit 2"
else bad "bad --local-world-size: exit 2"; fi

if run 2 --threads && has "$dir/err" "--threads needs a value"; then
    ok "missing value: exit 2"
else bad "missing value: exit 2"; fi

if run 2 --topology "sockets:lots" && has "$dir/err" "CT_ERR_INVALID_ARG" &&
    has "$dir/err" "sockets:lots"; then
    ok "bad --topology names it: exit 2"
else bad "bad --topology names it: exit 2"; fi

if run 1 --topology "$dir/missing.xml" && has "$dir/err" "CT_ERR_IO" &&
    has "$dir/err" "missing.xml"; then
    ok "missing topology file: exit 1"
else bad "missing topology file: exit 1"; fi

if run 2 --apply --topology "package:2 numa:1 core:4 pu:2" && has "$dir/err" "--apply"; then
    ok "--apply with --topology: exit 2"
else bad "--apply with --topology: exit 2"; fi

if LOCAL_WORLD_SIZE=abc run 2 && has "$dir/err" "LOCAL_WORLD_SIZE"; then
    ok "bad launcher variable named: exit 2"
else bad "bad launcher variable named: exit 2"; fi

# Two sockets of 4 two-PU cores, 4 ranks: two per socket, round robin.
if run 0 --topology "package:2 numa:1 core:4 pu:2" --local-world-size 4 &&
    contains "$dir/out" "machine: nodes 0-1 -> cores 0-7 (PUs 0-15): 8 cores, 16 PUs" &&
    contains "$dir/out" "local world size 4 (--local-world-size), threads per rank: one per core" &&
    contains "$dir/out" "rank 0 -> node 0 -> cores 0-1 (PUs 0-3), 2 threads" &&
    contains "$dir/out" "rank 1 -> node 1 -> cores 4-5 (PUs 8-11), 2 threads" &&
    contains "$dir/out" "rank 2 -> node 0 -> cores 2-3 (PUs 4-7), 2 threads" &&
    contains "$dir/out" "rank 3 -> node 1 -> cores 6-7 (PUs 12-15), 2 threads" &&
    [ "$(grep -c '^rank ' "$dir/out")" -eq 4 ] && [ ! -s "$dir/err" ]; then
    ok "2 sockets, 4 ranks: one line per rank"
else bad "2 sockets, 4 ranks: one line per rank"; fi

# The launcher's size is the default; --threads and OMP_NUM_THREADS count.
if LOCAL_WORLD_SIZE=2 run 0 --topology "package:2 numa:1 core:4 pu:2" --threads=3 &&
    contains "$dir/out" "local world size 2 (LOCAL_WORLD_SIZE), threads per rank: 3 (--threads)" &&
    contains "$dir/out" "rank 1 -> node 1 -> cores 4-7 (PUs 8-15), 3 threads"; then
    ok "LOCAL_WORLD_SIZE default, --threads"
else bad "LOCAL_WORLD_SIZE default, --threads"; fi

if OMP_NUM_THREADS=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 run 0 --topology "package:2 numa:1 core:4 pu:2" &&
    contains "$dir/out" "rank 0 -> node 0 -> cores 0-3 (PUs 0-7), 1 thread (OMP_NUM_THREADS)"; then
    ok "Open MPI size, OMP_NUM_THREADS"
else bad "Open MPI size, OMP_NUM_THREADS"; fi

# This machine: rank 0 of 1 binds itself, every thread as planned.
if run 0 --apply && has "$dir/out" "this process, local rank 0 (default):" &&
    grep -q '^applied: thread 0 PUs [0-9]' "$dir/out" && has "$dir/out" "(as planned)"; then
    ok "--apply on this machine"
else bad "--apply on this machine"; fi

if LOCAL_RANK=3 LOCAL_WORLD_SIZE=2 run 2 --apply && has "$dir/err" "local rank 3 (LOCAL_RANK)"; then
    ok "--apply with a rank outside the world: exit 2"
else bad "--apply with a rank outside the world: exit 2"; fi

echo "topo_cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
