/* The `mpi` collective backend, built as a plugin (dist-mpi.so) so that
 * libcputrain itself has no MPI dependency: ct_dist dlopens it and calls its
 * one exported function, CT__DIST_PLUGIN_ENTRY.
 *
 * Every collective is non-blocking MPI (MPI_Iallreduce, ...) polled with
 * MPI_Test until done or the timeout passes, because a blocking MPI call
 * waits forever on a stuck rank. MPI cannot cancel a started collective, so
 * after a timeout the handle is dead: it refuses further collectives and
 * close neither frees the communicator nor finalizes MPI (both could wait on
 * the stuck rank). The process is then expected to exit; mpirun sees a rank
 * leave without MPI_Finalize and ends the whole job, which is the point.
 *
 * Not bounded, because MPI gives no way to bound them: MPI_Init_thread (Open
 * MPI waits there for every process of the job) and MPI_Finalize (likewise).
 *
 * Thread use: ct_dist calls open and close on the application's thread and
 * the collectives on its communication thread, one call at a time per
 * handle. MPI_THREAD_SERIALIZED covers that; every MPI call made here holds
 * one lock so that two handles used from two threads never call MPI at the
 * same moment either. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "dist/backend.h"

#define EXPORT __attribute__((visibility("default")))

/* Elements (allreduce) or bytes (broadcast, allgather) per MPI call: MPI
 * counts are int. A power of two keeps float chunks 64-byte aligned. The
 * build may lower it to test the chunked path on small buffers. */
#ifndef CT__MPI_MAX_CHUNK
#define CT__MPI_MAX_CHUNK ((size_t)1 << 30)
#endif

typedef struct mpi_state {
    MPI_Comm comm;
    int rank, world;
    double timeout_s;
    int failed;
    char reason[256]; /* why it failed, repeated by later refusals */
} mpi_state;

static const ct__dist_host *host;

/* Guards every MPI call and the globals below. */
static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;
static int we_initialised; /* MPI_Init_thread was ours: MPI_Finalize is too */
static int open_states;    /* handles alive; the last close finalizes */
/* Why MPI cannot be used again in this process (an operation of ours is
 * pending forever), or NULL. The library is linked -z nodelete so that this
 * and the above survive ct_dist's dlclose and a later dlopen. */
static const char *broken;

/* ---- errors ---------------------------------------------------------------- */

static void mpi_text(int code, char *text, size_t size)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, s, &len) != MPI_SUCCESS || len <= 0)
        snprintf(text, size, "MPI error %d", code);
    else
        snprintf(text, size, "%.*s", len, s);
}

/* Marks the handle failed and reports why; the text is kept for the
 * refusals that follow. */
static ct_status fail(mpi_state *s, ct_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ct_status fail(mpi_state *s, ct_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->reason, sizeof s->reason, fmt, ap);
    va_end(ap);
    s->failed = 1;
    return host->error(st, "%s", s->reason);
}

static ct_status mpi_fail(mpi_state *s, const char *op, const char *call, int code)
{
    char text[MPI_MAX_ERROR_STRING + 1];
    int cls = MPI_ERR_OTHER;
    mpi_text(code, text, sizeof text);
    MPI_Error_class(code, &cls);
    /* The usual cause, which MPI does not name. */
    const char *hint = cls == MPI_ERR_TRUNCATE ? " (did the ranks pass different sizes?)" : "";
    return fail(s, CT_ERR_DIST, "%s: %s failed on rank %d of %d: %s%s", op, call, s->rank,
                s->world, text, hint);
}

/* ---- bounded waiting ---------------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Busy-polls first: Open MPI moves data only inside MPI calls, so a transfer
 * in progress wants MPI_Test as often as possible. Once the wait has lasted
 * a while, a peer is most likely still computing; sleep then (50 us, growing
 * to 1 ms) so that a waiting rank does not take a core from the compute
 * threads. */
#define SPIN_S 0.002
#define SLEEP_MIN_NS 50000L
#define SLEEP_MAX_NS 1000000L

