/* One run per output_dir: an advisory flock on output_dir/.lock, with the
 * holder's pid written inside so a refused run can say who has the folder.
 * The trainer takes it for ct_trainer_train; a program that writes into
 * output_dir before or after training (evaluation, predictions, a model
 * card) takes it for its whole run with ct_output_lock_create, and the
 * trainer then joins that lock instead of taking a second one. */
#include "train/outdir_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"

#define LOCK_NAME ".lock"

struct ct_output_lock {
    int fd;
    dev_t dev; /* of the lock file: what a trainer's output_dir is matched by */
    ino_t ino;
    pid_t pid; /* its maker: a forked child inherits the registry, not the run */
    struct ct_output_lock *next;
};

/* This process's ct_output_lock_create locks: the ones trainers join. */
static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static ct_output_lock *registry;

/* The pid the holder wrote, or 0 if it has not written it yet (it takes the
 * lock first, then writes) or the file holds something else. */
static long holder_pid(int fd)
{
    char text[32];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    char *end;
    long pid;
    if (n <= 0)
        return 0;
    text[n] = '\0';
    pid = strtol(text, &end, 10);
    return end != text && (*end == '\n' || *end == '\0') && pid > 0 ? pid : 0;
}

static ct_output_lock *registered(dev_t dev, ino_t ino)
{
    ct_output_lock *l;
    for (l = registry; l != NULL; l = l->next)
        if (l->dev == dev && l->ino == ino && l->pid == getpid())
            return l;
    return NULL;
}

ct_status ct__output_dir_check(const char *dir)
{
    size_t n = strlen(dir);
    if (n > CT__OUTPUT_DIR_MAX)
        return ct__error(CT_ERR_INVALID_ARG, "output_dir %.100s...: %zu bytes long, more than "
                         "the %d that leave room for the checkpoints' paths", dir, n,
                         CT__OUTPUT_DIR_MAX);
    return CT_OK;
}

/* Opens dir/.lock and, unless join_shared finds it held by a shared lock
 * of this process, takes the flock. *out is NULL when joined. */
static ct_status take(const char *dir, int join_shared, ct_output_lock **out)
{
    char path[4200], text[32];
    struct stat sb;
    ct_output_lock *l;
    ct_status st;
    int fd, len;
    *out = NULL;
    if ((st = ct__output_dir_check(dir)) != CT_OK ||
        (st = ct__make_dirs(dir, "output_dir")) != CT_OK)
        return st;
    snprintf(path, sizeof path, "%s/" LOCK_NAME, dir);
    /* O_NOFOLLOW: a symlink planted as .lock must not make us truncate the
     * file it points to. */
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd < 0)
        return ct__error(CT_ERR_IO, "output_dir: cannot open the lock file %s: %s", path,
                         strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return ct__error(CT_ERR_IO, "output_dir: the lock file %s is not a regular file", path);
    }
    pthread_mutex_lock(&registry_mutex);
    l = registered(sb.st_dev, sb.st_ino);
    pthread_mutex_unlock(&registry_mutex);
    if (l != NULL) {
        close(fd);
        if (join_shared)
            return CT_OK;
        return ct__error(CT_ERR_BUSY, "output_dir %s is in use by another run of this process "
                                      "(pid %ld holds %s)", dir, (long)getpid(), path);
    }
    /* flock, not fcntl locks: fcntl locks belong to the process, so a second
     * trainer in the same process (or a library closing any fd of the file)
     * would silently share or drop them. The kernel releases a flock when
     * its holder dies, even by SIGKILL. */
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        long pid;
        if (err == EINTR)
            continue;
        if (err == EWOULDBLOCK) {
            pid = holder_pid(fd);
            close(fd);
            if (pid)
                return ct__error(CT_ERR_BUSY, "output_dir %s is in use by another run (pid %ld "
                                              "holds %s)", dir, pid, path);
            return ct__error(CT_ERR_BUSY, "output_dir %s is in use by another run (a process "
                                          "that is just starting holds %s)", dir, path);
        }
        /* Some network filesystems have no locks: run unprotected rather
         * than not at all, and say so. */
        ct__log(CT_LOG_WARNING, "output_dir: cannot lock %s (%s): nothing stops another run "
                                "from using %s at the same time", path, strerror(err), dir);
        break;
    }
    len = snprintf(text, sizeof text, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)len, 0) != len) {
        int err = errno;
        close(fd);
        return ct__error(CT_ERR_IO, "output_dir: cannot write the lock file %s: %s", path,
                         strerror(err));
    }
    if ((l = calloc(1, sizeof *l)) == NULL) {
        close(fd);
        return ct__error(CT_ERR_NOMEM, "output_dir: out of memory");
    }
    l->fd = fd;
    l->dev = sb.st_dev;
    l->ino = sb.st_ino;
    l->pid = getpid();
    *out = l;
    return CT_OK;
}

ct_status ct__outdir_lock(const char *dir, ct_output_lock **lock)
{
    return take(dir, 1, lock);
}

void ct__outdir_unlock(ct_output_lock *lock)
{
    /* The file stays: unlinking it would let a run that opened it just
     * before lock a file no one else can see any more. */
    if (lock == NULL)
        return;
    close(lock->fd);
    free(lock);
}

ct_status ct_output_lock_create(const char *output_dir, ct_output_lock **out)
{
    ct_output_lock *l;
    ct_status st;
    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(output_dir);
    /* Two creators racing for one folder: the second's flock fails, as a
     * second process's would, so the registry only ever holds one. */
    if ((st = take(output_dir, 0, &l)) != CT_OK)
        return st;
    pthread_mutex_lock(&registry_mutex);
    l->next = registry;
    registry = l;
    pthread_mutex_unlock(&registry_mutex);
    *out = l;
    return CT_OK;
}

void ct_output_lock_free(ct_output_lock *lock)
{
    ct_output_lock **p;
    if (lock == NULL)
        return;
    pthread_mutex_lock(&registry_mutex);
    for (p = &registry; *p != NULL; p = &(*p)->next)
        if (*p == lock) {
            *p = lock->next;
            break;
        }
    pthread_mutex_unlock(&registry_mutex);
    ct__outdir_unlock(lock);
}
