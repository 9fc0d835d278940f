/* The interface between ct_dist and its backends. Built-in backends (local,
 * shm, tcp) and plugins (mpi, a separate .so loaded with dlopen so that the
 * library itself has no MPI dependency) implement the same table.
 *
 * A plugin exports one function, CT__DIST_PLUGIN_ENTRY, that receives the
 * host's services and returns its table; it links against nothing of
 * libcputrain (the library exports only the public API), so errors and logs
 * go through the host table. */
#ifndef CT_DIST_BACKEND_H
#define CT_DIST_BACKEND_H

#include <stddef.h>

#include <cputrain/cputrain.h>

/* Bumped whenever a table below changes incompatibly; the host refuses a
 * plugin built for another version. */
#define CT__DIST_API_VERSION 2

/* Who this process is in the job, as ct_dist resolved it. */
typedef struct ct__dist_member {
    int rank, world, local_rank, local_world;
    const char *master_addr; /* "" when not given */
    int master_port;         /* 0 when not given */
    const char *job;         /* never NULL */
    int job_given;           /* 0: job was made up from MASTER_ADDR:PORT or the parent */
    double timeout_s;        /* bound for every wait */
    /* The job's secret as a key (dist/secret.c): ranks prove they hold it
     * before they are admitted. has_secret 0: none was given. */
    int has_secret;
    unsigned char secret_key[32];
} ct__dist_member;

typedef struct ct__dist_host {
    int api_version;
    /* Set the calling thread's ct_last_error text; returns status. */
    ct_status (*error)(ct_status status, const char *fmt, ...);
    /* Deliver a log message through the application's callback. */
    void (*log)(ct_log_level level, const char *fmt, ...);
} ct__dist_host;

typedef struct ct__dist_backend {
    int api_version; /* CT__DIST_API_VERSION */
    const char *name;
    /* Join; *state is passed to every other call. A backend that learns
     * membership itself (mpi) checks it against *m and fails naming the
     * mismatch. */
    ct_status (*open)(const ct__dist_member *m, void **state);
    /* In-place sum (average != 0: mean) of n floats; the same bits on every
     * rank. */
    ct_status (*allreduce_f32)(void *state, float *buf, size_t n, int average);
    ct_status (*broadcast)(void *state, void *buf, size_t bytes, int root);
    ct_status (*barrier)(void *state);
    /* NULL: the host composes allgather from broadcasts. */
    ct_status (*allgather)(void *state, const void *send, size_t bytes, void *recv);
    void (*close)(void *state);
    /* In-place reduce-scatter (version 2): buf is n floats made of world
     * consecutive pieces, counts[r] floats each (they add up to n; a count
     * may be 0); afterwards rank r's own piece holds the sum (average != 0:
     * mean) over the ranks, the same bits on every call with the same
     * pieces (shm: the bits an allreduce gives there; tcp's ring
     * adds in its own order), and the other pieces are unspecified (left
     * as they were, partial, or reduced too). NULL: the host allreduces the
     * whole buffer. */
    ct_status (*reduce_scatter_f32)(void *state, float *buf, size_t n, int average,
                                    const size_t *counts);
} ct__dist_backend;

/* The plugin's entry point: returns its table, or NULL after reporting why
 * through host->error. */
typedef const ct__dist_backend *(*ct__dist_plugin_fn)(const ct__dist_host *host);
#define CT__DIST_PLUGIN_ENTRY "cputrain_dist_backend"

#endif
