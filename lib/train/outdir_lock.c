/* One run per output_dir: an advisory flock on output_dir/.lock, held for
 * the whole of ct_trainer_train, with the holder's pid written inside so a
 * refused run can say who has the folder. */
#include "train/outdir_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

#define LOCK_NAME ".lock"

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

ct_status ct__outdir_lock(const char *dir, int *fd_out)
{
    char path[4200], text[32];
    int fd, len;
    *fd_out = -1;
    snprintf(path, sizeof path, "%s/" LOCK_NAME, dir);
    /* O_NOFOLLOW: a symlink planted as .lock must not make us truncate the
     * file it points to. */
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd < 0)
        return ct__error(CT_ERR_IO, "output_dir: cannot open the lock file %s: %s", path,
                         strerror(errno));
    {
        struct stat sb;
        if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            close(fd);
            return ct__error(CT_ERR_IO, "output_dir: the lock file %s is not a regular file",
                             path);
        }
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
        /* Some network filesystems have no locks: train unprotected rather
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
    *fd_out = fd;
    return CT_OK;
}

void ct__outdir_unlock(int fd)
{
    /* The file stays: unlinking it would let a run that opened it just
     * before lock a file no one else can see any more. */
    if (fd >= 0)
        close(fd);
}
