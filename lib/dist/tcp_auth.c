/* The tcp handshake (see tcp_auth.h): message codecs, the MAC, and a set of
 * connections driven through their handshakes together by poll(), each with
 * its own deadline, so that no connection — a stranger's idle one included —
 * holds up the others. */
#include "dist/tcp_auth.h"

#include <arpa/inet.h>
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
#include "core/sha256.h"

#define MAX_TARGETS 4

const char *ct__tcp_reason(unsigned code)
{
    static const char *const text[CT__TCP_R_COUNT] = {
        "admitted",
        "not this protocol",
        "another protocol version",
        "another world size",
        "another job",
        "one side holds a secret and the other none",
        "not a rank expected here",
        "that rank has already joined",
        "authentication failed (another secret, or another job)",
    };
    return code < CT__TCP_R_COUNT ? text[code] : "an unknown refusal";
}

/* ---- codecs ---------------------------------------------------------------------- */

static void put_head(unsigned char *p, unsigned kind, unsigned word3)
{
    ct__tcp_put32(p, CT__TCP_MAGIC);
    ct__tcp_put32(p + 4, CT__TCP_VERSION);
    ct__tcp_put32(p + 8, kind);
    ct__tcp_put32(p + 12, word3);
}

void ct__tcp_job_id(const char *job, unsigned char out[32])
{
    static const char label[] = "cputrain tcp job ";
    ct__sha256_ctx c;
    ct__sha256_init(&c);
    ct__sha256_update(&c, label, sizeof label - 1);
    ct__sha256_update(&c, job, strlen(job));
    ct__sha256_final(&c, out);
}

void ct__tcp_put_hello(unsigned char out[CT__TCP_HELLO_BYTES], const ct__tcp_hello *h)
{
    memset(out, 0, CT__TCP_HELLO_BYTES);
    put_head(out, h->kind, h->flags);
    ct__tcp_put32(out + 16, (uint32_t)h->rank);
    ct__tcp_put32(out + 20, (uint32_t)h->world);
    ct__tcp_put32(out + 24, (uint32_t)h->port);
    memcpy(out + 32, h->job_id, 32);
    memcpy(out + 64, h->nonce, 32);
    memcpy(out + 96, h->host, strnlen(h->host, CT__TCP_HOST_LEN - 1));
}

int ct__tcp_host_ok(const char *h)
{
    size_t n = strnlen(h, CT__TCP_HOST_LEN);
    if (n == 0 || n == CT__TCP_HOST_LEN)
        return 0;
    /* Host names, IPv4 and IPv6 text with a zone (fe80::1%br-ab12). */
    for (; *h; h++)
        if (!((*h >= '0' && *h <= '9') || (*h >= 'a' && *h <= 'z') || (*h >= 'A' && *h <= 'Z') ||
              *h == '.' || *h == ':' || *h == '%' || *h == '-' || *h == '_'))
            return 0;
    return 1;
}

int ct__tcp_nul_padded(const unsigned char *field, size_t size)
{
    size_t n = strnlen((const char *)field, size);
    if (n == size)
        return 0;
    for (size_t i = n; i < size; i++)
        if (field[i] != 0)
            return 0;
    return 1;
}

unsigned ct__tcp_get_hello(const unsigned char in[CT__TCP_HELLO_BYTES], ct__tcp_hello *h)
{
    if (ct__tcp_get32(in) != CT__TCP_MAGIC)
        return CT__TCP_R_PROTOCOL;
    if (ct__tcp_get32(in + 4) != CT__TCP_VERSION)
        return CT__TCP_R_VERSION;
    h->kind = ct__tcp_get32(in + 8);
    h->flags = ct__tcp_get32(in + 12);
    h->rank = (int)ct__tcp_get32(in + 16);
    h->world = (int)ct__tcp_get32(in + 20);
    h->port = (int)ct__tcp_get32(in + 24);
    memcpy(h->job_id, in + 32, 32);
    memcpy(h->nonce, in + 64, 32);
    memcpy(h->host, in + 96, CT__TCP_HOST_LEN);
    if (h->kind != CT__TCP_JOIN && h->kind != CT__TCP_RING && h->kind != CT__TCP_CTRL)
        return CT__TCP_R_PROTOCOL;
    if (h->flags > 1 || ct__tcp_get32(in + 28) != 0)
        return CT__TCP_R_PROTOCOL;
    /* Only a join carries an address (its ring listener's); the host is
     * NUL-padded as ct__tcp_put_hello writes it, so no byte rides along
     * unchecked. */
    if (!ct__tcp_nul_padded(in + 96, CT__TCP_HOST_LEN))
        return CT__TCP_R_PROTOCOL;
    if (h->kind == CT__TCP_JOIN ? !ct__tcp_host_ok(h->host) || h->port < 1 || h->port > 65535
                                : h->host[0] != '\0' || h->port != 0)
        return CT__TCP_R_PROTOCOL;
    return CT__TCP_OK;
}

