/* A small persistent thread pool running parallel-for loops: the calling
 * thread takes part, workers spin briefly and then sleep on a futex. */
#ifndef CT_MACHINE_THREADPOOL_H
#define CT_MACHINE_THREADPOOL_H

#include <cputrain/cputrain.h>

typedef struct ct__pool ct__pool;

/* One unit of a parallel loop: task in [0, ntasks), thread in
 * [0, ct__pool_nthreads(pool)), 0 being the thread that called
 * ct__pool_run. `thread` indexes per-thread scratch; no two tasks running at
 * the same time share a thread index. */
typedef void (*ct__pool_fn)(void *ctx, int task, int thread);

/* Called once in each worker thread (thread = 1 .. nthreads-1) before it
 * takes any work: the place to pin the thread (hwloc) or name it.
 * ct__pool_create returns only after every worker has run it. */
typedef void (*ct__pool_start_fn)(void *user, int thread);

/* nthreads counts the caller: 1 means no worker threads at all. */
ct_status ct__pool_create(int nthreads, ct__pool **out);
ct_status ct__pool_create_ex(int nthreads, ct__pool_start_fn on_start,
                             void *user, ct__pool **out);
/* Stops and joins the workers. Accepts NULL. */
void ct__pool_free(ct__pool *pool);

/* The threads an unplaced model gets: OMP_NUM_THREADS, else the CPUs this
 * process may run on. */
int ct__pool_default_threads(void);

/* 1 for a NULL pool. */
int ct__pool_nthreads(const ct__pool *pool);

/* Runs fn(ctx, task, thread) for every task in [0, ntasks) and returns when
 * all have finished. Thread v of T first takes its own share, tasks
 * [v ntasks / T, (v + 1) ntasks / T) in increasing order, then whatever
 * is left of the others' shares, so a slow thread's tasks still go to the
 * rest. Consecutive runs split alike (a product's rows, then the chain
 * over the same rows) thus meet their data in the cache of the thread
 * that wrote it.
 * A NULL pool, ntasks <= 1, or a call made from inside a task runs the tasks
 * on the calling thread. Calls from several application threads at once are
 * serialised. No allocation, no system call when the workers are spinning. */
void ct__pool_run(ct__pool *pool, ct__pool_fn fn, void *ctx, int ntasks);

#endif
