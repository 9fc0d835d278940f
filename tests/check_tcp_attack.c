/* The tcp backend under attack (issue 10, findings 1 and 3): strangers with
 * no secret, a wrong one, the right one for another job, a replayed
 * handshake, forged hellos and 200 idle connections, during the rendezvous
 * and during training, while real ranks train; and an authenticated rank 0
 * that sends lengths and addresses that do not fit. The real ranks must
 * finish with the bits of an undisturbed run, the strangers must get no
 * table or gradient byte, and every error and log must name the stranger's
 * address, never a real rank. A test case of tcp_suite (check_tcp.c). */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "suites.h"
#include "core/sha256.h"
#include "dist/tcp.h"
#include "dist/tcp_auth.h"
#include "ranks.h"

TCase *tcp_attack_tcase(void);

#define JOB "attack-job"
#define LOG_BYTES 16384
#define FLOOD 200
#define CHURN_MAX 3000 /* fresh connections of the churn attack, at most */
#define CHURN_OPEN 32  /* of them, held open at once */
#define MAX_CONNS (3 * FLOOD + CT__TCP_PENDING_MAX + CHURN_MAX)

static const unsigned char key[32] = { 0x6b, 0x65, 0x79, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
static const unsigned char wrong_key[32] = { 0x6e, 0x6f, 0x70, 0x65 };

/* What the ranks logged, and the recorded handshake of a replay. */
typedef struct {
    char log[MAX_WORLD][LOG_BYTES];
    volatile int joined[MAX_WORLD]; /* rank 0 saw rank r join */
    volatile int training;          /* real ranks past open */
    volatile int attacker_done;
    int bad_replies;                /* the stranger got more than a refusal */
    char why[MSG_LEN];
    int stranger_ports[MAX_CONNS];  /* local ports the stranger used */
    int nports;
    int idle_opened;
    int answered; /* forged hellos that reached a listener */
    int answered_early; /* of them, before any real rank joined */
    volatile int phase; /* the stranger's: 1 first forgeries done, 2 the
                         * claim of a taken rank done */
} attack_area;

static attack_area *area;
static int log_rank;

static void capture_log(ct_log_level level, const char *message, void *user)
{
    size_t used = strlen(area->log[log_rank]);
    const char *j;
    (void)level, (void)user;
    if (used + strlen(message) + 2 < LOG_BYTES) {
        memcpy(area->log[log_rank] + used, message, strlen(message));
        area->log[log_rank][used + strlen(message)] = '\n';
    }
    if (log_rank == 0 && (j = strstr(message, "tcp: rank ")) != NULL &&
        strstr(message, " joined from ") != NULL) {
        int r = atoi(j + strlen("tcp: rank "));
        if (r > 0 && r < MAX_WORLD)
            area->joined[r] = 1;
    }
}

static void start_logging(int rank)
{
    log_rank = rank;
    ct_log_set_callback(capture_log, NULL);
    ct_log_set_level(CT_LOG_DEBUG);
}

/* ---- the stranger's tools ------------------------------------------------------------ */

static int connect_to(int p)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)p);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (area->nports < MAX_CONNS && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        area->stranger_ports[area->nports++] = ntohs(a.sin_port);
    return fd;
}

