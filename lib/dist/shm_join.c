/* The shm backend's rendezvous: rank 0 serves its segment's descriptor over
 * an abstract Unix socket (SCM_RIGHTS), the other ranks fetch and check it;
 * both sides trust only what the kernel says of the other (SO_PEERCRED). */
#include "dist/shm_join.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/text.h"
#include "core/sha256.h"

/* Long enough for anything a job's name plus hashes makes, short enough
 * that error texts stay readable. */
#define JOB_KEEP 48
/* Descriptors a peer accepts in one message: one is expected; room for a
 * few more so that extras are seen (and closed), not cut silently. */
#define MAX_FDS 8
/* Connections rank 0 holds beyond one per rank, for strays of this user
 * (a probe of who holds the name, a rank that retried). */
#define EXTRA_CONNS 16

static void hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    size_t i;
    for (i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

ct_status ct__shm_endpoint_name(const char *job, int world, const unsigned char *key,
                                int index, char *name, size_t size)
{
    char out[CT__SHM_ENDPOINT_MAX + 64], wtext[16], itext[16], tail[2 * 16 + 2];
    unsigned char mac[CT__SHA256_BYTES];
    size_t jl, keep, i;
    int n;
    CT__CHECK_ARG(job);
    CT__CHECK_ARG(name);
    jl = strlen(job);
    keep = jl > JOB_KEEP ? JOB_KEEP : jl;
    snprintf(wtext, sizeof wtext, "%d", world);
    snprintf(itext, sizeof itext, "%d", index);
    tail[0] = '\0';
    if (key != NULL) {
        /* NULs between the parts: ("ab", 12) and ("ab1", 2) differ. */
        static const char label[] = "cputrain shm endpoint v2";
        const void *parts[] = {label, job, "", wtext, "", itext};
        size_t lens[] = {sizeof label - 1, jl, 1, strlen(wtext), 1, strlen(itext)};
        ct__hmac_sha256(key, 32, parts, lens, 6, mac);
        tail[0] = '-';
        hex(mac, 16, tail + 1);
    } else if (keep < jl) {
        ct__sha256(job, jl, mac);
        tail[0] = '-';
        hex(mac, 8, tail + 1);
    }
    n = snprintf(out, sizeof out, "cputrain-%.*s-%s%s%s%s", (int)keep, job, wtext, tail,
                 key == NULL && index > 0 ? "." : "", key == NULL && index > 0 ? itext : "");
    if (n < 0 || (size_t)n >= size || n > CT__SHM_ENDPOINT_MAX)
        return ct__error(CT_ERR_INVALID_ARG, "shm: no room for the endpoint name of job '%.*s' "
                         "(%zu bytes)", (int)keep, job, size);
    for (i = strlen("cputrain-"); i < strlen("cputrain-") + keep; i++) {
        char c = out[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            out[i] = '_';
    }
    memcpy(name, out, (size_t)n + 1);
    return CT_OK;
}

static void name_at(const ct__shm_endpoint *ep, int index, char *name)
{
    /* Cannot fail: the first name was made with the same room by the
     * caller's check in ct__shm_open. */
    if (ct__shm_endpoint_name(ep->job, ep->world, ep->key, index, name,
                              CT__SHM_ENDPOINT_MAX + 1) != CT_OK)
        name[0] = '\0';
}

/* The abstract address: sun_path[0] = 0, then the name, no terminator. It
 * lives in the network namespace, not the file system, and goes away with
 * the last descriptor of the socket: a killed rank 0 leaves nothing. */
static socklen_t endpoint_addr(const char *name, struct sockaddr_un *a)
{
    size_t len = strlen(name);
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    memcpy(a->sun_path + 1, name, len);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

static int peer_cred(int fd, struct ucred *uc)
{
    socklen_t len = sizeof *uc;
    memset(uc, 0, sizeof *uc);
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, uc, &len);
}

static const char *predictable_hint(const ct__shm_endpoint *ep)
{
    return ep->key ? "" : "; these names can be predicted: a job secret (CPUTRAIN_DIST_SECRET) "
                          "or a private XDG_RUNTIME_DIR or HOME for this user makes them "
                          "unguessable";
}

/* Who holds `name`, for an error: "uid U (pid P)" from the kernel when it
 * accepts a connection (of our kind, or a stream socket a squatter may have
 * used instead); otherwise what can be said. *uc is filled when known. */
static int who_holds(const char *name, struct ucred *uc, char *text, size_t size)
{
    static const int types[] = {SOCK_SEQPACKET, SOCK_STREAM};
    struct sockaddr_un a;
    socklen_t alen = endpoint_addr(name, &a);
    size_t i;
    int refused = 0;
    for (i = 0; i < sizeof types / sizeof types[0]; i++) {
        int fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            break;
        if (connect(fd, (struct sockaddr *)&a, alen) == 0 && peer_cred(fd, uc) == 0) {
            close(fd);
            snprintf(text, size, "uid %u (pid %d)", (unsigned)uc->uid, (int)uc->pid);
            return 1;
        }
        refused |= errno != EPROTOTYPE;
        close(fd);
    }
    snprintf(text, size, refused ? "a process that does not accept connections (its user "
                                   "cannot be told)"
                                 : "a socket of another kind (its user cannot be told)");
    return 0;
}

/* ---- the messages ------------------------------------------------------------------ */

int ct__shm_join_parse_hello(const void *msg, size_t n, int world, uint32_t *rank,
                             uint32_t *claimed_world)
{
    ct__shm_join_hello h;
    *rank = *claimed_world = 0;
    if (n != sizeof h)
        return CT__SHM_HELLO_FOREIGN;
    memcpy(&h, msg, sizeof h);
    if (h.magic != CT__SHM_JOIN_MAGIC || h.version != CT__SHM_JOIN_VERSION)
        return CT__SHM_HELLO_FOREIGN;
    *rank = h.rank;
    *claimed_world = h.world;
    if (world < 2 || h.world != (uint32_t)world || h.rank < 1 || h.rank >= (uint32_t)world)
        return CT__SHM_HELLO_MISPLACED;
    return CT__SHM_HELLO_OK;
}

/* A peer's reason, from a fixed field that may lack its NUL, made fit for
 * an error message. */
static const char *peer_text(const char *field, char out[CT__SHM_JOIN_TEXT])
{
    memcpy(out, field, CT__SHM_JOIN_TEXT - 1);
    out[CT__SHM_JOIN_TEXT - 1] = '\0';
    return ct__printable(out);
}

ct_status ct__shm_join_parse_reply(const void *msg, size_t n, int nfd, int ctrunc, int rank,
                                   int world, uint64_t seg_bytes, pid_t from)
{
    ct__shm_join_reply r;
    char why[CT__SHM_JOIN_TEXT];
    if (n == sizeof r)
        memcpy(&r, msg, sizeof r);
    /* `refused` is a flag: any other value is no reply of ours. */
    if (n != sizeof r || r.magic != CT__SHM_JOIN_MAGIC || r.version != CT__SHM_JOIN_VERSION ||
        (r.refused != 0 && r.refused != 1))
        return ct__error(CT_ERR_DIST, "shm open: rank 0 (pid %d) answered with %zu bytes that "
                         "are not a cputrain shm reply (version %u)", (int)from, n,
                         CT__SHM_JOIN_VERSION);
    if (r.refused)
        return ct__error(CT_ERR_DIST, "shm open: rank 0 (pid %d) refused rank %d: %s", (int)from,
                         rank, peer_text(r.why, why));
    if (nfd != 1 || ctrunc)
        return ct__error(CT_ERR_DIST, "shm open: rank 0 (pid %d) sent %d descriptors%s, not the "
                         "segment's one", (int)from, nfd, ctrunc ? " and more" : "");
    if (r.world != (uint32_t)world || r.seg_bytes != seg_bytes)
        return ct__error(CT_ERR_DIST, "shm open: rank 0 (pid %d) sent a segment for world %u of "
                         "%llu bytes; this rank computes world %d, %llu bytes", (int)from,
                         r.world, (unsigned long long)r.seg_bytes, world,
                         (unsigned long long)seg_bytes);
    return CT_OK;
}

ct_status ct__shm_join_parse_confirmation(const void *msg, size_t n, int rank, pid_t pid)
{
    ct__shm_join_confirmation c;
    char why[CT__SHM_JOIN_TEXT];
    if (n == sizeof c)
        memcpy(&c, msg, sizeof c);
    if (n != sizeof c || c.magic != CT__SHM_JOIN_MAGIC || (c.refused != 0 && c.refused != 1))
        return ct__error(CT_ERR_DIST, "shm open: rank %d (pid %d) answered the segment with "
                         "%zu bytes that are not a confirmation", rank, (int)pid, n);
    if (c.refused)
        return ct__error(CT_ERR_DIST, "shm open: rank %d (pid %d) refused the segment: %s",
                         rank, (int)pid, peer_text(c.why, why));
    return CT_OK;
}

/* ---- rank 0 ------------------------------------------------------------------------ */

enum { WAITING = 0, ADMITTED, MAPPED }; /* what rank 0 knows of a rank */

typedef struct {
    int fd;
    pid_t pid;
    int rank; /* 0 until its hello was accepted */
} conn_t;

typedef struct {
    const char *name;
    int world, seg_fd;
    uint64_t seg_bytes;
    unsigned char *state; /* per rank */
    pid_t *pid;           /* per rank, once admitted */
    int mapped;           /* ranks in state MAPPED */
    conn_t *conns;
    int nconn, cap;
    int dropped; /* connections refused so far: the first few are logged */
    void (*joined)(void *, int, pid_t);
    void *ctx;
} server;

static void drop(server *sv, int i)
{
    close(sv->conns[i].fd);
    sv->conns[i] = sv->conns[--sv->nconn];
}

static void refuse(int fd, const char *fmt, ...) CT__PRINTF(2, 3);
static void refuse(int fd, const char *fmt, ...)
{
    ct__shm_join_reply r;
    va_list ap;
    memset(&r, 0, sizeof r);
    r.magic = CT__SHM_JOIN_MAGIC;
    r.version = CT__SHM_JOIN_VERSION;
    r.refused = 1;
    va_start(ap, fmt);
    vsnprintf(r.why, sizeof r.why, fmt, ap);
    va_end(ap);
    ct__log(CT_LOG_WARNING, "shm: refused a peer: %s", r.why);
    (void)!send(fd, &r, sizeof r, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static int send_segment(server *sv, int fd)
{
    ct__shm_join_reply r;
    struct iovec iov;
    struct msghdr mh;
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct cmsghdr *cm;
    memset(&r, 0, sizeof r);
    r.magic = CT__SHM_JOIN_MAGIC;
    r.version = CT__SHM_JOIN_VERSION;
    r.world = (uint32_t)sv->world;
    r.seg_bytes = sv->seg_bytes;
    iov.iov_base = &r;
    iov.iov_len = sizeof r;
    memset(&mh, 0, sizeof mh);
    memset(&ctl, 0, sizeof ctl);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof ctl.buf;
    cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &sv->seg_fd, sizeof(int));
    return sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)sizeof r ? 0 : -1;
}

/* Connections accepted per poll round: a flood of them cannot keep rank 0
 * from the ranks' messages and its deadline. */
enum { ACCEPT_BATCH = 16, DROPS_LOGGED = 10 };

/* A refused connection, logged while there have been few (a flood of them
 * would fill the log and slow rank 0 down with it). */
static void log_drop(server *sv, const char *fmt, ...) CT__PRINTF(2, 3);
static void log_drop(server *sv, const char *fmt, ...)
{
    char text[256];
    va_list ap;
    if (++sv->dropped > DROPS_LOGGED)
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    ct__log(CT_LOG_WARNING, "%s%s", text,
            sv->dropped == DROPS_LOGGED ? " (further ones are not logged)" : "");
}

/* Accepts what waits on the listening socket, a batch at a time; other
 * users' connections are closed unread. */
static void accept_batch(server *sv, int lfd)
{
    for (int n = 0; n < ACCEPT_BATCH; n++) {
        struct ucred uc;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        if (peer_cred(fd, &uc) != 0 || uc.uid != geteuid()) {
            log_drop(sv, "shm: dropped a connection to @%s from uid %u (pid %d): not this "
                     "job's user (uid %u)", sv->name, (unsigned)uc.uid, (int)uc.pid,
                     (unsigned)geteuid());
            close(fd);
            continue;
        }
        if (sv->nconn == sv->cap) {
            log_drop(sv, "shm: dropped a connection to @%s from pid %d: %d connections wait "
                     "already", sv->name, (int)uc.pid, sv->nconn);
            close(fd);
            continue;
        }
        sv->conns[sv->nconn].fd = fd;
        sv->conns[sv->nconn].pid = uc.pid;
        sv->conns[sv->nconn].rank = 0;
        sv->nconn++;
    }
}

/* One message from connection i. Returns CT_OK (also when the connection
 * was dropped) or an error that ends the rendezvous. */
static ct_status serve_one(server *sv, int i)
{
    conn_t *c = &sv->conns[i];
    ct_status st;
    union {
        ct__shm_join_hello hello;
        ct__shm_join_confirmation conf;
        char raw[sizeof(ct__shm_join_confirmation) + 1];
    } m;
    ssize_t n = recv(c->fd, &m, sizeof m, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return CT_OK;
    if (c->rank == 0) {
        uint32_t r, w;
        int kind;
        if (n <= 0) { /* a probe of who holds the name, or a rank that gave up */
            drop(sv, i);
            return CT_OK;
        }
        kind = ct__shm_join_parse_hello(&m, (size_t)n, sv->world, &r, &w);
        if (kind == CT__SHM_HELLO_FOREIGN)
            refuse(c->fd, "pid %d did not send a cputrain shm hello (version %u)", (int)c->pid,
                   CT__SHM_JOIN_VERSION);
        else if (kind == CT__SHM_HELLO_MISPLACED)
            refuse(c->fd, "pid %d asked for rank %u of world %u; this job is world %d",
                   (int)c->pid, r, w, sv->world);
        else if (sv->state[r] != WAITING)
            refuse(c->fd, "pid %d asked for rank %u, which pid %d has", (int)c->pid, r,
                   (int)sv->pid[r]);
        else {
            sv->state[r] = ADMITTED;
            sv->pid[r] = c->pid;
            c->rank = (int)r;
            if (sv->joined)
                sv->joined(sv->ctx, (int)r, c->pid);
            if (send_segment(sv, c->fd) == 0)
                return CT_OK;
            return ct__error(CT_ERR_DIST, "shm open: cannot send the segment to rank %u (pid "
                             "%d): %s", r, (int)c->pid, strerror(errno));
        }
        drop(sv, i);
        return CT_OK;
    }
    if (n <= 0)
        return ct__error(CT_ERR_DIST, "shm open: rank %d (pid %d) went away before it had "
                         "mapped the segment", c->rank, (int)c->pid);
    if ((st = ct__shm_join_parse_confirmation(&m, (size_t)n, c->rank, c->pid)) != CT_OK)
        return st;
    sv->state[c->rank] = MAPPED;
    sv->mapped++;
    drop(sv, i);
    return CT_OK;
}

static ct_status missing_error(const server *sv, double timeout_s)
{
    char list[400];
    size_t used = 0;
    int r, n = 0;
    list[0] = '\0';
    for (r = 1; r < sv->world; r++) {
        int w;
        if (sv->state[r] == MAPPED)
            continue;
        if (used + 40 >= sizeof list) {
            if (used + 5 < sizeof list)
                used += (size_t)snprintf(list + used, sizeof list - used, ", ...");
            break;
        }
        if (sv->state[r] == ADMITTED)
            w = snprintf(list + used, sizeof list - used, "%s%d (pid %d, not confirmed)",
                         n ? ", " : "", r, (int)sv->pid[r]);
        else
            w = snprintf(list + used, sizeof list - used, "%s%d", n ? ", " : "", r);
        used += w > 0 ? (size_t)w : 0;
        n++;
    }
    return ct__error(CT_ERR_DIST, "shm open: rank%s %s did not join within %.1f s (at @%s)",
                     n > 1 ? "s" : "", list, timeout_s, sv->name);
}

/* Binds the first of the job's names that no other user holds, into
 * `name`. Names held by another user are passed over and logged: that user
 * may watch this job, but cannot stop it. */
static ct_status bind_endpoint(const ct__shm_endpoint *ep, char *name, int *out)
{
    char first[CT__SHM_ENDPOINT_MAX + 1], who[128];
    int i, skipped = 0;
    *out = -1;
    for (i = 0; i < CT__SHM_ENDPOINT_NAMES; i++) {
        struct sockaddr_un a;
        socklen_t alen;
        struct ucred uc;
        int e, fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            return ct__error(CT_ERR_DIST, "shm open: socket: %s", strerror(errno));
        name_at(ep, i, name);
        alen = endpoint_addr(name, &a);
        if (bind(fd, (struct sockaddr *)&a, alen) == 0) {
            if (listen(fd, ep->world < 128 ? 128 : ep->world) != 0) {
                e = errno;
                close(fd);
                return ct__error(CT_ERR_DIST, "shm open: cannot listen on @%s: %s", name,
                                 strerror(e));
            }
            if (skipped)
                ct__log(CT_LOG_WARNING, "shm: rank 0 listens on @%s: %d earlier name%s of this "
                        "job %s held by other users (@%s by %s), passed over", name, skipped,
                        skipped > 1 ? "s" : "", skipped > 1 ? "are" : "is", first, who);
            *out = fd;
            return CT_OK;
        }
        e = errno;
        close(fd);
        if (e != EADDRINUSE)
            return ct__error(CT_ERR_DIST, "shm open: cannot bind @%s: %s", name, strerror(e));
        {
            char holder[128];
            if (who_holds(name, &uc, holder, sizeof holder) && uc.uid == geteuid())
                return ct__error(CT_ERR_DIST, "shm open: @%s is held by pid %d of this user: "
                                 "another job of the same name (or its rank 0) runs; give "
                                 "each job its own CPUTRAIN_DIST_JOB", name, (int)uc.pid);
            if (!skipped++) {
                memcpy(first, name, sizeof first);
                memcpy(who, holder, sizeof who);
            }
        }
    }
    return ct__error(CT_ERR_DIST, "shm open: all %d names of this job are held by other users "
                     "(the first, @%s, by %s): refusing them%s", CT__SHM_ENDPOINT_NAMES, first,
                     who, predictable_hint(ep));
}

ct_status ct__shm_join_serve(const ct__shm_endpoint *ep, int seg_fd, uint64_t seg_bytes,
                             double deadline, double timeout_s, char *bound,
                             void (*joined)(void *ctx, int rank, pid_t pid), void *ctx)
{
    int world = ep->world;
    server sv;
    struct pollfd *pfd;
    ct_status st;
    int lfd = -1, i;
    memset(&sv, 0, sizeof sv);
    sv.name = bound;
    sv.world = world;
    sv.seg_fd = seg_fd;
    sv.seg_bytes = seg_bytes;
    sv.joined = joined;
    sv.ctx = ctx;
    sv.cap = world + EXTRA_CONNS;
    sv.state = calloc((size_t)world, 1);
    sv.pid = calloc((size_t)world, sizeof *sv.pid);
    sv.conns = calloc((size_t)sv.cap, sizeof *sv.conns);
    pfd = calloc((size_t)sv.cap + 1, sizeof *pfd);
    if (!sv.state || !sv.pid || !sv.conns || !pfd) {
        st = ct__error(CT_ERR_NOMEM, "shm open: out of memory");
        goto out;
    }
    bound[0] = '\0';
    st = bind_endpoint(ep, bound, &lfd);
    if (st != CT_OK)
        goto out;
    while (sv.mapped < world - 1) {
        double left = deadline - ct__now_s();
        int np;
        if (left <= 0) {
            st = missing_error(&sv, timeout_s);
            break;
        }
        pfd[0].fd = lfd;
        pfd[0].events = POLLIN;
        for (i = 0; i < sv.nconn; i++) {
            pfd[i + 1].fd = sv.conns[i].fd;
            pfd[i + 1].events = POLLIN;
            pfd[i + 1].revents = 0;
        }
        np = sv.nconn;
        if (poll(pfd, (nfds_t)np + 1, ct__poll_ms(deadline)) < 0) {
            if (errno == EINTR)
                continue;
            st = ct__error(CT_ERR_DIST, "shm open: poll: %s", strerror(errno));
            break;
        }
        /* Last to first: drop() moves the last connection into the gap. */
        for (i = np - 1; i >= 0 && st == CT_OK; i--)
            if (pfd[i + 1].revents)
                st = serve_one(&sv, i);
        if (st != CT_OK)
            break;
        if (pfd[0].revents)
            accept_batch(&sv, lfd);
    }
    close(lfd);
out:
    for (i = 0; i < sv.nconn; i++)
        close(sv.conns[i].fd);
    free(sv.state);
    free(sv.pid);
    free(sv.conns);
    free(pfd);
    return st;
}

/* ---- the other ranks ---------------------------------------------------------------- */

static ct_status check_segment_fd(int fd, uint64_t seg_bytes, pid_t from)
{
    struct stat sb;
    int seals;
    const int need = F_SEAL_SHRINK | F_SEAL_GROW;
    if (fstat(fd, &sb) != 0)
        return ct__error(CT_ERR_DIST, "shm open: fstat of the segment from rank 0 (pid %d): %s",
                         (int)from, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return ct__error(CT_ERR_DIST, "shm open: the segment from rank 0 (pid %d) is not a "
                         "regular file (mode %06o): refusing it", (int)from,
                         (unsigned)sb.st_mode);
    if (sb.st_uid != geteuid())
        return ct__error(CT_ERR_DIST, "shm open: the segment from rank 0 (pid %d) belongs to "
                         "uid %u, not this user (uid %u): refusing it", (int)from,
                         (unsigned)sb.st_uid, (unsigned)geteuid());
    if (sb.st_mode & 077)
        return ct__error(CT_ERR_DIST, "shm open: the segment from rank 0 (pid %d) has mode %03o "
                         "(other users may open it): refusing it", (int)from,
                         (unsigned)(sb.st_mode & 0777));
    if (sb.st_size < 0 || (uint64_t)sb.st_size != seg_bytes)
        return ct__error(CT_ERR_DIST, "shm open: the segment from rank 0 (pid %d) has %lld "
                         "bytes, not the %llu this rank computes: refusing it", (int)from,
                         (long long)sb.st_size, (unsigned long long)seg_bytes);
    /* Unsealed, it could be cut short under our mapping (SIGBUS). */
    seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || (seals & need) != need)
        return ct__error(CT_ERR_DIST, "shm open: the segment from rank 0 (pid %d) is not sealed "
                         "against resizing: refusing it", (int)from);
    return CT_OK;
}

/* The reply (and its descriptors) from rank 0; every descriptor but a
 * valid segment's is closed. */
static ct_status read_reply(int s, int rank, int world, uint64_t seg_bytes, pid_t from,
                            int *seg_fd, int *again)
{
    union {
        ct__shm_join_reply r;
        char raw[sizeof(ct__shm_join_reply) + 1];
    } m;
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
    } ctl;
    int fds[MAX_FDS * 2], nfd = 0, i;
    struct iovec iov;
    struct msghdr mh;
    struct cmsghdr *cm;
    ssize_t n;
    ct_status st = CT_OK;
    iov.iov_base = &m;
    iov.iov_len = sizeof m;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof ctl.buf;
    n = recvmsg(s, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    *again = n < 0 && (errno == EAGAIN || errno == EINTR);
    if (*again)
        return CT_OK;
    for (cm = CMSG_FIRSTHDR(&mh); n >= 0 && cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
        size_t k, count;
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (k = 0; k < count && nfd < MAX_FDS * 2; k++)
            memcpy(&fds[nfd++], CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
    }
    if (n <= 0)
        st = ct__error(CT_ERR_DIST, "shm open: rank 0 (pid %d) hung up before it sent the "
                       "segment", (int)from);
    else if ((st = ct__shm_join_parse_reply(&m, (size_t)n, nfd, (mh.msg_flags & MSG_CTRUNC) != 0,
                                            rank, world, seg_bytes, from)) == CT_OK)
        st = check_segment_fd(fds[0], seg_bytes, from);
    if (st == CT_OK) {
        *seg_fd = fds[0];
        return CT_OK;
    }
    for (i = 0; i < nfd; i++)
        close(fds[i]);
    return st;
}

/* A connected socket to rank 0, found at one of the job's names (the
 * one in `name`), retried until the deadline while no one of this user
 * listens at any. Every name is tried each round: rank 0 may have passed
 * over a name another user held then and has given up since. */
static ct_status connect_endpoint(const ct__shm_endpoint *ep, double deadline,
                                  double timeout_s, char *name, int *out, struct ucred *uc)
{
    char first[CT__SHM_ENDPOINT_MAX + 1] = "", who[128] = "";
    useconds_t nap = 1000;
    for (;;) {
        int i;
        for (i = 0; i < CT__SHM_ENDPOINT_NAMES; i++) {
            struct sockaddr_un a;
            socklen_t alen;
            int e, fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            if (fd < 0)
                return ct__error(CT_ERR_DIST, "shm open: socket: %s", strerror(errno));
            name_at(ep, i, name);
            alen = endpoint_addr(name, &a);
            if (connect(fd, (struct sockaddr *)&a, alen) == 0) {
                /* Say nothing to an endpoint of another user: not this job's. */
                if (peer_cred(fd, uc) == 0 && uc->uid == geteuid()) {
                    if (first[0])
                        ct__log(CT_LOG_WARNING, "shm: found rank 0 at @%s, past @%s held by "
                                "%s", name, first, who);
                    *out = fd;
                    return CT_OK;
                }
                if (!first[0]) {
                    memcpy(first, name, sizeof first);
                    snprintf(who, sizeof who, "uid %u (pid %d), not this job's user",
                             (unsigned)uc->uid, (int)uc->pid);
                }
                close(fd);
                continue;
            }
            e = errno;
            close(fd);
            if (e == EPROTOTYPE && !first[0]) {
                struct ucred other;
                memcpy(first, name, sizeof first);
                who_holds(name, &other, who, sizeof who);
            }
            /* Nobody listening (abstract names give ECONNREFUSED), a full
             * backlog (EAGAIN), a socket of another kind (EPROTOTYPE). */
            if (e != ECONNREFUSED && e != EAGAIN && e != ENOENT && e != EPROTOTYPE)
                return ct__error(CT_ERR_DIST, "shm open: cannot connect to @%s: %s", name,
                                 strerror(e));
        }
        if (ct__now_s() >= deadline) {
            name_at(ep, 0, name);
            if (first[0])
                return ct__error(CT_ERR_DIST, "shm open: rank 0 did not open @%s or any other "
                                 "name of this job within %.1f s (@%s is held by %s: passed "
                                 "over)%s", name, timeout_s, first, who, predictable_hint(ep));
            return ct__error(CT_ERR_DIST, "shm open: rank 0 did not open @%s within %.1f s",
                             name, timeout_s);
        }
        usleep(nap);
        nap = nap < 20000 ? nap * 2 : nap;
    }
}

ct_status ct__shm_join_fetch(const ct__shm_endpoint *ep, int rank, uint64_t seg_bytes,
                             double deadline, double timeout_s, char *found, int *seg_fd,
                             int *conn, pid_t *server_pid)
{
    ct__shm_join_hello h;
    struct ucred uc;
    ct_status st;
    int s = -1, world = ep->world;
    const char *name = found;
    *seg_fd = *conn = -1;
    st = connect_endpoint(ep, deadline, timeout_s, found, &s, &uc);
    if (st != CT_OK)
        return st;
    *server_pid = uc.pid;
    memset(&h, 0, sizeof h);
    h.magic = CT__SHM_JOIN_MAGIC;
    h.version = CT__SHM_JOIN_VERSION;
    h.rank = (uint32_t)rank;
    h.world = (uint32_t)world;
    if (send(s, &h, sizeof h, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof h) {
        int e = errno;
        close(s);
        return ct__error(CT_ERR_DIST, "shm open: cannot reach rank 0 (pid %d) at @%s: %s",
                         (int)uc.pid, name, strerror(e));
    }
    for (;;) {
        struct pollfd p = {s, POLLIN, 0};
        double left = deadline - ct__now_s();
        int again = 0;
        if (left <= 0) {
            close(s);
            return ct__error(CT_ERR_DIST, "shm open: rank 0 (pid %d) did not answer rank %d "
                             "within %.1f s", (int)uc.pid, rank, timeout_s);
        }
        if (poll(&p, 1, ct__poll_ms(deadline)) <= 0)
            continue;
        st = read_reply(s, rank, world, seg_bytes, uc.pid, seg_fd, &again);
        if (again)
            continue;
        if (st != CT_OK) {
            close(s);
            return st;
        }
        *conn = s;
        return CT_OK;
    }
}

void ct__shm_join_confirm(int conn, const char *why)
{
    ct__shm_join_confirmation c;
    memset(&c, 0, sizeof c);
    c.magic = CT__SHM_JOIN_MAGIC;
    c.refused = why != NULL;
    if (why != NULL)
        snprintf(c.why, sizeof c.why, "%s", why);
    (void)!send(conn, &c, sizeof c, MSG_NOSIGNAL | MSG_DONTWAIT);
    close(conn);
}
