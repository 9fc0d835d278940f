/* cputrain-run's rendezvous of several machines' launchers (--nnodes
 * MIN:MAX with --rdzv_endpoint): the host, and each launcher as a member. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2 */
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netdb.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <pthread.h>

#include <cputrain/cputrain.h>

#include "run.h"

/* Each machine's launcher is a node. The one that can listen on the
 * endpoint (it is its own address, and nobody listens there yet) forks the
 * rendezvous host there; every launcher, that one included, then connects
 * and says JOIN <nproc> <is_host>. The host forms a round once at least MIN
 * nodes have joined and none of the last round is still running, waiting
 * last_call_timeout for more unless MAX are there: GO <round> <group_rank>
 * <nnodes> <first rank> <world> <master_port> <restart>, the hosting node
 * group rank 0 (its address is MASTER_ADDR for the workers). In a round: a
 * node whose worker failed says FAIL <code>, and a node that vanishes
 * (its connection closes) counts as one; the others hear RESTART kill, and
 * every node joins again (one restart used). A node joining while fewer
 * than MAX run makes the others hear RESTART stop (SIGTERM to the workers:
 * a checkpoint at the next step) and the next round is wider, no restart
 * used. DONE from every node ends the job: EXIT 0; restarts used up: EXIT
 * <code of the failure>. The workers resume from the newest checkpoint and
 * the trainer keeps the global batch at the new width.
 *
 * Every connection to the rendezvous first goes through the tcp backend's
 * handshake (dist/tcp_auth.h): a mutual HMAC-SHA256 challenge-response over
 * fresh nonces from both sides on the job's secret (CPUTRAIN_DIST_SECRET_FILE
 * or CPUTRAIN_DIST_SECRET, read as the library reads them), with the
 * rendezvous id bound in, the secret never on the wire, a deadline per
 * handshake and many handshakes at once, so a silent stranger holds up
 * nobody. Only a launcher that proved itself becomes a member; strangers are
 * dropped and logged by address before a byte of theirs is parsed as a
 * message. Without a secret the handshake runs with empty proofs (anyone
 * who reaches the endpoint joins) and the launcher warns once. The
 * handshake's rank is a random slot the host expects (RDZV_SLOTS), only to
 * keep two launchers' handshakes apart: the host assigns the group ranks. */

/* The library's messages (the handshake's strangers, the secret's
 * warnings) on stderr, prefixed as ours. */
static void library_log(ct_log_level level, const char *message, void *user)
{
    (void)level;
    (void)user;
    fprintf(stderr, "cputrain-run: rendezvous: %s\n", message);
}

/* The rendezvous of this job (its id bound into every proof: another run
 * id, no admission), or NULL (said why). */
static ct_rendezvous *rdzv_open(const opts *o)
{
    char job[300];
    ct_rendezvous *r;
    snprintf(job, sizeof job, "cputrain-run rendezvous v1 %s", o->rdzv_id);
    if (ct_rendezvous_create(NULL, job, &r) != CT_OK) {
        say("%s", ct_last_error());
        return NULL;
    }
    if (!ct_rendezvous_has_secret(r))
        say("rendezvous: no secret is set, so the rendezvous cannot tell launchers from "
            "strangers: the endpoint %s:%d must be reachable only from trusted hosts. Set "
            "CPUTRAIN_DIST_SECRET_FILE (or CPUTRAIN_DIST_SECRET) on every node to "
            "authenticate them", o->master_addr, o->master_port);
    return r;
}

enum { M_NEW, M_JOINED, M_RUNNING, M_DONE };

typedef struct member {
    conn c;
    int state, nproc, host;
    long order; /* when it joined */
    char addr[80];
} member;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A listening socket on the endpoint when it is one of this machine's
 * addresses and free; -1 otherwise (then another launcher hosts it). */
static int try_host(const opts *o)
{
    struct addrinfo hints, *res = NULL, *ai;
    char port[16];
    int fd = -1, one = 1;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port, sizeof port, "%d", o->master_port);
    if (getaddrinfo(o->master_addr, port, &hints, &res) != 0)
        return -1;
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        if ((fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0)) < 0)
            continue;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