/* Polls *req until done: 0, or an MPI error code (with *timed_out = 0), or
 * -1 with *timed_out = 1 at the deadline. */
static int wait_bounded(MPI_Request *req, double timeout_s, int *timed_out)
{
    double start = now_s(), deadline = start + timeout_s;
    long sleep_ns = SLEEP_MIN_NS;
    *timed_out = 0;
    for (;;) {
        int done = 0;
        pthread_mutex_lock(&mpi_lock);
        int rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        pthread_mutex_unlock(&mpi_lock);
        if (rc != MPI_SUCCESS)
            return rc;
        if (done)
            return 0;
        double t = now_s();
        if (t >= deadline) {
            *timed_out = 1;
            return -1;
        }
        if (t - start < SPIN_S)
            continue;
        struct timespec ts = { 0, sleep_ns };
        nanosleep(&ts, NULL);
        if (sleep_ns < SLEEP_MAX_NS)
            sleep_ns = sleep_ns * 2 > SLEEP_MAX_NS ? SLEEP_MAX_NS : sleep_ns * 2;
    }
}

/* Completes a started collective or fails the handle. */
static ct_status finish(mpi_state *s, const char *op, MPI_Request *req)
{
    int timed_out;
    int rc = wait_bounded(req, s->timeout_s, &timed_out);
    if (timed_out)
        return fail(s, CT_ERR_DIST,
                    "%s: not complete after %.1f s (a rank is dead or stuck; MPI cannot say "
                    "which)",
                    op, s->timeout_s);
    if (rc != 0)
        return mpi_fail(s, op, "MPI_Test", rc);
    return CT_OK;
}

static ct_status usable(mpi_state *s, const char *op)
{
    if (s->failed)
        return host->error(CT_ERR_DIST, "%s: the mpi communicator failed earlier (%s)", op,
                           s->reason);
    return CT_OK;
}

/* ---- open / close ------------------------------------------------------------- */

static const char *level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "an unknown level";
    }
}

/* Initialises MPI unless the application did; called with mpi_lock held. */
static ct_status ensure_init(void)
{
    int inited = 0, finalized = 0, level = MPI_THREAD_SINGLE;
    MPI_Finalized(&finalized);
    if (finalized)
        return host->error(CT_ERR_STATE,
                           "mpi open: MPI was finalized already (by an earlier mpi ct_dist "
                           "or by the application), and MPI cannot be initialised twice in "
                           "one process");
    if (broken)
        return host->error(CT_ERR_STATE,
                           "mpi open: %s, so MPI cannot be used again in this process",
                           broken);
    MPI_Initialized(&inited);
    if (!inited) {
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &level);
        if (rc != MPI_SUCCESS) {
            char text[MPI_MAX_ERROR_STRING + 1];
            mpi_text(rc, text, sizeof text);
            return host->error(CT_ERR_DIST, "mpi open: MPI_Init_thread failed: %s", text);
        }
        we_initialised = 1;
        /* Open MPI reports an error inside a non-blocking collective (say a
         * message truncated by ranks passing different counts) through
         * MPI_COMM_WORLD's handler, not the request's communicator's: make
         * that one return codes too. MPI is ours, so nobody else relies on
         * the default (abort). An application that initialises MPI itself
         * keeps its own choice, and such errors then follow it. */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        host->log(CT_LOG_DEBUG, "mpi: initialised MPI (%s)", level_name(level));
    } else {
        MPI_Query_thread(&level);
    }
    /* The collectives run on ct_dist's communication thread, not the one
     * that initialised MPI. */
    if (level < MPI_THREAD_SERIALIZED)
        return host->error(CT_ERR_UNSUPPORTED,
                           "mpi open: MPI runs at %s; the mpi backend calls MPI from a "
                           "communication thread and needs MPI_THREAD_SERIALIZED or above "
                           "(ask for it in MPI_Init_thread, or let ct_dist initialise MPI)",
                           level_name(level));
    return CT_OK;
}

