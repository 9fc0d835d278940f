/* TCP collectives: torchrun-style rendezvous, a ring plus a star around
 * rank 0, a poll()-driven transfer engine with progress timeouts and peer
 * naming, ring reduce-scatter/allgather and gather/broadcast allreduce,
 * pipelined ring broadcast, star barrier. Every connection first passes
 * the handshake of tcp_auth.c, which also keeps strangers from holding the
 * door; what follows is checked as coming from a possibly hostile rank. */
#include "dist/tcp.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/text.h"
#include "dist/tcp_auth.h"
#include "dist/tcp_wire.h"

#define TCP_MAX_WORLD 4096
#define BCAST_CHUNK ((size_t)1 << 20)
/* Floats the ring reduce-scatter receives and adds at a time: small enough
 * to stay in L2 between the copy out of the socket and the addition. */
#ifndef RING_CHUNK
#define RING_CHUNK ((size_t)64 << 10)
#endif
/* How long a rank whose data link broke waits for a notice naming the rank
 * that failed first (the peer may only have given up because of it). */
#define NOTICE_GRACE_S 0.05

typedef struct {
    int fd;
    int peer;
    int ctrl; /* a control link: carries only failure notices */
} link_t;

struct ct__tcp {
    int rank, world;
    double timeout_s;
    int broken;
    int left_fd, right_fd; /* ring: receive from left, send to right */
    int *star;             /* rank 0: star[r] is rank r's socket; others: star[0] */
    int *ctrl;             /* the same shape, the control links */
    link_t *links;         /* every open socket with its peer, for the watch */
    int nlinks;
    void *tmp;
    size_t tmp_bytes;
    struct pollfd *pf; /* run_io's poll set, grown as needed */
    int *pf_map;
    int pf_cap;
};

typedef struct {
    int fd, peer;
    int recv; /* 0: send */
    char *p;
    size_t left;
} io_op;

/* "rank 2" or "ranks 1, 3" for the peers flagged in `which`. */
static void rank_list(const int *which, int world, char *out, size_t size)
{
    int r, n = 0;
    size_t u = 0;
    char tmp[256];
    tmp[0] = '\0';
    for (r = 0; r < world; r++) {
        int w;
        if (!which[r])
            continue;
        n++;
        if (u + 16 < sizeof tmp) {
            w = snprintf(tmp + u, sizeof tmp - u, "%s%d", n > 1 ? ", " : "", r);
            u += w > 0 ? (size_t)w : 0;
        } else if (u + 5 < sizeof tmp && tmp[u - 1] != '.') {
            w = snprintf(tmp + u, sizeof tmp - u, ", ...");
            u += w > 0 ? (size_t)w : 0;
        }
    }
    snprintf(out, size, "rank%s %s", n > 1 ? "s" : "", tmp);
}

/* Shut every connection down so that the peers notice at once, and refuse
 * further collectives. */
static void break_all(ct__tcp *t)
{
    int i;
    t->broken = 1;
    for (i = 0; i < t->nlinks; i++)
        if (t->links[i].fd >= 0)
            shutdown(t->links[i].fd, SHUT_RDWR);
}

static int is_disconnect(int e)
{
    return e == EPIPE || e == ECONNRESET || e == ECONNABORTED || e == ENOTCONN ||
           e == ETIMEDOUT || e == EHOSTUNREACH;
}

/* Best effort, never blocking: the reason of a failure on a control link. */
static void post_notice(int fd, const char *text)
{
    unsigned char msg[CT__TCP_NOTICE_HEAD + CT__TCP_NOTICE_MAX];
    size_t len;
    if (fd < 0)
        return;
    len = ct__tcp_put_notice(msg, text);
    (void)!send(fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Fails the handle: sets "<op>: <reason>[ (reported by rank R)]", passes
 * the reason on (to rank 0, which relays it to every other rank), then shuts
 * every connection down. reporter < 0: this rank found it. */
static ct_status fail_with(ct__tcp *t, const char *op, const char *reason, int reporter)
{
    ct_status st;
    int r;
    if (reporter >= 0)
        st = ct__error(CT_ERR_DIST, "%s: %s (reported by rank %d)", op, reason, reporter);
    else
        st = ct__error(CT_ERR_DIST, "%s: %s", op, reason);
    if (t->ctrl != NULL && !t->broken) {
        if (t->rank != 0) {
            if (reporter != 0)
                post_notice(t->ctrl[0], reason);
        } else {
            for (r = 1; r < t->world; r++)
                if (r != reporter)
                    post_notice(t->ctrl[r], reason);
        }
    }
    break_all(t);
    return st;
}

/* Reads the notice waiting on control link i (or finds it closed) and fails
 * the handle with it. */
static ct_status take_notice(ct__tcp *t, const char *op, int i)
{
    unsigned char msg[CT__TCP_NOTICE_HEAD + CT__TCP_NOTICE_MAX];
    char text[CT__TCP_NOTICE_MAX + 1];
    int fd = t->links[i].fd, peer = t->links[i].peer;
    size_t have = 0, need = 0;
    double dl = ct__now_s() + 0.2;
    for (;;) {
        ssize_t k;
        struct pollfd pf = { fd, POLLIN, 0 };
        int rc = ct__tcp_parse_notice(msg, have, &need, text);
        if (rc > 0)
            return fail_with(t, op, text, peer);
        if (rc < 0)
            break;
        /* need <= sizeof msg: the parser refuses longer notices */
        k = recv(fd, msg + have, need - have, 0);
        if (k > 0) {
            have += (size_t)k;
            continue;
        }
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) &&
            poll(&pf, 1, ct__poll_ms(dl)) > 0)
            continue;
        if (k < 0 && errno == EINTR)
            continue;
        break;
    }
    snprintf(text, sizeof text, "rank %d disconnected", peer);
    return fail_with(t, op, text, -1);
}

/* After a data connection broke: if a control link carries (or within
 * `grace` seconds brings) a notice, fail with it; else return CT_OK. */
