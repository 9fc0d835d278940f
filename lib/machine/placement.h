/* Internal: what applying a ct_placement takes (placement.c), for the
 * model that runs on it (model/placed.c). */
#ifndef CT_MACHINE_PLACEMENT_H
#define CT_MACHINE_PLACEMENT_H

#include <stddef.h>

#include <cputrain/cputrain.h>

#include "machine/threadpool.h"

/* A pool of the plan's threads, each pinned (and read back) before this
 * returns, the calling thread too. CT_ERR_UNSUPPORTED for a plan made for
 * a described machine (synthetic or XML); a thread that cannot be pinned
 * is an error naming it. */
ct_status ct__placement_pool(ct_placement *p, ct__pool **out);
/* Moves mem[0..bytes) to the plan's NUMA node (libnuma), if it has one. */
void ct__placement_bind(const ct_placement *p, void *mem, size_t bytes);
/* The pool is in use: describe reports what was applied; logged at INFO. */
void ct__placement_applied(ct_placement *p);

#endif
