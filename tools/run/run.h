/* Internal to cputrain-run (tools/run/): the job's settings, a group of
 * workers and one attempt of it, the rendezvous connection, and what each
 * file offers the others. */
#ifndef CPUTRAIN_RUN_H
#define CPUTRAIN_RUN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cputrain/cputrain.h>

#define MAX_WORKERS 1024

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

typedef struct attempt {
    int number;  /* every start of the group, 0 first: the log folder's attempt_<number> */
    int restart, world, local_world, group_rank, group_world, rank0;
    char job[600];
} attempt;

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

/* What each file offers the others (each is described where it is defined). */

/* options.c */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* "cputrain-run: ..." */
int parse_int(const char *s, long lo, long hi, int *out);
int read_env(opts *o);
int parse_args(int argc, char **argv, opts *o, int *first);
int check_opts(opts *o);

/* net.c */
int send_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int next_line(conn *c, char *line, size_t size, int do_read);
int parse_msg(const char *line, const char *verb, int n, long *v);
const char *printable(const char *in, char out[64]);
int free_port(uint32_t addr);

/* signals.c */
extern int wake_pipe[2];
extern volatile sig_atomic_t pending_int, pending_term, pending_usr1;
int setup_signals(void);
const char *sig_name(int sig);

/* supervisor.c */
int describe(int status, char *out, size_t size);
outcome run_attempt(const opts *o, const attempt *a, group *g, char **argv, conn *ctl);
int read_grow(const opts *o);

/* rendezvous.c: the launcher as a member of a rendezvous; its exit status */
int agent_main(const opts *o, char **argv);

#endif