static ct_status check_notices(ct__tcp *t, const char *op, double grace)
{
    struct pollfd pf[64];
    int idx[64], i, n = 0;
    double dl = ct__now_s() + grace;
    for (i = 0; i < t->nlinks && n < 64; i++) {
        if (!t->links[i].ctrl)
            continue;
        pf[n].fd = t->links[i].fd;
        pf[n].events = POLLIN;
        idx[n++] = i;
    }
    if (n == 0)
        return CT_OK;
    for (;;) {
        int rc;
        for (i = 0; i < n; i++)
            pf[i].revents = 0;
        rc = poll(pf, (nfds_t)n, ct__poll_ms(dl));
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return CT_OK;
        for (i = 0; i < n; i++) {
            char c;
            if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            /* Data: a notice. Only EOF: that peer is gone, which is no
             * better an answer than the one we have; stop waiting for it. */
            if (recv(pf[i].fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1)
                return take_notice(t, op, idx[i]);
            pf[i].fd = -1;
        }
    }
}

/* Marks in `dead` the peers whose data links (other than those of pending
 * receive ops) were closed or broke; returns how many. */
static int scan_watch(ct__tcp *t, const io_op *ops, int nops, int *dead)
{
    struct pollfd pf[64];
    int i, j, n = 0, found = 0;
    for (i = 0; i < t->nlinks && n < 64; i++) {
        int active = 0;
        for (j = 0; j < nops; j++)
            if (ops[j].fd == t->links[i].fd && ops[j].recv && ops[j].left > 0)
                active = 1;
        if (active || t->links[i].ctrl)
            continue;
        pf[n].fd = t->links[i].fd;
        pf[n].events = POLLRDHUP;
        pf[n].revents = 0;
        n++;
    }
    if (n == 0 || poll(pf, (nfds_t)n, 0) <= 0)
        return 0;
    for (i = 0; i < n; i++)
        if (pf[i].revents & (POLLHUP | POLLERR | POLLRDHUP))
            for (j = 0; j < t->nlinks; j++)
                if (t->links[j].fd == pf[i].fd && !dead[t->links[j].peer]) {
                    dead[t->links[j].peer] = 1;
                    found++;
                }
    return found;
}

/* A data link to `peer` broke (errno e; 0: closed). Prefer a notice that
 * names the origin: the peer may only have given up because of another. */
static ct_status fail_link(ct__tcp *t, const char *op, const io_op *ops, int nops, int peer,
                           int e)
{
    char list[300], reason[400];
    int *dead;
    /* Rank 0 is connected to every rank, so what it finds is first-hand;
     * and a rank that gave up posted its notice before closing. So rank 0
     * only looks, and reports at once: the others may be waiting for it. */
    ct_status st = check_notices(t, op, t->rank == 0 ? 0.0 : NOTICE_GRACE_S);
    if (st != CT_OK)
        return st;
    dead = calloc((size_t)t->world, sizeof *dead);
    if (dead == NULL) {
        break_all(t);
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", op);
    }
    if (peer >= 0)
        dead[peer] = 1;
    scan_watch(t, ops, nops, dead);
    /* No notice, and rank 0 (the relay) is gone: it explains the others,
     * which shut their links down when they found it gone too. */
    if (t->rank != 0 && dead[0]) {
        memset(dead, 0, (size_t)t->world * sizeof *dead);
        dead[0] = 1;
    }
    rank_list(dead, t->world, list, sizeof list);
    free(dead);
    if (e == 0 || is_disconnect(e))
        snprintf(reason, sizeof reason, "%s disconnected", list);
    else
        snprintf(reason, sizeof reason, "%s: %s", list, strerror(e));
    return fail_with(t, op, reason, -1);
}

/* Moves the ops on, sending and receiving concurrently, until those in the
 * bit mask `need` are complete (the others progress meanwhile), while
 * watching the other links: a data link closed is a dead peer, a control
 * link readable is another rank's failure notice. Fails when a connection
 * breaks or when nothing moves for t->timeout_s (deadline < 0), or at the
 * absolute `deadline` (>= 0). */
static ct_status run_io_ex(ct__tcp *t, const char *op, io_op *ops, int nops, double deadline,
                           unsigned need)
{
    int progress_based = deadline < 0, cap = nops + t->nlinks;
    double dl = progress_based ? ct__now_s() + t->timeout_s : deadline;
    struct pollfd *pf;
    int *map;
    if (cap > t->pf_cap) {
        void *a = realloc(t->pf, (size_t)cap * sizeof *t->pf);
        void *b = a != NULL ? realloc(t->pf_map, (size_t)cap * sizeof *t->pf_map) : NULL;
        if (a != NULL)
            t->pf = a;
        if (b == NULL) {
            break_all(t);
            return ct__error(CT_ERR_NOMEM, "%s: out of memory", op);
        }
        t->pf_map = b;
        t->pf_cap = cap;
    }
    pf = t->pf;
    map = t->pf_map;
    for (;;) {
        int i, np = 0, pending = 0, moved = 0, rc;
        /* Optimistic progress first: most small sends complete at once. */
        for (i = 0; i < nops; i++) {
            io_op *o = &ops[i];
            while (o->left > 0) {
                ssize_t k = o->recv ? recv(o->fd, o->p, o->left, 0)
                                    : send(o->fd, o->p, o->left, MSG_NOSIGNAL);
                if (k > 0) {
                    o->p += k;
                    o->left -= (size_t)k;
                    moved = 1;
                    continue;
                }
                if (k < 0 && errno == EINTR)
                    continue;
                if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                    break;
                return fail_link(t, op, ops, nops, o->peer, k == 0 ? 0 : errno);
            }
            if (o->left > 0 && (need & (1u << i)))
                pending = 1;
        }
        if (!pending)
            return CT_OK;
        if (moved && progress_based)
            dl = ct__now_s() + t->timeout_s;
        for (i = 0; i < nops; i++) {
            if (ops[i].left == 0)
                continue;
            pf[np].fd = ops[i].fd;
            pf[np].events = ops[i].recv ? POLLIN : POLLOUT;
            pf[np].revents = 0;
            map[np++] = i;
        }
        /* Watch the other connections for a peer that dies meanwhile. */
        for (i = 0; i < t->nlinks && np < cap; i++) {
            int j, active = 0;
            for (j = 0; j < nops; j++)
                if (ops[j].left > 0 && ops[j].fd == t->links[i].fd)
                    active = 1;
            if (active)
                continue;
            pf[np].fd = t->links[i].fd;
            pf[np].events = t->links[i].ctrl ? POLLIN | POLLRDHUP : POLLRDHUP;
            pf[np].revents = 0;
            map[np++] = -1 - i;
        }
        rc = poll(pf, (nfds_t)np, ct__poll_ms(dl));
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0) {
            char reason[128];
            snprintf(reason, sizeof reason, "poll: %s", strerror(errno));
            return fail_with(t, op, reason, -1);
        }
        if (rc == 0) {
            int *late;
            char list[300], reason[400];
            if (ct__now_s() < dl)
                continue;
            late = calloc((size_t)t->world, sizeof *late);
            if (late == NULL) {
                break_all(t);
                return ct__error(CT_ERR_NOMEM, "%s: out of memory", op);
            }
            for (i = 0; i < nops; i++)
                if (ops[i].left > 0)
                    late[ops[i].peer] = 1;
            rank_list(late, t->world, list, sizeof list);
            free(late);
            if (progress_based)
                snprintf(reason, sizeof reason, "%s did not answer within %.1f s", list,
                         t->timeout_s);
            else
                snprintf(reason, sizeof reason, "%s did not answer in time", list);
            return fail_with(t, op, reason, -1);
        }
        for (i = 0; i < np; i++) {
            int li;
            if (map[i] >= 0 || pf[i].revents == 0)
                continue;
            li = -1 - map[i];
            if (t->links[li].ctrl)
                return take_notice(t, op, li);
            if (pf[i].revents & (POLLHUP | POLLERR | POLLRDHUP))
                return fail_link(t, op, ops, nops, t->links[li].peer, 0);
        }
    }
}

