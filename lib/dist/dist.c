/* ct_dist: membership (options, else the launcher's environment), the
 * backend chosen by name, and the collectives every backend offers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dlfcn.h>

#include "core/error.h"
#include "core/sha256.h"
#include "dist/collectives.h"
#include "dist/dist_internal.h"
#include "dist/launcher.h"
#include "kernels/kernels.h"

#define DEFAULT_TIMEOUT_S 1800.0
/* bf16 reductions convert this many elements at a time to fp32. */
#define BF16_CHUNK ((size_t)1 << 20)

/* The job name that keeps concurrent jobs' shared memory apart: the same on
 * every rank of one job, different between jobs running at once. A name
 * too long for `out` is replaced by its sha256 (cut short, two long names
 * that began alike would be one job to the handshake and shm). */
static void job_name(const ct_dist_options *o, ct__dist_member *m, char *out, size_t size)
{
    const char *v;
    if ((v = o ? o->job : NULL) || ((v = getenv("CPUTRAIN_DIST_JOB")) && *v) ||
        ((v = getenv("PMIX_NAMESPACE")) && *v)) { /* PMIX_NAMESPACE: Open MPI 4 and 5 */
        unsigned char h[CT__SHA256_BYTES];
        size_t n = strlen(v);
        m->job_given = 1;
        if (n < size) {
            snprintf(out, size, "%s", v);
            return;
        }
        ct__sha256(v, n, h);
        n = (size_t)snprintf(out, size, "sha256-");
        for (size_t i = 0; i < sizeof h && n + 2 < size; i++, n += 2)
            snprintf(out + n, size - n, "%02x", h[i]);
        return;
    }
    m->job_given = 0;
    if (m->master_port)
        snprintf(out, size, "%s-%d", m->master_addr, m->master_port);
    else /* ranks started by one launcher process share their parent */
        snprintf(out, size, "ppid%ld", (long)getppid());
}

/* Fills m (and *launcher) from the options, else the environment. */
static ct_status membership(const ct_dist_options *o, ct__dist_member *m, char *addr,
                            size_t addr_size, const char **launcher)
{
    ct__launch env;
    ct_status st = ct__launcher_detect(&env);
    if (st != CT_OK)
        return st;
    m->rank = env.rank;
    m->world = env.world;
    m->local_rank = env.local_rank;
    m->local_world = env.local_world;
    *launcher = ct__launcher_name(env.kind);
    if (o && (o->rank >= 0 || o->world >= 0)) {
        if (o->rank < 0 || o->world < 0)
            return ct__error(CT_ERR_INVALID_ARG, "dist options: rank and world_size go "
                                                 "together (only %s is set)",
                             o->rank < 0 ? "world_size" : "rank");
        m->rank = o->rank;
        m->world = o->world;
        m->local_rank = o->rank;
        m->local_world = o->world;
        *launcher = "options";
    }
    if (o && o->local_rank >= 0)
        m->local_rank = o->local_rank;
    if (o && o->local_world >= 0)
        m->local_world = o->local_world;
    if (m->rank >= m->world)
        return ct__error(CT_ERR_INVALID_ARG, "dist: rank %d is not below world_size %d",
                         m->rank, m->world);
    if (m->local_rank >= m->local_world || m->local_world > m->world)
        return ct__error(CT_ERR_INVALID_ARG, "dist: local_rank %d, local_world_size %d do "
                                             "not fit a world of %d", m->local_rank,
                         m->local_world, m->world);
    snprintf(addr, addr_size, "%s", o && o->master_addr ? o->master_addr : env.master_addr);
    m->master_addr = addr;
    m->master_port = o && o->master_port ? o->master_port : env.master_port;
    m->timeout_s = o && o->timeout_s > 0 ? o->timeout_s : DEFAULT_TIMEOUT_S;
    return CT_OK;
}

/* The mpi backend comes in two plugins, one per MPI ABI: an MPI library
 * joins only the jobs of its own launcher, so the launcher decides.
 * Hydra's PMI variables (MPICH, Intel MPI, the MPICH ABI initiative) ->
 * dist-mpich.so; Open MPI's, or none (a singleton) -> dist-mpi.so. */
static const char *mpi_plugin(const char *launcher)
{
    return !strcmp(launcher, "pmi") ? "mpich" : "mpi";
}

/* auto tries MPI only under an MPI launcher. */
static int launched_by_mpi(const char *launcher)
{
    return !strcmp(launcher, "openmpi") || !strcmp(launcher, "pmi");
}

/* Opens backend `name` ("mpi" is a plugin); ct_dist fields filled. */
static ct_status open_backend(ct_dist *d, const char *name, const ct__dist_member *m)
{
    ct_status st;
    if (!strcmp(name, "local"))
        d->be = &ct__dist_local;
    else if (!strcmp(name, "shm"))
        d->be = &ct__dist_shm;
    else if (!strcmp(name, "tcp"))
        d->be = &ct__dist_tcp;
    else if ((st = ct__dist_plugin_load(mpi_plugin(d->launcher), &d->be, &d->plugin)) != CT_OK)
        return ct__error_prefix(st, "ddp_backend %s (launcher %s)", name, d->launcher);
    if ((st = d->be->open(m, &d->state)) != CT_OK) {
        if (d->plugin)
            dlclose(d->plugin);
        d->plugin = NULL;
        d->be = NULL;
    }
    return st;
}

