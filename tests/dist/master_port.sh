# Sourced by the tests that start tcp ranks: first_master_port prints the
# first MASTER_PORT of this test's jobs (each job takes the next one). It
# lies below the system's ephemeral range (ip_local_port_range), where every
# rank's own listener (port 0) and outgoing connection take their ports: a
# MASTER_PORT inside that range can be taken by a rank of the same job just
# before rank 0 binds it, which fails the job with "Address already in use".
first_master_port() {
    low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null) || low=32768
    # 1000 ports above the first for the jobs of one test
    span=$((low - 1000 - 10000))
    [ "$span" -gt 1000 ] || span=1000
    echo $((10000 + $$ % span))
}