static void broadcast(member *m, int n, const char *line, int only_state)
{
    for (int i = 0; i < n; i++)
        if (m[i].c.fd >= 0 && (only_state < 0 || m[i].state == only_state))
            send_line(m[i].c.fd, "%s", line);
}

/* The door of the rendezvous host: a thread that runs the handshakes of
 * everyone who connects (ct_rendezvous_accept, many at once with a
 * deadline each) and hands the host each connection that proved itself,
 * through a pipe. */
typedef struct door_msg {
    int fd;
    char addr[80];
} door_msg;

typedef struct door {
    ct_rendezvous *r;
    int lfd, out;
} door;

static void *door_main(void *arg)
{
    door *d = arg;
    for (;;) {
        door_msg msg;
        memset(&msg, 0, sizeof msg);
        if (ct_rendezvous_accept(d->r, d->lfd, 3600, &msg.fd, msg.addr, sizeof msg.addr) !=
            CT_OK) {
            say("rendezvous: %s", ct_last_error());
            _exit(1);
        }
        if (msg.fd >= 0 && write(d->out, &msg, sizeof msg) != (ssize_t)sizeof msg)
            close(msg.fd);
    }
    return NULL;
}

/* Starts the door on lfd; the read end of its pipe, or -1. */
static int door_open(ct_rendezvous *r, int lfd)
{
    static door d;
    pthread_t t;
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0)
        return -1;
    d.r = r;
    d.lfd = lfd;
    d.out = pfd[1];
    if (pthread_create(&t, NULL, door_main, &d) != 0)
        return -1;
    pthread_detach(t);
    return pfd[0];
}

/* 1 when a member other than i, still connected, says it is the hosting
 * launcher (only one is). */
static int host_claimed(const member *m, int n, int i)
{
    for (int j = 0; j < n; j++)
        if (j != i && m[j].c.fd >= 0 && m[j].host && m[j].order > 0)
            return 1;
    return 0;
}

