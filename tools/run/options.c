/* cputrain-run's settings: torchrun's options (either spelling), the PET_*
 * variables of a PyTorchJob, and the checks that refuse a bad job before
 * anything starts. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

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

void say(const char *fmt, ...)
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
int parse_int(const char *s, long lo, long hi, int *out)
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
int read_env(opts *o)
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
int parse_args(int argc, char **argv, opts *o, int *first)
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
int check_opts(opts *o)
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