void ct__tcp_put_chal(unsigned char out[CT__TCP_CHAL_BYTES], unsigned flags, int rank,
                      int world, const unsigned char job_id[32], const unsigned char nonce[32])
{
    memset(out, 0, CT__TCP_CHAL_BYTES);
    put_head(out, CT__TCP_CHAL, flags);
    ct__tcp_put32(out + 16, (uint32_t)rank);
    ct__tcp_put32(out + 20, (uint32_t)world);
    memcpy(out + 32, job_id, 32);
    memcpy(out + 64, nonce, 32);
}

void ct__tcp_put_tail(unsigned char *out, unsigned kind, unsigned code,
                      const unsigned char mac[32])
{
    memset(out, 0, CT__TCP_PROOF_BYTES);
    put_head(out, kind, code);
    if (mac != NULL)
        memcpy(out + 16, mac, 32);
}

void ct__tcp_mac(const unsigned char key[32], int acceptor, const char *job,
                 const unsigned char hello[CT__TCP_HELLO_BYTES],
                 const unsigned char chal[CT__TCP_CHAL_BYTES], unsigned char out[32])
{
    static const char label[] = "cputrain tcp handshake v2";
    const char *role = acceptor ? "acceptor" : "connector";
    unsigned char jlen[4];
    const void *parts[6];
    size_t lens[6];
    ct__tcp_put32(jlen, (uint32_t)strlen(job));
    parts[0] = label, lens[0] = sizeof label; /* with its NUL: a separator */
    parts[1] = role, lens[1] = strlen(role) + 1;
    parts[2] = jlen, lens[2] = 4;
    parts[3] = job, lens[3] = strlen(job);
    parts[4] = hello, lens[4] = CT__TCP_HELLO_BYTES;
    parts[5] = chal, lens[5] = CT__TCP_CHAL_BYTES;
    ct__hmac_sha256(key, 32, parts, lens, 6, out);
}

/* ---- the set ---------------------------------------------------------------------- */

/* Connections accepted per turn of the loop before the pending ones are
 * served again. */
#define ACCEPT_BATCH 8

enum {
    C_CONNECT = 1, /* connector: waiting for connect() to complete */
    C_SEND_HELLO,
    C_READ_HEAD,   /* CHAL or an early VERDICT: the 16 bytes that tell which */
    C_READ_CHAL,
    C_READ_REFUSAL,
    C_SEND_PROOF,
    C_READ_VERDICT,
    A_READ_HEAD, /* acceptor */
    A_READ_HELLO,
    A_SEND_CHAL,
    A_READ_PROOF,
    A_SEND_VERDICT,
};

typedef struct {
    int fd, state, target; /* target -1: accepted */
    double deadline, born;
    int spoke;             /* sent a whole, valid hello: not an idle connection */
    char addr[80];
    unsigned char hello[CT__TCP_HELLO_BYTES], chal[CT__TCP_CHAL_BYTES];
    unsigned char msg[CT__TCP_VERDICT_BYTES];
    /* The message in flight, as an offset into this struct (which moves
     * as the array grows and shrinks), and what is left of it. */
    size_t at, left;
    ct__tcp_hello h;
} hs_conn;

typedef struct {
    char host[256];
    int port, peer, done, busy, attempt;
    unsigned kind;
    double next_try, wait;
    ct__tcp_hs_prepare prepare;
    void *user;
    struct addrinfo *res; /* the name's addresses, from the last lookup that worked */
    int naddr, unreached; /* how many; connects that failed since that lookup */
    double resolved_at;   /* when that lookup (or a failed one since) was made */
    char status[256];    /* why the last attempt failed */
    char refusal[256];   /* the last refusal or failed proof, which says more
                          * than a later "connection refused" */
} hs_target;

/* A connection the caller took from the set, watched for a hang-up. */
typedef struct {
    int fd, rank;
    char addr[80];
} hs_watch;

struct ct__tcp_hs {
    ct__tcp_self self;
    unsigned char job_id[32];
    int lfd;
    /* per kind (join, ring, ctrl): want[k][rank] 0 not expected, 1
     * expected, 2 joined */
    unsigned char *want[3];
    hs_conn *c;
    int n, cap;
    hs_target tg[MAX_TARGETS];
    int ntg;
    int refused;
    int lookups; /* names looked up, for the tests */
    char last_refused[200];
    char strangers[320];
    hs_watch *watch;
    int nwatch, watch_cap;
    struct pollfd *pf;
    int pf_cap;
};

static int kind_slot(unsigned kind)
{
    return kind == CT__TCP_JOIN ? 0 : kind == CT__TCP_RING ? 1 : kind == CT__TCP_CTRL ? 2 : -1;
}

ct_status ct__tcp_hs_create(const ct__tcp_self *self, int lfd, ct__tcp_hs **out)
{
    ct__tcp_hs *s = calloc(1, sizeof *s);
    int k;
    *out = NULL;
    if (s == NULL)
        return ct__error(CT_ERR_NOMEM, "tcp open: out of memory");
    s->self = *self;
    s->lfd = lfd;
    for (k = 0; k < 3; k++) {
        s->want[k] = calloc((size_t)self->world, 1);
        if (s->want[k] == NULL) {
            ct__tcp_hs_free(s);
            return ct__error(CT_ERR_NOMEM, "tcp open: out of memory");
        }
    }
    ct__tcp_job_id(self->job, s->job_id);
    *out = s;
    return CT_OK;
}