/* The rendezvous host: a child of the hosting launcher. Never returns. */
static void rdzv_host(const opts *o, ct_rendezvous *r, int lfd)
{
    static member m[MAX_WORKERS + 64];
    int n = 0, running = 0, restarts = 0, round = 0, code = 1;
    long joins = 0;
    double last_call = -1, gather_since = now_s();
    int dfd = door_open(r, lfd);
    if (dfd < 0) {
        say("rendezvous: cannot start the host's handshakes: %s", strerror(errno));
        _exit(1);
    }
    say("rendezvous: hosting at %s:%d for %d to %d nodes (%s)", o->master_addr, o->master_port,
        o->nnodes_min, o->nnodes_max,
        ct_rendezvous_has_secret(r) ? "every launcher proves it holds the job's secret"
                       : "no secret: unauthenticated");
    for (;;) {
        struct pollfd p[MAX_WORKERS + 65];
        int np = 1, joined = 0, busy = 0, timeout = -1;
        double t = now_s();
        p[0].fd = dfd;
        p[0].events = POLLIN;
        for (int i = 0; i < n; i++) {
            joined += m[i].state == M_JOINED;
            busy += m[i].state == M_RUNNING || m[i].state == M_DONE;
        }
        if (!running) {
            /* forming a round: MIN joined and nobody of the last one left running */
            if (!busy && joined >= o->nnodes_min) {
                if (last_call < 0)
                    last_call = joined >= o->nnodes_max ? t : t + o->last_call_timeout;
            } else {
                last_call = -1;
            }
            if (last_call < 0 && t - gather_since > o->join_timeout) {
                char line[64];
                say("rendezvous: %d of at least %d nodes joined within join_timeout %g s: the "
                    "job ends", joined, o->nnodes_min, o->join_timeout);
                snprintf(line, sizeof line, "EXIT %d", code);
                broadcast(m, n, line, -1);
                _exit(code);
            }
            if (last_call >= 0 && t >= last_call) {
                int order[MAX_WORKERS], k = 0, world = 0, rank0 = 0;
                int port = free_port(htonl(INADDR_ANY));
                /* the hosting node first: rank 0 runs at MASTER_ADDR */
                for (int pass = 0; pass < 2; pass++)
                    for (int i = 0; i < n && k < o->nnodes_max; i++)
                        if (m[i].state == M_JOINED && m[i].host == !pass)
                            order[k++] = i;
                for (int j = 0; j < k; j++)
                    world += m[order[j]].nproc;
                round++;
                say("rendezvous: round %d: %d node%s, %d worker%s (restart %d of %d)", round, k,
                    k == 1 ? "" : "s", world, world == 1 ? "" : "s", restarts, o->max_restarts);
                for (int j = 0; j < k; j++) {
                    member *x = &m[order[j]];
                    send_line(x->c.fd, "GO %d %d %d %d %d %d %d", round, j, k, rank0, world, port,
                              restarts);
                    rank0 += x->nproc;
                    x->state = M_RUNNING;
                }
                running = 1;
                last_call = -1;
                continue;
            }
            if (last_call >= 0)
                timeout = (int)((last_call - t) * 1000) + 1;
            else
                timeout = 1000;
        }
        for (int i = 0; i < n; i++) {
            p[np].fd = m[i].c.fd;
            p[np++].events = POLLIN;
        }
        if (poll(p, (nfds_t)np, timeout) < 0 && errno != EINTR)
            _exit(1);
        if (p[0].revents & POLLIN) {
            door_msg d;
            if (read(dfd, &d, sizeof d) == (ssize_t)sizeof d) {
                if (n < (int)(sizeof m / sizeof *m)) {
                    say("rendezvous: a launcher at %s %s", d.addr,
                        ct_rendezvous_has_secret(r) ? "proved it holds the job's secret" : "connected");
                    memset(&m[n], 0, sizeof m[n]);
                    snprintf(m[n].addr, sizeof m[n].addr, "%s", d.addr);
                    m[n].c.fd = d.fd;
                    m[n].state = M_NEW;
                    n++;
                } else {
                    say("rendezvous: %d connections already: the launcher at %s is turned "
                        "away", n, d.addr);
                    close(d.fd);
                }
            }
        }
        for (int i = 0; i < n; i++) {
            char line[512];
            int got, lost = 0;
            if (!p[i + 1].revents)
                continue;
            while ((got = next_line(&m[i].c, line, sizeof line, 1)) == 1) {
                long v[2];
                char shown[64];
                /* JOIN <nproc in [1, 1024]> <0, or 1 from the hosting
                 * launcher only>; FAIL <exit code in [1, 255]>; DONE. */
                if (parse_msg(line, "JOIN", 2, v) && v[0] >= 1 && v[0] <= MAX_WORKERS &&
                    (v[1] == 0 || (v[1] == 1 && !host_claimed(m, n, i)))) {
                    int was_new = m[i].state == M_NEW && m[i].order == 0;
                    m[i].nproc = (int)v[0];
                    m[i].host = v[1] == 1;
                    m[i].state = M_JOINED;
                    m[i].order = ++joins;
                    if (running && was_new) {
                        int now_running = 0;
                        for (int j = 0; j < n; j++)
                            now_running += m[j].state == M_RUNNING || m[j].state == M_DONE;
                        if (now_running < o->nnodes_max) {
                            say("rendezvous: a node joins: the %d running stop at their next "
                                "step (a checkpoint) and the next round is wider", now_running);
                            broadcast(m, n, "RESTART stop", M_RUNNING);
                            running = 0;
                            gather_since = now_s();
                        }
                    }
                } else if (parse_msg(line, "FAIL", 1, v) && v[0] >= 1 && v[0] <= 255) {
                    if (m[i].state == M_RUNNING) {
                        m[i].state = M_NEW;
                        if (running) {
                            code = (int)v[0];
                            lost = 2;
                        }
                    } /* else late news of a round already stopped: the node joins again */
                } else if (!strcmp(line, "DONE")) {
                    if (m[i].state == M_RUNNING)
                        m[i].state = M_DONE;
                } else {
                    say("rendezvous: the launcher at %s sent '%s', not this protocol: "
                        "dropped", m[i].addr, printable(line, shown));
                    lost = 1;
                    break;
                }
                if (lost == 2)
                    break;
            }
            if (got == -3)
                say("rendezvous: the launcher at %s sent a line of more than %zu bytes, not "
                    "this protocol: dropped", m[i].addr, sizeof line - 1);
            if (got < 0 || lost == 1) {
                int was_in_round = m[i].state == M_RUNNING || m[i].state == M_DONE;
                close(m[i].c.fd);
                m[i].c.fd = -1;
                m[i].state = M_NEW;
                if (running && was_in_round) {
                    say("rendezvous: node %ld left the round", m[i].order);
                    code = 1;
                    lost = 2;
                }
            }
            if (lost == 2) {
                running = 0;
                gather_since = now_s();
                if (restarts >= o->max_restarts) {
                    char out[64];
                    say("rendezvous: a node failed and the %d restart%s are used up: exit %d",
                        o->max_restarts, o->max_restarts == 1 ? "" : "s", code);
                    snprintf(out, sizeof out, "EXIT %d", code);
                    broadcast(m, n, out, -1);
                    _exit(code);
                }
                restarts++;
                broadcast(m, n, "RESTART kill", M_RUNNING);
                broadcast(m, n, "RESTART kill", M_DONE);
            }
        }
        /* forget closed connections */
        {
            int k = 0;
            for (int i = 0; i < n; i++)
                if (m[i].c.fd >= 0)
                    m[k++] = m[i];
            n = k;
        }
        if (running) {
            int done = 0, in_round = 0;
            for (int i = 0; i < n; i++) {
                in_round += m[i].state == M_RUNNING || m[i].state == M_DONE;
                done += m[i].state == M_DONE;
            }
            if (in_round > 0 && done == in_round) {
                say("rendezvous: every node finished: exit 0");
                broadcast(m, n, "EXIT 0", -1);
                _exit(0);
            }
        }
    }
}

