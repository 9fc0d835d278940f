/* Open MPI's mpirun forwards SIGINT / SIGTERM to the ranks and SIGKILLs
 * them odls_base_sigkill_timeout seconds later (1 by default): too soon for
 * a rank to finish its step and save the checkpoint a stop is meant to
 * leave. Rank 0 reads the setting as Open MPI does and says so at start. */
#include "dist/launcher.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define PARAM "odls_base_sigkill_timeout"
/* Seconds that cover a bert-base step and a checkpoint written to a slow
 * volume, with room. */
#define ENOUGH_S 30

/* The value of PARAM in an MCA parameter file ("name = value" lines, #
 * comments), or -1 when the file or the line is not there. */
static long from_file(const char *path)
{
    char line[512];
    long v = -1;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        char *p = line, *end;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, PARAM, strlen(PARAM)) != 0)
            continue;
        p += strlen(PARAM);
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p++ != '=')
            continue;
        v = strtol(p, &end, 10);
        if (end == p)
            v = -1;
    }
    fclose(f);
    return v;
}

/* Where the setting comes from and its value: the environment (mpirun's
 * --mca, or exported), the user's file, the system's; else the default. */
static long kill_timeout(const char **source)
{
    const char *env = getenv("OMPI_MCA_" PARAM), *home = getenv("HOME");
    char path[4200];
    long v;
    if (env && *env) {
        *source = "OMPI_MCA_" PARAM;
        return strtol(env, NULL, 10);
    }
    if (home && *home &&
        snprintf(path, sizeof path, "%s/.openmpi/mca-params.conf", home) < (int)sizeof path) {
        if ((v = from_file(path)) >= 0) {
            *source = "~/.openmpi/mca-params.conf";
            return v;
        }
    }
    if ((v = from_file("/etc/openmpi/openmpi-mca-params.conf")) >= 0) {
        *source = "/etc/openmpi/openmpi-mca-params.conf";
        return v;
    }
    *source = "Open MPI's default";
    return 1;
}

void ct__launcher_note_kill_timeout(void)
{
    const char *source;
    long s = kill_timeout(&source);
    if (s >= ENOUGH_S)
        return;
    ct__log(CT_LOG_WARNING, "dist: Open MPI's mpirun kills the ranks %ld s after it passes "
            "on Ctrl-C or SIGTERM (" PARAM " from %s): too soon to finish a step and save "
            "a checkpoint; give mpirun --mca " PARAM " 60 (or export OMPI_MCA_" PARAM "=60)",
            s, source);
}