void ct__tcp_hs_free(ct__tcp_hs *s)
{
    int i;
    if (s == NULL)
        return;
    for (i = 0; i < s->n; i++)
        close(s->c[i].fd);
    for (i = 0; i < s->ntg; i++)
        if (s->tg[i].res != NULL)
            freeaddrinfo(s->tg[i].res);
    for (i = 0; i < 3; i++)
        free(s->want[i]);
    free(s->c);
    free(s->watch);
    free(s->pf);
    free(s);
}

void ct__tcp_hs_expect(ct__tcp_hs *s, unsigned kind, int rank)
{
    int k = kind_slot(kind);
    if (k >= 0 && rank >= 0 && rank < s->self.world)
        s->want[k][rank] = 1;
}

int ct__tcp_hs_connect(ct__tcp_hs *s, const char *host, int port, int peer, unsigned kind,
                       ct__tcp_hs_prepare prepare, void *user)
{
    hs_target *t;
    if (s->ntg == MAX_TARGETS)
        return -1;
    t = &s->tg[s->ntg];
    memset(t, 0, sizeof *t);
    snprintf(t->host, sizeof t->host, "%s", host);
    t->port = port;
    t->peer = peer;
    t->kind = kind;
    t->prepare = prepare;
    t->user = user;
    t->wait = 0.01;
    t->next_try = 0;
    snprintf(t->status, sizeof t->status, "not tried yet");
    return s->ntg++;
}

int ct__tcp_hs_watch(ct__tcp_hs *s, int fd, int rank, const char *addr)
{
    hs_watch *w;
    if (s->nwatch == s->watch_cap) {
        int cap = s->watch_cap ? 2 * s->watch_cap : 16;
        void *p = realloc(s->watch, (size_t)cap * sizeof *s->watch);
        if (p == NULL)
            return -1;
        s->watch = p;
        s->watch_cap = cap;
    }
    w = &s->watch[s->nwatch++];
    w->fd = fd;
    w->rank = rank;
    snprintf(w->addr, sizeof w->addr, "%s", addr != NULL ? addr : "");
    return 0;
}

int ct__tcp_hs_lookups(const ct__tcp_hs *s)
{
    return s->lookups;
}

const char *ct__tcp_hs_target_status(const ct__tcp_hs *s, int i)
{
    if (i < 0 || i >= s->ntg)
        return "";
    return s->tg[i].refusal[0] ? s->tg[i].refusal : s->tg[i].status;
}

int ct__tcp_hs_target_refused(const ct__tcp_hs *s, int i)
{
    return i >= 0 && i < s->ntg && s->tg[i].refusal[0] != '\0';
}

const char *ct__tcp_hs_strangers(ct__tcp_hs *s)
{
    s->strangers[0] = '\0';
    if (s->refused > 0)
        snprintf(s->strangers, sizeof s->strangers,
                 " (refused %d connection%s from strangers meanwhile; the last from %s)",
                 s->refused, s->refused > 1 ? "s" : "", s->last_refused);
    if (s->refused > CT__TCP_STRANGERS_LOGGED)
        ct__log(CT_LOG_WARNING, "tcp: refused %d connections from strangers in all (the "
                                "first %d are named above)", s->refused,
                CT__TCP_STRANGERS_LOGGED);
    return s->strangers;
}

static void peer_addr(int fd, char *out, size_t size)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[INET6_ADDRSTRLEN + 8], serv[16];
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0 ||
        getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(out, size, "an unknown address");
        return;
    }
    snprintf(out, size, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, serv);
}

static void remove_conn(ct__tcp_hs *s, int i, int close_fd)
{
    if (close_fd) {
        /* Unread bytes would turn the close into a reset, which may cost
         * the peer the refusal we just sent; take what has come. */
        char sink[512];
        int k;
        for (k = 0; k < 8 && recv(s->c[i].fd, sink, sizeof sink, MSG_DONTWAIT) > 0; k++)
            ;
        close(s->c[i].fd);
    }
    s->c[i] = s->c[s->n - 1];
    s->n--;
}

/* An accepted connection that did not prove it is one of ours, or that
 * did but is gone (or timed out) before it heard so: dropped, named by its
 * address only (whatever rank it claimed is no rank's doing); an admitted
 * one's rank is free again. */
static void drop_stranger(ct__tcp_hs *s, int i, const char *why)
{
    hs_conn *c = &s->c[i];
    if (c->state == A_SEND_VERDICT)
        s->want[kind_slot(c->h.kind)][c->h.rank] = 1;
    s->refused++;
    snprintf(s->last_refused, sizeof s->last_refused, "%s: %s", c->addr, why);
    if (s->refused <= CT__TCP_STRANGERS_LOGGED)
        ct__log(CT_LOG_WARNING, "tcp: rank %d refused a stranger at %s: %s", s->self.rank,
                c->addr, why);
    remove_conn(s, i, 1);
}

/* Tells a refused peer why (best effort: 48 bytes fit any socket buffer),
 * so that a misconfigured rank can say so; then drops it. */