ct_status ct_dist_create(const ct_dist_options *o, ct_dist **out)
{
    ct__dist_member m;
    char addr[256], job[256];
    const char *name = o ? o->backend : NULL, *launcher = "none";
    ct_dist *d;
    ct_status st;
    CT__CHECK_ARG(out);
    *out = NULL;
    memset(&m, 0, sizeof m);
    if ((st = membership(o, &m, addr, sizeof addr, &launcher)) != CT_OK)
        return st;
    job_name(o, &m, job, sizeof job);
    m.job = job;
    if ((st = ct__dist_secret_load(o, &m)) != CT_OK)
        return st;
    if (!name && (name = getenv("CPUTRAIN_DIST_BACKEND")) && *name &&
        (st = ct__dist_check_backend("environment CPUTRAIN_DIST_BACKEND", name)) != CT_OK)
        return st;
    if (!name || !*name)
        name = "auto";
    if (!(d = calloc(1, sizeof *d)))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    d->rank = m.rank;
    d->world = m.world;
    d->local_rank = m.local_rank;
    d->local_world = m.local_world;
    d->launcher = launcher;
    d->timeout_s = m.timeout_s;

    if (strcmp(name, "auto") != 0) {
        st = open_backend(d, name, &m);
    } else if (m.world == 1) {
        st = open_backend(d, "local", &m);
    } else {
        st = CT_ERR_NOT_FOUND;
        if (launched_by_mpi(launcher)) {
            st = open_backend(d, "mpi", &m);
            if (st == CT_ERR_NOT_FOUND || st == CT_ERR_UNSUPPORTED)
                ct__log(CT_LOG_INFO, "ddp_backend auto: mpi unavailable (%s)", ct_last_error());
        }
        if (st == CT_ERR_NOT_FOUND || st == CT_ERR_UNSUPPORTED)
            st = open_backend(d, m.local_world == m.world ? "shm" : "tcp", &m);
    }
    memset(m.secret_key, 0, sizeof m.secret_key);
    if (st != CT_OK) {
        free(d);
        return st;
    }
    ct__log(CT_LOG_INFO, "dist: rank %d of %d (local %d of %d), backend %s, launcher %s, "
                         "timeout %g s", d->rank, d->world, d->local_rank, d->local_world,
            d->be->name, d->launcher, d->timeout_s);
    if (d->rank == 0 && !strcmp(d->launcher, "openmpi"))
        ct__launcher_note_kill_timeout();
    *out = d;
    return CT_OK;
}

void ct_dist_free(ct_dist *d)
{
    if (!d)
        return;
    d->be->close(d->state);
    if (d->plugin)
        dlclose(d->plugin);
    free(d->scratch);
    free(d);
}

int ct_dist_rank(const ct_dist *d) { return d ? d->rank : 0; }
int ct_dist_world_size(const ct_dist *d) { return d ? d->world : 1; }
int ct_dist_local_rank(const ct_dist *d) { return d ? d->local_rank : 0; }
int ct_dist_local_world_size(const ct_dist *d) { return d ? d->local_world : 1; }
const char *ct_dist_backend(const ct_dist *d) { return d ? d->be->name : "local"; }
const char *ct_dist_launcher(const ct_dist *d) { return d ? d->launcher : "none"; }
double ct_dist_timeout(const ct_dist *d) { return d ? d->timeout_s : DEFAULT_TIMEOUT_S; }

/* ---- collectives -------------------------------------------------------------------- */

static ct_status usable(const ct_dist *d, const char *what)
{
    if (d->failed)
        return ct__error(CT_ERR_DIST, "%s: an earlier collective of this rank (%d) failed; "
                                      "the group cannot be used any more", what, d->rank);
    return CT_OK;
}

static ct_status done(ct_dist *d, ct_status st)
{
    if (st != CT_OK)
        d->failed = 1;
    return st;
}

static ct_status allreduce_bf16(ct_dist *d, ct__bf16 *buf, size_t count, int average)
{
    const ct__kernels *k = ct__kernels_get();
    ct_status st = CT_OK;
    if (!d->scratch && !(d->scratch = malloc(BF16_CHUNK * sizeof(float))))
        return ct__error(CT_ERR_NOMEM, "allreduce: out of memory for the fp32 staging buffer");
    for (size_t at = 0; at < count && st == CT_OK; at += BF16_CHUNK) {
        size_t n = count - at < BF16_CHUNK ? count - at : BF16_CHUNK;
        k->bf16_to_f32(d->scratch, buf + at, n);
        if ((st = d->be->allreduce_f32(d->state, d->scratch, n, average)) == CT_OK)
            k->f32_to_bf16(buf + at, d->scratch, n);
    }
    return st;
}