/* run_io_ex until every op is done. */
static ct_status run_io(ct__tcp *t, const char *op, io_op *ops, int nops, double deadline)
{
    return run_io_ex(t, op, ops, nops, deadline, ~0u);
}

static ct_status xfer1(ct__tcp *t, const char *op, int fd, int peer, int recv_, void *p,
                       size_t bytes, double deadline)
{
    io_op o;
    o.fd = fd;
    o.peer = peer;
    o.recv = recv_;
    o.p = p;
    o.left = bytes;
    return run_io(t, op, &o, 1, deadline);
}

static int add_link_ex(ct__tcp *t, int fd, int peer, int ctrl)
{
    link_t *l = realloc(t->links, (size_t)(t->nlinks + 1) * sizeof *l);
    if (l == NULL)
        return -1;
    t->links = l;
    l[t->nlinks].fd = fd;
    l[t->nlinks].peer = peer;
    l[t->nlinks].ctrl = ctrl;
    t->nlinks++;
    return 0;
}

static int add_link(ct__tcp *t, int fd, int peer)
{
    return add_link_ex(t, fd, peer, 0);
}

/* Closes fd and forgets its link. */
static void drop_link(ct__tcp *t, int fd)
{
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].fd == fd) {
            t->links[i] = t->links[--t->nlinks];
            break;
        }
    close(fd);
}

int ct__tcp_rank(const ct__tcp *tcp) { return tcp ? tcp->rank : 0; }
int ct__tcp_world(const ct__tcp *tcp) { return tcp ? tcp->world : 1; }

static void free_handle(ct__tcp *t)
{
    int i;
    if (t == NULL)
        return;
    for (i = 0; i < t->nlinks; i++)
        if (t->links[i].fd >= 0)
            close(t->links[i].fd);
    free(t->links);
    free(t->star);
    free(t->ctrl);
    free(t->tmp);
    free(t->pf);
    free(t->pf_map);
    free(t);
}

/* ---- rendezvous --------------------------------------------------------- */

static void numeric_host(const struct sockaddr *sa, socklen_t len, char *host, size_t size)
{
    if (getnameinfo(sa, len, host, (socklen_t)size, NULL, 0, NI_NUMERICHOST) != 0)
        snprintf(host, size, "?");
}

/* A listening socket on host:port (port 0: the system picks); *port_out
 * gets the port. Returns the fd or -1 with the error set. */
static int listen_on(const char *op, const char *host, int port, int backlog, int *port_out,
                     char *bound_host, size_t bh_size)
{
    struct addrinfo hints, *res = NULL, *ai;
    char pstr[16];
    int fd = -1, rc, e = 0;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(pstr, sizeof pstr, "%d", port);
    rc = getaddrinfo(host, pstr, &hints, &res);
    if (rc != 0) {
        ct__error(CT_ERR_DIST, "%s: cannot resolve '%s': %s", op, host ? host : "*",
                  gai_strerror(rc));
        return -1;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        int one = 1;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            e = errno;
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0 &&
            getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
            *port_out = ntohs(ss.ss_family == AF_INET6
                                  ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                  : ((struct sockaddr_in *)&ss)->sin_port);
            if (bound_host != NULL)
                numeric_host((struct sockaddr *)&ss, sl, bound_host, bh_size);
            break;
        }
        e = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        ct__error(CT_ERR_DIST, "%s: cannot listen on %s:%d: %s", op, host ? host : "*", port,
                  strerror(e ? e : EADDRNOTAVAIL));
        return -1;
    }
    ct__tcp_sock_setup(fd);
    return fd;
}

static ct_status send_abort(ct__tcp *t, int fd, int peer, const char *text)
{
    unsigned char msg[CT__TCP_TABLE_HEAD + CT__TCP_ABORT_MAX];
    size_t len = ct__tcp_put_abort(msg, text);
    return xfer1(t, "tcp open", fd, peer, 0, msg, len, ct__now_s() + 0.5);
}

/* How long rank 0 waits for MASTER_ADDR to resolve: a Kubernetes Service's
 * name can appear in DNS a few seconds after its pod starts. */
#define MASTER_RESOLVE_S 10.0

/* 0 once MASTER_ADDR resolves; -1 with the error set when it still does not
 * after MASTER_RESOLVE_S (or `deadline`): the other ranks look for rank 0
 * by that name, so a name that resolves nowhere is a job that cannot form,
 * said at once rather than after ddp_timeout. */
static int master_resolves(const char *addr, double deadline)
{
    double until = ct__now_s() + MASTER_RESOLVE_S;
    int warned = 0;
    if (until > deadline)
        until = deadline;
    for (;;) {
        struct addrinfo hints, *res = NULL;
        int rc;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        if ((rc = getaddrinfo(addr, NULL, &hints, &res)) == 0) {
            freeaddrinfo(res);
            return 0;
        }
        if (ct__now_s() >= until) {
            ct__error(CT_ERR_DIST, "tcp open: MASTER_ADDR '%s' does not resolve (%s): no rank "
                      "could reach rank 0 by it; give a name or address of rank 0's host",
                      addr, gai_strerror(rc));
            return -1;
        }
        if (!warned++)
            ct__log(CT_LOG_WARNING, "tcp: MASTER_ADDR '%s' does not resolve (%s); trying for "
                    "%.0f s more", addr, gai_strerror(rc), until - ct__now_s());
        usleep(250000);
    }
}

/* Rank 0 binds MASTER_ADDR when it is an address of this host; otherwise
 * (a NAT, a Kubernetes Service) all of them, as torchrun's store does. */