static void refuse(ct__tcp_hs *s, int i, unsigned code)
{
    unsigned char v[CT__TCP_VERDICT_BYTES];
    char why[160];
    hs_conn *c = &s->c[i];
    ct__tcp_put_tail(v, CT__TCP_VERDICT, code, NULL);
    (void)!send(c->fd, v, sizeof v, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (c->h.kind != 0 && code != CT__TCP_R_PROTOCOL && code != CT__TCP_R_VERSION)
        snprintf(why, sizeof why, "%s (it claimed rank slot %d of world %d)",
                 ct__tcp_reason(code), c->h.rank, c->h.world);
    else
        snprintf(why, sizeof why, "%s", ct__tcp_reason(code));
    drop_stranger(s, i, why);
}

/* The next attempt after a failed one: 10 ms, doubling up to 200 ms (a
 * rank 0 that is not listening yet, a rank dropped in a flood). */
static void backoff(hs_target *t)
{
    t->busy = 0;
    t->next_try = ct__now_s() + t->wait;
    t->wait = t->wait * 2 > 0.2 ? 0.2 : t->wait * 2;
}

/* A connector's attempt failed: close, note why, try again later. */
static void retry(ct__tcp_hs *s, int i, const char *fmt, const char *arg)
{
    hs_target *t = &s->tg[s->c[i].target];
    snprintf(t->status, sizeof t->status, fmt, arg);
    backoff(t);
    remove_conn(s, i, 1);
}

static int add_conn(ct__tcp_hs *s, int fd, int target, int state)
{
    hs_conn *c;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        void *p = realloc(s->c, (size_t)cap * sizeof *s->c);
        if (p == NULL)
            return -1;
        s->c = p;
        s->cap = cap;
    }
    c = &s->c[s->n++];
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->target = target;
    c->state = state;
    c->born = ct__now_s();
    c->deadline = c->born + (target >= 0 ? 2 * CT__TCP_HANDSHAKE_S : CT__TCP_HANDSHAKE_S);
    return 0;
}

void ct__tcp_sock_setup(int fd)
{
    int one = 1;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* A connect to a local port in the ephemeral range that nobody listens on
 * can meet itself (TCP simultaneous open); that is no peer. */
static int self_connected(int fd)
{
    struct sockaddr_storage a, b;
    socklen_t la = sizeof a, lb = sizeof b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    if (getsockname(fd, (struct sockaddr *)&a, &la) != 0 ||
        getpeername(fd, (struct sockaddr *)&b, &lb) != 0)
        return 0;
    return la == lb && memcmp(&a, &b, la) == 0;
}

/* A name is looked up once per series of attempts, not once per attempt:
 * a resolver that takes seconds to answer (or to time out) would otherwise
 * spend the deadline again on every retry, while this thread serves no
 * other handshake. It is looked up again while the lookup fails (a
 * Kubernetes Service may appear late), and when every address it gave has
 * failed to connect and the answer is this old (the name may have moved:
 * a pod replaced behind a headless Service). */
#define RESOLVE_REFRESH_S 5.0

static int needs_lookup(const hs_target *t, double now)
{
    return t->res == NULL ||
           (t->unreached >= t->naddr && now - t->resolved_at >= RESOLVE_REFRESH_S);
}

/* Looks target t's name up into t->res; 0, or -1 with the reason in
 * t->status. */
static int lookup(ct__tcp_hs *s, hs_target *t)
{
    struct addrinfo hints, *res = NULL, *ai;
    char pstr[16];
    int rc;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(pstr, sizeof pstr, "%d", t->port);
    s->lookups++;
    rc = getaddrinfo(t->host, pstr, &hints, &res);
    if (rc != 0 || res == NULL) {
        char why[sizeof t->status];
        snprintf(why, sizeof why, "cannot resolve %.200s: %s", t->host,
                 rc != 0 ? gai_strerror(rc) : "no address");
        memcpy(t->status, why, sizeof why);
        if (res != NULL)
            freeaddrinfo(res);
        /* Addresses from before, if any, serve another round first. */
        t->unreached = 0;
        t->resolved_at = ct__now_s();
        return -1;
    }
    if (t->res != NULL)
        freeaddrinfo(t->res);
    t->res = res;
    t->naddr = 0;
    for (ai = res; ai != NULL; ai = ai->ai_next)
        t->naddr++;
    t->unreached = 0;
    t->resolved_at = ct__now_s();
    return 0;
}

/* A connect of target t failed before any byte of the handshake: counts
 * towards looking its name up again. */
static void unreached(hs_target *t)
{
    t->unreached++;
}

/* Starts an attempt of target i: a non-blocking connect to the next of its
 * addresses, looked up first when needs_lookup says so. */
static ct_status start_attempt(ct__tcp_hs *s, int i)
{
    hs_target *t = &s->tg[i];
    struct addrinfo *ai;
    int k, fd;
    if (needs_lookup(t, ct__now_s()) && lookup(s, t) != 0 && t->res == NULL) {
        backoff(t);
        return CT_OK;
    }
    for (ai = t->res, k = t->attempt++ % t->naddr; k > 0; k--)
        ai = ai->ai_next; /* each attempt the next address */
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        snprintf(t->status, sizeof t->status, "socket: %s", strerror(errno));
        backoff(t);
        return CT_OK;
    }
    ct__tcp_sock_setup(fd);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
        snprintf(t->status, sizeof t->status, "%s", strerror(errno));
        close(fd);
        unreached(t);
        backoff(t);
        return CT_OK;
    }
    if (add_conn(s, fd, i, C_CONNECT) != 0) {
        close(fd);
        return ct__error(CT_ERR_NOMEM, "tcp open: out of memory");
    }
    snprintf(s->c[s->n - 1].addr, sizeof s->c[s->n - 1].addr, "%s:%d", t->host, t->port);
    t->busy = 1;
    return CT_OK;
}