/* Duplicates MPI_COMM_WORLD within the timeout (MPI_Comm_dup would wait
 * forever for a rank that never opens). Called with mpi_lock held; drops it
 * while waiting, as every wait does. MPI_COMM_WORLD's error handler is
 * MPI_ERRORS_RETURN meanwhile, so that a failure comes back as a code rather
 * than aborting; the application's handler is put back after. */
static ct_status dup_world(mpi_state *s)
{
    MPI_Errhandler old;
    MPI_Request req;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &old);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_idup(MPI_COMM_WORLD, &s->comm, &req);
    pthread_mutex_unlock(&mpi_lock);
    ct_status st = CT_OK;
    if (rc != MPI_SUCCESS) {
        st = mpi_fail(s, "mpi open", "MPI_Comm_idup", rc);
    } else {
        int timed_out;
        rc = wait_bounded(&req, s->timeout_s, &timed_out);
        if (timed_out) {
            st = host->error(CT_ERR_DIST,
                             "mpi open: rank %d of %d: not every rank joined within %.1f s "
                             "(MPI cannot say which did not)",
                             s->rank, s->world, s->timeout_s);
        } else if (rc != 0) {
            st = mpi_fail(s, "mpi open", "MPI_Comm_idup", rc);
        }
    }
    pthread_mutex_lock(&mpi_lock);
    if (rc == -1)
        broken = "an earlier mpi open timed out (its MPI_Comm_idup is still pending)";
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, old);
    MPI_Errhandler_free(&old);
    if (st == CT_OK) {
        rc = MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
        if (rc != MPI_SUCCESS) {
            st = mpi_fail(s, "mpi open", "MPI_Comm_set_errhandler", rc);
            MPI_Comm_free(&s->comm);
        }
    }
    return st;
}

/* Called with mpi_lock held. */
static ct_status open_locked(const ct__dist_member *m, mpi_state *s)
{
    ct_status st = ensure_init();
    if (st != CT_OK)
        return st;
    int rank = -1, world = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    /* Checked before joining, so that a mismatch leaves MPI_COMM_WORLD as
     * it was. */
    if (rank != m->rank || world != m->world)
        return host->error(CT_ERR_DIST,
                           "mpi open: MPI says rank %d of %d, but ct_dist resolved rank %d "
                           "of %d (MPI_COMM_WORLD is not the job ct_dist was given)",
                           rank, world, m->rank, m->world);
    s->rank = rank;
    s->world = world;
    /* Counted before the wait, so that another handle's close meanwhile
     * does not finalize MPI under it. */
    open_states++;
    st = dup_world(s);
    if (st != CT_OK)
        open_states--;
    return st;
}

static ct_status mpi_open(const ct__dist_member *m, void **state)
{
    *state = NULL;
    if (!(m->timeout_s > 0))
        return host->error(CT_ERR_INVALID_ARG, "mpi open: timeout %g s", m->timeout_s);
    mpi_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return host->error(CT_ERR_NOMEM, "mpi open: out of memory");
    s->rank = m->rank;
    s->world = m->world;
    s->timeout_s = m->timeout_s;
    pthread_mutex_lock(&mpi_lock);
    ct_status st = open_locked(m, s);
    pthread_mutex_unlock(&mpi_lock);
    if (st != CT_OK) {
        /* MPI stays initialised: finalizing would wait for every rank, and
         * a later open may still use it. */
        free(s);
        return st;
    }
    host->log(CT_LOG_DEBUG, "mpi: rank %d of %d joined", s->rank, s->world);
    *state = s;
    return CT_OK;
}

