/* The backends built into the library: local (one process, nothing to
 * exchange), shm (one machine) and tcp (any machines), as backend tables
 * over the shm.c and tcp.c implementations. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "dist/dist_internal.h"
#include "dist/shm.h"
#include "dist/tcp.h"

/* ---- local -------------------------------------------------------------------------- */

static ct_status local_open(const ct__dist_member *m, void **state)
{
    if (m->world != 1)
        return ct__error(CT_ERR_INVALID_ARG, "ddp_backend local: world size %d (local runs "
                                             "exactly one process)", m->world);
    *state = NULL;
    return CT_OK;
}

/* A sum over one rank is the value itself; the mean divides by 1. */
static ct_status local_allreduce(void *state, float *buf, size_t n, int average)
{
    (void)state, (void)buf, (void)n, (void)average;
    return CT_OK;
}

static ct_status local_broadcast(void *state, void *buf, size_t bytes, int root)
{
    (void)state, (void)buf, (void)bytes, (void)root;
    return CT_OK;
}

static ct_status local_barrier(void *state)
{
    (void)state;
    return CT_OK;
}

static ct_status local_allgather(void *state, const void *send, size_t bytes, void *recv)
{
    (void)state;
    if (bytes && recv != send) /* bytes 0 may come with NULL buffers */
        memmove(recv, send, bytes);
    return CT_OK;
}

static void local_close(void *state) { (void)state; }

static ct_status local_reduce_scatter(void *state, float *buf, size_t n, int average,
                                      const size_t *counts)
{
    (void)state, (void)buf, (void)n, (void)average, (void)counts;
    return CT_OK;
}

const ct__dist_backend ct__dist_local = {
    CT__DIST_API_VERSION, "local", local_open, local_allreduce, local_broadcast,
    local_barrier,        local_allgather, local_close, local_reduce_scatter,
};

/* ---- shm ---------------------------------------------------------------------------- */

static ct_status shm_open(const ct__dist_member *m, void **state)
{
    if (m->local_world != m->world)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ddp_backend shm: the %d ranks are not all on one machine (local "
                         "world size %d); use tcp or mpi", m->world, m->local_world);
    /* Ranks of one machine: the local rank is the rank. The secret's key
     * makes the rendezvous name one that other users cannot compute. */
    return ct__shm_open(m->job, m->rank, m->world, m->timeout_s,
                        m->has_secret ? m->secret_key : NULL, (ct__shm **)state);
}

static ct_status shm_allreduce(void *state, float *buf, size_t n, int average)
{
    return ct__shm_allreduce_f32(state, buf, n, average);
}

static ct_status shm_broadcast(void *state, void *buf, size_t bytes, int root)
{
    return ct__shm_broadcast(state, buf, bytes, root);
}

static ct_status shm_barrier(void *state) { return ct__shm_barrier(state); }
static void shm_close(void *state) { ct__shm_close(state); }

static ct_status shm_reduce_scatter(void *state, float *buf, size_t n, int average,
                                    const size_t *counts)
{
    return ct__shm_reduce_scatter_f32(state, buf, n, average, counts);
}

const ct__dist_backend ct__dist_shm = {
    CT__DIST_API_VERSION, "shm", shm_open, shm_allreduce, shm_broadcast, shm_barrier, NULL,
    shm_close, shm_reduce_scatter,
};

/* ---- tcp ---------------------------------------------------------------------------- */

static ct_status tcp_open(const ct__dist_member *m, void **state)
{
    if (m->world > 1 && (!m->master_addr[0] || !m->master_port))
        return ct__error(CT_ERR_INVALID_ARG,
                         "ddp_backend tcp: MASTER_ADDR and MASTER_PORT must both be set (the "
                         "address rank 0 listens on); got '%s' and %d", m->master_addr,
                         m->master_port);
    {
        /* The handshake binds the job name, but not one made up from
         * MASTER_ADDR:PORT: rank 0 may know its address under another name
         * than the others do (a Service, a NAT). The port, which all agree
         * on, is bound then. */
        char job[64];
        snprintf(job, sizeof job, "tcp-port-%d", m->master_port);
        return ct__tcp_open(m->master_addr, m->master_port, m->rank, m->world, m->timeout_s,
                            m->job_given ? m->job : job, m->has_secret ? m->secret_key : NULL,
                            (ct__tcp **)state);
    }
}

static ct_status tcp_allreduce(void *state, float *buf, size_t n, int average)
{
    return ct__tcp_allreduce_f32(state, buf, n, average);
}

static ct_status tcp_broadcast(void *state, void *buf, size_t bytes, int root)
{
    return ct__tcp_broadcast(state, buf, bytes, root);
}

static ct_status tcp_barrier(void *state) { return ct__tcp_barrier(state); }
static void tcp_close(void *state) { ct__tcp_close(state); }

static ct_status tcp_reduce_scatter(void *state, float *buf, size_t n, int average,
                                    const size_t *counts)
{
    return ct__tcp_reduce_scatter_f32(state, buf, n, average, counts);
}

const ct__dist_backend ct__dist_tcp = {
    CT__DIST_API_VERSION, "tcp", tcp_open, tcp_allreduce, tcp_broadcast, tcp_barrier, NULL,
    tcp_close, tcp_reduce_scatter,
};
