# Sourced, not run: N "hosts" on this machine, each a network namespace
# with one NIC (eth0, 10.233.0.<i+1>/24) plugged into a bridge that lives in
# a "switch" namespace of its own (br0, 10.233.0.254/24), so that nothing
# in the host's own network changes. With a rate (tc's syntax: 1gbit,
# 10gbit), both directions of every NIC are shaped with a token bucket
# (tbf) — each host then has a link of that speed into a non-blocking
# switch, as in a cluster. Needs root, `ip` and (for a rate) `tc`.
#   fh_up N [RATE]   fh_ns I   fh_addr I   fh_switch   fh_down
# Names carry the caller's pid, so concurrent runs do not collide; the
# caller must call fh_down on exit (trap), which removes everything.

fh_tag=$$
fh_count=0
fh_ns() { echo "ct-h$1-$fh_tag"; }
fh_addr() { echo "10.233.0.$(($1 + 1))"; }
fh_switch() { echo "ct-sw-$fh_tag"; }

# tbf's bucket holds 1 ms of the rate (at least 64 KiB): smaller buckets
# cannot reach 10 Gbit/s with the kernel's timer granularity, much larger
# ones let bursts pass at the veth's own speed.
fh_shape() { # namespace device rate
    burst=$(awk -v r="$3" 'BEGIN {
        n = r + 0; u = tolower(r); sub(/^[0-9.]+/, "", u)
        m = u == "gbit" ? 1e9 : u == "mbit" ? 1e6 : u == "kbit" ? 1e3 : 1
        b = int(n * m / 8 / 1000); if (b < 65536) b = 65536; print b }')
    ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$3" burst "$burst" latency 20ms
}

fh_up() { # N [RATE]; returns non-zero (with a message on stderr) on failure
    n=$1 rate=${2:-}
    sw=$(fh_switch)
    ip netns add "$sw" || return 1
    fh_count=$n
    ip -n "$sw" link set lo up &&
        ip -n "$sw" link add br0 type bridge &&
        ip -n "$sw" addr add 10.233.0.254/24 dev br0 &&
        ip -n "$sw" link set br0 up || return 1
    i=0
    while [ "$i" -lt "$n" ]; do
        ns=$(fh_ns "$i")
        ip netns add "$ns" &&
            ip link add "cth$i.$fh_tag" type veth peer name "cts$i.$fh_tag" &&
            ip link set "cth$i.$fh_tag" netns "$ns" &&
            ip link set "cts$i.$fh_tag" netns "$sw" &&
            ip -n "$ns" link set "cth$i.$fh_tag" name eth0 &&
            ip -n "$sw" link set "cts$i.$fh_tag" master br0 &&
            ip -n "$sw" link set "cts$i.$fh_tag" up &&
            ip -n "$ns" addr add "$(fh_addr "$i")/24" dev eth0 &&
            ip -n "$ns" link set lo up &&
            ip -n "$ns" link set eth0 up || return 1
        if [ -n "$rate" ]; then
            fh_shape "$ns" eth0 "$rate" && fh_shape "$sw" "cts$i.$fh_tag" "$rate" || return 1
        fi
        i=$((i + 1))
    done
}

fh_down() {
    i=0
    while [ "$i" -lt "$fh_count" ]; do
        ip netns del "$(fh_ns "$i")" 2> /dev/null # takes its veth end, and so the pair
        i=$((i + 1))
    done
    ip netns del "$(fh_switch)" 2> /dev/null
    fh_count=0
}
