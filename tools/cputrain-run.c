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
 * checkpoint; the trainer keeps the global batch. Several machines'
 * launchers meet at a rendezvous of their own (--nnodes MIN:MAX with
 * --rdzv_endpoint, below), authenticated as the tcp backend's ranks are
 * (the library's ct_rendezvous_*). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4 */
#endif
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include <cputrain/cputrain.h>

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
    "  --rdzv_conf K=V,...   join_timeout (600 s) and last_call_timeout (30 s) of the\n"
    "                        rendezvous of several machines (--nnodes MIN:MAX with\n"
    "                        --rdzv_endpoint: the launcher that can listen there hosts it)\n"
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
    "CPUTRAIN_DIST_SECRET_FILE (or CPUTRAIN_DIST_SECRET): the job's secret; launchers\n"
    "prove they hold it before they join a rendezvous, as the workers' ranks do.\n"
    "Exit status: 0 all workers succeeded; the first failed worker's exit code (128 +\n"
    "signal when a signal ended it) once restarts are used up; 2 bad usage.\n";

/* ---- the job's settings ------------------------------------------------------------ */

typedef struct opts {
    int nproc, nnodes_min, nnodes_max, node_rank, max_restarts, drop_after;
    int redirects, tee, standalone;
    char master_addr[256], rdzv_id[256], log_dir[2048], grow_file[2048];
    int master_port;
    int given_master; /* --master_addr/--master_port or the endpoint set explicitly */
    int rdzv_given;   /* --rdzv_endpoint: with --nnodes MIN:MAX, launchers of several
                         machines meet there */
    double join_timeout, last_call_timeout; /* --rdzv_conf, seconds */
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
    o->given_master = o->rdzv_given = 1;
    return parse_endpoint(v, o);
}
/* torchrun's KEY=VALUE,... of which join_timeout and last_call_timeout
 * (seconds) mean something here. */
static int set_rdzv_conf(opts *o, const char *v, const char **why)
{
    char buf[256], *save = NULL, *item;
    *why = "expected join_timeout=SECONDS and/or last_call_timeout=SECONDS, comma-separated "
           "(seconds in (0, 86400]; torchrun's other keys do not apply here)";
    if (strlen(v) >= sizeof buf)
        return 0;
    strcpy(buf, v);
    for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '='), *end;
        double x;
        if (!eq)
            return 0;
        *eq = '\0';
        errno = 0;
        x = strtod(eq + 1, &end);
        if (errno || end == eq + 1 || *end || !(x > 0 && x <= 86400))
            return 0;
        if (!strcmp(item, "join_timeout"))
            o->join_timeout = x;
        else if (!strcmp(item, "last_call_timeout"))
            o->last_call_timeout = x;
        else
            return 0;
    }
    return 1;
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
    {"rdzv_conf", T_TEXT, set_rdzv_conf},
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
            /* the training operator sets PET_STANDALONE to "" for true */
            if (*v && strcmp(v, "1") && strcasecmp(v, "true") && strcmp(v, "0") &&
                strcasecmp(v, "false"))
                return usage_error("environment %s='%s': expected empty, 1, true, 0 or false",
                                   var, v);
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

static int check_logs(opts *o);
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
    if (elastic && o->rdzv_given) {
        if (o->grow_file[0] || o->drop_after > 0)
            return usage_error("--drop_after and --grow_file change one machine's width; with "
                               "--rdzv_endpoint the nodes that come and go are launchers");
        if (o->standalone)
            return usage_error("--standalone is one machine: drop --rdzv_endpoint");
        if (o->node_rank > 0)
            return usage_error("--node_rank: the rendezvous assigns the nodes' ranks");
        return check_logs(o);
    }
    if (elastic && o->standalone)
        o->rdzv_given = 0;
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
    return check_logs(o);
}

