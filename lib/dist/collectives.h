/* Internal: the collectives of the sharded optimizer, on pieces of a
 * buffer that each rank owns (they are not part of the public API: their
 * piece layout is the trainer's business). */
#ifndef CT_DIST_COLLECTIVES_H
#define CT_DIST_COLLECTIVES_H

#include <stddef.h>

#include <cputrain/cputrain.h>

/* buf is n floats in world consecutive pieces of counts[r] floats (adding
 * up to n). Afterwards rank r's piece holds the sum (average: the mean)
 * over the ranks — on shm the bits ct_dist_allreduce gives there, on tcp
 * the ring's order (within rounding of it) — and the other pieces are
 * unspecified. A backend without its own reduce-scatter (mpi: see its
 * table) allreduces the whole buffer. Every rank passes the same n and counts. */
ct_status ct__dist_reduce_scatter_f32(ct_dist *dist, float *buf, size_t n, int average,
                                      const size_t *counts);

/* The inverse: rank r's piece of `bytes[r]` bytes (consecutive, as above)
 * copied from rank r into every rank's buf — a broadcast from each owner
 * in turn, so the pieces may differ in size. */
ct_status ct__dist_allgather_pieces(ct_dist *dist, void *buf, const size_t *bytes);

#endif
