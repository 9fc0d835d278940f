/* Persistent pthread pool: one generation counter per parallel-for, tasks
 * taken from per-thread shares with atomic cursors, spin-then-futex waits
 * on both sides. */
#include "machine/threadpool.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#error "threadpool.c needs a futex (Linux); add a condition-variable fallback"
#endif

/* Spin iterations before sleeping. With `pause` at ~40-140 cycles this is
 * tens of microseconds: long enough to catch the next kernel of a training
 * step, short enough not to burn a core that another process wants. */
#define SPIN_ITERS 2000

#define CACHELINE 64
#define CURSOR_STRIDE (CACHELINE / (int)sizeof(int)) /* a line per cursor */

struct ct__pool {
    int nthreads;
    pthread_t *threads;
    ct__pool_start_fn on_start;
    void *start_user;
    pthread_mutex_t run_lock; /* one parallel-for at a time */

    /* Written by the caller before a generation starts, read by workers. */
    _Alignas(CACHELINE) uint32_t gen; /* futex word: bumped per run */
    uint32_t stop;
    uint32_t sleepers; /* workers inside futex_wait on gen */
    ct__pool_fn fn;
    void *ctx;
    int ntasks;
    int started; /* workers that finished on_start */

    /* per thread, the next of its share of the tasks: [v * CURSOR_STRIDE] */
    int *cursor;

    _Alignas(CACHELINE) uint32_t pending; /* futex word: workers still in this run */
    uint32_t caller_sleeping;
};

typedef struct worker_arg {
    ct__pool *pool;
    int thread;
} worker_arg;

/* Set while a thread runs tasks, so a nested ct__pool_run runs inline
 * instead of deadlocking on the pool it is part of. */
static __thread int in_task;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void futex_wait(uint32_t *addr, uint32_t expected)
{
    /* EAGAIN (value changed) and EINTR both just mean: check again. */
    syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake(uint32_t *addr, int n)
{
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* The thread's own share first, then the others' from the next thread
 * on. Each cursor hands out each of its tasks once; a thread stops on a
 * share when the cursor passes its end. With one shared counter the
 * threads took rows in whatever order they woke: a bert-base step ran
 * 1.6-3% slower (AMX Xeon, 2 threads, 8 x 128 and 12 x 384). */
static void run_tasks(ct__pool *pool, ct__pool_fn fn, void *ctx, int ntasks,
                      int thread)
{
    int T = pool->nthreads;
    in_task = 1;
    for (int k = 0; k < T; k++) {
        int v = (thread + k) % T, t;
        int hi = (int)((long)ntasks * (v + 1) / T);
        int *cursor = &pool->cursor[v * CURSOR_STRIDE];
        /* a finished share is passed with a read, not a write to another
         * core's line: T threads would otherwise make T^2 of those a run */
        if (k > 0 && __atomic_load_n(cursor, __ATOMIC_RELAXED) >= hi)
            continue;
        while ((t = __atomic_fetch_add(cursor, 1, __ATOMIC_RELAXED)) < hi)
            fn(ctx, t, thread);
    }
    in_task = 0;
}

static void *worker_main(void *p)
{
    worker_arg *arg = p;
    ct__pool *pool = arg->pool;
    int thread = arg->thread;
    uint32_t seen = 0; /* the generation this worker last ran */

    if (pool->on_start)
        pool->on_start(pool->start_user, thread);
    __atomic_fetch_add(&pool->started, 1, __ATOMIC_RELEASE);

    for (;;) {
        uint32_t g = __atomic_load_n(&pool->gen, __ATOMIC_ACQUIRE);
        for (int i = 0; g == seen && i < SPIN_ITERS; i++) {
            cpu_relax();
            g = __atomic_load_n(&pool->gen, __ATOMIC_ACQUIRE);
        }
        while (g == seen) {
            /* Announce the sleep before re-checking gen inside the futex:
             * the caller bumps gen and then reads sleepers (both seq_cst),
             * so either it sees us and wakes, or the futex sees the bump. */
            __atomic_fetch_add(&pool->sleepers, 1, __ATOMIC_SEQ_CST);
            futex_wait(&pool->gen, seen);
            __atomic_fetch_sub(&pool->sleepers, 1, __ATOMIC_SEQ_CST);
            g = __atomic_load_n(&pool->gen, __ATOMIC_ACQUIRE);
        }
        seen = g;
        if (__atomic_load_n(&pool->stop, __ATOMIC_ACQUIRE))
            break;
        run_tasks(pool, pool->fn, pool->ctx, pool->ntasks, thread);
        /* Same pairing as above with the caller's caller_sleeping flag. */
        if (__atomic_sub_fetch(&pool->pending, 1, __ATOMIC_SEQ_CST) == 0 &&
            __atomic_load_n(&pool->caller_sleeping, __ATOMIC_SEQ_CST))
            futex_wake(&pool->pending, 1);
    }
    return NULL;
}

/* Publish a new generation and wake sleeping workers. */
static void start_generation(ct__pool *pool)
{
    __atomic_add_fetch(&pool->gen, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&pool->sleepers, __ATOMIC_SEQ_CST) > 0)
        futex_wake(&pool->gen, INT_MAX);
}

static void stop_workers(ct__pool *pool, int nstarted)
{
    __atomic_store_n(&pool->stop, 1, __ATOMIC_RELEASE);
    start_generation(pool);
    for (int i = 0; i < nstarted; i++)
        pthread_join(pool->threads[i], NULL);
}

ct_status ct__pool_create_ex(int nthreads, ct__pool_start_fn on_start,
                             void *user, ct__pool **out)
{
    ct__pool *pool;
    worker_arg *args;
    int nworkers, i, rc = 0;

    CT__CHECK_ARG(out);
    *out = NULL;
    if (nthreads < 1 || nthreads > 4096)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct__pool_create: nthreads %d not in [1, 4096]", nthreads);
    nworkers = nthreads - 1;
    if (posix_memalign((void **)&pool, CACHELINE, sizeof *pool) != 0)
        return ct__error(CT_ERR_NOMEM, "ct__pool_create: out of memory");
    memset(pool, 0, sizeof *pool);
    pool->nthreads = nthreads;
    pool->on_start = on_start;
    pool->start_user = user;
    pthread_mutex_init(&pool->run_lock, NULL);
    pool->threads = calloc(nworkers ? nworkers : 1, sizeof *pool->threads);
    args = calloc(nworkers ? nworkers : 1, sizeof *args);
    if (posix_memalign((void **)&pool->cursor, CACHELINE,
                       (size_t)nthreads * CACHELINE) != 0)
        pool->cursor = NULL;
    if (!pool->threads || !args || !pool->cursor) {
        free(args);
        free(pool->threads);
        free(pool->cursor);
        free(pool);
        return ct__error(CT_ERR_NOMEM, "ct__pool_create: out of memory");
    }
    for (i = 0; i < nworkers; i++) {
        args[i].pool = pool;
        args[i].thread = i + 1;
        rc = pthread_create(&pool->threads[i], NULL, worker_main, &args[i]);
        if (rc != 0)
            break;
    }
    /* Wait for on_start everywhere (and so for args to be read) before the
     * caller runs work or frees anything. */
    while (__atomic_load_n(&pool->started, __ATOMIC_ACQUIRE) < i)
        sched_yield();
    free(args);
    if (rc != 0) {
        stop_workers(pool, i);
        pthread_mutex_destroy(&pool->run_lock);
        free(pool->threads);
        free(pool->cursor);
        free(pool);
        return ct__error(CT_ERR_INTERNAL,
                         "ct__pool_create: starting thread %d of %d: %s", i + 1,
                         nthreads, strerror(rc));
    }
    *out = pool;
    return CT_OK;
}

ct_status ct__pool_create(int nthreads, ct__pool **out)
{
    return ct__pool_create_ex(nthreads, NULL, NULL, out);
}

void ct__pool_free(ct__pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->run_lock);
    stop_workers(pool, pool->nthreads - 1);
    pthread_mutex_unlock(&pool->run_lock);
    pthread_mutex_destroy(&pool->run_lock);
    free(pool->threads);
    free(pool->cursor);
    free(pool);
}

