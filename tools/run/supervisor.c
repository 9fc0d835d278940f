/* cputrain-run's supervisor: one attempt of the group of workers -- their
 * environment and log files, their output passed on, a failed worker
 * ending the attempt, signals passed on -- and --grow_file. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "run.h"

/* ---- workers ----------------------------------------------------------------------- */

static int mkdirs(const char *path)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int setenv_int(const char *name, long v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", v);
    return setenv(name, buf, 1);
}

/* In the child: the environment, the log files, then PROGRAM. Never returns. */
static void child(const opts *o, const attempt *a, worker *w, int fds[2][2], char **argv)
{
    char path[4200];
    sigset_t none;
    struct sigaction dfl;
    setpgid(0, 0); /* the terminal's Ctrl-C reaches the launcher only; it forwards once */
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* a launcher killed takes its workers along */
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    sigaction(SIGCHLD, &dfl, NULL);
    sigaction(SIGUSR1, &dfl, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (setenv_int("RANK", w->rank) || setenv_int("WORLD_SIZE", a->world) ||
        setenv_int("LOCAL_RANK", w->local_rank) || setenv_int("LOCAL_WORLD_SIZE", a->local_world) ||
        setenv_int("GROUP_RANK", a->group_rank) || setenv_int("GROUP_WORLD_SIZE", a->group_world) ||
        setenv_int("ROLE_RANK", w->rank) || setenv_int("ROLE_WORLD_SIZE", a->world) ||
        setenv("ROLE_NAME", "default", 1) || setenv("MASTER_ADDR", o->master_addr, 1) ||
        setenv_int("MASTER_PORT", o->master_port) ||
        setenv_int("TORCHELASTIC_RESTART_COUNT", a->restart) ||
        setenv_int("TORCHELASTIC_MAX_RESTARTS", o->max_restarts) ||
        setenv("TORCHELASTIC_RUN_ID", o->rdzv_id, 1) ||
        setenv("TORCHELASTIC_USE_AGENT_STORE", "False", 1) ||
        (!getenv("CPUTRAIN_DIST_JOB") && setenv("CPUTRAIN_DIST_JOB", a->job, 1))) {
        fprintf(stderr, "cputrain-run: rank %d: cannot set its environment\n", w->rank);
        _exit(127);
    }
    for (int s = 0; s < 2; s++) {
        int bit = s == 0 ? 1 : 2, target = s == 0 ? STDOUT_FILENO : STDERR_FILENO;
        if (o->tee & bit) {
            dup2(fds[s][1], target);
        } else if (o->redirects & bit) {
            int fd;
            snprintf(path, sizeof path, "%s/attempt_%d/%d/%s.log", o->log_dir, a->number,
                     w->local_rank, s == 0 ? "stdout" : "stderr");
            if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
                fprintf(stderr, "cputrain-run: rank %d: cannot open %s: %s\n", w->rank, path,
                        strerror(errno));
                _exit(127);
            }
            dup2(fd, target);
        }
    }
    execvp(argv[0], argv);
    fprintf(stderr, "cputrain-run: rank %d: cannot run %s: %s\n", w->rank, argv[0],
            strerror(errno));
    _exit(127);
}

static void close_streams(worker *w)
{
    for (int s = 0; s < 2; s++) {
        if (w->out[s].fd >= 0)
            close(w->out[s].fd);
        if (w->out[s].file >= 0)
            close(w->out[s].file);
        w->out[s].fd = w->out[s].file = -1;
    }
}

