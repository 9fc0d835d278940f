/* The `shm` collective backend: the ranks of one machine joined through a
 * shared-memory segment, with bounded (timeout) waits on futexes. */
#ifndef CT_DIST_SHM_H
#define CT_DIST_SHM_H

#include <stddef.h>

#include <cputrain/cputrain.h>

/* One handle per rank; use it from one thread at a time. Every rank must
 * make the same sequence of calls (same kind, count and root): a mismatch
 * is detected at the call's first barrier and is CT_ERR_DIST on every rank.
 * After any CT_ERR_DIST the handle refuses further collectives. */
typedef struct ct__shm ct__shm;

/* Joins `world` processes of one machine (one network namespace) that run
 * as one user. Local rank 0 makes the segment (an anonymous memfd, never a
 * name in /dev/shm) and hands it to the others over the abstract Unix socket
 * ct__shm_endpoint_name(job, world, key) names (dist/shm_join.h); each side
 * refuses an endpoint or peer of another user, a peer checks the descriptor
 * and the header against the layout it computes itself. `key`: the job's
 * secret key (32 bytes) or NULL; with it, other users cannot compute the
 * endpoint's name, so they cannot take it first. The others retry until
 * `timeout_s`; returns once every rank has joined; a rank that does not
 * join within `timeout_s` is CT_ERR_DIST naming it, and so is a squatted
 * name (naming the holder's uid and pid). `timeout_s` also bounds every
 * later wait of every collective (the ddp_timeout). Nothing outlives the
 * processes: the socket is closed once all have joined, the memory goes
 * with the last mapping, whatever killed them. */
ct_status ct__shm_open(const char *job, int rank, int world, double timeout_s,
                       const unsigned char *key, ct__shm **out);

/* In-place sum (average != 0: mean) of `n` floats over all ranks. The
 * result is the same bits on every rank: the ranks' values added in rank
 * order, then divided by world for the mean. Every rank must call it with
 * the same n. Buffers of any size go through the fixed staging area in
 * chunks; within a chunk each rank reduces one slice. */
ct_status ct__shm_allreduce_f32(ct__shm *shm, float *buf, size_t n, int average);

/* In-place reduce-scatter: buf is world consecutive pieces of counts[r]
 * floats (adding up to n); afterwards this rank's own piece holds exactly
 * what ct__shm_allreduce_f32 would put there (rank order, the mean's
 * division fused into the last add), the other pieces are left as they
 * were. Every rank must pass the same n and counts. */
ct_status ct__shm_reduce_scatter_f32(ct__shm *shm, float *buf, size_t n, int average,
                                     const size_t *counts);

/* Copies `bytes` bytes of `root`'s buf into every other rank's buf. */
ct_status ct__shm_broadcast(ct__shm *shm, void *buf, size_t bytes, int root);

ct_status ct__shm_barrier(ct__shm *shm);

/* Leaves the group and frees the handle. Accepts NULL. Does not wait for
 * the others. */
void ct__shm_close(ct__shm *shm);

/* The segment's size for `world` ranks, as every rank computes it (for
 * tests that play a hostile rank 0). */
size_t ct__shm_segment_bytes(int world);

#endif