static void set_io(hs_conn *c, int state, unsigned char *p, size_t n)
{
    c->state = state;
    c->at = (size_t)(p - (unsigned char *)c);
    c->left = n;
}

static int is_send(int state)
{
    return state == C_SEND_HELLO || state == C_SEND_PROOF || state == A_SEND_CHAL ||
           state == A_SEND_VERDICT;
}

/* Moves the message in flight on; 1 done, 0 would block, -1 closed or
 * broken (errno, 0 for EOF). */
static int conn_io(hs_conn *c)
{
    while (c->left > 0) {
        unsigned char *p = (unsigned char *)c + c->at;
        ssize_t k = is_send(c->state) ? send(c->fd, p, c->left, MSG_NOSIGNAL)
                                      : recv(c->fd, p, c->left, 0);
        if (k > 0) {
            c->at += (size_t)k;
            c->left -= (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (k == 0)
            errno = 0;
        return -1;
    }
    return 1;
}

/* The connector's side once its connect completed. */
static int connector_hello(ct__tcp_hs *s, int i)
{
    hs_conn *c = &s->c[i];
    hs_target *t = &s->tg[c->target];
    ct__tcp_hello h;
    memset(&h, 0, sizeof h);
    h.kind = t->kind;
    h.flags = s->self.key != NULL;
    h.rank = s->self.rank;
    h.world = s->self.world;
    memcpy(h.job_id, s->job_id, 32);
    if (ct__random_bytes(h.nonce, sizeof h.nonce) != CT_OK)
        return -1;
    if (t->prepare != NULL && t->prepare(t->user, c->fd, &h.port, h.host) != 0)
        return -1;
    ct__tcp_put_hello(c->hello, &h);
    set_io(c, C_SEND_HELLO, c->hello, CT__TCP_HELLO_BYTES);
    return 0;
}

/* A message completed on conn i: check it and set up the next. Returns 1
 * when the handshake is done (the conn stays, for the caller to take), 0
 * to go on, -1 when conn i was removed. -2: a fatal local error (set). */
static int advance(ct__tcp_hs *s, int i)
{
    hs_conn *c = &s->c[i];
    unsigned char mac[32];
    unsigned code;
    switch (c->state) {
    case C_SEND_HELLO:
        set_io(c, C_READ_HEAD, c->chal, 16);
        return 0;
    case C_READ_HEAD:
        if (ct__tcp_get32(c->chal) != CT__TCP_MAGIC) {
            retry(s, i, "%s does not speak this protocol", c->addr);
            return -1;
        }
        if (ct__tcp_get32(c->chal + 8) == CT__TCP_VERDICT) {
            memcpy(c->msg, c->chal, 16);
            set_io(c, C_READ_REFUSAL, c->msg + 16, 32);
            return 0;
        }
        if (ct__tcp_get32(c->chal + 4) != CT__TCP_VERSION || ct__tcp_get32(c->chal + 8) != CT__TCP_CHAL) {
            retry(s, i, "%s speaks another protocol version", c->addr);
            return -1;
        }
        set_io(c, C_READ_CHAL, c->chal + 16, CT__TCP_CHAL_BYTES - 16);
        return 0;
    case C_READ_REFUSAL:
    case C_READ_VERDICT: {
        hs_target *t = &s->tg[c->target];
        char why[200];
        code = ct__tcp_get32(c->msg + 12);
        /* A refusal that says "admitted" is as foreign as a bad magic. (A
         * refusal may come from another version: it says so in its code.) */
        if (ct__tcp_get32(c->msg) != CT__TCP_MAGIC || ct__tcp_get32(c->msg + 8) != CT__TCP_VERDICT ||
            (c->state == C_READ_VERDICT && ct__tcp_get32(c->msg + 4) != CT__TCP_VERSION) ||
            (c->state == C_READ_REFUSAL && code == CT__TCP_OK)) {
            retry(s, i, "%s does not speak this protocol", c->addr);
            return -1;
        }
        if (code != CT__TCP_OK || c->state == C_READ_REFUSAL) {
            snprintf(why, sizeof why, "rank %d (at %%s) refused this rank: %s", t->peer,
                     ct__tcp_reason(code));
            snprintf(t->refusal, sizeof t->refusal, why, c->addr);
            retry(s, i, why, c->addr);
            return -1;
        }
        if (s->self.key != NULL) {
            ct__tcp_mac(s->self.key, 1, s->self.job, c->hello, c->chal, mac);
            if (!ct__equal_consttime(mac, c->msg + 16, 32)) {
                /* Whoever answered there holds no key of this job. */
                ct__log(CT_LOG_WARNING, "tcp: rank %d: the peer at %s failed to prove it is "
                                        "rank %d of this job; dropped", s->self.rank, c->addr,
                        t->peer);
                snprintf(t->refusal, sizeof t->refusal, "the peer at %s failed to "
                                                        "authenticate (a stranger?)", c->addr);
                retry(s, i, "%s", t->refusal);
                return -1;
            }
        }
        t->done = 1;
        t->busy = 0;
        return 1;
    }
    case C_READ_CHAL: {
        hs_target *t = &s->tg[c->target];
        if ((int)ct__tcp_get32(c->chal + 16) != t->peer || (int)ct__tcp_get32(c->chal + 20) != s->self.world ||
            memcmp(c->chal + 32, s->job_id, 32) != 0 ||
            ct__tcp_get32(c->chal + 12) != (unsigned)(s->self.key != NULL)) {
            char why[200];
            snprintf(why, sizeof why, "the peer at %%s is not rank %d of this job (another "
                                      "world, job or secret setting)", t->peer);
            snprintf(t->refusal, sizeof t->refusal, why, c->addr);
            retry(s, i, why, c->addr);
            return -1;
        }
        memset(mac, 0, sizeof mac);
        if (s->self.key != NULL)
            ct__tcp_mac(s->self.key, 0, s->self.job, c->hello, c->chal, mac);
        ct__tcp_put_tail(c->msg, CT__TCP_PROOF, 0, mac);
        set_io(c, C_SEND_PROOF, c->msg, CT__TCP_PROOF_BYTES);
        return 0;
    }
    case C_SEND_PROOF:
        set_io(c, C_READ_VERDICT, c->msg, CT__TCP_VERDICT_BYTES);
        return 0;
    case A_READ_HEAD:
        /* Not even our magic: nothing to say to it. */
        if (ct__tcp_get32(c->hello) != CT__TCP_MAGIC) {
            drop_stranger(s, i, "not this protocol");
            return -1;
        }
        if (ct__tcp_get32(c->hello + 4) != CT__TCP_VERSION) {
            refuse(s, i, CT__TCP_R_VERSION);
            return -1;
        }
        set_io(c, A_READ_HELLO, c->hello + 16, CT__TCP_HELLO_BYTES - 16);
        return 0;
    case A_READ_HELLO: {
        ct__tcp_hello *h = &c->h;
        int k;
        code = ct__tcp_get_hello(c->hello, h);
        k = kind_slot(h->kind);
        if (code == CT__TCP_OK && h->world != s->self.world)
            code = CT__TCP_R_WORLD;
        else if (code == CT__TCP_OK && memcmp(h->job_id, s->job_id, 32) != 0)
            code = CT__TCP_R_JOB;
        else if (code == CT__TCP_OK && h->flags != (unsigned)(s->self.key != NULL))
            code = CT__TCP_R_SECRET;
        else if (code == CT__TCP_OK && (h->rank < 0 || h->rank >= s->self.world || k < 0))
            code = CT__TCP_R_RANK;
        else if (code == CT__TCP_OK && s->want[k][h->rank] != 1)
            code = s->want[k][h->rank] ? CT__TCP_R_TAKEN : CT__TCP_R_RANK;
        if (code != CT__TCP_OK) {
            refuse(s, i, code);
            return -1;
        }
        {
            unsigned char nonce[32];
            if (ct__random_bytes(nonce, sizeof nonce) != CT_OK)
                return -2;
            ct__tcp_put_chal(c->chal, s->self.key != NULL, s->self.rank, s->self.world,
                             s->job_id, nonce);
        }
        /* Only a whole, valid hello counts: a stranger that trickles a byte
         * and stalls must stay first in line to be dropped. */
        c->spoke = 1;
        set_io(c, A_SEND_CHAL, c->chal, CT__TCP_CHAL_BYTES);
        return 0;
    }
    case A_SEND_CHAL:
        set_io(c, A_READ_PROOF, c->msg, CT__TCP_PROOF_BYTES);
        return 0;
    case A_READ_PROOF: {
        int k = kind_slot(c->h.kind);
        if (ct__tcp_get32(c->msg) != CT__TCP_MAGIC || ct__tcp_get32(c->msg + 4) != CT__TCP_VERSION ||
            ct__tcp_get32(c->msg + 8) != CT__TCP_PROOF || ct__tcp_get32(c->msg + 12) != 0) {
            refuse(s, i, CT__TCP_R_PROTOCOL);
            return -1;
        }
        memset(mac, 0, sizeof mac);
        if (s->self.key != NULL) {
            ct__tcp_mac(s->self.key, 0, s->self.job, c->hello, c->chal, mac);
            if (!ct__equal_consttime(mac, c->msg + 16, 32)) {
                refuse(s, i, CT__TCP_R_AUTH);
                return -1;
            }
            ct__tcp_mac(s->self.key, 1, s->self.job, c->hello, c->chal, mac);
        }
        /* Another connection may have taken the rank meanwhile. */
        if (s->want[k][c->h.rank] != 1) {
            refuse(s, i, CT__TCP_R_TAKEN);
            return -1;
        }
        s->want[k][c->h.rank] = 2;
        ct__tcp_put_tail(c->msg, CT__TCP_VERDICT, CT__TCP_OK, mac);
        set_io(c, A_SEND_VERDICT, c->msg, CT__TCP_VERDICT_BYTES);
        return 0;
    }
    case A_SEND_VERDICT:
        return 1;
    }
    return 0;
}

/* Makes room for one more accepted connection: drops the oldest that has
 * not sent a valid hello (an idle one), else the oldest; when `force`, even below
 * the cap (the process is out of file descriptors). Returns whether it
 * dropped one. */
static int make_room(ct__tcp_hs *s, int force)
{
    int i, pending = 0, pick = -1, pick_idle = 0;
    for (i = 0; i < s->n; i++) {
        hs_conn *c = &s->c[i];
        if (c->target >= 0)
            continue;
        pending++;
        if (pick < 0 || (!c->spoke && pick_idle == 0) ||
            ((!c->spoke) == pick_idle && c->born < s->c[pick].born)) {
            pick = i;
            pick_idle = !c->spoke;
        }
    }
    if ((pending >= CT__TCP_PENDING_MAX || force) && pick >= 0) {
        drop_stranger(s, pick, force ? "dropped: out of file descriptors"
                                     : "dropped: too many connections pending");
        return 1;
    }
    return 0;
}

static int run_conn(ct__tcp_hs *s, int i, short revents);

/* Accepts what is queued, a few at a time: each new connection is read at
 * once (a rank's hello has usually arrived with it), and the caller serves
 * the pending ones before more are taken, so a flood of fresh connections
 * cannot push a real rank's out before its hello is read. */
static ct_status accept_all(ct__tcp_hs *s)
{
    int round;
    for (round = 0; round < ACCEPT_BATCH; round++) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
            /* The queue stays readable: free a descriptor, or wait a
             * little, rather than spin until the deadline. */
            if (!make_room(s, 1)) {
                struct timespec ts = { 0, 10 * 1000 * 1000 };
                nanosleep(&ts, NULL);
            }
            return CT_OK;
        }
        if (fd < 0 && (errno == EBADF || errno == EINVAL || errno == ENOTSOCK ||
                       errno == EOPNOTSUPP))
            return ct__error(CT_ERR_DIST, "tcp open: accept on the listening socket: %s",
                             strerror(errno));
        if (fd < 0 && (errno == ENOBUFS || errno == ENOMEM)) {
            struct timespec ts = { 0, 10 * 1000 * 1000 }; /* as for EMFILE above */
            nanosleep(&ts, NULL);
            return CT_OK;
        }
        if (fd < 0)
            return CT_OK; /* EAGAIN, or an aborted connection: nothing to do */
        ct__tcp_sock_setup(fd);
        make_room(s, 0);
        if (add_conn(s, fd, -1, A_READ_HEAD) != 0) {
            close(fd);
            return ct__error(CT_ERR_NOMEM, "tcp open: out of memory");
        }
        peer_addr(fd, s->c[s->n - 1].addr, sizeof s->c[s->n - 1].addr);
        set_io(&s->c[s->n - 1], A_READ_HEAD, s->c[s->n - 1].hello, 16);
        /* The newest is the last: removing it (-1) moves no other. An
         * acceptor cannot finish (1) before its peer saw the challenge. */
        if (run_conn(s, s->n - 1, POLLIN) == -2)
            return ct__error(CT_ERR_DIST, "tcp open: %s", ct_last_error());
    }
    return CT_OK;
}