static int read_full(int fd, void *buf, size_t n, double timeout)
{
    size_t got = 0;
    double dl = now_s() + timeout;
    while (got < n) {
        struct pollfd pf = { fd, POLLIN, 0 };
        ssize_t k;
        int ms = (int)((dl - now_s()) * 1000);
        if (ms <= 0 || poll(&pf, 1, ms) <= 0)
            return -1;
        k = recv(fd, (char *)buf + got, n - got, 0);
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

/* Every byte still to come on fd until the peer closes it (bounded). */
static long drain(int fd, double timeout)
{
    char b[4096];
    long total = 0;
    double dl = now_s() + timeout;
    for (;;) {
        struct pollfd pf = { fd, POLLIN, 0 };
        ssize_t k;
        int ms = (int)((dl - now_s()) * 1000);
        if (ms <= 0 || poll(&pf, 1, ms) <= 0)
            return total; /* still open: the caller decides */
        k = recv(fd, b, sizeof b, 0);
        if (k <= 0)
            return total;
        total += k;
    }
}

static void hello_for(ct__tcp_hello *h, const char *job, int rank, int world, unsigned flags)
{
    memset(h, 0, sizeof *h);
    h->kind = CT__TCP_JOIN;
    h->flags = flags;
    h->rank = rank;
    h->world = world;
    h->port = 4242;
    snprintf(h->host, sizeof h->host, "127.0.0.1");
    ct__tcp_job_id(job, h->job_id);
    ct__random_bytes(h->nonce, sizeof h->nonce);
}

static void bad_reply(const char *fmt, const char *what, long v)
{
    if (area->bad_replies++ == 0)
        snprintf(area->why, MSG_LEN, fmt, what, v);
}

/* Expects a refusal VERDICT (code `code`, or any refusal with 0) and then
 * nothing but the end of the connection. */
static void expect_refusal(int fd, const char *what, unsigned code)
{
    unsigned char v[CT__TCP_VERDICT_BYTES];
    long more;
    if (read_full(fd, v, sizeof v, 10.0) != 0) {
        bad_reply("%s: no verdict (%ld)", what, 0);
        return;
    }
    if (ntohl(*(uint32_t *)(v + 8)) != CT__TCP_VERDICT ||
        ntohl(*(uint32_t *)(v + 12)) == CT__TCP_OK ||
        (code && ntohl(*(uint32_t *)(v + 12)) != code)) {
        bad_reply("%s: verdict code %ld", what, (long)ntohl(*(uint32_t *)(v + 12)));
        return;
    }
    if ((more = drain(fd, 10.0)) != 0)
        bad_reply("%s: %ld bytes after the refusal", what, more);
}

/* Sends a hello; when a CHAL comes back, answers it with `proof` (NULL:
 * a MAC under `mac_key` over `mac_job`), then expects a refusal. */
static void forged(int p, const char *what, const unsigned char *hello, const unsigned char *proof,
                   const unsigned char *mac_key, const char *mac_job, unsigned code)
{
    unsigned char chal[CT__TCP_CHAL_BYTES], msg[CT__TCP_PROOF_BYTES], mac[32];
    int fd = connect_to(p);
    if (fd < 0)
        return; /* the port is closed: nothing to learn there either */
    if (send(fd, hello, CT__TCP_HELLO_BYTES, MSG_NOSIGNAL) != CT__TCP_HELLO_BYTES) {
        close(fd);
        return;
    }
    if (read_full(fd, chal, 16, 10.0) != 0) {
        bad_reply("%s: no answer (%ld)", what, 0);
        close(fd);
        return;
    }
    area->answered++;
    if (ntohl(*(uint32_t *)(chal + 8)) == CT__TCP_CHAL) {
        if (read_full(fd, chal + 16, sizeof chal - 16, 10.0) != 0) {
            bad_reply("%s: short challenge (%ld)", what, 0);
            close(fd);
            return;
        }
        memset(mac, 0, sizeof mac);
        if (mac_key != NULL)
            ct__tcp_mac(mac_key, 0, mac_job, hello, chal, mac);
        ct__tcp_put_tail(msg, CT__TCP_PROOF, 0, mac);
        send(fd, proof != NULL ? proof : msg, CT__TCP_PROOF_BYTES, MSG_NOSIGNAL);
        expect_refusal(fd, what, code);
    } else {
        /* A refusal straight away: 32 more bytes of it, then the end. */
        unsigned char rest[32];
        if (ntohl(*(uint32_t *)(chal + 8)) != CT__TCP_VERDICT ||
            (code && ntohl(*(uint32_t *)(chal + 12)) != code) ||
            read_full(fd, rest, sizeof rest, 10.0) != 0)
            bad_reply("%s: answered with kind/code %ld", what,
                      (long)ntohl(*(uint32_t *)(chal + 8)) * 100 + ntohl(*(uint32_t *)(chal + 12)));
        else if (drain(fd, 10.0) != 0)
            bad_reply("%s: more bytes after the refusal (%ld)", what, 1);
    }
    close(fd);
}

/* ---- scenarios ----------------------------------------------------------------------- */

typedef struct {
    int world;         /* real ranks; the stranger is one more process */
    int secret;        /* the job holds `key` */
    int idle;          /* idle connections held during the rendezvous */
    int forge;         /* forged hellos during the rendezvous */
    int train_flood;   /* the same again while the ranks train */
    int late_ms;       /* ranks 1.. start this late (the stranger comes first) */
    int churn;         /* fill the pending slots with stalled one-byte
                        * connections, then connect afresh without pause */
    int have_replay;   /* replay the recorded handshake below */
    unsigned char rec_hello[CT__TCP_HELLO_BYTES], rec_proof[CT__TCP_PROOF_BYTES];
    float *want_small, *want_ring;
} attack_case;

#define N_SMALL 1000
#define N_RING 70000

static void forge_all(const attack_case *c)
{
    unsigned char b[CT__TCP_HELLO_BYTES];
    unsigned flags = c->secret ? 1u : 0u;
    ct__tcp_hello h;
    uint32_t v1[22];
    int fd, k;
    /* Not even the protocol: a web request. */
    if ((fd = connect_to(port)) >= 0) {
        long got;
        send(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27, MSG_NOSIGNAL);
        if ((got = drain(fd, 10.0)) != 0)
            bad_reply("%s: %ld bytes back", "http", got);
        close(fd);
    }
    /* The old protocol's 88-byte hello (the original attack). */
    memset(v1, 0, sizeof v1);
    v1[0] = htonl(CT__TCP_MAGIC), v1[1] = htonl(1), v1[2] = htonl(1), v1[3] = htonl(1);
    v1[4] = htonl((uint32_t)c->world);
    memset(b, 0, sizeof b);
    memcpy(b, v1, sizeof v1);
    forged(port, "v1 hello", b, NULL, NULL, NULL, CT__TCP_R_VERSION);
    hello_for(&h, JOB, 1, c->world + 3, flags);
    ct__tcp_put_hello(b, &h);
    forged(port, "wrong world", b, NULL, NULL, NULL, CT__TCP_R_WORLD);
    for (k = -1; k <= c->world; k += c->world + 1) { /* rank -1 and rank world */
        hello_for(&h, JOB, k, c->world, flags);
        ct__tcp_put_hello(b, &h);
        forged(port, "rank out of range", b, NULL, NULL, NULL, 0);
    }
    hello_for(&h, JOB, 0, c->world, flags); /* rank 0 never joins rank 0 */
    ct__tcp_put_hello(b, &h);
    forged(port, "rank 0", b, NULL, NULL, NULL, CT__TCP_R_RANK);
    hello_for(&h, "another-job", 1, c->world, flags);
    ct__tcp_put_hello(b, &h);
    forged(port, "another job", b, NULL, NULL, NULL, CT__TCP_R_JOB);
    hello_for(&h, JOB, 1, c->world, !flags); /* a secret where none is, or none */
    ct__tcp_put_hello(b, &h);
    forged(port, "secret mismatch", b, NULL, NULL, NULL, CT__TCP_R_SECRET);
    if (c->secret) {
        /* A stranger who knows all but the secret: zeros, a wrong key. */
        hello_for(&h, JOB, 1, c->world, 1);
        ct__tcp_put_hello(b, &h);
        forged(port, "no secret", b, NULL, NULL, JOB, CT__TCP_R_AUTH);
        forged(port, "wrong secret", b, NULL, wrong_key, JOB, CT__TCP_R_AUTH);
        /* The right secret, another job: its id is refused, and so is a
         * MAC over the other job's name sent with this job's id. */
        hello_for(&h, "another-job", 1, c->world, 1);
        ct__tcp_put_hello(b, &h);
        forged(port, "right secret, another job", b, NULL, key, "another-job", CT__TCP_R_JOB);
        hello_for(&h, JOB, 1, c->world, 1);
        ct__tcp_put_hello(b, &h);
        forged(port, "right secret, MAC for another job", b, NULL, key, "another-job",
               CT__TCP_R_AUTH);
        if (c->have_replay)
            forged(port, "replayed handshake", c->rec_hello, c->rec_proof, NULL, NULL,
                   CT__TCP_R_AUTH);
    }
}

/* A claim of a rank that has joined already: refused as taken, whatever
 * the proof (with a secret it could not be proven anyway). */
static void forge_taken(const attack_case *c, int taken_rank)
{
    unsigned char b[CT__TCP_HELLO_BYTES];
    ct__tcp_hello h;
    hello_for(&h, JOB, taken_rank, c->world, c->secret ? 1u : 0u);
    ct__tcp_put_hello(b, &h);
    forged(port, "taken rank", b, NULL, c->secret ? wrong_key : NULL, JOB, CT__TCP_R_TAKEN);
}

static int attacker(const attack_case *c)
{
    static int fds[FLOOD];
    int i, n = 0;
    double dl = now_s() + 20.0;
    /* Wait for rank 0's port, then fill it with idle connections. */
    while (c->idle > 0 && (fds[0] = connect_to(port)) < 0 && now_s() < dl)
        usleep(2000);
    if (c->idle > 0 && fds[0] >= 0)
        n = 1;
    for (; n < c->idle; n++)
        if ((fds[n] = connect_to(port)) < 0)
            break;
    area->idle_opened = n;
    if (c->forge) {
        /* Without idle ones, wait for rank 0's port all the same. */
        int probe = c->idle > 0 ? -1 : connect_to(port);
        while (c->idle == 0 && probe < 0 && now_s() < dl) {
            usleep(2000);
            probe = connect_to(port);
        }
        if (probe >= 0)
            close(probe);
        forge_all(c);
        area->answered_early = area->answered;
        area->phase = 1;
        /* A claim of rank 1 once it has joined, while rank 2 is still out. */
        if (c->world > 2) {
            while (!area->joined[1] && now_s() < dl)
                usleep(1000);
            forge_taken(c, 1);
        }
    }
    area->phase = 2;
    /* While they train: MASTER_PORT is closed by now; whatever connects is
     * refused just the same. */
    if (c->train_flood) {
        static int more[FLOOD];
        int m;
        while (!area->training && now_s() < dl)
            usleep(1000);
        for (m = 0; m < FLOOD; m++)
            more[m] = connect_to(port);
        forge_all(c);
        for (m = 0; m < FLOOD; m++)
            if (more[m] >= 0) {
                long got = drain(more[m], 0.01);
                if (got != 0)
                    bad_reply("%s: %ld bytes", "training flood", got);
                close(more[m]);
            }
    }
    area->attacker_done = 1;
    /* Idle connections hear nothing, ever: then they are dropped. */
    for (i = 0; i < n; i++) {
        long got = drain(fds[i], 0.2);
        if (got != 0)
            bad_reply("%s: %ld bytes", "idle connection", got);
        close(fds[i]);
    }
    return 0;
}

static int real_rank(int rank, const attack_case *c)
{
    ct__tcp *tcp = NULL;
    float *buf = malloc(N_RING * sizeof *buf);
    int it, go = 1;
    double t0;
    start_logging(rank);
    /* The stranger first; then rank 1; the others once the stranger has
     * claimed rank 1 too (bounded: a stranger that dies is no hang). */
    if (rank > 0 && c->late_ms > 0) {
        double dl = now_s() + 20.0;
        while (area->phase < (rank == 1 ? 1 : 2) && now_s() < dl)
            usleep(1000);
        usleep((useconds_t)c->late_ms * 1000);
    }
    t0 = now_s();
    if (ct__tcp_open("127.0.0.1", port, rank, c->world, 30.0, JOB, c->secret ? key : NULL,
                     &tcp) != CT_OK) {
        note(rank, "open: %s", ct_last_error());
        return 1;
    }
    out_area->elapsed[rank] = now_s() - t0;
    __atomic_fetch_add(&area->training, 1, __ATOMIC_SEQ_CST);
    /* Train until the stranger is done (rank 0 decides, so that every rank
     * makes the same calls), at least 5 rounds. */
    for (it = 0; go && it < 2000; it++) {
        float flag = rank == 0 && (it < 5 || !area->attacker_done || !c->train_flood) ? 1.0f
                                                                                     : 0.0f;
        size_t j;
        if (rank == 0 && !c->train_flood && it >= 5)
            flag = 0.0f;
        for (j = 0; j < N_SMALL; j++)
            buf[j] = value(rank, j);
        if (ct__tcp_allreduce_f32(tcp, buf, N_SMALL, 0) != CT_OK ||
            memcmp(buf, c->want_small, N_SMALL * sizeof *buf) != 0) {
            note(rank, "small allreduce %d: %s", it, ct_last_error());
            return 1;
        }
        for (j = 0; j < N_RING; j++)
            buf[j] = value(rank, j);
        if (ct__tcp_allreduce_f32(tcp, buf, N_RING, 0) != CT_OK ||
            memcmp(buf, c->want_ring, N_RING * sizeof *buf) != 0) {
            note(rank, "ring allreduce %d: %s", it, ct_last_error());
            return 1;
        }
        if (ct__tcp_allreduce_f32(tcp, &flag, 1, 0) != CT_OK) {
            note(rank, "flag: %s", ct_last_error());
            return 1;
        }
        go = flag != 0.0f;
    }
    ct__tcp_close(tcp);
    free(buf);
    return 0;
}

/* Every pending slot taken by a connection that sent one byte and stalls,
 * then bursts of fresh connections until the real ranks are in. A review
 * found that the stallers counted as having spoken and a burst accepted
 * after a real rank's connection could push it out before its hello was
 * read; only a whole valid hello counts now, and accepts come a few at a
 * time, each read at once. (On loopback here the old code let the ranks
 * in all the same: this holds the new one to it, it did not catch the
 * old.) */
static int churner(const attack_case *c)
{
    static int fds[CT__TCP_PENDING_MAX + CHURN_OPEN];
    int n = 0, churned = 0, i;
    double dl = now_s() + 20.0;
    while ((fds[0] = connect_to(port)) < 0 && now_s() < dl)
        usleep(2000);
    while (n < CT__TCP_PENDING_MAX && fds[n] >= 0) {
        send(fds[n], "C", 1, MSG_NOSIGNAL);
        if (++n < CT__TCP_PENDING_MAX)
            fds[n] = connect_to(port);
    }
    area->phase = 2; /* the real ranks may come */
    /* In bursts, so that rank 0 finds many queued at once. */
    while (area->training < c->world && churned < CHURN_MAX && now_s() < dl) {
        for (i = 0; i < CHURN_OPEN; i++, churned++)
            fds[n + i] = connect_to(port);
        for (i = 0; i < CHURN_OPEN; i++)
            if (fds[n + i] >= 0)
                close(fds[n + i]);
    }
    area->attacker_done = 1;
    for (i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return 0;
}

static int scenario_rank(int rank, int world, void *arg)
{
    const attack_case *c = arg;
    (void)world;
    if (rank < c->world)
        return real_rank(rank, c);
    return c->churn ? churner(c) : attacker(c);
}

static float *expected(int world, size_t n)
{
    float *w = malloc(n * sizeof *w);
    size_t j;
    ck_assert_ptr_nonnull(w);
    for (j = 0; j < n; j++) {
        int f = ct__tcp_sum_first_rank(n, world, j), r;
        float s = value(f, j);
        for (r = 1; r < world; r++)
            s += value((f + r) % world, j);
        w[j] = s;
    }
    return w;
}

static void run_scenario(attack_case *c)
{
    int r, bad, i;
    c->want_small = expected(c->world, N_SMALL);
    c->want_ring = expected(c->world, N_RING);
    new_port();
    bad = run_group(c->world + 1, scenario_rank, c);
    for (r = 0; r <= c->world; r++)
        ck_assert_msg(out_area->msg[r][0] == '\0', "rank %d: %s\nlog of rank 0:\n%s", r,
                      out_area->msg[r], area->log[0]);
    ck_assert_int_eq(bad, 0);
    ck_assert_msg(area->bad_replies == 0, "the stranger heard too much (%d): %s",
                  area->bad_replies, area->why);
    /* No handshake was held up by the strangers: each rank was in well
     * before a single stranger's deadline would have passed. */
    for (r = 0; r < c->world; r++)
        ck_assert_msg(out_area->elapsed[r] < CT__TCP_HANDSHAKE_S + 3.0,
                      "rank %d took %.2f s to join", r, out_area->elapsed[r]);
    /* Rank 0 logged the strangers by address; none of its warnings names a
     * real rank as the culprit. */
    if (c->forge) {
        char needle[64];
        int named = 0;
        for (i = 0; i < area->nports && !named; i++) {
            snprintf(needle, sizeof needle, "stranger at 127.0.0.1:%d", area->stranger_ports[i]);
            named = strstr(area->log[0], needle) != NULL;
        }
        ck_assert_msg(named, "no stranger named in rank 0's log:\n%s", area->log[0]);
    }
    /* Whoever was refused as a stranger was the stranger: no real rank's
     * connection among them, and no real rank was refused or doubted. */
    for (r = 0; r < c->world; r++) {
        const char *p = area->log[r];
        while ((p = strstr(p, "stranger at 127.0.0.1:")) != NULL) {
            int sp = atoi(p + strlen("stranger at 127.0.0.1:")), found = 0;
            for (i = 0; i < area->nports; i++)
                found |= area->stranger_ports[i] == sp;
            ck_assert_msg(found, "rank %d refused port %d, not the stranger's:\n%s", r, sp,
                          area->log[r]);
            p++;
        }
        ck_assert_msg(strstr(area->log[r], "refused this rank") == NULL &&
                      strstr(area->log[r], "failed to prove") == NULL,
                      "rank %d was refused or doubted:\n%s", r, area->log[r]);
    }
    /* The forgeries reached rank 0 while it was still waiting for ranks
     * (at least the dozen of the first round). */
    if (c->forge)
        ck_assert_msg(area->answered_early >= (c->secret ? 10 : 7),
                      "only %d forged hellos were answered",
                      area->answered_early);
    if (c->idle > 0) {
        ck_assert_int_eq(area->idle_opened, c->idle);
        ck_assert_msg(strstr(area->log[0], "connections from strangers in all") != NULL,
                      "rank 0 did not count the strangers:\n%s", area->log[0]);
    }
    ck_assert_msg(strstr(area->log[0], "rank 0 listens on 127.0.0.1 port") != NULL,
                  "rank 0 did not say what it binds:\n%s", area->log[0]);
    ck_assert_msg((strstr(area->log[0], "no secret is set") != NULL) == !c->secret,
                  "the no-secret warning (secret %d):\n%s", c->secret, area->log[0]);
    free(c->want_small);
    free(c->want_ring);
}

/* Without a secret: forged hellos (another world, a taken rank, ...) and
 * 200 idle connections neither stop nor slow the job. Before, one such
 * hello aborted every rank, and each idle connection held the accept loop
 * for 1 s, one after another. */
START_TEST(flood_no_secret)
{
    attack_case c;
    memset(&c, 0, sizeof c);
    c.world = 3, c.idle = FLOOD, c.forge = 1, c.train_flood = 1, c.late_ms = 300;
    run_scenario(&c);
}
END_TEST

/* With a secret: every stranger (no secret, a wrong one, the right one for
 * another job, a taken rank) is refused, during the rendezvous and during
 * training, and the job's sums are those of an undisturbed run. */
START_TEST(flood_with_secret)
{
    attack_case c;
    memset(&c, 0, sizeof c);
    c.world = 3, c.secret = 1, c.idle = FLOOD, c.forge = 1, c.train_flood = 1, c.late_ms = 300;
    run_scenario(&c);
}
END_TEST

/* Stalled connections and a churn of fresh ones neither keep a rank out nor
 * get it refused. */
START_TEST(stalled_and_churning_strangers)
{
    attack_case c;
    memset(&c, 0, sizeof c);
    c.world = 2, c.secret = 1, c.churn = 1, c.late_ms = 100;
    run_scenario(&c);
}
END_TEST

/* ---- a replayed handshake ------------------------------------------------------------ */

/* Records a real handshake for rank 1: the recorder holds the key (as a
 * rank of an earlier run did) and talks to a real rank 0, which admits it.
 * What it sent must be worth nothing to a later rank 0. */
static int record_rank(int rank, int world, void *arg)
{
    attack_case *c = arg;
    ct__tcp *tcp = NULL;
    unsigned char chal[CT__TCP_CHAL_BYTES], mac[32], v[CT__TCP_VERDICT_BYTES];
    ct__tcp_hello h;
    int fd = -1;
    double dl = now_s() + 10.0;
    (void)world;
    if (rank == 0) {
        start_logging(0);
        /* Fails once the recorder leaves: that is expected. */
        ct__tcp_open("127.0.0.1", port, 0, 2, 3.0, JOB, key, &tcp);
        ct__tcp_close(tcp);
        return 0;
    }
    while ((fd = connect_to(port)) < 0 && now_s() < dl)
        usleep(2000);
    hello_for(&h, JOB, 1, 2, 1);
    ct__tcp_put_hello(c->rec_hello, &h);
    if (fd < 0 || send(fd, c->rec_hello, sizeof c->rec_hello, MSG_NOSIGNAL) < 0 ||
        read_full(fd, chal, sizeof chal, 10.0) != 0) {
        note(1, "recorder: no challenge");
        return 1;
    }
    ct__tcp_mac(key, 0, JOB, c->rec_hello, chal, mac);
    ct__tcp_put_tail(c->rec_proof, CT__TCP_PROOF, 0, mac);
    if (send(fd, c->rec_proof, sizeof c->rec_proof, MSG_NOSIGNAL) < 0 ||
        read_full(fd, v, sizeof v, 10.0) != 0 || ntohl(*(uint32_t *)(v + 12)) != CT__TCP_OK) {
        note(1, "recorder: not admitted with the right key");
        return 1;
    }
    /* Hand the recording to the parent through the shared page. */
    memcpy(area->log[MAX_WORLD - 1], c->rec_hello, sizeof c->rec_hello);
    memcpy(area->log[MAX_WORLD - 1] + sizeof c->rec_hello, c->rec_proof, sizeof c->rec_proof);
    close(fd);
    return 0;
}

START_TEST(replayed_handshake)
{
    attack_case c;
    memset(&c, 0, sizeof c);
    new_port();
    ck_assert_int_eq(run_group(2, record_rank, &c), 0);
    memcpy(c.rec_hello, area->log[MAX_WORLD - 1], sizeof c.rec_hello);
    memcpy(c.rec_proof, area->log[MAX_WORLD - 1] + sizeof c.rec_hello, sizeof c.rec_proof);
    memset(area, 0, sizeof *area);
    c.world = 2, c.secret = 1, c.forge = 1, c.have_replay = 1, c.late_ms = 300;
    run_scenario(&c);
}
END_TEST

/* ---- an authenticated rank 0 that sends what does not fit ------------------------ */

typedef struct {
    const char *name;
    uint32_t kind, len;      /* the header after the handshake */
    int bad_port, long_host; /* table entry of rank 1 */
    const unsigned char *fake_key; /* rank 0's key (a stranger's: another) */
    const char *expect;      /* in rank 1's error */
} evil_case;

static int evil_rank(int rank, int world, void *arg)
{
    const evil_case *e = arg;
    if (rank == 1) {
        ct__tcp *tcp = NULL;
        ct_status st = ct__tcp_open("127.0.0.1", port, 1, world, 3.0, JOB, key, &tcp);
        out_area->code[1] = (int)st;
        snprintf(out_area->msg[1], MSG_LEN, "%s", st == CT_OK ? "admitted" : ct_last_error());
        ct__tcp_close(tcp);
        return 0;
    }
    {
        struct sockaddr_in a;
        int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0), fd;
        unsigned char hello[CT__TCP_HELLO_BYTES], chal[CT__TCP_CHAL_BYTES], nonce[32];
        unsigned char proof[CT__TCP_PROOF_BYTES], v[CT__TCP_VERDICT_BYTES], mac[32];
        unsigned char job_id[32], msg[12 + 2 * 68];
        uint32_t w;
        setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_port = htons((uint16_t)port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 8) != 0 ||
            (fd = accept(lfd, NULL, NULL)) < 0 || read_full(fd, hello, sizeof hello, 5.0) != 0) {
            note(0, "fake rank 0: no hello");
            return 1;
        }
        ct__tcp_job_id(JOB, job_id);
        ct__random_bytes(nonce, sizeof nonce);
        ct__tcp_put_chal(chal, 1, 0, world, job_id, nonce);
        if (send(fd, chal, sizeof chal, 0) < 0 || read_full(fd, proof, sizeof proof, 5.0) != 0) {
            note(0, "fake rank 0: no proof");
            return 1;
        }
        ct__tcp_mac(e->fake_key, 1, JOB, hello, chal, mac);
        ct__tcp_put_tail(v, CT__TCP_VERDICT, CT__TCP_OK, mac);
        send(fd, v, sizeof v, MSG_NOSIGNAL);
        /* The header, then a table of two entries. */
        memset(msg, 0, sizeof msg);
        w = htonl(CT__TCP_MAGIC), memcpy(msg, &w, 4);
        w = htonl(e->kind), memcpy(msg + 4, &w, 4);
        w = htonl(e->len), memcpy(msg + 8, &w, 4);
        w = htonl(1234), memcpy(msg + 12, &w, 4);
        memcpy(msg + 16, "127.0.0.1", 9);
        w = htonl(e->bad_port ? 70000u : 1235u), memcpy(msg + 12 + 68, &w, 4);
        if (e->long_host)
            memset(msg + 16 + 68, 'a', 64);
        else
            memcpy(msg + 16 + 68, "127.0.0.1", 9);
        send(fd, msg, sizeof msg, MSG_NOSIGNAL);
        drain(fd, 8.0); /* until rank 1 gives up */
        close(fd);
        close(lfd);
    }
    return 0;
}

static void run_evil(const evil_case *e)
{
    new_port();
    check_ranks_clean(1, run_group(2, evil_rank, (void *)e));
    ck_assert_msg(WIFEXITED(out_area->status[1]) && WEXITSTATUS(out_area->status[1]) == 0,
                  "%s: rank 1 died (status %d)", e->name, out_area->status[1]);
    ck_assert_msg(out_area->code[1] == CT_ERR_DIST && strstr(out_area->msg[1], e->expect),
                  "%s: rank 1 got %d '%s' (want CT_ERR_DIST with '%s')", e->name,
                  out_area->code[1], out_area->msg[1], e->expect);
}

START_TEST(evil_master)
{
    static const evil_case cases[] = {
        { "table too long", 2, 3, 0, 0, key, "table for another world" },
        { "table too short", 2, 1, 0, 0, key, "table for another world" },
        { "huge abort text", 3, 0x7fffffffu, 0, 0, key, "abort of 2147483647 bytes" },
        { "port out of range", 2, 2, 1, 0, key, "bad address for rank 1" },
        { "host not terminated", 2, 2, 0, 1, key, "bad address for rank 1" },
        { "unknown message", 99, 2, 0, 0, key, "rank 0" },
        /* A rank 0 that cannot prove it holds the key is no rank 0. */
        { "impostor rank 0", 2, 2, 0, 0, wrong_key, "failed to authenticate" },
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_evil(&cases[i]);
}
END_TEST

/* A rank that stays away while strangers knock: rank 0's error names the
 * missing rank and counts the strangers by address, blaming no real rank
 * for them. */
static int absent_rank(int rank, int world, void *arg)
{
    attack_case *c = arg;
    (void)world;
    if (rank == 1) {
        double dl = now_s() + 10.0;
        int probe;
        while ((probe = connect_to(port)) < 0 && now_s() < dl) /* rank 0 listens */
            usleep(2000);
        if (probe >= 0)
            close(probe);
        forge_all(c);
        return 0;
    }
    {
        ct__tcp *tcp = NULL;
        ct_status st;
        start_logging(0);
        st = ct__tcp_open("127.0.0.1", port, 0, 2, 2.5, JOB, key, &tcp);
        out_area->code[0] = (int)st;
        snprintf(out_area->msg[0], MSG_LEN, "%s", st == CT_OK ? "" : ct_last_error());
        ct__tcp_close(tcp);
    }
    return 0;
}

START_TEST(absent_rank_with_strangers)
{
    attack_case c;
    memset(&c, 0, sizeof c);
    c.world = 2, c.secret = 1;
    new_port();
    run_group(2, absent_rank, &c);
    ck_assert_int_eq(out_area->code[0], CT_ERR_DIST);
    ck_assert_msg(strstr(out_area->msg[0], "tcp open: rank 1 did not join within 2.5 s") ==
                      out_area->msg[0] &&
                      strstr(out_area->msg[0], "connections from strangers meanwhile; the last "
                                               "from 127.0.0.1:") != NULL,
                  "'%s'", out_area->msg[0]);
    ck_assert_msg(area->bad_replies == 0, "%s", area->why);
}
END_TEST

/* ---- through the public API: the secret option ----------------------------------- */

/* Ranks given the secret through ct_dist_options (the job name left to the
 * library) train together; a rank given another secret is refused, and
 * each side says why: rank 0 that rank 1 did not join and that a stranger
 * failed to authenticate, rank 1 that rank 0 refused it. */
static int api_rank(int rank, int world, void *arg)
{
    const char *const *secrets = arg;
    ct_dist_options *o = NULL;
    ct_dist *d = NULL;
    char v[32];
    float x = (float)(rank + 1);
    ct_status st;
    start_logging(rank);
    if (ct_dist_options_create(&o) != CT_OK)
        return 2;
    snprintf(v, sizeof v, "%d", rank);
    ct_dist_options_set(o, "rank", v);
    snprintf(v, sizeof v, "%d", world);
    ct_dist_options_set(o, "world_size", v);
    ct_dist_options_set(o, "local_rank", "0");
    ct_dist_options_set(o, "local_world_size", "1");
    ct_dist_options_set(o, "master_addr", "127.0.0.1");
    snprintf(v, sizeof v, "%d", port);
    ct_dist_options_set(o, "master_port", v);
    ct_dist_options_set(o, "backend", "tcp");
    ct_dist_options_set(o, "timeout", "2.5");
    ct_dist_options_set(o, "secret", secrets[rank]);
    st = ct_dist_create(o, &d);
    if (st == CT_OK)
        st = ct_dist_allreduce(d, &x, 1, CT_DTYPE_F32, CT_REDUCE_SUM);
    out_area->code[rank] = (int)st;
    snprintf(out_area->msg[rank], MSG_LEN, "%s", st == CT_OK ? "" : ct_last_error());
    if (st == CT_OK && x != 3.0f)
        snprintf(out_area->msg[rank], MSG_LEN, "sum %g", x);
    ct_dist_free(d);
    ct_dist_options_free(o);
    return 0;
}

START_TEST(api_secret)
{
    static const char *const same[] = { "0123456789abcdef0123456789abcdef",
                                        "0123456789abcdef0123456789abcdef" };
    static const char *const other[] = { "0123456789abcdef0123456789abcdef",
                                         "fedcba9876543210fedcba9876543210" };
    new_port();
    check_ranks_clean(2, run_group(2, api_rank, (void *)same));
    ck_assert_int_eq(out_area->code[0], CT_OK);
    ck_assert_msg(strstr(area->log[0], "authenticated") != NULL, "%s", area->log[0]);
    memset(area, 0, sizeof *area);
    new_port();
    run_group(2, api_rank, (void *)other);
    ck_assert_int_eq(out_area->code[0], CT_ERR_DIST);
    ck_assert_msg(strstr(out_area->msg[0], "rank 1 did not join within 2.5 s") != NULL &&
                      strstr(out_area->msg[0], "authentication failed") != NULL,
                  "rank 0: '%s'", out_area->msg[0]);
    ck_assert_int_eq(out_area->code[1], CT_ERR_DIST);
    ck_assert_msg(strstr(out_area->msg[1], "refused this rank: authentication failed") != NULL,
                  "rank 1: '%s'", out_area->msg[1]);
}
END_TEST

/* ---- the ring links' listeners ------------------------------------------------------- */

/* A rank's ring listener meets the same strangers as MASTER_PORT: 100 idle
 * connections and forged ring and control claims (no key, a wrong key)
 * do not keep its left neighbour out, nor slow it down. Run on the
 * handshake set directly, as ring_connect uses it: rank 1 accepts, rank 0
 * connects once the stranger (process 2) is in. */
static int ring_lfd = -1, ring_port;

static int ring_side(int rank, int world, void *arg)
{
    ct__tcp_self self = { JOB, key, rank, 2 };
    ct__tcp_hs *hs = NULL;
    ct__tcp_hs_event ev;
    double t0, dl = now_s() + 20.0;
    (void)world, (void)arg;
    start_logging(rank);
    if (rank == 2) { /* the stranger */
        static int idle[100];
        unsigned char b[CT__TCP_HELLO_BYTES];
        ct__tcp_hello h;
        int i;
        for (i = 0; i < 100; i++)
            idle[i] = connect_to(ring_port);
        hello_for(&h, JOB, 0, 2, 1);
        h.kind = CT__TCP_RING, h.port = 0, h.host[0] = '\0';
        ct__tcp_put_hello(b, &h);
        forged(ring_port, "ring claim, no key", b, NULL, NULL, JOB, CT__TCP_R_AUTH);
        forged(ring_port, "ring claim, wrong key", b, NULL, wrong_key, JOB, CT__TCP_R_AUTH);
        h.kind = CT__TCP_CTRL;
        ct__tcp_put_hello(b, &h);
        forged(ring_port, "control claim", b, NULL, NULL, JOB, CT__TCP_R_RANK);
        area->phase = 1;
        while (!area->attacker_done && now_s() < dl)
            usleep(1000);
        for (i = 0; i < 100; i++)
            if (idle[i] >= 0) {
                long got = drain(idle[i], 0.2);
                if (got != 0)
                    bad_reply("%s: %ld bytes", "idle ring connection", got);
                close(idle[i]);
            }
        return 0;
    }
    if (ct__tcp_hs_create(&self, rank == 1 ? ring_lfd : -1, &hs) != CT_OK)
        return 2;
    if (rank == 1) {
        ct__tcp_hs_expect(hs, CT__TCP_RING, 0);
    } else {
        while (area->phase < 1 && now_s() < dl)
            usleep(1000);
        ct__tcp_hs_connect(hs, "127.0.0.1", ring_port, 1, CT__TCP_RING, NULL, NULL);
    }
    t0 = now_s();
    if (ct__tcp_hs_wait(hs, now_s() + 15.0, &ev) != CT_OK || ev.fd < 0) {
        note(rank, "no link within 15 s: %s", ct__tcp_hs_target_status(hs, 0));
        ct__tcp_hs_free(hs);
        return 1;
    }
    out_area->elapsed[rank] = now_s() - t0;
    if (rank == 1 && (ev.hello.kind != CT__TCP_RING || ev.hello.rank != 0))
        note(rank, "got kind %u from rank %d", ev.hello.kind, ev.hello.rank);
    if (rank == 0)
        area->attacker_done = 1;
    close(ev.fd);
    ct__tcp_hs_free(hs);
    return 0;
}

START_TEST(ring_listener_strangers)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    ring_lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    ck_assert_int_ge(ring_lfd, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(ring_lfd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(ring_lfd, 256), 0);
    ck_assert_int_eq(getsockname(ring_lfd, (struct sockaddr *)&a, &len), 0);
    ring_port = ntohs(a.sin_port);
    check_ranks_clean(3, fork_group(3, ring_side, NULL, NULL));
    close(ring_lfd);
    ck_assert_msg(area->bad_replies == 0, "%s", area->why);
    ck_assert_msg(area->answered >= 3, "only %d forged claims answered", area->answered);
    /* From rank 0's first attempt: the idle connections ahead of it in the
     * queue held nothing up. */
    ck_assert_msg(out_area->elapsed[0] < CT__TCP_HANDSHAKE_S, "rank 0 took %.2f s",
                  out_area->elapsed[0]);
    ck_assert_msg(strstr(area->log[1], "stranger at 127.0.0.1:") != NULL, "%s", area->log[1]);
}
END_TEST

/* Without a secret the warning comes once per process, however many
 * groups it opens (here two rank 0s whose ranks never come). */
static int warn_twice_rank(int rank, int world, void *arg)
{
    ct__tcp *tcp = NULL;
    const char *p;
    int k, n = 0;
    (void)world, (void)arg;
    start_logging(rank);
    for (k = 0; k < 2; k++)
        if (ct__tcp_open("127.0.0.1", port, 0, 2, 0.5, JOB, NULL, &tcp) != CT_ERR_DIST) {
            note(0, "open %d without rank 1: %s", k, ct_last_error());
            return 1;
        }
    for (p = area->log[0]; (p = strstr(p, "no secret is set")) != NULL; p++)
        n++;
    if (n != 1)
        note(0, "%d no-secret warnings:\n%s", n, area->log[0]);
    return 0;
}

START_TEST(no_secret_warns_once)
{
    new_port();
    check_ranks_clean(1, run_group(1, warn_twice_rank, NULL));
}
END_TEST

static void setup(void)
{
    map_out_area();
    area = mmap(NULL, sizeof *area, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ck_assert(area != MAP_FAILED);
    memset(area, 0, sizeof *area);
}

static void teardown(void)
{
    munmap(area, sizeof *area);
    unmap_out_area();
    close_port_holder();
}

TCase *tcp_attack_tcase(void)
{
    TCase *tc = tcase_create("tcp_attack");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, flood_no_secret);
    tcase_add_test(tc, flood_with_secret);
    tcase_add_test(tc, stalled_and_churning_strangers);
    tcase_add_test(tc, replayed_handshake);
    tcase_add_test(tc, evil_master);
    tcase_add_test(tc, absent_rank_with_strangers);
    tcase_add_test(tc, api_secret);
    tcase_add_test(tc, ring_listener_strangers);
    tcase_add_test(tc, no_secret_warns_once);
    return tc;
}
