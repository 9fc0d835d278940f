/* ct_rendezvous_*: the tcp backend's handshake (dist/tcp_auth.h) for
 * programs that meet over connections of their own, as cputrain-run's
 * launchers do. A host accepts only peers that prove they hold the job's
 * secret; a peer keeps only a connection whose host proved it too.
 *
 * The handshake names a rank in a world; here nobody has one yet, so a
 * connecting peer claims a random slot of RENDEZVOUS_SLOTS that the host
 * expects, only to keep two peers' handshakes apart (the host's own
 * protocol assigns ranks afterwards). Two peers claiming one slot at the
 * same instant: the later is told "already joined" and tries another. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/sha256.h"
#include "dist/dist_internal.h"
#include "dist/tcp_auth.h"

#define RENDEZVOUS_SLOTS 65536
/* The handshake set retries a refused connect after 10 ms until its
 * deadline; a peer the host refused should stop at once instead, so the
 * connect waits in slices shorter than that. */
#define CONNECT_SLICE_S 0.005

struct ct_rendezvous {
    char *job;
    int has_secret;
    unsigned char key[32];
    ct__tcp_hs *door; /* the host's handshakes in progress, on door_fd */
    int door_fd;
};

ct_status ct_rendezvous_create(const ct_dist_options *options, const char *job,
                               ct_rendezvous **out)
{
    ct__dist_member m;
    ct_rendezvous *r;
    ct_status st;
    CT__CHECK_ARG(job);
    CT__CHECK_ARG(out);
    *out = NULL;
    memset(&m, 0, sizeof m);
    if ((st = ct__dist_secret_load(options, &m)) != CT_OK)
        return ct__error_prefix(st, "rendezvous '%s'", job);
    if (!(r = calloc(1, sizeof *r)) || !(r->job = strdup(job))) {
        free(r);
        memset(&m, 0, sizeof m);
        return ct__error(CT_ERR_NOMEM, "out of memory");
    }
    r->has_secret = m.has_secret;
    memcpy(r->key, m.secret_key, sizeof r->key);
    memset(&m, 0, sizeof m);
    r->door_fd = -1;
    *out = r;
    return CT_OK;
}

void ct_rendezvous_free(ct_rendezvous *r)
{
    if (!r)
        return;
    ct__tcp_hs_free(r->door);
    memset(r->key, 0, sizeof r->key);
    free(r->job);
    free(r);
}

int ct_rendezvous_has_secret(const ct_rendezvous *r)
{
    return r ? r->has_secret : 0;
}

static ct__tcp_self self_of(const ct_rendezvous *r, int rank)
{
    ct__tcp_self self;
    self.job = r->job;
    self.key = r->has_secret ? r->key : NULL;
    self.rank = rank;
    self.world = RENDEZVOUS_SLOTS;
    return self;
}

static void set_blocking(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) & ~O_NONBLOCK);
}

ct_status ct_rendezvous_accept(ct_rendezvous *r, int listen_fd, double timeout_s, int *fd,
                               char *addr, size_t addr_size)
{
    ct__tcp_hs_event ev;
    ct_status st;
    CT__CHECK_ARG(r);
    CT__CHECK_ARG(fd);
    *fd = -1;
    if (listen_fd < 0 || (r->door && listen_fd != r->door_fd))
        return ct__error(CT_ERR_INVALID_ARG, "ct_rendezvous_accept: listen_fd %d (%s)",
                         listen_fd, r->door ? "this rendezvous accepts on another one"
                                            : "not a socket");
    if (!(timeout_s >= 0))
        return ct__error(CT_ERR_INVALID_ARG, "ct_rendezvous_accept: timeout %g s", timeout_s);
    if (!r->door) {
        ct__tcp_self self = self_of(r, 0);
        /* the set accepts in batches */
        fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL, 0) | O_NONBLOCK);
        if ((st = ct__tcp_hs_create(&self, listen_fd, &r->door)) != CT_OK)
            return st;
        for (int slot = 0; slot < RENDEZVOUS_SLOTS; slot++)
            ct__tcp_hs_expect(r->door, CT__TCP_JOIN, slot);
        r->door_fd = listen_fd;
    }
    if ((st = ct__tcp_hs_wait(r->door, ct__now_s() + timeout_s, &ev)) != CT_OK)
        return st;
    if (ev.fd < 0)
        return CT_OK;
    ct__tcp_hs_expect(r->door, CT__TCP_JOIN, ev.hello.rank); /* the slot is free again */
    set_blocking(ev.fd);
    *fd = ev.fd;
    if (addr && addr_size)
        snprintf(addr, addr_size, "%s", ev.addr);
    return CT_OK;
}

/* The hello's port and host, which a rendezvous host does not use (it must
 * still be a valid port: the host's port, in *user). */
static int hello_fields(void *user, int fd, int *port, char host[CT__TCP_HOST_LEN])
{
    (void)fd;
    *port = *(const int *)user;
    snprintf(host, CT__TCP_HOST_LEN, "rendezvous");
    return 0;
}

ct_status ct_rendezvous_connect(ct_rendezvous *r, const char *host, int port, double timeout_s,
                                int *fd)
{
    double deadline;
    unsigned char rnd[4];
    ct__tcp_self self;
    ct__tcp_hs *hs;
    ct__tcp_hs_event ev;
    ct_status st;
    int target;
    CT__CHECK_ARG(r);
    CT__CHECK_ARG(host);
    CT__CHECK_ARG(fd);
    *fd = -1;
    if (port < 1 || port > 65535 || !(timeout_s >= 0))
        return ct__error(CT_ERR_INVALID_ARG, "ct_rendezvous_connect: port %d, timeout %g s",
                         port, timeout_s);
    deadline = ct__now_s() + timeout_s;
    if ((st = ct__random_bytes(rnd, sizeof rnd)) != CT_OK)
        return st;
    self = self_of(r, (int)(((unsigned)rnd[0] << 8 | rnd[1]) % RENDEZVOUS_SLOTS));
    if ((st = ct__tcp_hs_create(&self, -1, &hs)) != CT_OK)
        return st;
    target = ct__tcp_hs_connect(hs, host, port, 0, CT__TCP_JOIN, hello_fields, &port);
    for (;;) {
        double now = ct__now_s(), until = now + CONNECT_SLICE_S;
        const char *why;
        if (until > deadline)
            until = deadline;
        if ((st = ct__tcp_hs_wait(hs, until, &ev)) != CT_OK)
            break;
        if (ev.fd >= 0) {
            set_blocking(ev.fd);
            *fd = ev.fd;
            break;
        }
        why = ct__tcp_hs_target_status(hs, target);
        /* Our slot taken at that instant by another peer's handshake is no
         * refusal: it is free again once that one is through. */
        if (ct__tcp_hs_target_refused(hs, target) &&
            !strstr(why, ct__tcp_reason(CT__TCP_R_TAKEN))) {
            st = ct__error(CT_ERR_DIST, "the rendezvous at %s:%d refused this peer: %s", host,
                           port, why);
            break;
        }
        if (until >= deadline) {
            st = ct__error(CT_ERR_IO, "the rendezvous at %s:%d not reached within %g s: %s",
                           host, port, timeout_s, why);
            break;
        }
    }
    ct__tcp_hs_free(hs);
    return st;
}
