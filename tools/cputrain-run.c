/* cputrain-run: torchrun's job on one machine, without Python. It starts
 * --nproc_per_node copies of PROGRAM (as `torchrun --no-python`) with the
 * launcher environment the library reads (RANK, WORLD_SIZE, LOCAL_RANK,
 * LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT,
 * TORCHELASTIC_RESTART_COUNT, ...), forwards SIGINT / SIGTERM to them,
 * restarts the whole group when a worker fails (up to --max_restarts), and
 * exits with the first failed worker's status, naming the rank and how it
 * failed. Options are torchrun's names (either spelling, '_' or '-'), also
 * read from the PET_* variables a Kubeflow PyTorchJob sets.
 *
 * Elastic width (--nnodes MIN:MAX) on one machine: a node is one worker, as
 * in a PyTorchJob whose pods run one process each, so the unit that comes
 * and goes is a worker slot. The job starts --nproc_per_node wide. A slot
 * whose worker fails --drop_after times in a row is dropped and the group
 * restarts narrower, down to MIN; the --grow_file FILE holds a number of
 * slots to add (what new nodes joining would bring), read at each restart
 * and on SIGUSR1, up to MAX. The workers resume from their newest
 * checkpoint; the trainer keeps the global batch. A rendezvous of several
 * machines' launchers (torchrun's c10d) is not implemented. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 1024

static const char *const USAGE =
    "usage: cputrain-run [OPTIONS] PROGRAM [ARGS...]\n"
    "Starts nproc_per_node copies of PROGRAM as torchrun --no-python does, each with\n"
    "RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,\n"
    "MASTER_PORT, TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_MAX_RESTARTS and\n"
    "TORCHELASTIC_RUN_ID set. Options (also PET_<NAME> in the environment, as a\n"
    "PyTorchJob sets them; '-' and '_' are the same in names):\n"
    "  --nproc_per_node N    workers on this machine (default 1)\n"
    "  --nnodes N|MIN:MAX    nodes of the job (default 1). MIN:MAX on one machine: a\n"
    "                        node is a worker; the group starts nproc_per_node wide,\n"
    "                        narrows to MIN, widens to MAX (--drop_after, --grow_file)\n"
    "  --node_rank R         this machine's node with a fixed --nnodes N > 1 (static\n"
    "                        rendezvous at --master_addr:--master_port)\n"
    "  --rdzv_endpoint H:P   where ranks meet: MASTER_ADDR and MASTER_PORT for the\n"
    "                        workers (default --master_addr:--master_port)\n"
    "  --rdzv_backend B      static or c10d (both mean the endpoint above)\n"
    "  --rdzv_id ID          the job's id: TORCHELASTIC_RUN_ID (default 'none')\n"
    "  --standalone          one node, MASTER_PORT a free port of 127.0.0.1\n"
    "  --master_addr A       default 127.0.0.1\n"
    "  --master_port P       default 29500\n"
    "  --max_restarts K      restarts of the group after a worker fails (default 0)\n"
    "  --log_dir DIR         DIR/attempt_<K>/<local_rank>/{stdout,stderr}.log, K counting\n"
    "                        every start of the group (restarts and width changes)\n"
    "  --redirects 0|1|2|3   into those files: none, stdout, stderr, both (default 3\n"
    "                        with --log_dir, else 0)\n"
    "  --tee 0|1|2|3         into the files and also here, lines prefixed [rankN]:\n"
    "  --no_python           accepted: PROGRAM always runs itself\n"
    "  --drop_after K        MIN:MAX only: drop a slot whose worker failed K times in\n"
    "                        a row (default 2)\n"
    "  --grow_file FILE      MIN:MAX only: slots to add, read (and emptied) at each\n"
    "                        restart and on SIGUSR1\n"
    "Exit status: 0 all workers succeeded; the first failed worker's exit code (128 +\n"
    "signal when a signal ended it) once restarts are used up; 2 bad usage.\n";

/* ---- the job's settings ------------------------------------------------------------ */

typedef struct opts {
    int nproc, nnodes_min, nnodes_max, node_rank, max_restarts, drop_after;
    int redirects, tee, standalone;
    char master_addr[256], rdzv_id[256], log_dir[2048], grow_file[2048];
    int master_port;
    int given_master; /* --master_addr/--master_port or the endpoint set explicitly */
} opts;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    char line[4096];
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cputrain-run: %s\n", line);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "cputrain-run: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(cputrain-run --help shows the usage)\n");
    return 2;
}