static int master_listen(const char *addr, int port, int world, double deadline, char *host,
                         size_t hsize)
{
    int dummy, lfd;
    if (master_resolves(addr, deadline) != 0)
        return -1;
    lfd = listen_on("tcp open", addr, port, world + 128, &dummy, host, hsize);
    if (lfd >= 0) {
        ct__log(CT_LOG_INFO, "tcp: rank 0 listens on %s port %d (MASTER_ADDR, an address "
                             "of this host)", host, port);
        return lfd;
    }
    {
        char first[512];
        snprintf(first, sizeof first, "%s", ct_last_error());
        lfd = listen_on("tcp open", NULL, port, world + 128, &dummy, host, hsize);
        if (lfd < 0) {
            ct__error(CT_ERR_DIST, "%s", first);
            return -1;
        }
    }
    ct__log(CT_LOG_INFO, "tcp: rank 0 listens on port %d of all this host's addresses (%s): "
                         "MASTER_ADDR %s resolves to none of them, so it must reach this "
                         "host through a NAT or a Service", port, host, addr);
    return lfd;
}

/* A rank that joined hung up before the world was complete (it died, or
 * its pod is being restarted): its place is open again, so that its
 * restarted self is admitted rather than refused as a duplicate until the
 * job's timeout. `gone` gets the departure, for the error if the place
 * stays empty. */
static void rank_left(ct__tcp *t, ct__tcp_hs *hs, const ct__tcp_hs_event *ev, char *gone,
                      size_t gone_size)
{
    int r = ev->hello.rank;
    drop_link(t, t->star[r]);
    t->star[r] = -1;
    ct__tcp_hs_expect(hs, CT__TCP_JOIN, r);
    snprintf(gone, gone_size, "; rank %d had joined from %s and hung up", r, ev->addr);
    ct__log(CT_LOG_WARNING, "tcp: rank %d (joined from %s) hung up before every rank had "
                            "joined; its place is open again for a restarted rank %d", r,
            ev->addr, r);
}

/* The table, to every rank at once (16 at a time). */
static ct_status send_table(ct__tcp *t, const ct__tcp_addr *table, double deadline)
{
    size_t bytes = ct__tcp_table_bytes(t->world);
    unsigned char *msg = malloc(bytes);
    ct_status st = CT_OK;
    if (msg == NULL)
        return ct__error(CT_ERR_NOMEM, "tcp open: out of memory");
    ct__tcp_put_table(msg, table, t->world);
    for (int base = 1; base < t->world && st == CT_OK; base += 16) {
        io_op ops[16];
        int n = 0;
        for (int r = base; r < t->world && r < base + 16; r++)
            ops[n++] = (io_op){ t->star[r], r, 0, (char *)msg, bytes };
        st = run_io(t, "tcp open", ops, n, deadline);
    }
    free(msg);
    return st;
}

static ct_status open_master(ct__tcp *t, const ct__tcp_self *self, const char *addr, int port,
                             double deadline, ct__tcp_addr *table, int *rfd_out)
{
    int lfd, rfd, got = 1, r, gone_rank = -1;
    char host[CT__TCP_HOST_LEN], gone[160] = "";
    ct__tcp_hs *hs = NULL;
    ct__tcp_hs_event ev;
    ct_status st;
    lfd = master_listen(addr, port, t->world, deadline, host, sizeof host);
    if (lfd < 0)
        return CT_ERR_DIST;
    /* Our ring listener: same address, a port of the system's choosing. */
    rfd = listen_on("tcp open", host, 0, t->world + 128, &table[0].port, NULL, 0);
    if (rfd < 0) {
        close(lfd);
        return CT_ERR_DIST;
    }
    /* Peers reach us at master_addr; a wildcard bind is no address to give. */
    snprintf(table[0].host, CT__TCP_HOST_LEN, "%s", addr);
    if ((st = ct__tcp_hs_create(self, lfd, &hs)) != CT_OK)
        goto fail;
    for (r = 1; r < t->world; r++)
        ct__tcp_hs_expect(hs, CT__TCP_JOIN, r);
    /* Every handshake at once: a stranger's connection occupies nothing but
     * its own slot, until its deadline. */
    while (got < t->world) {
        if ((st = ct__tcp_hs_wait(hs, deadline, &ev)) != CT_OK)
            goto fail;
        if (ev.fd < 0)
            break;
        if (ev.target == CT__TCP_HS_GONE) {
            gone_rank = ev.hello.rank;
            rank_left(t, hs, &ev, gone, sizeof gone);
            got--;
            continue;
        }
        r = ev.hello.rank;
        if (r == gone_rank)
            gone[0] = '\0'; /* back: no excuse for anyone else's absence */
        t->star[r] = ev.fd;
        table[r].port = ev.hello.port;
        memcpy(table[r].host, ev.hello.host, CT__TCP_HOST_LEN);
        if (add_link(t, ev.fd, r) != 0) {
            close(ev.fd);
            t->star[r] = -1;
            st = ct__error(CT_ERR_NOMEM, "tcp open: out of memory");
            goto fail;
        }
        /* Until the world is complete, a hang-up frees the place. */
        if (ct__tcp_hs_watch(hs, ev.fd, r, ev.addr) != 0) {
            st = ct__error(CT_ERR_NOMEM, "tcp open: out of memory");
            goto fail;
        }
        ct__log(CT_LOG_DEBUG, "tcp: rank %d joined from %s", r, ev.addr);
        got++;
    }
    close(lfd);
    lfd = -1;
    if (got < t->world) {
        int *miss = calloc((size_t)t->world, sizeof *miss);
        char list[300], text[900];
        if (miss == NULL) {
            st = ct__error(CT_ERR_NOMEM, "tcp open: out of memory");
            goto fail;
        }
        for (r = 1; r < t->world; r++)
            miss[r] = t->star[r] < 0;
        rank_list(miss, t->world, list, sizeof list);
        free(miss);
        snprintf(text, sizeof text, "%s did not join within %.1f s (master %s:%d)%s%s", list,
                 t->timeout_s, addr, port, ct__tcp_hs_strangers(hs), gone);
        for (r = 1; r < t->world; r++)
            if (t->star[r] >= 0)
                send_abort(t, t->star[r], r, text);
        st = ct__error(CT_ERR_DIST, "tcp open: %s", text);
        goto fail;
    }
    ct__tcp_hs_strangers(hs); /* the count, into the log */
    ct__tcp_hs_free(hs);
    hs = NULL;
    if ((st = send_table(t, table, deadline + 1.0)) != CT_OK) {
        close(rfd);
        return st;
    }
    *rfd_out = rfd;
    return CT_OK;
fail:
    ct__tcp_hs_free(hs);
    if (lfd >= 0)
        close(lfd);
    close(rfd);
    return st;
}