static void mpi_close(void *state)
{
    mpi_state *s = state;
    if (s == NULL)
        return;
    pthread_mutex_lock(&mpi_lock);
    if (s->failed) {
        /* A collective may still be pending on the communicator: freeing
         * it or finalizing could wait on the stuck rank. Leave MPI as it is
         * (and never finalize in this process). */
        broken = "an earlier mpi collective failed (it may still be pending)";
    } else {
        MPI_Comm_free(&s->comm);
    }
    if (--open_states == 0 && we_initialised && broken == NULL) {
        /* Normally on the thread that initialised MPI (the application's,
         * which calls open and close), as MPI asks. */
        MPI_Finalize();
        we_initialised = 0;
    }
    pthread_mutex_unlock(&mpi_lock);
    free(s);
}

/* ---- collectives ---------------------------------------------------------- */

static ct_status mpi_allreduce_f32(void *state, float *buf, size_t n, int average)
{
    static const char op[] = "mpi allreduce";
    mpi_state *s = state;
    ct_status st = usable(s, op);
    if (st != CT_OK || n == 0)
        return st;
    if (buf == NULL)
        return host->error(CT_ERR_INVALID_ARG, "%s: NULL buffer", op);
    for (size_t off = 0; off < n; off += CT__MPI_MAX_CHUNK) {
        size_t c = n - off < CT__MPI_MAX_CHUNK ? n - off : CT__MPI_MAX_CHUNK;
        MPI_Request req;
        pthread_mutex_lock(&mpi_lock);
        int rc = MPI_Iallreduce(MPI_IN_PLACE, buf + off, (int)c, MPI_FLOAT, MPI_SUM, s->comm,
                                &req);
        pthread_mutex_unlock(&mpi_lock);
        if (rc != MPI_SUCCESS)
            return mpi_fail(s, op, "MPI_Iallreduce", rc);
        st = finish(s, op, &req);
        if (st != CT_OK)
            return st;
    }
    /* The same bits on every rank: MPI does not promise that in general (an
     * implementation may add in a different order on each rank), but Open
     * MPI's allreduce algorithms (libnbc: binomial reduce + broadcast, ring,
     * reduce-scatter + allgather, recursive doubling) sum each element once
     * and distribute it, or combine pairwise in a way that commutativity
     * makes identical; the mpi_plugin_test checks it across sizes and rank
     * counts. Guaranteeing it (reduce, then broadcast rank 0's result) would
     * double the traffic. Dividing identical sums gives identical means. */
    if (average) {
        float w = (float)s->world;
        for (size_t i = 0; i < n; i++)
            buf[i] /= w;
    }
    return CT_OK;
}

static ct_status mpi_broadcast(void *state, void *buf, size_t bytes, int root)
{
    static const char op[] = "mpi broadcast";
    mpi_state *s = state;
    ct_status st = usable(s, op);
    if (st != CT_OK)
        return st;
    if (root < 0 || root >= s->world)
        return host->error(CT_ERR_INVALID_ARG, "%s: root %d of world %d", op, root, s->world);
    if (bytes == 0)
        return CT_OK;
    if (buf == NULL)
        return host->error(CT_ERR_INVALID_ARG, "%s: NULL buffer", op);
    for (size_t off = 0; off < bytes; off += CT__MPI_MAX_CHUNK) {
        size_t c = bytes - off < CT__MPI_MAX_CHUNK ? bytes - off : CT__MPI_MAX_CHUNK;
        MPI_Request req;
        pthread_mutex_lock(&mpi_lock);
        int rc = MPI_Ibcast((char *)buf + off, (int)c, MPI_BYTE, root, s->comm, &req);
        pthread_mutex_unlock(&mpi_lock);
        if (rc != MPI_SUCCESS)
            return mpi_fail(s, op, "MPI_Ibcast", rc);
        st = finish(s, op, &req);
        if (st != CT_OK)
            return st;
    }
    return CT_OK;
}

static ct_status mpi_barrier(void *state)
{
    static const char op[] = "mpi barrier";
    mpi_state *s = state;
    ct_status st = usable(s, op);
    if (st != CT_OK)
        return st;
    MPI_Request req;
    pthread_mutex_lock(&mpi_lock);
    int rc = MPI_Ibarrier(s->comm, &req);
    pthread_mutex_unlock(&mpi_lock);
    if (rc != MPI_SUCCESS)
        return mpi_fail(s, op, "MPI_Ibarrier", rc);
    return finish(s, op, &req);
}