/* A whole decimal number in [lo, hi]. */
static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    long v;
    if (!s || !*s)
        return 0;
    errno = 0;
    v = strtol(s, &end, 10);
    if (*end || errno || v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}

static int set_text(char *dst, size_t size, const char *v)
{
    if (!*v || strlen(v) >= size)
        return 0;
    memcpy(dst, v, strlen(v) + 1);
    return 1;
}

/* HOST:PORT, [IPV6]:PORT. */
static int parse_endpoint(const char *v, opts *o)
{
    const char *colon = strrchr(v, ':');
    size_t hl;
    int port;
    if (!colon || !parse_int(colon + 1, 1, 65535, &port))
        return 0;
    hl = (size_t)(colon - v);
    if (hl >= 2 && v[0] == '[' && v[hl - 1] == ']') {
        v++;
        hl -= 2;
    }
    if (hl == 0 || hl >= sizeof o->master_addr || memchr(v, ':', hl) != NULL) {
        /* an IPv6 address without brackets is ambiguous */
        if (!(hl > 0 && hl < sizeof o->master_addr && colon[-1] == ']'))
            return 0;
    }
    memcpy(o->master_addr, v, hl);
    o->master_addr[hl] = '\0';
    o->master_port = port;
    return 1;
}

/* N or MIN:MAX, 1 <= MIN <= MAX. */
static int parse_nnodes(const char *v, opts *o)
{
    char buf[64], *colon;
    if (strlen(v) >= sizeof buf)
        return 0;
    strcpy(buf, v);
    if ((colon = strchr(buf, ':'))) {
        *colon = '\0';
        return parse_int(buf, 1, MAX_WORKERS, &o->nnodes_min) &&
               parse_int(colon + 1, 1, MAX_WORKERS, &o->nnodes_max) &&
               o->nnodes_min <= o->nnodes_max;
    }
    if (!parse_int(buf, 1, MAX_WORKERS, &o->nnodes_min))
        return 0;
    o->nnodes_max = o->nnodes_min;
    return 1;
}

typedef enum { T_INT, T_TEXT, T_FLAG } kind;

/* One option: its name (underscores), what it takes, and how it is set.
 * Returns 1 when `value` is valid, else 0 with `why` filled. */
typedef int (*setter)(opts *o, const char *value, const char **why);

#define INT_SETTER(fn, field, lo, hi, text)                                                   \
    static int fn(opts *o, const char *v, const char **why)                                   \
    {                                                                                         \
        *why = text;                                                                          \
        return parse_int(v, lo, hi, &o->field);                                               \
    }
INT_SETTER(set_nproc, nproc, 1, MAX_WORKERS, "expected a number of workers in [1, 1024] (cputrain-run has no 'auto', 'cpu' or 'gpu')")
INT_SETTER(set_node_rank, node_rank, 0, MAX_WORKERS - 1, "expected a node index in [0, 1023]")
INT_SETTER(set_max_restarts, max_restarts, 0, 1000000, "expected a count in [0, 1000000]")
INT_SETTER(set_drop_after, drop_after, 1, 1000000, "expected a count in [1, 1000000]")
INT_SETTER(set_redirects, redirects, 0, 3, "expected 0 (none), 1 (stdout), 2 (stderr) or 3 (both); per-rank maps such as 0:1,1:2 are not supported")
INT_SETTER(set_tee, tee, 0, 3, "expected 0 (none), 1 (stdout), 2 (stderr) or 3 (both); per-rank maps such as 0:1,1:2 are not supported")

