/* The key that makes a job's shm endpoint names unpredictable when the job
 * has no secret: 32 random bytes in a file only this user can read, made
 * once and shared by every process of the user (hence by every rank). */
#include "dist/shm_join.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/sha256.h"

#define KEY_BYTES 32
#define KEY_FILE "cputrain-shm-endpoint.key"

/* A folder no other user can write into (so none can plant or replace the
 * key): a directory, not a symlink, owned by this user, not group- or
 * world-writable; `private` also refuses any access by others. */
static const char *unsafe_dir(const char *path, int private)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return strerror(errno);
    if (!S_ISDIR(sb.st_mode))
        return "not a folder";
    if (sb.st_uid != geteuid())
        return "owned by another user";
    if (sb.st_mode & (private ? 077 : 022))
        return private ? "open to other users" : "writable by other users";
    return NULL;
}

/* dir/sub, made 0700 when missing, then held to unsafe_dir's rules. */
static const char *private_subdir(const char *dir, const char *sub, char *out, size_t size)
{
    int n = snprintf(out, size, "%s/%s", dir, sub);
    if (n < 0 || (size_t)n >= size)
        return "path too long";
    if (mkdir(out, 0700) != 0 && errno != EEXIST)
        return strerror(errno);
    return unsafe_dir(out, 0);
}

/* Reads the key at path: a regular file of this user, mode 0600 or
 * stricter, exactly KEY_BYTES long. 1 read, 0 absent, -1 unusable (why). */
static int read_key(const char *path, unsigned char *key, const char **why)
{
    struct stat sb;
    ssize_t got;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        *why = strerror(e);
        return e == ENOENT ? 0 : -1;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() ||
        (sb.st_mode & 077) || sb.st_size != KEY_BYTES) {
        close(fd);
        *why = "not a private file of this user holding 32 bytes";
        return -1;
    }
    got = read(fd, key, KEY_BYTES);
    close(fd);
    if (got != KEY_BYTES) {
        *why = "cannot be read whole";
        return -1;
    }
    return 1;
}

/* Writes a fresh key beside path and links it into place: link() fails on
 * an existing name, so of several ranks making it at once one wins and the
 * others read the winner's. */
static int make_key(const char *path, unsigned char *key, const char **why)
{
    char tmp[4300];
    unsigned char fresh[KEY_BYTES];
    int fd, ok, r;
    if (ct__random_bytes(fresh, sizeof fresh) != CT_OK) {
        *why = "no random bytes";
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    unlink(tmp); /* one of ours from a process of this pid that died */
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        *why = strerror(errno);
        return -1;
    }
    ok = write(fd, fresh, sizeof fresh) == (ssize_t)sizeof fresh && fsync(fd) == 0;
    close(fd);
    if (ok && link(tmp, path) != 0 && errno != EEXIST)
        ok = 0;
    unlink(tmp);
    memset(fresh, 0, sizeof fresh);
    if (!ok) {
        *why = strerror(errno);
        return -1;
    }
    r = read_key(path, key, why);
    return r == 1 ? 1 : -1;
}

int ct__shm_user_key(unsigned char key[32], char *why, size_t why_size)
{
    const char *run = getenv("XDG_RUNTIME_DIR"), *home = getenv("HOME");
    const char *reason = "HOME is not set";
    char dir[4096], path[4200];
    int r;
    /* The session's runtime folder (0700, the user's own by definition),
     * else the home's cache. */
    if (run && run[0] == '/' && strlen(run) < sizeof dir && unsafe_dir(run, 1) == NULL)
        snprintf(dir, sizeof dir, "%s", run);
    else if (home && home[0] == '/') {
        char cache[4096];
        if ((reason = unsafe_dir(home, 0)) == NULL &&
            (reason = private_subdir(home, ".cache", cache, sizeof cache)) == NULL)
            reason = private_subdir(cache, "cputrain", dir, sizeof dir);
        if (reason != NULL) {
            snprintf(why, why_size, "%s: %s", home, reason);
            return 0;
        }
    } else {
        snprintf(why, why_size, "%s", reason);
        return 0;
    }
    snprintf(path, sizeof path, "%s/" KEY_FILE, dir);
    r = read_key(path, key, &reason);
    if (r == 0)
        r = make_key(path, key, &reason);
    if (r != 1) {
        snprintf(why, why_size, "%s: %s", path, reason);
        return 0;
    }
    return 1;
}