/* Starts worker i of the group; 0 on success. */
static int start_worker(const opts *o, const attempt *a, worker *w, char **argv)
{
    int fds[2][2] = {{-1, -1}, {-1, -1}};
    char path[4200];
    w->out[0].fd = w->out[1].fd = w->out[0].file = w->out[1].file = -1;
    w->out[0].line_start = w->out[1].line_start = 1;
    if (o->log_dir[0] && (o->redirects || o->tee)) {
        snprintf(path, sizeof path, "%s/attempt_%d/%d", o->log_dir, a->number, w->local_rank);
        if (mkdirs(path) != 0) {
            say("cannot create %s: %s", path, strerror(errno));
            return -1;
        }
    }
    for (int s = 0; s < 2; s++) {
        int bit = s == 0 ? 1 : 2;
        if (!(o->tee & bit))
            continue;
        snprintf(path, sizeof path, "%s/attempt_%d/%d/%s.log", o->log_dir, a->number,
                 w->local_rank, s == 0 ? "stdout" : "stderr");
        if (pipe(fds[s]) != 0 ||
            (w->out[s].file = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
            say("cannot set up --tee for rank %d (%s): %s", w->rank, path, strerror(errno));
            return -1;
        }
        fcntl(fds[s][0], F_SETFD, FD_CLOEXEC);
        w->out[s].fd = fds[s][0];
    }
    fflush(NULL);
    w->pid = fork();
    if (w->pid < 0) {
        say("cannot start rank %d: %s", w->rank, strerror(errno));
        w->pid = 0;
        return -1;
    }
    if (w->pid == 0)
        child(o, a, w, fds, argv);
    setpgid(w->pid, w->pid); /* also here: no race with a signal sent at once */
    for (int s = 0; s < 2; s++)
        if (fds[s][1] >= 0)
            close(fds[s][1]);
    return 0;
}

/* Copies what a --tee pipe holds into its file and to our stdout/stderr,
 * each line prefixed [rankN]:. Returns 0 at end of file. */
static int pump(worker *w, int s)
{
    char buf[8192], prefix[32];
    ssize_t n = read(w->out[s].fd, buf, sizeof buf);
    FILE *to = s == 0 ? stdout : stderr;
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return 1;
    if (n <= 0) {
        close(w->out[s].fd);
        w->out[s].fd = -1;
        return 0;
    }
    if (write(w->out[s].file, buf, (size_t)n) != n) {
        /* a full disk: the console copy below still shows it */
    }
    snprintf(prefix, sizeof prefix, "[rank%d]:", w->rank);
    for (ssize_t i = 0; i < n; i++) {
        if (w->out[s].line_start)
            fputs(prefix, to);
        fputc(buf[i], to);
        w->out[s].line_start = buf[i] == '\n';
    }
    fflush(to);
    return 1;
}

static void signal_all(group *g, int sig)
{
    for (int i = 0; i < g->n; i++)
        if (g->w[i].pid > 0)
            kill(-g->w[i].pid, sig);
}

/* How a worker ended, in words, and its exit code (128 + signal). */
int describe(int status, char *out, size_t size)
{
    if (WIFSIGNALED(status)) {
        snprintf(out, size, "killed by signal %d (%s)", WTERMSIG(status), sig_name(WTERMSIG(status)));
        return 128 + WTERMSIG(status);
    }
    snprintf(out, size, "exit code %d", WEXITSTATUS(status));
    return WEXITSTATUS(status);
}

/* --grow_file holds a number of slots (read_grow takes it). */
static int grow_pending(const opts *o)
{
    FILE *f = fopen(o->grow_file, "r");
    char line[64] = "";
    int n = 0;
    if (!f)
        return 0;
    if (!fgets(line, sizeof line, f))
        line[0] = '\0';
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    return parse_int(line, 1, MAX_WORKERS, &n);
}

/* Runs one attempt until every worker has exited. ctl: the rendezvous,
 * which may stop the round (NULL: none). */
outcome run_attempt(const opts *o, const attempt *a, group *g, char **argv, conn *ctl)
{
    outcome r = {0, -1, -1, 0, 0, 0, 0, 0};
    int killed = 0;
    g->running = 0;
    for (int i = 0; i < g->n; i++) {
        if (start_worker(o, a, &g->w[i], argv) != 0) {
            r.failed = 1;
            r.first_rank = g->w[i].rank;
            r.first_slot = g->w[i].slot;
            r.code = 1;
            close_streams(&g->w[i]);
            signal_all(g, SIGKILL);
            killed = 1;
            break;
        }
        g->running++;
    }
    while (g->running > 0) {
        struct pollfd p[1 + 2 * MAX_WORKERS];
        worker *owner[1 + 2 * MAX_WORKERS];
        int which[1 + 2 * MAX_WORKERS], np = 1, ctl_at = -1;
        char c[64];
        p[0].fd = wake_pipe[0];
        p[0].events = POLLIN;
        if (ctl && r.remote != 2) {
            ctl_at = np;
            p[np].fd = ctl->fd;
            p[np].events = POLLIN;
            owner[np] = NULL;
            which[np++] = -1;
        }
        for (int i = 0; i < g->n; i++)
            for (int s = 0; s < 2; s++)
                if (g->w[i].out[s].fd >= 0) {
                    p[np].fd = g->w[i].out[s].fd;
                    p[np].events = POLLIN;
                    owner[np] = &g->w[i];
                    which[np++] = s;
                }
        if (poll(p, (nfds_t)np, -1) < 0 && errno != EINTR)
            break;
        for (int k = 1; k < np; k++)
            if (p[k].revents && k != ctl_at)
                pump(owner[k], which[k]);
        if (ctl_at > 0 && p[ctl_at].revents) {
            char line[512];
            int got;
            while ((got = next_line(ctl, line, sizeof line, 1)) == 1) {
                /* A node failed or left (kill: nothing can be saved without
                 * it), or one joins (stop: a checkpoint at the next step). */
                int stop = !strcmp(line, "RESTART stop");
                if (!stop && strcmp(line, "RESTART kill") != 0) {
                    /* EXIT comes after the host stopped the round (its close
                     * follows); anything else is no message of ours. */
                    if (strncmp(line, "EXIT ", 5) != 0) {
                        char shown[64];
                        say("rendezvous: unexpected '%s' from the rendezvous host: ignored",
                            printable(line, shown));
                    }
                    continue;
                }
                if (r.remote || killed)
                    continue;
                r.remote = 1;
                say("rendezvous: %s: stopping the %d worker%s (%s)",
                    stop ? "a node joins" : "a node failed or left", g->running,
                    g->running == 1 ? "" : "s", stop ? "SIGTERM, a checkpoint first" : "SIGKILL");
                signal_all(g, stop ? SIGTERM : SIGKILL);
                killed = !stop;
            }
            if (got < 0) {
                say("rendezvous: the connection to the rendezvous host is gone: stopping the "
                    "workers (SIGKILL)");
                r.remote = 2;
                signal_all(g, SIGKILL);
                killed = 1;
            }
        }
        while (read(wake_pipe[0], c, sizeof c) > 0) {
        }
        /* Our own SIGINT / SIGTERM: the workers get it, once per time we
         * did (cputrain-qa saves a checkpoint on the first, exits on the
         * second); no restart afterwards. */
        while (pending_int > 0 || pending_term > 0) {
            int sig = pending_int > 0 ? SIGINT : SIGTERM;
            if (sig == SIGINT)
                pending_int--;
            else
                pending_term--;
            say("%s received: forwarding it to the %d running worker%s", sig_name(sig),
                g->running, g->running == 1 ? "" : "s");
            r.signalled = sig;
            signal_all(g, sig);
        }
        if (pending_usr1) {
            pending_usr1 = 0;
            if (o->grow_file[0] && !r.signalled && !killed && !grow_pending(o)) {
                say("SIGUSR1 ignored: %s asks for no slots (write a number into it first)",
                    o->grow_file);
            } else if (o->grow_file[0] && !r.signalled && !killed) {
                /* A new member: the group restarts wider, from the newest
                 * checkpoint, as torchrun's agents re-rendezvous when a node
                 * waits to join. SIGTERM first, so a step-boundary checkpoint
                 * is saved and nothing is recomputed. */
                say("SIGUSR1: new slots requested in %s: stopping the group (SIGTERM, a "
                    "checkpoint at the next step) to restart it wider", o->grow_file);
                r.grow = 1;
                signal_all(g, SIGTERM);
            } else {
                say("SIGUSR1 ignored: %s", o->grow_file[0] ? "the group is stopping already"
                                                           : "no --grow_file (and --nnodes MIN:MAX) given");
            }
        }
        /* Our workers only: the rendezvous host is a child too. */
        for (int i = 0; i < g->n; i++) {
            int status;
            worker *w = &g->w[i];
            pid_t pid = w->pid > 0 ? waitpid(w->pid, &status, WNOHANG) : 0;
            if (pid <= 0)
                continue;
            w->pid = 0;
            w->status = status;
            g->running--;
            /* what the tee pipes still hold */
            for (int s = 0; s < 2; s++)
                while (w->out[s].fd >= 0 && pump(w, s)) {
                }
            close_streams(w);
            if (status == 0 || killed)
                continue;
            {
                char how[128];
                int code = describe(status, how, sizeof how);
                if (r.signalled || r.grow || r.remote) {
                    /* stopping on request: a worker's 130 / 143 is expected */
                    if (!r.code)
                        r.code = code;
                    continue;
                }
                say("rank %d (local_rank %d, pid %ld) failed: %s", w->rank, w->local_rank,
                    (long)pid, how);
                r.failed = 1;
                r.first_rank = w->rank;
                r.first_slot = w->slot;
                r.first_status = status;
                r.code = code;
                /* A peer is gone: the group cannot agree on a step any more,
                 * so nothing the others could save would be whole. They stop
                 * now and resume from the last complete checkpoint. */
                if (g->running > 0)
                    say("stopping the other %d worker%s (SIGKILL): without rank %d they "
                        "cannot finish a step", g->running, g->running == 1 ? "" : "s", w->rank);
                signal_all(g, SIGKILL);
                killed = 1;
            }
        }
    }
    for (int i = 0; i < g->n; i++)
        close_streams(&g->w[i]);
    return r;
}

/* --grow_file: the slots it asks for (a number), then empties it. */
int read_grow(const opts *o)
{
    FILE *f;
    char line[64] = "";
    int n = 0;
    if (!o->grow_file[0] || !(f = fopen(o->grow_file, "r")))
        return 0;
    if (!fgets(line, sizeof line, f))
        line[0] = '\0';
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0])
        return 0;
    if (!parse_int(line, 1, MAX_WORKERS, &n)) {
        say("%s holds '%s', not a number of slots in [1, 1024]: ignored and emptied",
            o->grow_file, line);
        n = 0;
    }
    if ((f = fopen(o->grow_file, "w")))
        fclose(f);
    return n;
}
