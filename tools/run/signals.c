/* cputrain-run's signals: SIGINT, SIGTERM (passed on to the workers) and
 * SIGUSR1 (--grow_file) noted by the handler and woken up on through a
 * pipe, for the loops that poll. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

/* ---- signals ----------------------------------------------------------------------- */

int wake_pipe[2] = {-1, -1};
volatile sig_atomic_t pending_int, pending_term, pending_usr1;

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

int setup_signals(void)
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

const char *sig_name(int sig)
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
