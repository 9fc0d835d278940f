/* Shared by the libFuzzer harnesses (one per tests/fuzz/fuzz_*.c): a private
 * scratch folder for the inputs the library only reads from files, and the
 * check that turns a broken property into a crash libFuzzer records. */
#ifndef CT_FUZZ_COMMON_H
#define CT_FUZZ_COMMON_H

#include <cputrain/cputrain.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* A property the library promises does not hold: report it and abort, so
 * libFuzzer saves the input (a harness may abort; the library never does). */
#define FZ_CHECK(cond, ...)                                                        \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "fuzz property failed: %s:%d: %s: ", __FILE__, __LINE__, \
                    #cond);                                                        \
            fprintf(stderr, __VA_ARGS__);                                          \
            fprintf(stderr, " (last error: %s)\n", ct_last_error());               \
            abort();                                                               \
        }                                                                          \
    } while (0)

static char fz_scratch[256];

/* Remove the scratch folder and what the harness left in it (one level of
 * sub-folders: the round trips write whole model folders). */
static void fz_rmtree(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (unlink(p) != 0 && depth > 0)
            fz_rmtree(p, depth - 1);
    }
    closedir(d);
    rmdir(dir);
}

static void fz_cleanup(void)
{
    if (fz_scratch[0])
        fz_rmtree(fz_scratch, 2);
}

/* The scratch folder, made once per process: under $CT_FUZZ_TMPDIR (run.sh
 * sets one and removes it, since a crashing input skips atexit), else in
 * /dev/shm where it exists, because the library fsyncs what it saves and
 * tmpfs makes that free. */
static inline const char *fz_dir(void)
{
    if (!fz_scratch[0]) {
        const char *base = getenv("CT_FUZZ_TMPDIR");
        if (!base || !*base)
            base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
        snprintf(fz_scratch, sizeof fz_scratch, "%s/cputrain-fuzz-XXXXXX", base ? base : "/tmp");
        if (!mkdtemp(fz_scratch)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(fz_cleanup);
    }
    return fz_scratch;
}

/* "<scratch>/<name>" in one of a few rotating static buffers. */
static inline const char *fz_path(const char *name)
{
    static char bufs[4][512];
    static unsigned next;
    char *p = bufs[next++ % 4];
    snprintf(p, sizeof bufs[0], "%s/%s", fz_dir(), name);
    return p;
}

/* Write data[0..len) to <scratch>/<name>; a harness that cannot is broken. */
static inline const char *fz_write(const char *name, const void *data, size_t len)
{
    const char *path = fz_path(name);
    FILE *f = fopen(path, "wb");
    if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) {
        perror(path);
        abort();
    }
    return path;
}

/* A sub-folder of the scratch folder (made if missing). */
static inline const char *fz_subdir(const char *name)
{
    const char *path = fz_path(name);
    if (mkdir(path, 0700) != 0 && access(path, F_OK) != 0) {
        perror(path);
        abort();
    }
    return path;
}

#endif
