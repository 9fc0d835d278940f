/* The public ct_dist API checked from the launcher's environment, as an
 * application uses it: ct_dist_create(NULL, ...) learns the membership from
 * Open MPI's or Hydra's mpirun (the mpi backend), or from RANK, WORLD_SIZE, ... set by a shell
 * loop or in two network namespaces (shm, tcp). Runs the checks of
 * collectives_check.h, the same as the Check suite's forked ranks, and
 * prints one line per check and rank, then a summary line.
 *
 *   dist_api_test [--backend NAME] [--launcher NAME] [--no-big]
 *                                exit 0 when every check passed
 *
 * --backend NAME: fail unless ct_dist chose that backend (so an mpirun run
 * cannot quietly fall back to shm); --launcher NAME: the same for the
 * launcher ct_dist saw (openmpi, pmi, torchrun). --no-big: skip the 64 MiB
 * allreduce.
 * The first line names the network namespace (/proc/self/ns/net), so that a
 * script can tell that two ranks ran in different ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "collectives_check.h"

static char prefix[96];

static void print_line(cc_ctx *c, int ok, const char *text)
{
    (void)c;
    printf("%s: %s %s\n", prefix, ok ? "PASS" : "FAIL", text);
}

int main(int argc, char **argv)
{
    const char *want_backend = NULL, *want_launcher = NULL;
    char netns[64] = "?";
    ct_dist *d = NULL;
    ct_status st;
    cc_ctx c;
    int big = 1;
    ssize_t len;

    /* Line-buffered: mpirun and the scripts interleave several ranks. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--no-big")) {
            big = 0;
        } else if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            want_backend = argv[++i];
        } else if (!strcmp(argv[i], "--launcher") && i + 1 < argc) {
            want_launcher = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--backend NAME] [--launcher NAME] [--no-big]\n",
                    argv[0]);
            return 2;
        }
    }
    if ((len = readlink("/proc/self/ns/net", netns, sizeof netns - 1)) > 0)
        netns[len] = '\0';

    if ((st = ct_dist_create(NULL, &d)) != CT_OK) {
        printf("pid %d: FAIL ct_dist_create from the environment: %s: %s\n", (int)getpid(),
               ct_status_name(st), ct_last_error());
        return 1;
    }
    snprintf(prefix, sizeof prefix, "rank %d/%d [%s]", ct_dist_rank(d), ct_dist_world_size(d),
             ct_dist_backend(d));
    printf("%s: launcher %s, local rank %d of %d, timeout %g s, netns %s, pid %d\n", prefix,
           ct_dist_launcher(d), ct_dist_local_rank(d), ct_dist_local_world_size(d),
           ct_dist_timeout(d), netns, (int)getpid());

    cc_init(&c, d, print_line, NULL);
    if (want_backend)
        cc_verdict(&c, !strcmp(ct_dist_backend(d), want_backend), "backend is %s (wanted %s)",
                   ct_dist_backend(d), want_backend);
    if (want_launcher)
        cc_verdict(&c, !strcmp(ct_dist_launcher(d), want_launcher),
                   "launcher is %s (wanted %s)", ct_dist_launcher(d), want_launcher);
    cc_run_all(&c, big);
    ct_dist_free(d);
    printf("%s: %d passed, %d failed\n", prefix, c.passed, c.failed);
    return c.failed ? 1 : 0;
}