int ct__pool_nthreads(const ct__pool *pool)
{
    return pool ? pool->nthreads : 1;
}

void ct__pool_run(ct__pool *pool, ct__pool_fn fn, void *ctx, int ntasks)
{
    if (ntasks <= 0)
        return;
    if (!pool || pool->nthreads == 1 || ntasks == 1 || in_task) {
        int saved = in_task;
        in_task = 1;
        for (int t = 0; t < ntasks; t++)
            fn(ctx, t, 0);
        in_task = saved;
        return;
    }
    pthread_mutex_lock(&pool->run_lock);
    pool->fn = fn;
    pool->ctx = ctx;
    pool->ntasks = ntasks;
    for (int v = 0; v < pool->nthreads; v++)
        __atomic_store_n(&pool->cursor[v * CURSOR_STRIDE], (int)((long)ntasks * v / pool->nthreads),
                         __ATOMIC_RELAXED);
    __atomic_store_n(&pool->pending, (uint32_t)(pool->nthreads - 1), __ATOMIC_RELAXED);
    start_generation(pool); /* seq_cst: orders the stores above before it */

    run_tasks(pool, fn, ctx, ntasks, 0);

    uint32_t p = __atomic_load_n(&pool->pending, __ATOMIC_ACQUIRE);
    for (int i = 0; p != 0 && i < SPIN_ITERS; i++) {
        cpu_relax();
        p = __atomic_load_n(&pool->pending, __ATOMIC_ACQUIRE);
    }
    while (p != 0) {
        __atomic_store_n(&pool->caller_sleeping, 1, __ATOMIC_SEQ_CST);
        p = __atomic_load_n(&pool->pending, __ATOMIC_SEQ_CST);
        if (p != 0)
            futex_wait(&pool->pending, p);
        p = __atomic_load_n(&pool->pending, __ATOMIC_ACQUIRE);
    }
    __atomic_store_n(&pool->caller_sleeping, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&pool->run_lock);
}

int ct__pool_default_threads(void)
{
    const char *env = getenv("OMP_NUM_THREADS");
    cpu_set_t set;
    if (env && atoi(env) > 0)
        return atoi(env);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    return 1;
}