/* Runs conn i as far as it goes without blocking. 1: done, 0: waiting,
 * -1: removed, -2: fatal. */
static int run_conn(ct__tcp_hs *s, int i, short revents)
{
    hs_conn *c = &s->c[i];
    if (c->state == C_CONNECT) {
        int se = 0;
        socklen_t sl = sizeof se;
        if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
            return 0;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &se, &sl) != 0)
            se = errno;
        if (se == 0 && self_connected(c->fd))
            se = ECONNREFUSED;
        if (se != 0) {
            unreached(&s->tg[c->target]);
            retry(s, i, "%s", strerror(se));
            return -1;
        }
        s->tg[c->target].unreached = 0;
        if (connector_hello(s, i) != 0) {
            retry(s, i, "%s", "cannot prepare the hello");
            return -1;
        }
    }
    for (;;) {
        int rc = conn_io(&s->c[i]), a;
        if (rc == 0)
            return 0;
        if (rc < 0) {
            char why[160];
            snprintf(why, sizeof why, "%s during the handshake",
                     errno ? strerror(errno) : "closed");
            if (s->c[i].target >= 0) {
                if (s->c[i].state == C_READ_HEAD || s->c[i].state == C_READ_VERDICT) {
                    /* Closed before a verdict: dropped as one of many, or
                     * refused by a peer too old to say why. */
                    snprintf(why, sizeof why, "%%s closed the connection during the "
                                              "handshake");
                    retry(s, i, why, s->c[i].addr);
                } else {
                    retry(s, i, "%s", why);
                }
            } else {
                drop_stranger(s, i, why);
            }
            return -1;
        }
        a = advance(s, i);
        if (a != 0)
            return a;
    }
}