static int check_logs(opts *o)
{
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
    if (o->join_timeout <= 0)
        o->join_timeout = 600; /* torchrun's defaults */
    if (o->last_call_timeout <= 0)
        o->last_call_timeout = 30;
    return 0;
}

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
/* A port free now on `addr` (network order: loopback for --standalone,
 * any address for a round's MASTER_PORT), 0 if none. */
static int free_port(uint32_t addr)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    if (fd < 0)
        return 0;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = addr;
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
    int remote;          /* the rendezvous stopped the round: 1 restart, 2 host gone */
} outcome;

/* A line-based connection to the rendezvous (see "rendezvous" below). */
typedef struct conn {
    int fd;
    char in[1024];
    size_t len;
} conn;

static int send_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int send_line(int fd, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line - 1)
        return -1;
    line[n++] = '\n';
    for (int at = 0; at < n;) {
        ssize_t w = send(fd, line + at, (size_t)(n - at), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        at += (int)w;
    }
    return 0;
}

/* Reads what is there; *line gets the next whole line (without '\n') and
 * returns 1, 0 when none is whole yet, -1 at end of file or an error, -3
 * for a line longer than `size` (a peer speaking another protocol). */
static int next_line(conn *c, char *line, size_t size, int do_read)
{
    char *nl;
    if (do_read) {
        ssize_t n = recv(c->fd, c->in + c->len, sizeof c->in - c->len, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return -1;
        if (n > 0)
            c->len += (size_t)n;
    }
    if (!(nl = memchr(c->in, '\n', c->len)))
        return c->len == sizeof c->in ? -3 : 0;
    *nl = '\0';
    {
        size_t k = (size_t)(nl - c->in);
        if (k >= size)
            return -3; /* no message of ours is that long: not cut, refused */
        memcpy(line, c->in, k);
        line[k] = '\0';
    }
    c->len -= (size_t)(nl + 1 - c->in);
    memmove(c->in, nl + 1, c->len);
    return 1;
}

/* 1 when line is exactly `verb` and n decimal integers, each after one
 * space, as send_line wrote them (no sign but '-', no other spaces, no
 * overflow, nothing after); the caller checks each one's range. */
static int parse_msg(const char *line, const char *verb, int n, long *v)
{
    size_t k = strlen(verb);
    const char *p = line + k;
    if (strncmp(line, verb, k) != 0)
        return 0;
    for (int i = 0; i < n; i++) {
        char *end;
        if (*p++ != ' ' || !(isdigit((unsigned char)*p) ||
                             (*p == '-' && isdigit((unsigned char)p[1]))))
            return 0;
        errno = 0;
        v[i] = strtol(p, &end, 10);
        if (errno != 0)
            return 0;
        p = end;
    }
    return *p == '\0';
}

/* A peer's bytes as they may go into our log: the first 60, anything but
 * printable ASCII shown as '?' (no terminal escapes from the network). */
static const char *printable(const char *in, char out[64])
{
    int k = 0;
    for (; in[k] && k < 60; k++)
        out[k] = in[k] >= 0x20 && in[k] < 0x7f ? in[k] : '?';
    out[k] = '\0';
    return out;
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
static outcome run_attempt(const opts *o, const attempt *a, group *g, char **argv, conn *ctl)
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

/* ---- the rendezvous of several machines (--nnodes MIN:MAX, --rdzv_endpoint) ------ */

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

static int agent_main(const opts *o, char **argv)
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
        if (!(o.master_port = free_port(htonl(INADDR_LOOPBACK)))) {
            say("--standalone: no free port on 127.0.0.1: %s", strerror(errno));
            return 1;
        }
        strcpy(o.master_addr, "127.0.0.1");
    }
    if (setup_signals() != 0) {
        say("cannot set up signal handling: %s", strerror(errno));
        return 1;
    }
    if (elastic && o.rdzv_given)
        return agent_main(&o, argv + first);
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
        r = run_attempt(&o, &a, &g, argv + first, NULL);
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