/* Once connected to rank 0: our own ring listener, on the local address
 * that reached it, whose port and address go into the hello. */
typedef struct {
    int rfd;
    char host[CT__TCP_HOST_LEN];
    int port;
} join_prep;

static int prepare_join(void *user, int fd, int *port, char host[CT__TCP_HOST_LEN])
{
    join_prep *jp = user;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char here[CT__TCP_HOST_LEN];
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
        return -1;
    numeric_host((struct sockaddr *)&ss, sl, here, sizeof here);
    if (jp->rfd >= 0 && strcmp(here, jp->host) != 0) {
        close(jp->rfd); /* another attempt, through another address */
        jp->rfd = -1;
    }
    if (jp->rfd < 0) {
        jp->rfd = listen_on("tcp open", here, 0, 128, &jp->port, NULL, 0);
        if (jp->rfd < 0)
            return -1;
        snprintf(jp->host, sizeof jp->host, "%s", here);
    }
    *port = jp->port;
    memcpy(host, jp->host, CT__TCP_HOST_LEN);
    return 0;
}

/* Rank 0's table (or its abort) from fd, checked (tcp_wire.h), into
 * table[world]; by `deadline`. */
static ct_status read_table(ct__tcp *t, int fd, double deadline, ct__tcp_addr *table)
{
    size_t cap = ct__tcp_table_bytes(t->world), have = 0;
    ct__tcp_table_msg m;
    unsigned char *msg;
    int rc;
    if (cap < CT__TCP_TABLE_HEAD + CT__TCP_ABORT_MAX)
        cap = CT__TCP_TABLE_HEAD + CT__TCP_ABORT_MAX;
    if ((msg = malloc(cap)) == NULL)
        return ct__error(CT_ERR_NOMEM, "tcp open: out of memory");
    /* Exactly what the message still needs, never a byte of what follows. */
    while ((rc = ct__tcp_parse_table(msg, have, t->world, table, &m)) == 0) {
        if (xfer1(t, "tcp open", fd, 0, 1, msg + have, m.need - have, deadline) != CT_OK) {
            free(msg);
            return CT_ERR_DIST;
        }
        have = m.need;
    }
    free(msg);
    if (rc < 0)
        return CT_ERR_DIST;
    if (m.aborted)
        return ct__error(CT_ERR_DIST, "tcp open: %s (reported by rank 0)", m.text);
    return CT_OK;
}

static ct_status open_peer(ct__tcp *t, const ct__tcp_self *self, const char *addr, int port,
                           double deadline, ct__tcp_addr *table, int *rfd_out)
{
    int tg;
    ct__tcp_hs *hs = NULL;
    ct__tcp_hs_event ev;
    join_prep jp = { -1, "", 0 };
    ct_status st;
    /* A rank 0 that gives up tells us by deadline + a little. */
    double grace = deadline + (t->timeout_s * 0.5 > 1.0 ? t->timeout_s * 0.5 : 1.0);
    if ((st = ct__tcp_hs_create(self, -1, &hs)) != CT_OK)
        return st;
    tg = ct__tcp_hs_connect(hs, addr, port, 0, CT__TCP_JOIN, prepare_join, &jp);
    if ((st = ct__tcp_hs_wait(hs, deadline, &ev)) != CT_OK)
        goto fail;
    if (ev.fd < 0) {
        if (ct__tcp_hs_target_refused(hs, tg))
            st = ct__error(CT_ERR_DIST, "tcp open: not admitted within %.1f s (master %s:%d): "
                                        "%s", t->timeout_s, addr, port,
                           ct__tcp_hs_target_status(hs, tg));
        else
            st = ct__error(CT_ERR_DIST,
                           "tcp open: rank 0 (master at %s:%d) did not answer within %.1f s "
                           "(%s)", addr, port, t->timeout_s, ct__tcp_hs_target_status(hs, tg));
        goto fail;
    }
    ct__tcp_hs_free(hs);
    hs = NULL;
    t->star[0] = ev.fd;
    if (add_link(t, ev.fd, 0) != 0) {
        close(ev.fd);
        t->star[0] = -1;
        st = ct__error(CT_ERR_NOMEM, "tcp open: out of memory");
        goto fail;
    }
    if ((st = read_table(t, ev.fd, grace, table)) != CT_OK)
        goto fail;
    /* We reach rank 0 the way we just did, whatever it calls itself. */
    snprintf(table[0].host, CT__TCP_HOST_LEN, "%s", addr);
    *rfd_out = jp.rfd;
    return CT_OK;
fail:
    ct__tcp_hs_free(hs);
    if (jp.rfd >= 0)
        close(jp.rfd);
    return st;
}

/* Where rank r listens: rank 0 at MASTER_ADDR itself, whose copy in the
 * table holds at most CT__TCP_HOST_LEN - 1 bytes. */
static const char *host_of(const ct__tcp_addr *table, int r, const char *master_addr)
{
    return r == 0 ? master_addr : table[r].host;
}

/* Each rank connects to its right neighbour's listener, and ranks other than
 * 0 open a control link to rank 0's; meanwhile each accepts its left
 * neighbour (and rank 0 the control links), all in one set of handshakes:
 * every rank connects first, so each must answer while it waits. */