static int set_master_port(opts *o, const char *v, const char **why)
{
    *why = "expected a port in [1, 65535]";
    o->given_master = 1;
    return parse_int(v, 1, 65535, &o->master_port);
}
static int set_master_addr(opts *o, const char *v, const char **why)
{
    *why = "expected a host name or address of at most 255 characters";
    o->given_master = 1;
    return set_text(o->master_addr, sizeof o->master_addr, v);
}
static int set_nnodes(opts *o, const char *v, const char **why)
{
    *why = "expected N or MIN:MAX with 1 <= MIN <= MAX <= 1024";
    return parse_nnodes(v, o);
}
static int set_endpoint(opts *o, const char *v, const char **why)
{
    *why = "expected HOST:PORT (or [IPV6]:PORT), port in [1, 65535]";
    o->given_master = 1;
    return parse_endpoint(v, o);
}
static int set_backend(opts *o, const char *v, const char **why)
{
    (void)o;
    *why = "expected static or c10d (etcd is not supported)";
    return !strcmp(v, "static") || !strcmp(v, "c10d");
}
static int set_rdzv_id(opts *o, const char *v, const char **why)
{
    *why = "expected a non-empty id of at most 255 characters, no '/'";
    return !strchr(v, '/') && set_text(o->rdzv_id, sizeof o->rdzv_id, v);
}
static int set_log_dir(opts *o, const char *v, const char **why)
{
    *why = "expected a folder path of at most 2047 characters";
    return set_text(o->log_dir, sizeof o->log_dir, v);
}
static int set_grow_file(opts *o, const char *v, const char **why)
{
    *why = "expected a file path of at most 2047 characters";
    return set_text(o->grow_file, sizeof o->grow_file, v);
}
static int set_standalone(opts *o, const char *v, const char **why)
{
    (void)v;
    (void)why;
    o->standalone = 1;
    return 1;
}
static int set_no_python(opts *o, const char *v, const char **why)
{
    (void)o;
    (void)v;
    (void)why;
    return 1;
}

typedef struct option {
    const char *name; /* with underscores */
    kind kind;
    setter set;
} option;

static const option options[] = {
    {"nproc_per_node", T_INT, set_nproc},   {"nnodes", T_TEXT, set_nnodes},
    {"node_rank", T_INT, set_node_rank},    {"rdzv_endpoint", T_TEXT, set_endpoint},
    {"rdzv_backend", T_TEXT, set_backend},  {"rdzv_id", T_TEXT, set_rdzv_id},
    {"standalone", T_FLAG, set_standalone}, {"master_addr", T_TEXT, set_master_addr},
    {"master_port", T_INT, set_master_port}, {"max_restarts", T_INT, set_max_restarts},
    {"log_dir", T_TEXT, set_log_dir},       {"redirects", T_INT, set_redirects},
    {"tee", T_INT, set_tee},                {"no_python", T_FLAG, set_no_python},
    {"drop_after", T_INT, set_drop_after},  {"grow_file", T_TEXT, set_grow_file},
};
#define N_OPTIONS (sizeof options / sizeof *options)

/* `name` with '-' as '_', at most `size` - 1 characters. */
static int normalise(const char *name, size_t len, char *out, size_t size)
{
    if (len == 0 || len >= size)
        return 0;
    for (size_t i = 0; i < len; i++)
        out[i] = name[i] == '-' ? '_' : name[i];
    out[len] = '\0';
    return 1;
}

static const option *find_option(const char *name)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (!strcmp(options[i].name, name))
            return &options[i];
    return NULL;
}

/* The PET_* variables first (a PyTorchJob's), so the command line wins. */
static int read_env(opts *o)
{
    for (size_t i = 0; i < N_OPTIONS; i++) {
        char var[64];
        const char *v, *why = "";
        size_t n = strlen(options[i].name);
        memcpy(var, "PET_", 4);
        for (size_t j = 0; j <= n; j++)
            var[4 + j] = (char)(options[i].name[j] >= 'a' && options[i].name[j] <= 'z'
                                    ? options[i].name[j] - 'a' + 'A'
                                    : options[i].name[j]);
        if (!(v = getenv(var)))
            continue;
        if (options[i].kind == T_FLAG) {
            if (strcmp(v, "1") && strcasecmp(v, "true") && strcmp(v, "0") && strcasecmp(v, "false"))
                return usage_error("environment %s='%s': expected 1, true, 0 or false", var, v);
            if (!strcmp(v, "0") || !strcasecmp(v, "false"))
                continue;
        }
        if (!options[i].set(o, v, &why))
            return usage_error("environment %s='%s': %s", var, v, why);
    }
    return 0;
}

