/* libcputrain public API: the distributed state (ct_dist) — which process of
 * a job this is, and the collectives that join the processes: allreduce,
 * broadcast, barrier, allgather. The backend (local, shm, tcp, mpi) is chosen
 * at run time by name.
 * Included through <cputrain/cputrain.h>; do not include directly. */
#ifndef CPUTRAIN_DIST_H
#define CPUTRAIN_DIST_H

#ifndef CT_INSIDE_CPUTRAIN_H
#error "include <cputrain/cputrain.h> instead of <cputrain/dist.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_dist ct_dist;
typedef struct ct_dist_options ct_dist_options;
typedef struct ct_rendezvous ct_rendezvous;

typedef enum ct_reduce_op {
    CT_REDUCE_SUM = 0,
    CT_REDUCE_AVG = 1 /* the sum divided by the world size */
} ct_reduce_op;

/* ---- options ----------------------------------------------------------------- */

/* Options for ct_dist_create, as text keys (all optional):
 *   backend           auto | local | shm | tcp | mpi; unset: the
 *                     CPUTRAIN_DIST_BACKEND environment variable, else auto
 *                     (mpi when Open MPI's mpirun started the process and
 *                     the plugin, built against Open MPI, loads; shm when
 *                     all ranks are on this machine; tcp otherwise)
 *   rank, world_size, local_rank, local_world_size
 *                     membership; unset: from the launcher's environment —
 *                     torchrun/PyTorchJob (RANK, WORLD_SIZE, LOCAL_RANK,
 *                     LOCAL_WORLD_SIZE), then Intel MPI/MPICH (PMI_RANK,
 *                     PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS), then Open
 *                     MPI (OMPI_COMM_WORLD_*); first found wins; none: one
 *                     process. Setting rank needs world_size too.
 *   master_addr, master_port
 *                     tcp rendezvous; unset: MASTER_ADDR, MASTER_PORT
 *   timeout           seconds any collective may wait (ddp_timeout); 1800
 *   job               name that keeps concurrent jobs apart (shared memory,
 *                     and bound into the tcp handshake, so a rank of another
 *                     job is refused); unset: CPUTRAIN_DIST_JOB, else one
 *                     derived from the launcher (PMIX_NAMESPACE,
 *                     MASTER_ADDR:MASTER_PORT — of which tcp binds only the
 *                     port —, the parent process)
 *   secret, secret_file
 *                     the job's shared secret (or a file holding it, as
 *                     Kubernetes mounts secrets; one trailing newline is
 *                     not part of it): ranks prove they hold it before they
 *                     are admitted, and it never crosses the wire. Unset:
 *                     CPUTRAIN_DIST_SECRET_FILE, else CPUTRAIN_DIST_SECRET;
 *                     none at all: the job runs unauthenticated, with a
 *                     warning that its port must be reachable only from
 *                     trusted hosts. The later of the two keys wins.
 * A bad key or value is CT_ERR_INVALID_ARG naming it. */
CT_API ct_status ct_dist_options_create(ct_dist_options **out);
CT_API void ct_dist_options_free(ct_dist_options *options);
CT_API ct_status ct_dist_options_set(ct_dist_options *options, const char *key,
                                     const char *value);

/* ---- the distributed state ------------------------------------------------------ */

/* Join the job: NULL options means all from the environment. Returns once
 * every rank has joined (or CT_ERR_DIST naming the rank that did not,
 * within the timeout). The handle is used from one thread at a time, and
 * every rank must make the same sequence of collective calls. */
CT_API ct_status ct_dist_create(const ct_dist_options *options, ct_dist **out);
/* Leave the job: free shared memory, close sockets (accepts NULL). */
CT_API void ct_dist_free(ct_dist *dist);

CT_API int ct_dist_rank(const ct_dist *dist);
CT_API int ct_dist_world_size(const ct_dist *dist);
CT_API int ct_dist_local_rank(const ct_dist *dist);
CT_API int ct_dist_local_world_size(const ct_dist *dist);
/* "local", "shm", "tcp" or "mpi". */
CT_API const char *ct_dist_backend(const ct_dist *dist);
/* "torchrun", "pmi", "openmpi", "options" or "none". */
CT_API const char *ct_dist_launcher(const ct_dist *dist);
CT_API double ct_dist_timeout(const ct_dist *dist);

/* ---- collectives ---------------------------------------------------------------- */

/* In place, over all ranks, `count` elements of `dtype`: CT_DTYPE_F32, or
 * CT_DTYPE_BF16 (accumulated in fp32, rounded to bf16 once at the end).
 * The result is the same bits on every rank. A dead, stuck or disconnected
 * peer is CT_ERR_DIST naming its rank, within the timeout; after any
 * CT_ERR_DIST the handle refuses further collectives. */
CT_API ct_status ct_dist_allreduce(ct_dist *dist, void *buf, size_t count, ct_dtype dtype,
                                   ct_reduce_op op);
/* `bytes` bytes of root's buf copied into every other rank's buf. */
CT_API ct_status ct_dist_broadcast(ct_dist *dist, void *buf, size_t bytes, int root);
CT_API ct_status ct_dist_barrier(ct_dist *dist);
/* Every rank's `bytes` bytes of `send`, in rank order, into every rank's
 * `recv` (world_size * bytes). */
CT_API ct_status ct_dist_allgather(ct_dist *dist, const void *send, size_t bytes, void *recv);

/* ---- authenticated connections of a job's own (a launchers' rendezvous) --------- */

/* The tcp backend's handshake for programs that meet over connections of
 * their own, as cputrain-run's launchers do: a mutual HMAC-SHA256
 * challenge-response on fresh nonces from both sides, keyed by the job's
 * secret (the options' secret or secret_file, else CPUTRAIN_DIST_SECRET_FILE
 * or CPUTRAIN_DIST_SECRET, as ct_dist_create reads them; NULL options: the
 * environment) with `job` bound in, the secret never on the wire. Without a
 * secret anyone who reaches the host is admitted (ct_rendezvous_has_secret
 * says so, for a warning). A secret that cannot be read is refused here. */
CT_API ct_status ct_rendezvous_create(const ct_dist_options *options, const char *job,
                                      ct_rendezvous **out);
CT_API void ct_rendezvous_free(ct_rendezvous *rendezvous);
CT_API int ct_rendezvous_has_secret(const ct_rendezvous *rendezvous);
/* The host: waits up to timeout_s on listen_fd (the caller's listening
 * socket, always the same one; made non-blocking, never closed here) for a
 * peer that proves it holds the secret, running many handshakes at once
 * with a deadline each, so a silent stranger holds up nobody; strangers are
 * refused and logged by address. CT_OK with *fd (a blocking connection,
 * the caller's) and its "host:port" in addr, or *fd -1 when the time
 * passed. */
CT_API ct_status ct_rendezvous_accept(ct_rendezvous *rendezvous, int listen_fd,
                                      double timeout_s, int *fd, char *addr, size_t addr_size);
/* A peer: connects to host:port and runs the handshake, trying again until
 * timeout_s. CT_OK with *fd (blocking); CT_ERR_DIST when the host refused
 * this peer or could not prove itself (another secret or job, a secret on
 * one side only: trying again will not help); CT_ERR_IO when it was not
 * reached in time (nobody listening yet, the network: trying again may). */
CT_API ct_status ct_rendezvous_connect(ct_rendezvous *rendezvous, const char *host, int port,
                                       double timeout_s, int *fd);

#ifdef __cplusplus
}
#endif
#endif /* CPUTRAIN_DIST_H */