static ct_status ring_connect(ct__tcp *t, const ct__tcp_self *self, int rfd,
                              const ct__tcp_addr *table, const char *master_addr,
                              double deadline)
{
    int right = (t->rank + 1) % t->world, left = (t->rank + t->world - 1) % t->world;
    int want, got = 0, r, tg_ring, tg_ctrl = -1, ring_done = 0, ctrl_done = 0;
    ct__tcp_hs *hs = NULL;
    ct__tcp_hs_event ev;
    ct_status st;
    if ((st = ct__tcp_hs_create(self, rfd, &hs)) != CT_OK)
        return st;
    ct__tcp_hs_expect(hs, CT__TCP_RING, left);
    if (t->rank == 0)
        for (r = 1; r < t->world; r++)
            ct__tcp_hs_expect(hs, CT__TCP_CTRL, r);
    tg_ring = ct__tcp_hs_connect(hs, host_of(table, right, master_addr), table[right].port,
                                 right, CT__TCP_RING, NULL, NULL);
    if (t->rank != 0)
        tg_ctrl = ct__tcp_hs_connect(hs, master_addr, table[0].port, 0, CT__TCP_CTRL, NULL,
                                     NULL);
    want = 1 + (t->rank != 0) + (t->rank == 0 ? t->world : 1);
    while (got < want) {
        int peer, ctrl;
        if ((st = ct__tcp_hs_wait(hs, deadline, &ev)) != CT_OK)
            goto out;
        if (ev.fd < 0) {
            if (!ring_done || (tg_ctrl >= 0 && !ctrl_done)) {
                int tg = !ring_done ? tg_ring : tg_ctrl, to = !ring_done ? right : 0;
                st = ct__error(CT_ERR_DIST, "tcp open: rank %d (at %s:%d) did not answer "
                                            "within %.1f s (%s)", to,
                               host_of(table, to, master_addr), table[to].port, t->timeout_s,
                               ct__tcp_hs_target_status(hs, tg));
            } else {
                int *miss = calloc((size_t)t->world, sizeof *miss);
                char list[300];
                if (miss == NULL) {
                    st = ct__error(CT_ERR_NOMEM, "tcp open: out of memory");
                    goto out;
                }
                if (t->left_fd < 0)
                    miss[left] = 1;
                if (t->rank == 0)
                    for (r = 1; r < t->world; r++)
                        miss[r] |= t->ctrl[r] < 0;
                rank_list(miss, t->world, list, sizeof list);
                free(miss);
                st = ct__error(CT_ERR_DIST, "tcp open: %s did not connect within %.1f s%s",
                               list, t->timeout_s, ct__tcp_hs_strangers(hs));
            }
            goto out;
        }
        if (ev.target == tg_ring) {
            t->right_fd = ev.fd, peer = right, ctrl = 0, ring_done = 1;
        } else if (ev.target >= 0) {
            t->ctrl[0] = ev.fd, peer = 0, ctrl = 1, ctrl_done = 1;
        } else if (ev.hello.kind == CT__TCP_RING) {
            t->left_fd = ev.fd, peer = left, ctrl = 0;
        } else {
            peer = ev.hello.rank, ctrl = 1;
            t->ctrl[peer] = ev.fd;
        }
        if (add_link_ex(t, ev.fd, peer, ctrl) != 0) {
            close(ev.fd);
            st = ct__error(CT_ERR_NOMEM, "tcp open: out of memory");
            goto out;
        }
        got++;
    }
    ct__tcp_hs_strangers(hs);
out:
    ct__tcp_hs_free(hs);
    return st;
}

static ct_status barrier_op(ct__tcp *t, const char *op, double deadline);

/* Without a secret anyone who reaches the ports joins: say so, once. */
static void warn_no_secret(int port)
{
    static int warned;
    if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        return;
    ct__log(CT_LOG_WARNING, "tcp: no secret is set, so ranks cannot tell each other from "
                            "strangers: MASTER_PORT (%d) and the ranks' ports must be reachable "
                            "only from trusted hosts. Set CPUTRAIN_DIST_SECRET_FILE (or "
                            "CPUTRAIN_DIST_SECRET) on every rank to authenticate them", port);
}

ct_status ct__tcp_open(const char *master_addr, int master_port, int rank, int world,
                       double timeout_s, const char *job, const unsigned char *key,
                       ct__tcp **out)
{
    ct__tcp *t;
    ct__tcp_addr *table = NULL;
    ct__tcp_self self;
    double deadline;
    int rfd = -1, r;
    ct_status st;
    CT__CHECK_ARG(out);
    *out = NULL;
    if (world < 1 || world > TCP_MAX_WORLD || rank < 0 || rank >= world)
        return ct__error(CT_ERR_INVALID_ARG, "tcp open: rank %d of world %d", rank, world);
    if (!(timeout_s > 0))
        return ct__error(CT_ERR_INVALID_ARG, "tcp open: timeout %g s", timeout_s);
    if (world > 1) {
        CT__CHECK_ARG(master_addr);
        if (master_port <= 0 || master_port > 65535)
            return ct__error(CT_ERR_INVALID_ARG, "tcp open: master port %d", master_port);
    }
    self.job = job != NULL ? job : "";
    self.key = key;
    self.rank = rank;
    self.world = world;
    t = calloc(1, sizeof *t);
    if (t == NULL)
        return ct__error(CT_ERR_NOMEM, "tcp open: out of memory");
    t->rank = rank;
    t->world = world;
    t->timeout_s = timeout_s;
    t->left_fd = t->right_fd = -1;
    if (world == 1) {
        *out = t;
        return CT_OK;
    }
    if (key == NULL)
        warn_no_secret(master_port);
    t->star = malloc((size_t)world * sizeof *t->star);
    t->ctrl = malloc((size_t)world * sizeof *t->ctrl);
    table = calloc((size_t)world, sizeof *table);
    if (t->star == NULL || t->ctrl == NULL || table == NULL) {
        free(table);
        free_handle(t);
        return ct__error(CT_ERR_NOMEM, "tcp open: out of memory");
    }
    for (r = 0; r < world; r++)
        t->star[r] = t->ctrl[r] = -1;
    deadline = ct__now_s() + timeout_s;
    if (rank == 0) {
        st = open_master(t, &self, master_addr, master_port, deadline, table, &rfd);
    } else {
        st = open_peer(t, &self, master_addr, master_port, deadline, table, &rfd);
    }
    /* A table that came just before this rank's deadline still leaves the
     * ring a whole handshake's time. */
    if (st == CT_OK) {
        double ring_deadline = ct__now_s() + CT__TCP_HANDSHAKE_S + 1.0;
        st = ring_connect(t, &self, rfd, table, master_addr,
                          ring_deadline > deadline + 1.0 ? ring_deadline : deadline + 1.0);
    }
    if (rfd >= 0)
        close(rfd);
    free(table);
    if (st == CT_OK)
        st = barrier_op(t, "tcp open", ct__now_s() + timeout_s);
    if (st != CT_OK) {
        free_handle(t);
        return st;
    }
    ct__log(CT_LOG_DEBUG, "tcp: rank %d/%d joined via %s:%d%s", rank, world, master_addr,
            master_port, key != NULL ? ", authenticated" : "");
    *out = t;
    return CT_OK;
}

void ct__tcp_close(ct__tcp *tcp)
{
    if (tcp == NULL)
        return;
    if (!tcp->broken && tcp->world > 1) {
        char *saved = NULL;
        const char *e = ct_last_error();
        /* Keep the caller's error text: this barrier's failure is ignored. */
        if (e != NULL)
            saved = strdup(e);
        barrier_op(tcp, "tcp close", -1);
        if (saved != NULL) {
            ct__error(CT_OK, "%s", saved);
            free(saved);
        }
    }
    free_handle(tcp);
}

/* ---- collectives -------------------------------------------------------- */

