/* The `shm` collective backend: the ranks of one machine joined through a
 * POSIX shared-memory segment, with bounded (timeout) waits on futexes. */
#ifndef CT_DIST_SHM_H
#define CT_DIST_SHM_H

#include <stddef.h>

#include <cputrain/cputrain.h>

/* One handle per rank; use it from one thread at a time. Every rank must
 * make the same sequence of calls (same kind, count and root): a mismatch
 * is detected at the call's first barrier and is CT_ERR_DIST on every rank.
 * After any CT_ERR_DIST the handle refuses further collectives. */
typedef struct ct__shm ct__shm;

/* Joins `world` processes of one machine under the segment
 * "/cputrain-<job>-<world>" (characters of `job` outside [A-Za-z0-9._-]
 * become '_'). Local rank 0 creates it, first unlinking any stale segment of
 * that name a crashed run left; the others open it, retrying until
 * `timeout_s`. Returns once every rank has joined; a rank that does not
 * join within `timeout_s` is CT_ERR_DIST naming it. `timeout_s` also bounds
 * every later wait of every collective (the ddp_timeout). */
ct_status ct__shm_open(const char *job, int rank, int world, double timeout_s,
                       ct__shm **out);

/* In-place sum (average != 0: mean) of `n` floats over all ranks. The
 * result is the same bits on every rank: the ranks' values added in rank
 * order, then divided by world for the mean. Every rank must call it with
 * the same n. Buffers of any size go through the fixed staging area in
 * chunks; within a chunk each rank reduces one slice. */
ct_status ct__shm_allreduce_f32(ct__shm *shm, float *buf, size_t n, int average);

/* Copies `bytes` bytes of `root`'s buf into every other rank's buf. */
ct_status ct__shm_broadcast(ct__shm *shm, void *buf, size_t bytes, int root);

ct_status ct__shm_barrier(ct__shm *shm);

/* Leaves the group and frees the handle. The last rank out, and rank 0,
 * unlink the segment. Accepts NULL. Does not wait for the others. */
void ct__shm_close(ct__shm *shm);

int ct__shm_rank(const ct__shm *shm);
int ct__shm_world(const ct__shm *shm);

/* The segment name used for (job, world), e.g. for tests and cleanup
 * scripts; CT_ERR_INVALID_ARG when it does not fit in `size` bytes. */
ct_status ct__shm_name(const char *job, int world, char *name, size_t size);

#endif