ct_status ct_dist_allreduce(ct_dist *d, void *buf, size_t count, ct_dtype dtype, ct_reduce_op op)
{
    ct_status st;
    CT__CHECK_ARG(d);
    if (!buf && count)
        return ct__error(CT_ERR_INVALID_ARG, "ct_dist_allreduce: buf is NULL for %zu elements",
                         count);
    if (op != CT_REDUCE_SUM && op != CT_REDUCE_AVG)
        return ct__error(CT_ERR_INVALID_ARG, "ct_dist_allreduce: op %d is not CT_REDUCE_SUM or "
                                             "CT_REDUCE_AVG", (int)op);
    if (dtype != CT_DTYPE_F32 && dtype != CT_DTYPE_BF16)
        return ct__error(CT_ERR_UNSUPPORTED, "ct_dist_allreduce: dtype %d (F32 and BF16 are "
                                             "supported)", (int)dtype);
    if ((st = usable(d, "allreduce")) != CT_OK)
        return st;
    if (dtype == CT_DTYPE_BF16)
        return done(d, allreduce_bf16(d, buf, count, op == CT_REDUCE_AVG));
    return done(d, d->be->allreduce_f32(d->state, buf, count, op == CT_REDUCE_AVG));
}

ct_status ct_dist_broadcast(ct_dist *d, void *buf, size_t bytes, int root)
{
    ct_status st;
    CT__CHECK_ARG(d);
    if (!buf && bytes)
        return ct__error(CT_ERR_INVALID_ARG, "ct_dist_broadcast: buf is NULL for %zu bytes",
                         bytes);
    if (root < 0 || root >= d->world)
        return ct__error(CT_ERR_INVALID_ARG, "ct_dist_broadcast: root %d is not a rank of "
                                             "world size %d", root, d->world);
    if ((st = usable(d, "broadcast")) != CT_OK)
        return st;
    return done(d, d->be->broadcast(d->state, buf, bytes, root));
}

ct_status ct_dist_barrier(ct_dist *d)
{
    ct_status st;
    CT__CHECK_ARG(d);
    if ((st = usable(d, "barrier")) != CT_OK)
        return st;
    return done(d, d->be->barrier(d->state));
}

ct_status ct_dist_allgather(ct_dist *d, const void *send, size_t bytes, void *recv)
{
    ct_status st;
    CT__CHECK_ARG(d);
    if (bytes && (!send || !recv))
        return ct__error(CT_ERR_INVALID_ARG, "ct_dist_allgather: send or recv is NULL");
    if ((st = usable(d, "allgather")) != CT_OK)
        return st;
    if (d->be->allgather)
        return done(d, d->be->allgather(d->state, send, bytes, recv));
    /* Composed: every rank broadcasts its slice in turn. (bytes 0 may come
     * with NULL buffers, which memmove must not see.) */
    if (bytes)
        memmove((char *)recv + (size_t)d->rank * bytes, send, bytes);
    for (int r = 0; r < d->world && st == CT_OK; r++)
        st = d->be->broadcast(d->state, (char *)recv + (size_t)r * bytes, bytes, r);
    return done(d, st);
}

/* ---- pieces (collectives.h) ------------------------------------------------------------ */

ct_status ct__dist_reduce_scatter_f32(ct_dist *d, float *buf, size_t n, int average,
                                      const size_t *counts)
{
    size_t total = 0;
    ct_status st;
    CT__CHECK_ARG(d);
    CT__CHECK_ARG(counts);
    if (!buf && n)
        return ct__error(CT_ERR_INVALID_ARG, "reduce-scatter: buf is NULL for %zu floats", n);
    for (int r = 0; r < d->world; r++) {
        if (counts[r] > n - total) /* past n, and never wrapping round to it */
            return ct__error(CT_ERR_INVALID_ARG, "reduce-scatter: the pieces up to rank %d's "
                                                 "add up to more than %zu floats", r, n);
        total += counts[r];
    }
    if (total != n)
        return ct__error(CT_ERR_INVALID_ARG, "reduce-scatter: the %d pieces add up to %zu "
                                             "floats, not %zu", d->world, total, n);
    if ((st = usable(d, "reduce-scatter")) != CT_OK)
        return st;
    if (d->be->reduce_scatter_f32)
        return done(d, d->be->reduce_scatter_f32(d->state, buf, n, average, counts));
    return done(d, d->be->allreduce_f32(d->state, buf, n, average));
}

ct_status ct__dist_allgather_pieces(ct_dist *d, void *buf, const size_t *bytes)
{
    size_t at = 0;
    ct_status st;
    CT__CHECK_ARG(d);
    CT__CHECK_ARG(bytes);
    if ((st = usable(d, "allgather")) != CT_OK)
        return st;
    for (int r = 0; r < d->world && st == CT_OK; r++) {
        /* bytes 0 may come with a NULL buf, which the backends must not see */
        if (bytes[r])
            st = d->be->broadcast(d->state, (char *)buf + at, bytes[r], r);
        at += bytes[r];
    }
    return done(d, st);
}
