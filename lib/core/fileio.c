/* Whole-file reads and crash-safe writes. */
#include "core/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/strbuf.h"

static const char *kind_of(mode_t mode)
{
    return S_ISDIR(mode)    ? "a directory"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISSOCK(mode) ? "a socket"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
                            : "not a regular file";
}

int ct__open_regular(const char *path, struct stat *sb)
{
    int fd, flags;
    /* O_NONBLOCK: opening a FIFO for reading otherwise waits, forever, for
     * a writer; the type is known only once it is open, from fstat. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        ct__error(CT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, sb) != 0) {
        ct__error(CT_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(sb->st_mode)) {
        ct__error(CT_ERR_IO, "%s: is %s, not a regular file", path, kind_of(sb->st_mode));
        close(fd);
        return -1;
    }
    /* Reads from a regular file never block anyway; cleared so the fd is
     * an ordinary one for whoever reads or maps it. */
    if ((flags = fcntl(fd, F_GETFL)) == -1 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == -1) {
        ct__error(CT_ERR_IO, "%s: fcntl: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

ct_status ct__read_file(const char *path, size_t max_bytes, char **data, size_t *len)
{
    struct stat sb;
    char *buf;
    size_t got = 0;
    int fd = ct__open_regular(path, &sb);
    *data = NULL;
    *len = 0;
    if (fd < 0)
        return CT_ERR_IO;
    if ((uint64_t)sb.st_size > max_bytes) {
        close(fd);
        return ct__error(CT_ERR_FORMAT, "%s: %lld bytes, more than the %zu allowed", path,
                         (long long)sb.st_size, max_bytes);
    }
    buf = malloc((size_t)sb.st_size + 1);
    if (!buf) {
        close(fd);
        return ct__error(CT_ERR_NOMEM, "%s: out of memory reading %lld bytes", path,
                         (long long)sb.st_size);
    }
    while (got < (size_t)sb.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)sb.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int err = n < 0 ? errno : 0;
            free(buf);
            close(fd);
            return ct__error(CT_ERR_IO, "%s: read failed: %s", path,
                             err ? strerror(err) : "file shrank while reading");
        }
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    *data = buf;
    *len = got;
    return CT_OK;
}

ct_status ct__open_temp_beside(const char *path, int *fd, char **tmp_path)
{
    size_t n = strlen(path);
    char *tmp = malloc(n + sizeof ".tmp.XXXXXX");
    *fd = -1;
    *tmp_path = NULL;
    if (!tmp)
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", path);
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    *fd = mkostemp(tmp, O_CLOEXEC);
    if (*fd < 0) {
        int err = errno;
        free(tmp);
        return ct__error(CT_ERR_IO, "%s: cannot create a temporary file beside it: %s", path,
                         strerror(err));
    }
    /* mkostemp makes 0600; saved models and logs are meant to be shared.
     * (Reading the umask is not thread-safe, so 0644 it is.) */
    if (fchmod(*fd, 0644) != 0) {
        int err = errno;
        ct__abandon_file(*fd, tmp);
        free(tmp);
        *fd = -1;
        return ct__error(CT_ERR_IO, "%s: cannot set the mode of a temporary file: %s", path,
                         strerror(err));
    }
    *tmp_path = tmp;
    return CT_OK;
}

ct_status ct__fsync_dir(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err = 0;
    if (dfd < 0)
        return ct__error(CT_ERR_IO, "%s: cannot open the folder to sync it: %s", dir,
                         strerror(errno));
    /* EINVAL: this filesystem cannot sync a folder (some FUSE and network
     * ones); nothing more can be done there, and it is not a failure. */
    if (fsync(dfd) != 0 && errno != EINVAL)
        err = errno;
    close(dfd);
    return err ? ct__error(CT_ERR_IO, "%s: cannot sync the folder: %s", dir, strerror(err))
               : CT_OK;
}

static ct_status fsync_parent(const char *path)
{
    char *copy = strdup(path);
    ct_status st;
    if (!copy)
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", path);
    st = ct__fsync_dir(dirname(copy));
    free(copy);
    return st;
}

ct_status ct__commit_file(int fd, const char *tmp_path, const char *path)
{
    int err = 0;
    if (fsync(fd) != 0)
        err = errno;
    if (close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp_path, path) != 0)
        err = errno;
    if (err) {
        unlink(tmp_path);
        return ct__error(CT_ERR_IO, "%s: cannot write: %s", path, strerror(err));
    }
    /* The file is whole and in place; a folder that cannot be synced means
     * the rename may not survive a crash, which the caller must hear. */
    return fsync_parent(path);
}

void ct__abandon_file(int fd, const char *tmp_path)
{
    if (fd >= 0)
        close(fd);
    if (tmp_path)
        unlink(tmp_path);
}

ct_status ct__write_file_atomic(const char *path, const void *data, size_t len)
{
    const char *p = data;
    char *tmp;
    int fd;
    ct_status st = ct__open_temp_beside(path, &fd, &tmp);
    if (st != CT_OK)
        return st;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;
            ct__abandon_file(fd, tmp);
            free(tmp);
            return ct__error(CT_ERR_IO, "%s: write failed: %s", path, strerror(err));
        }
        p += n;
        len -= (size_t)n;
    }
    st = ct__commit_file(fd, tmp, path);
    free(tmp);
    return st;
}

ct_status ct__write_text_atomic(const char *path, ct__strbuf *sb, const char *what)
{
    ct_status st;
    if (sb->failed)
        st = what ? ct__error_prefix((ct_status)sb->failed, "%s: %s", path, what)
                  : ct__error_prefix((ct_status)sb->failed, "%s", path);
    else
        st = ct__write_file_atomic(path, sb->data, sb->len);
    ct__sb_free(sb);
    return st;
}

ct_status ct__path_format(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < size)
        return CT_OK;
    return ct__error(CT_ERR_INVALID_ARG, "%.100s...: path longer than %zu bytes", buf,
                     size - 1);
}

char *ct__join_path(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name), slash = a > 0 && dir[a - 1] == '/' ? 0 : 1;
    char *p = malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    p[a] = '/'; /* overwritten by name when dir ends in one already */
    memcpy(p + a + slash, name, b + 1);
    return p;
}

ct_status ct__file_or_folder(const char *path, const char *name, char **file, int *is_dir)
{
    struct stat sb;
    *file = NULL;
    if (stat(path, &sb) != 0)
        return ct__error(CT_ERR_IO, "%s: %s", path, strerror(errno));
    if (is_dir)
        *is_dir = S_ISDIR(sb.st_mode);
    if (!(*file = S_ISDIR(sb.st_mode) ? ct__join_path(path, name) : strdup(path)))
        return ct__error(CT_ERR_NOMEM, "no memory");
    return CT_OK;
}

ct_status ct__make_dirs(const char *dir, const char *what)
{
    char path[4096];
    struct stat sb;
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path)
        return ct__error(CT_ERR_INVALID_ARG, "%s '%s' is not a usable path", what, dir);
    memcpy(path, dir, n + 1);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return ct__error(CT_ERR_IO, "%s: cannot create %s: %s", what, path, strerror(errno));
        *p = '/';
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return ct__error(CT_ERR_IO, "%s: cannot create %s: %s", what, path, strerror(errno));
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return ct__error(CT_ERR_IO, "%s: %s exists and is not a folder", what, path);
    return CT_OK;
}