static ct_status check_usable(ct__tcp *t, const char *op)
{
    if (t->broken)
        return ct__error(CT_ERR_DIST, "%s: the tcp communicator failed earlier", op);
    return CT_OK;
}

static ct_status barrier_op(ct__tcp *t, const char *op, double deadline)
{
    char tok[16] = { 0 };
    char in[16 * 16];
    io_op ops[16];
    int r, base;
    ct_status st;
    if (t->world == 1)
        return CT_OK;
    if (t->rank != 0) {
        st = xfer1(t, op, t->star[0], 0, 0, tok, 1, deadline);
        if (st == CT_OK)
            st = xfer1(t, op, t->star[0], 0, 1, tok, 1, deadline);
        return st;
    }
    for (base = 1; base < t->world; base += 16) {
        int n = 0;
        for (r = base; r < t->world && r < base + 16; r++, n++)
            ops[n] = (io_op){ t->star[r], r, 1, &in[n], 1 };
        if ((st = run_io(t, op, ops, n, deadline)) != CT_OK)
            return st;
    }
    for (base = 1; base < t->world; base += 16) {
        int n = 0;
        for (r = base; r < t->world && r < base + 16; r++, n++)
            ops[n] = (io_op){ t->star[r], r, 0, tok, 1 };
        if ((st = run_io(t, op, ops, n, deadline)) != CT_OK)
            return st;
    }
    return CT_OK;
}

ct_status ct__tcp_barrier(ct__tcp *tcp)
{
    ct_status st;
    CT__CHECK_ARG(tcp);
    if ((st = check_usable(tcp, "tcp barrier")) != CT_OK)
        return st;
    return barrier_op(tcp, "tcp barrier", -1);
}

static int tmp_reserve(ct__tcp *t, size_t bytes)
{
    void *p;
    if (t->tmp_bytes >= bytes)
        return 0;
    p = realloc(t->tmp, bytes);
    if (p == NULL)
        return -1;
    t->tmp = p;
    t->tmp_bytes = bytes;
    return 0;
}

static size_t seg_per(size_t n, int world)
{
    size_t per = (n + (size_t)world - 1) / (size_t)world;
    return (per + 15) & ~(size_t)15;
}

static void seg_range(size_t n, int world, int s, size_t *lo, size_t *hi)
{
    size_t per = seg_per(n, world);
    *lo = per * (size_t)s;
    *hi = *lo + per;
    if (*lo > n)
        *lo = n;
    if (*hi > n)
        *hi = n;
}

int ct__tcp_sum_first_rank(size_t n, int world, size_t index)
{
    if (world <= 1 || n * sizeof(float) < CT__TCP_SMALL_BYTES)
        return 0;
    return (int)(index / seg_per(n, world));
}

static ct_status allreduce_small(ct__tcp *t, float *buf, size_t n, int average)
{
    const char *op = "tcp allreduce";
    size_t bytes = n * sizeof(float), j;
    int r, base;
    ct_status st;
    if (t->rank != 0) {
        st = xfer1(t, op, t->star[0], 0, 0, buf, bytes, -1);
        if (st == CT_OK)
            st = xfer1(t, op, t->star[0], 0, 1, buf, bytes, -1);
        return st;
    }
    if (tmp_reserve(t, bytes * (size_t)(t->world - 1)) != 0) {
        break_all(t);
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", op);
    }
    for (base = 1; base < t->world; base += 16) {
        io_op ops[16];
        int k = 0;
        for (r = base; r < t->world && r < base + 16; r++, k++)
            ops[k] = (io_op){ t->star[r], r, 1, (char *)t->tmp + bytes * (size_t)(r - 1), bytes };
        if ((st = run_io(t, op, ops, k, -1)) != CT_OK)
            return st;
    }
    /* Rank order: ((x0 + x1) + x2) + ... */
    for (r = 1; r < t->world; r++) {
        const float *src = (const float *)((char *)t->tmp + bytes * (size_t)(r - 1));
        for (j = 0; j < n; j++)
            buf[j] += src[j];
    }
    if (average) {
        float w = (float)t->world;
        for (j = 0; j < n; j++)
            buf[j] /= w;
    }
    for (base = 1; base < t->world; base += 16) {
        io_op ops[16];
        int k = 0;
        for (r = base; r < t->world && r < base + 16; r++, k++)
            ops[k] = (io_op){ t->star[r], r, 0, (char *)buf, bytes };
        if ((st = run_io(t, op, ops, k, -1)) != CT_OK)
            return st;
    }
    return CT_OK;
}

/* Ring reduce-scatter then allgather. Step k of the reduce-scatter: send
 * segment (rank - k) to the right, receive segment (rank - k - 1) from the
 * left and add this rank's values to it; so segment s starts at rank s and
 * is complete, after world-1 steps, on rank s-1. */
static ct_status allreduce_ring(ct__tcp *t, float *buf, size_t n, int average)
{
    const char *op = "tcp allreduce";
    int w = t->world, me = t->rank, k;
    int left = (me + w - 1) % w, right = (me + 1) % w;
    size_t per = seg_per(n, w), j;
    float *tmp;
    ct_status st;
    (void)per;
    if (tmp_reserve(t, RING_CHUNK * sizeof(float)) != 0) {
        break_all(t);
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", op);
    }
    tmp = t->tmp;
    for (k = 0; k < w - 1; k++) {
        int ss = ((me - k) % w + w) % w, rs = ((me - k - 1) % w + w) % w;
        size_t slo, shi, rlo, rhi, c;
        io_op ops[2];
        seg_range(n, w, ss, &slo, &shi);
        seg_range(n, w, rs, &rlo, &rhi);
        ops[0] = (io_op){ t->right_fd, right, 0, (char *)(buf + slo), (shi - slo) * sizeof(float) };
        /* Receive in cache-sized chunks, adding each while the next comes. */
        for (c = rlo; c < rhi; c += RING_CHUNK) {
            size_t e = rhi - c < RING_CHUNK ? rhi : c + RING_CHUNK;
            ops[1] = (io_op){ t->left_fd, left, 1, (char *)tmp, (e - c) * sizeof(float) };
            if ((st = run_io_ex(t, op, ops, 2, -1, 2u)) != CT_OK)
                return st;
            /* The partial sum so far, then this rank's value. */
            for (j = c; j < e; j++)
                buf[j] = tmp[j - c] + buf[j];
        }
        if ((st = run_io(t, op, ops, 1, -1)) != CT_OK)
            return st;
    }
    if (average) {
        size_t lo, hi;
        float fw = (float)w;
        seg_range(n, w, (me + 1) % w, &lo, &hi);
        for (j = lo; j < hi; j++)
            buf[j] /= fw;
    }
    for (k = 0; k < w - 1; k++) {
        int ss = ((me + 1 - k) % w + w) % w, rs = ((me - k) % w + w) % w;
        size_t slo, shi, rlo, rhi;
        io_op ops[2];
        seg_range(n, w, ss, &slo, &shi);
        seg_range(n, w, rs, &rlo, &rhi);
        ops[0] = (io_op){ t->right_fd, right, 0, (char *)(buf + slo), (shi - slo) * sizeof(float) };
        ops[1] = (io_op){ t->left_fd, left, 1, (char *)(buf + rlo), (rhi - rlo) * sizeof(float) };
        if ((st = run_io(t, op, ops, 2, -1)) != CT_OK)
            return st;
    }
    return CT_OK;
}

