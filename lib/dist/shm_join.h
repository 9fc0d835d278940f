/* How the ranks of one machine get the shm backend's segment: local rank 0
 * hands its descriptor (an anonymous memfd) to the others over an abstract
 * Unix socket, and each side checks from the kernel's SO_PEERCRED that the
 * other runs as this process's user. Nothing is ever named in /dev/shm.
 * Abstract names have no owner, so any user may bind one: a job therefore
 * has a sequence of names that only its own user can compute, and skips a
 * name someone else holds. */
#ifndef CT_DIST_SHM_JOIN_H
#define CT_DIST_SHM_JOIN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cputrain/cputrain.h>

/* Room for an endpoint name (without the abstract namespace's leading NUL;
 * sun_path holds 108 bytes). */
#define CT__SHM_ENDPOINT_MAX 100

/* How many names a job may use, tried in this order by every rank: a name
 * held by another user is skipped (logged with its holder), so no other
 * user can stop a job by taking its name. Each run of a job shows another
 * user only the name it listens on, so this many attempts of one job can
 * be squatted one by one before the names run out. */
#define CT__SHM_ENDPOINT_NAMES 256

/* The `index`th socket name of (job, world): "cputrain-<job>-<world>",
 * characters of `job` outside [A-Za-z0-9._-] as '_', a long job cut at 48
 * characters and kept apart by a hash of the whole. With `key` (32 bytes:
 * the job's secret key, else this user's key) the name ends in 32 hex
 * digits of an HMAC of (job, world, index) under it, which no one without
 * the key can compute, before or after seeing other names of the job;
 * without one, index > 0 appends ".<index>". CT_ERR_INVALID_ARG when
 * `size` is short. */
ct_status ct__shm_endpoint_name(const char *job, int world, const unsigned char *key,
                                int index, char *name, size_t size);

/* This user's endpoint key, for jobs without a secret: 32 random bytes in
 * $XDG_RUNTIME_DIR/cputrain-shm-endpoint.key (when that folder is this
 * user's, mode 0700) or else ~/.cache/cputrain/, made on first use. 1 with
 * key filled; 0 when there is no such private place, `why` saying why. */
int ct__shm_user_key(unsigned char key[32], char *why, size_t why_size);

/* What both sides need to find each other. */
typedef struct {
    const char *job;
    int world;
    const unsigned char *key; /* NULL: the names can be predicted */
} ct__shm_endpoint;

/* Rank 0: binds the first of the job's names not held by another user
 * (its name into bound[CT__SHM_ENDPOINT_MAX + 1]) and serves `seg_fd` to
 * ranks 1..world-1 until each has confirmed that it mapped the segment,
 * or `deadline` (CLOCK_MONOTONIC seconds) passes. joined(ctx, rank, pid)
 * runs as each rank is admitted (pid as the kernel reports it, in this
 * process's pid namespace). Connections from other users are dropped and
 * logged; a peer claiming a taken rank or another world is refused and
 * the wait goes on. The endpoint is gone when this returns. CT_ERR_DIST
 * names a process of this user holding the name (another job of the same
 * name), the missing ranks, or the rank that refused the segment (with its
 * reason). */
ct_status ct__shm_join_serve(const ct__shm_endpoint *ep, int seg_fd, uint64_t seg_bytes,
                             double deadline, double timeout_s, char *bound,
                             void (*joined)(void *ctx, int rank, pid_t pid), void *ctx);

/* Rank `rank` > 0: looks for rank 0 at each of the job's names (retrying
 * until `deadline`), passing over names held by another user without a
 * word to them, asks for the segment and checks the descriptor it gets: a
 * sealed (no shrinking or growing) regular file of this user, mode 0600 or
 * stricter, exactly `seg_bytes` long. On CT_OK *seg_fd is that descriptor
 * and *conn the connection, on which the caller reports with
 * ct__shm_join_confirm whether the segment's contents passed its own
 * checks; *server_pid is rank 0's pid as the kernel gave it, `found` its
 * name. */
ct_status ct__shm_join_fetch(const ct__shm_endpoint *ep, int rank, uint64_t seg_bytes,
                             double deadline, double timeout_s, char *found, int *seg_fd,
                             int *conn, pid_t *server_pid);

/* Tells rank 0 the segment is mapped and valid (why == NULL) or refused
 * (why: the reason, passed on into rank 0's error), then closes conn. */
void ct__shm_join_confirm(int conn, const char *why);

/* What the peers and rank 0 say to each other (fixed-size SOCK_SEQPACKET
 * messages; both ends are on one machine, so native byte order). In the
 * header so that tests can play a hostile rank 0 or peer. */
#define CT__SHM_JOIN_MAGIC 0x4a535443u /* "CTSJ" */
#define CT__SHM_JOIN_VERSION 1u
#define CT__SHM_JOIN_TEXT 240

typedef struct {
    uint32_t magic, version;
    uint32_t rank, world;
} ct__shm_join_hello;

typedef struct {
    uint32_t magic, version;
    int32_t refused; /* 0: the segment's descriptor comes with this message */
    uint32_t world;
    uint64_t seg_bytes;
    char why[CT__SHM_JOIN_TEXT]; /* when refused */
} ct__shm_join_reply;

typedef struct {
    uint32_t magic;
    int32_t refused; /* 0: mapped and valid */
    char why[CT__SHM_JOIN_TEXT];
} ct__shm_join_confirmation;

/* The parsers of those messages, without I/O, so that every byte a peer
 * sends meets one place that checks it (fuzzed: tests/fuzz/fuzz_shm_join.c).
 * `msg` need not be aligned; nothing past its n bytes is read. */

/* What rank 0 makes of the first message of a peer not admitted yet. */
enum {
    CT__SHM_HELLO_OK,        /* *rank is in 1..world-1 */
    CT__SHM_HELLO_FOREIGN,   /* not a hello of this protocol and version */
    CT__SHM_HELLO_MISPLACED, /* another world, or a rank outside this one:
                              * *rank and *claimed_world say which */
};
int ct__shm_join_parse_hello(const void *msg, size_t n, int world, uint32_t *rank,
                             uint32_t *claimed_world);

/* Rank 0's reply to rank `rank` (n > 0 bytes, nfd descriptors with it,
 * ctrunc when the kernel dropped more): CT_OK when it hands over the
 * segment of `world` ranks and `seg_bytes` bytes in its one descriptor
 * (which the caller still checks); else CT_ERR_DIST naming rank 0 (pid
 * `from`) and what was wrong, with a refusal's text made printable. */
ct_status ct__shm_join_parse_reply(const void *msg, size_t n, int nfd, int ctrunc, int rank,
                                   int world, uint64_t seg_bytes, pid_t from);

/* Admitted rank `rank`'s (pid `pid`) answer to the segment, n > 0 bytes:
 * CT_OK when it mapped it; else CT_ERR_DIST naming that rank, with its
 * refusal's text made printable. */
ct_status ct__shm_join_parse_confirmation(const void *msg, size_t n, int rank, pid_t pid);

#endif