/* Waits for the next line of the rendezvous, our own signals aside:
 * SIGINT / SIGTERM while no round runs end the launcher. */
static int wait_line(conn *c, char *line, size_t size)
{
    int got;
    while ((got = next_line(c, line, size, 0)) == 0) {
        struct pollfd p[2] = {{c->fd, POLLIN, 0}, {wake_pipe[0], POLLIN, 0}};
        char buf[64];
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            return -1;
        while (read(wake_pipe[0], buf, sizeof buf) > 0) {
        }
        if (pending_int || pending_term)
            return -2;
        if (p[0].revents && (got = next_line(c, line, size, 1)) != 0)
            return got;
    }
    return got;
}

int agent_main(const opts *o, char **argv)
{
    static group g;
    conn c;
    ct_rendezvous *r;
    int lfd, host = 0, number = 0;
    pid_t host_pid = -1;
    double start = now_s();
    char line[512];
    memset(&c, 0, sizeof c);
    ct_log_set_callback(library_log, NULL);
    if (!(r = rdzv_open(o)))
        return 2;
    /* The host may not be up (or the endpoint's name not resolve, a pod's
     * own Service before it is ready) yet: try to host, then to join,
     * until one works. */
    for (;;) {
        ct_status st;
        double until = start + o->join_timeout < now_s() + 3 ? start + o->join_timeout
                                                             : now_s() + 3;
        if (!host && (lfd = try_host(o)) >= 0) {
            fflush(NULL);
            if ((host_pid = fork()) == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL); /* no host without its launcher */
                signal(SIGINT, SIG_IGN);           /* the launcher decides */
                signal(SIGTERM, SIG_DFL);
                rdzv_host(o, r, lfd);
            }
            close(lfd);
            host = host_pid > 0;
        }
        /* A few seconds of tries (the handshake retries the connect), then
         * back to hosting, should nobody host yet. */
        st = ct_rendezvous_connect(r, o->master_addr, o->master_port,
                                   until > now_s() ? until - now_s() : 0, &c.fd);
        if (st == CT_OK)
            break;
        if (st != CT_ERR_IO) { /* refused: knocking again will not help */
            say("rendezvous: cannot join at %s:%d: %s", o->master_addr, o->master_port,
                ct_last_error());
            ct_rendezvous_free(r);
            return 1;
        }
        if (now_s() - start > o->join_timeout) {
            say("rendezvous: cannot reach %s:%d within join_timeout %g s: %s", o->master_addr,
                o->master_port, o->join_timeout, ct_last_error());
            ct_rendezvous_free(r);
            return 1;
        }
        if (pending_int || pending_term) {
            ct_rendezvous_free(r);
            return 128 + (pending_int ? SIGINT : SIGTERM);
        }
    }
    ct_rendezvous_free(r); /* the host child has its copy */
    say("rendezvous: %s %s:%d for %d to %d nodes, %d worker%s here", host ? "hosting" : "joining",
        o->master_addr, o->master_port, o->nnodes_min, o->nnodes_max, o->nproc,
        o->nproc == 1 ? "" : "s");
    if (send_line(c.fd, "JOIN %d %d", o->nproc, host) != 0)
        return say("rendezvous: cannot send to %s:%d", o->master_addr, o->master_port), 1;
    for (;;) {
        int round, grank, nnodes, rank0, world, port, restart, got;
        attempt a;
        outcome r;
        if ((got = wait_line(&c, line, sizeof line)) == -2) {
            int sig = pending_int ? SIGINT : SIGTERM;
            say("%s received while no round runs: leaving the job", sig_name(sig));
            return 128 + sig;
        }
        if (got < 0) {
            say("rendezvous: the connection to %s:%d is gone", o->master_addr, o->master_port);
            return 1;
        }
        long v[7];
        if (parse_msg(line, "EXIT", 1, v) && v[0] >= 0 && v[0] <= 255) {
            if (host_pid > 0)
                waitpid(host_pid, NULL, 0);
            return (int)v[0];
        }
        if (!strcmp(line, "RESTART kill") || !strcmp(line, "RESTART stop")) {
            /* after our DONE: join the next round */
            if (send_line(c.fd, "JOIN %d %d", o->nproc, host) != 0)
                return 1;
            continue;
        }
        /* GO <round> <group rank> <nodes> <first rank> <world> <port> <restart>,
         * each within what any rendezvous host can send (its --nnodes and
         * --max_restarts are its own, not necessarily ours): our ranks
         * within the world, a port, no counter overflowing an int. */
        if (!parse_msg(line, "GO", 7, v) || v[0] < 1 || v[0] > INT_MAX || v[2] < 1 ||
            v[2] > MAX_WORKERS + 64 || v[1] < 0 || v[1] >= v[2] || v[4] < o->nproc ||
            v[4] > (1 << 24) || v[3] < 0 || v[3] > v[4] - o->nproc || v[5] < 1 ||
            v[5] > 65535 || v[6] < 0 || v[6] > INT_MAX) {
            char shown[64];
            say("rendezvous: unexpected '%s' from %s:%d", printable(line, shown),
                o->master_addr, o->master_port);
            return 1;
        }
        round = (int)v[0], grank = (int)v[1], nnodes = (int)v[2], rank0 = (int)v[3];
        world = (int)v[4], port = (int)v[5], restart = (int)v[6];
        memset(&a, 0, sizeof a);
        a.number = number++;
        a.restart = restart;
        a.local_world = o->nproc;
        a.group_rank = grank;
        a.group_world = nnodes;
        a.world = world;
        a.rank0 = rank0;
        snprintf(a.job, sizeof a.job, "cputrain-run-%s-%s-%d-%d", o->rdzv_id, o->master_addr,
                 port, round);
        g.n = o->nproc;
        for (int i = 0; i < g.n; i++) {
            g.w[i].local_rank = i;
            g.w[i].rank = rank0 + i;
            g.w[i].slot = i;
            g.w[i].pid = 0;
        }
        say("round %d: node %d of %d, ranks %d-%d of %d, MASTER_PORT %d (restart %d)", round,
            grank, nnodes, rank0, rank0 + o->nproc - 1, world, port, restart);
        {
            opts ro = *o;
            ro.master_port = port; /* MASTER_ADDR stays the endpoint's host */
            r = run_attempt(&ro, &a, &g, argv, &c);
        }
        if (r.signalled) {
            say("stopped by %s: leaving the job, exit %d", sig_name(r.signalled),
                r.code ? r.code : 128 + r.signalled);
            return r.code ? r.code : 128 + r.signalled;
        }
        if (r.remote == 2)
            return 1;
        if (r.remote) {
            if (send_line(c.fd, "JOIN %d %d", o->nproc, host) != 0)
                return 1;
        } else if (r.failed) {
            if (send_line(c.fd, "FAIL %d", r.code ? r.code : 1) != 0 ||
                send_line(c.fd, "JOIN %d %d", o->nproc, host) != 0)
                return 1;
        } else if (send_line(c.fd, "DONE") != 0) {
            return 1;
        }
    }
}
