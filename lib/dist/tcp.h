/* The `tcp` collective backend: ranks joined over TCP by a torchrun-style
 * rendezvous at MASTER_ADDR:MASTER_PORT, then connected in a ring (for
 * bandwidth) and in a star around rank 0 (for latency). Every wait is
 * bounded (poll with the remaining timeout). */
#ifndef CT_DIST_TCP_H
#define CT_DIST_TCP_H

#include <stddef.h>

#include <cputrain/cputrain.h>

/* One handle per rank; use it from one thread at a time. Every rank must
 * make the same sequence of calls (same kind, count and root). A dead or
 * stuck peer is CT_ERR_DIST naming its rank ("tcp allreduce: rank 1
 * disconnected", "... rank 1 did not answer within 5.0 s"). After any
 * CT_ERR_DIST the handle shuts its connections down (so that the other ranks
 * fail promptly too, rather than at their timeout) and refuses further
 * collectives. The rank that finds a failure first also sends its reason
 * over a control link to rank 0, which relays it to every other rank; a rank
 * other than 0 whose own link broke waits up to 50 ms for such a notice
 * before blaming that link's peer (rank 0, connected to all, reports what it
 * finds at once), and a notice is reported as "tcp allreduce: rank 1
 * disconnected (reported by rank 2)". So every rank names the dead rank,
 * however far from it in the ring. A stuck (alive, not calling) rank is
 * named by the ranks that wait on it directly; with 3 or more ranks in a
 * ring allreduce another rank may name the neighbour it waits on instead,
 * as everyone times out at about the same moment. SIGPIPE is never raised
 * (MSG_NOSIGNAL). No check that the ranks made the same call (unlike shm). */
typedef struct ct__tcp ct__tcp;

/* Threshold between the two allreduce schemes, in bytes of the buffer. */
#define CT__TCP_SMALL_BYTES ((size_t)64 << 10)

/* Rendezvous as torchrun/PyTorchJob workers do, every connection opened
 * with tcp_auth.h's handshake: with `key` (the job's 32-byte secret key;
 * NULL: none, and a warning once per process) only ranks that prove they
 * hold it and belong to `job` are admitted; anyone else, and anything that
 * does not speak the protocol or say its part in time, is dropped and
 * logged as a stranger, never failing the job. Rank 0 listens on
 * master_addr:master_port (SO_REUSEADDR; IPv4 or IPv6 as getaddrinfo
 * resolves master_addr); the others connect, retrying until `timeout_s`.
 * Each rank opens its own listener on the local address it reached the
 * master from (port chosen by the system) and reports it; rank 0 sends the
 * table to all, each rank connects to its right neighbour (rank+1 mod world)
 * and accepts its left one. Returns once every rank has joined and the ring
 * is up; a rank that does not join within `timeout_s` is CT_ERR_DIST naming
 * it (on rank 0, and on the ranks that did join, which rank 0 tells). A
 * rank whose connection closes after it joined but before every rank has
 * (it died; its pod restarts) gives its place back, with a warning in rank
 * 0's log, so that its restarted self is admitted rather than refused as a
 * duplicate until the timeout.
 * `timeout_s` also bounds every later wait: a collective fails when no byte
 * moves on the connections it waits on for `timeout_s` (the ddp_timeout).
 * world == 1 opens no socket. */
ct_status ct__tcp_open(const char *master_addr, int master_port, int rank, int world,
                       double timeout_s, const char *job, const unsigned char *key,
                       ct__tcp **out);

/* In-place sum (average != 0: mean) of `n` floats over all ranks; the same
 * n on every rank. The result is the same bits on every rank, and on every
 * run. Order of the additions (see ct__tcp_sum_first_rank):
 *  - n * 4 < CT__TCP_SMALL_BYTES: gathered to rank 0, summed there in rank
 *    order ((x0 + x1) + x2) + ..., broadcast back (latency: 2 hops);
 *  - otherwise ring reduce-scatter + allgather: the buffer is cut into
 *    `world` segments (multiples of 16 floats, the last one shorter) and
 *    segment s is summed starting at rank s, in ring order:
 *    ((x_s + x_{s+1}) + ...) + x_{s-1}, indices mod world. Segment 0 is in
 *    rank order.
 * The mean divides that sum by world, once, on the rank that completed it. */
ct_status ct__tcp_allreduce_f32(ct__tcp *tcp, float *buf, size_t n, int average);
/* In-place reduce-scatter over world consecutive pieces of counts[r]
 * floats: the ring's reduce-scatter half, each piece ending complete on its
 * owner (the other pieces are left partial). The sum's order is the ring's
 * from the rank after the owner, so the bits may differ from an allreduce's
 * in the last place; small buffers go through the star allreduce. */
ct_status ct__tcp_reduce_scatter_f32(ct__tcp *tcp, float *buf, size_t n, int average,
                                     const size_t *counts);

/* The rank whose value element `index` of an n-float allreduce starts its
 * sum with (then first+1, ... mod world, as above). For tests and for
 * anyone who needs to reproduce the result serially. */
int ct__tcp_sum_first_rank(size_t n, int world, size_t index);

/* Copies `bytes` bytes of `root`'s buf into every other rank's buf: a
 * pipelined ring starting at root, in 1 MiB chunks. */
ct_status ct__tcp_broadcast(ct__tcp *tcp, void *buf, size_t bytes, int root);

/* Returns once every rank has called it (gather to rank 0, release). */
ct_status ct__tcp_barrier(ct__tcp *tcp);

/* Closes the connections and frees the handle; accepts NULL. Unless the
 * handle failed, it first passes a barrier (bounded by the timeout, errors
 * ignored) so that closing does not look like a death to a rank still
 * finishing the last collective. */
void ct__tcp_close(ct__tcp *tcp);

int ct__tcp_rank(const ct__tcp *tcp);
int ct__tcp_world(const ct__tcp *tcp);

#endif