/* Options up to PROGRAM; *first is PROGRAM's index. */
static int parse_args(int argc, char **argv, opts *o, int *first)
{
    int i;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *eq, *value = NULL, *why = "";
        char name[64];
        const option *opt;
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE, stdout);
            exit(0);
        }
        if (a[1] != '-')
            return usage_error("'%s': options are spelt --name (torchrun's single-dash "
                               "aliases are not taken)", a);
        eq = strchr(a + 2, '=');
        if (!normalise(a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2), name, sizeof name) ||
            !(opt = find_option(name))) {
            fprintf(stderr, "cputrain-run: unknown option '%s'; known:", a);
            for (size_t k = 0; k < N_OPTIONS; k++)
                fprintf(stderr, " --%s", options[k].name);
            fprintf(stderr, "\n");
            return 2;
        }
        if (opt->kind == T_FLAG) {
            if (eq)
                return usage_error("--%s takes no value (got '%s')", name, eq + 1);
        } else if (eq) {
            value = eq + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            return usage_error("--%s needs a value", name);
        }
        if (!opt->set(o, value ? value : "", &why))
            return usage_error("--%s '%s': %s", name, value ? value : "", why);
    }
    if (i >= argc)
        return usage_error("no PROGRAM to run");
    *first = i;
    return 0;
}

static int check_opts(opts *o)
{
    int elastic = o->nnodes_min < o->nnodes_max;
    if (o->standalone) {
        if (o->nnodes_max > 1 && !elastic)
            return usage_error("--standalone is one node, but --nnodes is %d", o->nnodes_max);
        if (o->given_master)
            return usage_error("--standalone picks the port itself: drop --master_addr, "
                               "--master_port and --rdzv_endpoint");
    }
    if (!elastic && o->nnodes_min > 1) {
        if (o->node_rank < 0)
            return usage_error("--nnodes %d: each machine needs its --node_rank", o->nnodes_min);
        if (o->node_rank >= o->nnodes_min)
            return usage_error("--node_rank %d is not below --nnodes %d", o->node_rank,
                               o->nnodes_min);
        if (!o->given_master)
            return usage_error("--nnodes %d: the machines meet at --master_addr:--master_port "
                               "(or --rdzv_endpoint), which must be given", o->nnodes_min);
    } else if (o->node_rank > 0) {
        return usage_error("--node_rank %d needs a fixed --nnodes above it", o->node_rank);
    }
    if (!elastic && (o->grow_file[0] || o->drop_after > 0))
        return usage_error("--drop_after and --grow_file change the width of an elastic job: "
                           "give --nnodes MIN:MAX");
    if (elastic && (o->nproc < o->nnodes_min || o->nproc > o->nnodes_max))
        return usage_error("--nnodes %d:%d on one machine is the job's width in workers (one "
                           "per node, as a PyTorchJob's pods): --nproc_per_node %d, the width "
                           "it starts at, must lie within it", o->nnodes_min, o->nnodes_max,
                           o->nproc);
    if (!elastic && (long)o->nnodes_max * o->nproc > MAX_WORKERS)
        return usage_error("--nnodes %d x --nproc_per_node %d is above %d workers",
                           o->nnodes_max, o->nproc, MAX_WORKERS);
    if (o->log_dir[0] && o->redirects < 0 && o->tee < 0)
        o->redirects = 3;
    if ((o->redirects > 0 || o->tee > 0) && !o->log_dir[0])
        return usage_error("--redirects and --tee write into --log_dir, which is not given");
    if (o->redirects < 0)
        o->redirects = 0;
    if (o->tee < 0)
        o->tee = 0;
    if (o->drop_after < 0)
        o->drop_after = 2;
    return 0;
}

/* --standalone: a port of 127.0.0.1 nobody listens on now. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
static int free_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    if (fd < 0)
        return 0;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

/* ---- signals ----------------------------------------------------------------------- */

static int wake_pipe[2] = {-1, -1};
static volatile sig_atomic_t pending_int, pending_term, pending_usr1;

static void on_signal(int sig)
{
    int saved = errno;
    char c = 0;
    if (sig == SIGINT)
        pending_int++;
    else if (sig == SIGTERM)
        pending_term++;
    else if (sig == SIGUSR1)
        pending_usr1 = 1;
    if (write(wake_pipe[1], &c, 1) < 0) {
        /* full: the main loop is awake already */
    }
    errno = saved;
}