/* Receives chunk [off, off + c) of every rank's block into recv: a type of c
 * bytes whose extent is one whole block puts rank i's piece at
 * recv + off + i * bytes. Called with mpi_lock held. */
static int iallgather_chunk(mpi_state *s, char *recv, size_t bytes, size_t off, size_t c,
                            MPI_Request *req)
{
    if (c == bytes)
        return MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, (int)c, MPI_BYTE,
                              s->comm, req);
    MPI_Datatype piece, block;
    int rc = MPI_Type_contiguous((int)c, MPI_BYTE, &piece);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = MPI_Type_create_resized(piece, 0, (MPI_Aint)bytes, &block);
    MPI_Type_free(&piece);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = MPI_Type_commit(&block);
    if (rc == MPI_SUCCESS)
        rc = MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv + off, 1, block, s->comm,
                            req);
    /* Freeing only marks it: the pending operation keeps its reference. */
    MPI_Type_free(&block);
    return rc;
}

static ct_status mpi_allgather(void *state, const void *send, size_t bytes, void *recv)
{
    static const char op[] = "mpi allgather";
    mpi_state *s = state;
    ct_status st = usable(s, op);
    if (st != CT_OK || bytes == 0)
        return st;
    if (send == NULL || recv == NULL)
        return host->error(CT_ERR_INVALID_ARG, "%s: NULL buffer", op);
    if ((size_t)s->world > SIZE_MAX / bytes)
        return host->error(CT_ERR_INVALID_ARG, "%s: %zu bytes from %d ranks is too many", op,
                           bytes, s->world);
    /* Always in place: MPI forbids a send buffer that overlaps recv, and the
     * caller may pass one (send = its own block of recv, say). */
    char *mine = (char *)recv + (size_t)s->rank * bytes;
    if ((const char *)send != mine)
        memmove(mine, send, bytes);
    for (size_t off = 0; off < bytes; off += CT__MPI_MAX_CHUNK) {
        size_t c = bytes - off < CT__MPI_MAX_CHUNK ? bytes - off : CT__MPI_MAX_CHUNK;
        MPI_Request req;
        pthread_mutex_lock(&mpi_lock);
        int rc = iallgather_chunk(s, recv, bytes, off, c, &req);
        pthread_mutex_unlock(&mpi_lock);
        if (rc != MPI_SUCCESS)
            return mpi_fail(s, op, "MPI_Iallgather", rc);
        st = finish(s, op, &req);
        if (st != CT_OK)
            return st;
    }
    return CT_OK;
}

/* ---- entry ------------------------------------------------------------------ */

static const ct__dist_backend backend = {
    .api_version = CT__DIST_API_VERSION,
    .name = "mpi",
    .open = mpi_open,
    .allreduce_f32 = mpi_allreduce_f32,
    .broadcast = mpi_broadcast,
    .barrier = mpi_barrier,
    .allgather = mpi_allgather,
    .close = mpi_close,
    /* No reduce-scatter of its own: the host allreduces the bucket. Each
     * piece reduced to its owner with MPI_Ireduce was measured (bert-base,
     * 2 ranks) at over 20 s per step: Open MPI's libnbc pipelines a large
     * reduce in small segments, each needing a progress call, and the
     * bounded wait above polls at up to 1 ms; the allreduce's ring needs
     * few rounds. Owners get the allreduce's bits either way. */
    .reduce_scatter_f32 = NULL,
};

EXPORT const ct__dist_backend *cputrain_dist_backend(const ct__dist_host *h);

/* The host table's layout is only known for our version: refuse any other
 * without touching it beyond api_version. */
EXPORT const ct__dist_backend *cputrain_dist_backend(const ct__dist_host *h)
{
    if (h == NULL || h->api_version != CT__DIST_API_VERSION)
        return NULL;
    host = h;
    return &backend;
}