ct_status ct__tcp_allreduce_f32(ct__tcp *tcp, float *buf, size_t n, int average)
{
    ct_status st;
    CT__CHECK_ARG(tcp);
    if (n > 0)
        CT__CHECK_ARG(buf);
    if ((st = check_usable(tcp, "tcp allreduce")) != CT_OK)
        return st;
    if (tcp->world == 1 || n == 0)
        return CT_OK;
    if (n > SIZE_MAX / sizeof(float) / (size_t)tcp->world)
        return ct__error(CT_ERR_INVALID_ARG, "tcp allreduce: %zu floats is too many", n);
    if (n * sizeof(float) < CT__TCP_SMALL_BYTES)
        return allreduce_small(tcp, buf, n, average);
    return allreduce_ring(tcp, buf, n, average);
}

/* The ring's reduce-scatter half alone, over the caller's pieces: segment
 * s of allreduce_ring is complete on rank s - 1, so piece r is made segment
 * r + 1 and ends complete on rank r. Empty segments cost one empty step.
 * A piece's sum starts at the rank after its owner and goes round the ring,
 * so its bits are the ring's order, not allreduce's (which splits evenly):
 * the same on every call with the same pieces. */
ct_status ct__tcp_reduce_scatter_f32(ct__tcp *t, float *buf, size_t n, int average,
                                     const size_t *counts)
{
    const char *op = "tcp reduce-scatter";
    int w, me, left, right, k;
    size_t *start, j;
    float *tmp;
    ct_status st;
    CT__CHECK_ARG(t);
    CT__CHECK_ARG(counts);
    if (n > 0)
        CT__CHECK_ARG(buf);
    if ((st = check_usable(t, op)) != CT_OK)
        return st;
    w = t->world;
    me = t->rank;
    if (w == 1 || n == 0)
        return CT_OK;
    if (n * sizeof(float) < CT__TCP_SMALL_BYTES) /* latency-bound: the star allreduce */
        return allreduce_small(t, buf, n, average);
    left = (me + w - 1) % w;
    right = (me + 1) % w;
    if (tmp_reserve(t, RING_CHUNK * sizeof(float)) != 0 ||
        !(start = malloc(((size_t)w + 1) * sizeof *start))) {
        break_all(t);
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", op);
    }
    start[0] = 0;
    for (int r = 0; r < w; r++)
        start[r + 1] = start[r] + counts[r];
    tmp = t->tmp;
    /* segment s is piece (s - 1) mod w */
#define SEG_LO(s) start[((s) + w - 1) % w]
#define SEG_HI(s) start[((s) + w - 1) % w + 1]
    for (k = 0; k < w - 1; k++) {
        int ss = ((me - k) % w + w) % w, rs = ((me - k - 1) % w + w) % w;
        size_t slo = SEG_LO(ss), shi = SEG_HI(ss), rlo = SEG_LO(rs), rhi = SEG_HI(rs), c;
        io_op ops[2];
        ops[0] = (io_op){ t->right_fd, right, 0, (char *)(buf + slo), (shi - slo) * sizeof(float) };
        for (c = rlo; c < rhi; c += RING_CHUNK) {
            size_t e = rhi - c < RING_CHUNK ? rhi : c + RING_CHUNK;
            ops[1] = (io_op){ t->left_fd, left, 1, (char *)tmp, (e - c) * sizeof(float) };
            if ((st = run_io_ex(t, op, ops, 2, -1, 2u)) != CT_OK) {
                free(start);
                return st;
            }
            for (j = c; j < e; j++)
                buf[j] = tmp[j - c] + buf[j];
        }
        if ((st = run_io(t, op, ops, 1, -1)) != CT_OK) {
            free(start);
            return st;
        }
    }
#undef SEG_LO
#undef SEG_HI
    if (average) {
        float fw = (float)w;
        for (j = start[me]; j < start[me + 1]; j++)
            buf[j] /= fw;
    }
    free(start);
    return CT_OK;
}

ct_status ct__tcp_broadcast(ct__tcp *tcp, void *buf, size_t bytes, int root)
{
    const char *op = "tcp broadcast";
    int w, me, left, right;
    size_t nc, i;
    char *b = buf;
    ct_status st;
    CT__CHECK_ARG(tcp);
    w = tcp->world;
    me = tcp->rank;
    if (root < 0 || root >= w)
        return ct__error(CT_ERR_INVALID_ARG, "tcp broadcast: root %d of world %d", root, w);
    if (bytes > 0)
        CT__CHECK_ARG(buf);
    if ((st = check_usable(tcp, op)) != CT_OK)
        return st;
    if (w == 1 || bytes == 0)
        return CT_OK;
    left = (me + w - 1) % w;
    right = (me + 1) % w;
    if (me == root)
        return xfer1(tcp, op, tcp->right_fd, right, 0, b, bytes, -1);
    /* Receive chunk i while forwarding chunk i-1 (unless right is root). */
    nc = (bytes + BCAST_CHUNK - 1) / BCAST_CHUNK;
    for (i = 0; i <= nc; i++) {
        io_op ops[2];
        int k = 0;
        if (i < nc) {
            size_t lo = i * BCAST_CHUNK, len = bytes - lo < BCAST_CHUNK ? bytes - lo : BCAST_CHUNK;
            ops[k++] = (io_op){ tcp->left_fd, left, 1, b + lo, len };
        }
        if (i > 0 && right != root) {
            size_t lo = (i - 1) * BCAST_CHUNK,
                   len = bytes - lo < BCAST_CHUNK ? bytes - lo : BCAST_CHUNK;
            ops[k++] = (io_op){ tcp->right_fd, right, 0, b + lo, len };
        }
        if (k > 0 && (st = run_io(tcp, op, ops, k, -1)) != CT_OK)
            return st;
    }
    return CT_OK;
}
