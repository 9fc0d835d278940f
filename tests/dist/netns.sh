#!/bin/sh
# Two "machines" on one host: network namespaces ct-a and ct-b joined by a
# veth pair (10.231.0.1/24 and 10.231.0.2/24), dist_api_test with the tcp
# backend as rank 0 in ct-a (MASTER_ADDR=10.231.0.1) and rank 1 in ct-b, each
# the only rank of its "machine" (LOCAL_WORLD_SIZE=1). Both must pass, and
# must really have run apart: each namespace has only its own address, and
# the two ranks report different network namespaces. Needs root and
# `ip netns`; otherwise SKIPPED, exit 77. The namespaces go away on exit.
# Expects B (build dir); `make check` builds $B/tests/dist_api_test.
set -u
: "${B:=build}"
bin=$PWD/$B/tests/dist_api_test
LIMIT=${DIST_TEST_LIMIT:-300}
# Names unique to this run, so that concurrent runs do not collide; the
# addresses may repeat, each pair of namespaces is a network of its own.
a=ct-a-$$
b=ct-b-$$
va=cta$$ # interface names: at most 15 characters
vb=ctb$$
passed=0
failed=0

check() { # description, then a command that must succeed
    what=$1
    shift
    if "$@"; then
        passed=$((passed + 1))
        echo "netns: PASS $what"
    else
        failed=$((failed + 1))
        echo "netns: FAIL $what"
    fi
}

skip() {
    echo "netns: SKIPPED ($1)"
    echo "netns: 0 passed, 0 failed, 1 skipped"
    exit 77
}

if [ ! -x "$bin" ]; then
    echo "netns: $bin is not built (make $B/tests/dist_api_test)"
    echo "netns: 0 passed, 1 failed"
    exit 1
fi
[ "$(id -u)" = 0 ] || skip "needs root"
command -v ip >/dev/null 2>&1 || skip "no ip command (iproute2)"

tmp=$(mktemp -d /tmp/ct-netns.XXXXXX) || exit 1
cleanup() {
    ip netns del "$a" 2>/dev/null
    ip netns del "$b" 2>/dev/null # deleting a namespace deletes its veth end, and so the pair
    ip link del "$va" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

if ! ip netns add "$a" 2>"$tmp/err"; then
    skip "ip netns add: $(cat "$tmp/err")"
fi
ip netns add "$b" || skip "ip netns add $b failed"
if ! ip link add "$va" type veth peer name "$vb" 2>"$tmp/err"; then
    skip "veth: $(cat "$tmp/err")"
fi
set -e
ip link set "$va" netns "$a"
ip link set "$vb" netns "$b"
ip -n "$a" addr add 10.231.0.1/24 dev "$va"
ip -n "$b" addr add 10.231.0.2/24 dev "$vb"
ip -n "$a" link set lo up
ip -n "$b" link set lo up
ip -n "$a" link set "$va" up
ip -n "$b" link set "$vb" up
set +e

# Apart: each namespace holds only its own address, and reaches the other's
# through the veth (not as a local address).
routes_via() { ip -n "$1" route get "$2" | grep -q "dev $3"; }
check "ct-a has 10.231.0.1, not 10.231.0.2" sh -c \
    "ip -n $a -o addr show | grep -q ' 10.231.0.1/' && ! ip -n $a -o addr show | grep -q ' 10.231.0.2/'"
check "ct-b has 10.231.0.2, not 10.231.0.1" sh -c \
    "ip -n $b -o addr show | grep -q ' 10.231.0.2/' && ! ip -n $b -o addr show | grep -q ' 10.231.0.1/'"
check "ct-a reaches 10.231.0.2 over the veth, not locally" routes_via "$a" 10.231.0.2 "$va"
check "ct-b reaches 10.231.0.1 over the veth, not locally" routes_via "$b" 10.231.0.1 "$vb"

# Rank 1 may start first: it retries until rank 0 listens.
run_rank() { # namespace rank
    ip netns exec "$1" env RANK="$2" WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=10.231.0.1 \
        MASTER_PORT=29500 CPUTRAIN_DIST_BACKEND=tcp \
        timeout -k 10 "$LIMIT" "$bin" --backend tcp >"$tmp/rank$2" 2>&1
}
run_rank "$b" 1 &
p1=$!
run_rank "$a" 0 &
p0=$!
wait "$p0"
s0=$?
wait "$p1"
s1=$?
cat "$tmp/rank0" "$tmp/rank1"
check "rank 0 in $a passed its checks" [ "$s0" -eq 0 ]
check "rank 1 in $b passed its checks" [ "$s1" -eq 0 ]
ns0=$(sed -n 's/.*netns \(net:\[[0-9]*\]\).*/\1/p' "$tmp/rank0")
ns1=$(sed -n 's/.*netns \(net:\[[0-9]*\]\).*/\1/p' "$tmp/rank1")
host=$(readlink /proc/self/ns/net)
check "the ranks ran in different network namespaces ($ns0, $ns1; host $host)" \
    sh -c "[ -n '$ns0' ] && [ -n '$ns1' ] && [ '$ns0' != '$ns1' ] && [ '$ns0' != '$host' ] && [ '$ns1' != '$host' ]"

echo "netns: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