/* Watched connection i hung up (or broke): the event that says so; the
 * set forgets it, the caller closes it. */
static ct_status watch_gone(ct__tcp_hs *s, int i, ct__tcp_hs_event *ev)
{
    hs_watch w = s->watch[i];
    s->watch[i] = s->watch[--s->nwatch];
    memset(ev, 0, sizeof *ev);
    ev->fd = w.fd;
    ev->target = CT__TCP_HS_GONE;
    ev->hello.rank = w.rank;
    snprintf(ev->addr, sizeof ev->addr, "%s", w.addr);
    return CT_OK;
}

ct_status ct__tcp_hs_wait(ct__tcp_hs *s, double deadline, ct__tcp_hs_event *ev)
{
    /* One poll at least, so that a deadline already passed (a timeout of
     * 0) still serves what is ready. */
    for (int polled = 0;; polled = 1) {
        double now = ct__now_s(), wake = deadline;
        int i, np = 0, rc, base;
        /* Start the attempts that are due. */
        for (i = 0; i < s->ntg; i++) {
            hs_target *t = &s->tg[i];
            if (t->done || t->busy)
                continue;
            if (t->next_try <= now) {
                ct_status st = start_attempt(s, i);
                if (st != CT_OK)
                    return st;
            }
            if (!t->busy && t->next_try < wake)
                wake = t->next_try;
        }
        /* Drop whatever is past its own deadline. */
        for (i = 0; i < s->n;) {
            hs_conn *c = &s->c[i];
            if (c->deadline <= now) {
                if (c->target >= 0 && c->state == C_CONNECT)
                    unreached(&s->tg[c->target]);
                if (c->target >= 0)
                    retry(s, i, "%s did not finish the handshake in time", c->addr);
                else
                    drop_stranger(s, i, "did not finish the handshake in time");
                continue;
            }
            if (c->deadline < wake)
                wake = c->deadline;
            i++;
        }
        if (now >= deadline && polled) {
            ev->fd = -1;
            return CT_OK;
        }
        if (s->pf_cap < s->n + s->nwatch + 1) {
            int cap = s->n + s->nwatch + 16;
            void *p = realloc(s->pf, (size_t)cap * sizeof *s->pf);
            if (p == NULL)
                return ct__error(CT_ERR_NOMEM, "tcp open: out of memory");
            s->pf = p;
            s->pf_cap = cap;
        }
        base = s->lfd >= 0;
        if (base) {
            s->pf[0].fd = s->lfd;
            s->pf[0].events = POLLIN;
            s->pf[0].revents = 0;
        }
        for (i = 0; i < s->n; i++) {
            s->pf[base + i].fd = s->c[i].fd;
            s->pf[base + i].events = s->c[i].state == C_CONNECT || is_send(s->c[i].state)
                                         ? POLLOUT : POLLIN;
            s->pf[base + i].revents = 0;
        }
        np = base + s->n;
        /* Only a hang-up wakes us for these: the peer has nothing to say
         * until the caller speaks. */
        for (i = 0; i < s->nwatch; i++) {
            s->pf[np + i].fd = s->watch[i].fd;
            s->pf[np + i].events = POLLRDHUP;
            s->pf[np + i].revents = 0;
        }
        rc = poll(s->pf, (nfds_t)(np + s->nwatch), ct__poll_ms(wake));
        if (rc < 0 && errno != EINTR)
            return ct__error(CT_ERR_DIST, "tcp open: poll: %s", strerror(errno));
        if (rc <= 0)
            continue;
        /* Before the handshakes: a rank that hung up frees its place for
         * the hello of its restarted self that may be in this round. */
        for (i = 0; i < s->nwatch; i++)
            if (s->pf[np + i].revents)
                return watch_gone(s, i, ev);
        /* Conns first (their indices move as some go), from the last one:
         * removal swaps the last into the hole, which was already seen. */
        for (i = s->n - 1; i >= 0; i--) {
            short re = s->pf[base + i].revents;
            int r;
            if (re == 0)
                continue;
            r = run_conn(s, i, re);
            if (r == -2)
                return ct__error(CT_ERR_DIST, "tcp open: %s", ct_last_error());
            if (r == 1) {
                hs_conn *c = &s->c[i];
                ev->fd = c->fd;
                ev->target = c->target;
                ev->hello = c->h;
                snprintf(ev->addr, sizeof ev->addr, "%s", c->addr);
                remove_conn(s, i, 0);
                return CT_OK;
            }
        }
        if (base && (s->pf[0].revents & (POLLNVAL | POLLERR | POLLHUP)))
            return ct__error(CT_ERR_DIST, "tcp open: the listening socket failed (%s)",
                             (s->pf[0].revents & POLLNVAL) ? "not open" : "error or hang-up");
        if (base && (s->pf[0].revents & POLLIN)) {
            ct_status st = accept_all(s);
            if (st != CT_OK)
                return st;
        }
    }
}