static int setup_signals(void)
{
    struct sigaction sa;
    static const int sigs[] = {SIGINT, SIGTERM, SIGCHLD, SIGUSR1};
    if (pipe(wake_pipe) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        fcntl(wake_pipe[i], F_SETFL, fcntl(wake_pipe[i], F_GETFL) | O_NONBLOCK);
        fcntl(wake_pipe[i], F_SETFD, FD_CLOEXEC);
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        if (sigaction(sigs[i], &sa, NULL) != 0)
            return -1;
    return 0;
}

static const char *sig_name(int sig)
{
    switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGPIPE: return "SIGPIPE";
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return "a signal";
    }
}

/* ---- workers ----------------------------------------------------------------------- */

typedef struct stream {
    int fd;        /* read end of a --tee pipe, else -1 */
    int file;      /* its log file, else -1 */
    int line_start;
} stream;

typedef struct worker {
    pid_t pid;     /* 0: not running */
    int rank, local_rank;
    int slot;      /* which of the launcher's slots (elastic bookkeeping) */
    int status;    /* waitpid status once exited */
    stream out[2]; /* stdout, stderr */
} worker;

typedef struct group {
    worker w[MAX_WORKERS];
    int n, running;
} group;

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

typedef struct attempt {
    int number;  /* every start of the group, 0 first: the log folder's attempt_<number> */
    int restart, world, local_world, group_rank, group_world, rank0;
    char job[600];
} attempt;

/* In the child: the environment, the log files, then PROGRAM. Never returns. */
static void child(const opts *o, const attempt *a, worker *w, int fds[2][2], char **argv)
{
    char path[4200];
    sigset_t none;
    struct sigaction dfl;
    setpgid(0, 0); /* the terminal's Ctrl-C reaches the launcher only; it forwards once */
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
static int describe(int status, char *out, size_t size)
{
    if (WIFSIGNALED(status)) {
        snprintf(out, size, "killed by signal %d (%s)", WTERMSIG(status), sig_name(WTERMSIG(status)));
        return 128 + WTERMSIG(status);
    }
    snprintf(out, size, "exit code %d", WEXITSTATUS(status));
    return WEXITSTATUS(status);
}

typedef struct outcome {
    int failed;          /* a worker failed (not one we stopped) */
    int first_rank, first_slot, first_status;
    int code;            /* exit code to report */
    int signalled;       /* stopped because the launcher got SIGINT/SIGTERM */
    int grow;            /* SIGUSR1 asked for more slots */
} outcome;

/* Runs one attempt until every worker has exited. */
static outcome run_attempt(const opts *o, const attempt *a, group *g, char **argv)
{
    outcome r = {0, -1, -1, 0, 0, 0, 0};
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
        int which[1 + 2 * MAX_WORKERS], np = 1;
        char c[64];
        p[0].fd = wake_pipe[0];
        p[0].events = POLLIN;
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
            if (p[k].revents)
                pump(owner[k], which[k]);
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
            if (o->grow_file[0] && !r.signalled && !killed) {
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
        for (;;) {
            int status;
            pid_t pid = waitpid(-1, &status, WNOHANG);
            worker *w = NULL;
            if (pid <= 0)
                break;
            for (int i = 0; i < g->n; i++)
                if (g->w[i].pid == pid)
                    w = &g->w[i];
            if (!w)
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
                if (r.signalled || r.grow) {
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
static int read_grow(const opts *o)
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

int main(int argc, char **argv)
{
    static group g;
    opts o;
    attempt a;
    int first = 0, rc, width, min_width, max_width, restarts = 0, next_slot, number = 0;
    int fails_in_row[MAX_WORKERS * 2] = {0}, slots[MAX_WORKERS];
    int elastic;

    memset(&o, 0, sizeof o);
    o.nproc = o.nnodes_min = o.nnodes_max = 1;
    o.node_rank = -1;
    o.redirects = o.tee = o.drop_after = -1;
    strcpy(o.master_addr, "127.0.0.1");
    strcpy(o.rdzv_id, "none");
    o.master_port = 29500;
    if ((rc = read_env(&o)) != 0 || (rc = parse_args(argc, argv, &o, &first)) != 0 ||
        (rc = check_opts(&o)) != 0)
        return rc;
    if (o.node_rank < 0)
        o.node_rank = 0;
    elastic = o.nnodes_min < o.nnodes_max;
    if (o.standalone) {
        if (!(o.master_port = free_port())) {
            say("--standalone: no free port on 127.0.0.1: %s", strerror(errno));
            return 1;
        }
        strcpy(o.master_addr, "127.0.0.1");
    }
    if (setup_signals() != 0) {
        say("cannot set up signal handling: %s", strerror(errno));
        return 1;
    }
    /* One machine, elastic: a node is a worker (a PyTorchJob pod's one
     * process); the job starts nproc_per_node wide, may narrow to MIN and
     * widen to MAX. */
    width = o.nproc;
    min_width = elastic ? o.nnodes_min : o.nproc;
    max_width = elastic ? o.nnodes_max : o.nproc;
    for (int i = 0; i < width; i++)
        slots[i] = i;
    next_slot = width;
    if (elastic)
        say("elastic: %d worker%s now, between %d and %d (--nnodes %d:%d); a slot is dropped "
            "after %d failures in a row%s%s", width, width == 1 ? "" : "s",
            min_width, max_width, o.nnodes_min, o.nnodes_max, o.drop_after,
            o.grow_file[0] ? "; slots are added through " : "", o.grow_file);

    for (;;) {
        outcome r;
        memset(&a, 0, sizeof a);
        a.restart = restarts;
        a.number = number++;
        if (elastic) {
            int more = read_grow(&o);
            if (more > 0) {
                int before = width;
                while (more-- > 0 && width < max_width)
                    slots[width++] = next_slot++;
                say("elastic: %d slot%s added (%d -> %d workers)", width - before,
                    width - before == 1 ? "" : "s", before, width);
            }
        }
        a.local_world = width;
        a.group_world = elastic ? 1 : o.nnodes_min;
        a.group_rank = elastic ? 0 : o.node_rank;
        a.world = elastic ? width : o.nnodes_min * o.nproc;
        a.rank0 = a.group_rank * width;
        /* A fresh name per attempt keeps a killed group's shared memory
         * apart from the next one's (the library cleans up stale ones too). */
        snprintf(a.job, sizeof a.job, "cputrain-run-%s-%d-%ld-%d", o.rdzv_id, o.master_port,
                 (long)getpid(), a.number);
        g.n = width;
        for (int i = 0; i < width; i++) {
            g.w[i].local_rank = i;
            g.w[i].rank = a.rank0 + i;
            g.w[i].slot = slots[i];
            g.w[i].pid = 0;
        }
        say("starting %d worker%s (ranks %d-%d of %d, restart %d of at most %d): %s", width,
            width == 1 ? "" : "s", a.rank0, a.rank0 + width - 1, a.world, restarts,
            o.max_restarts, argv[first]);
        r = run_attempt(&o, &a, &g, argv + first);
        if (r.grow && !r.failed && (pending_int == 0 && pending_term == 0)) {
            /* A planned widening uses up no restart (torchrun's membership
             * changes neither): TORCHELASTIC_RESTART_COUNT counts failures. */
            say("restarting wider (%s)", o.grow_file);
            continue;
        }
        if (r.signalled) {
            say("stopped by %s: exit %d", sig_name(r.signalled), r.code ? r.code : 128 + r.signalled);
            return r.code ? r.code : 128 + r.signalled;
        }
        if (!r.failed) {
            say("all %d worker%s finished", width, width == 1 ? "" : "s");
            return 0;
        }
        if (elastic && r.first_slot >= 0 && r.first_slot < MAX_WORKERS * 2) {
            for (int i = 0; i < width; i++)
                if (slots[i] != r.first_slot && slots[i] < MAX_WORKERS * 2)
                    fails_in_row[slots[i]] = 0;
            if (++fails_in_row[r.first_slot] >= o.drop_after && width > min_width) {
                int k = 0;
                for (int i = 0; i < width; i++)
                    if (slots[i] != r.first_slot)
                        slots[k++] = slots[i];
                say("elastic: slot %d failed %d times in a row: dropped (%d -> %d workers)",
                    r.first_slot, fails_in_row[r.first_slot], width, k);
                width = k;
            }
        }
        if (restarts >= o.max_restarts) {
            char how[128];
            describe(r.first_status, how, sizeof how);
            say("rank %d failed (%s) and the %d restart%s are used up: exit %d", r.first_rank,
                r.first_status ? how : "could not be started", o.max_restarts,
                o.max_restarts == 1 ? "" : "s", r.code ? r.code : 1);
            return r.code ? r.code : 1;
        }
        restarts++;
        say("restarting the group (restart %d of %d); the workers resume from their newest "
            "checkpoint", restarts, o.max_restarts);
    }
}
