/* huggingface_hub's cache layout (file_download.py, the cache guide):
 *   <cache>/<type>s--<org>--<name>/blobs/<etag>
 *                                  snapshots/<commit>/<file> -> ../../blobs/<etag>
 *                                  refs/<revision>            (holds a commit)
 *                                  .no_exist/<commit>/<file>  (empty: absent)
 *   <cache>/.locks/<type>s--<org>--<name>/<etag>.lock
 * Only names checked by names.c reach these paths. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/strbuf.h"
#include "hub/hub.h"

/* "models--org--name": the id's '/' as "--". */
static char *folder_name(const char *type, const char *id)
{
    ct__strbuf sb = {0};
    ct__sb_printf(&sb, "%ss--", type);
    for (; *id; id++)
        *id == '/' ? ct__sb_puts(&sb, "--") : ct__sb_append(&sb, id, 1);
    return ct__sb_take(&sb);
}

ct_status ct__hub_repo_open(ct__hub_repo *r, const char *id, const char *type,
                           const ct_hub_options *o)
{
    char *name;
    memset(r, 0, sizeof *r);
    if (!ct__hub_valid_repo_id(id))
        return ct__error(CT_ERR_INVALID_ARG, "'%s' is not a Hub repository id (\"name\" or "
                                             "\"org/name\": letters, digits, '-', '_', '.')",
                         id);
    r->o = o;
    r->id = id;
    r->type = type;
    if (!(name = folder_name(r->type, id)))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    r->dir = ct__join_path(o->cache_dir, name);
    free(name);
    return r->dir ? CT_OK : ct__error(CT_ERR_NOMEM, "out of memory");
}

void ct__hub_repo_close(ct__hub_repo *r)
{
    free(r->dir);
    r->dir = NULL;
}

static char *path_of(const ct__hub_repo *r, const char *fmt, const char *a, const char *b)
{
    char *out = NULL;
    if (asprintf(&out, fmt, r->dir, a, b) < 0)
        return NULL;
    return out;
}

ct_status ct__hub_ref_read(const ct__hub_repo *r, const char *revision,
                           char commit[CT__HUB_COMMIT_LEN + 1])
{
    char *path, *text = NULL;
    size_t len;
    ct_status st;
    if (ct__hub_is_commit(revision)) {
        memcpy(commit, revision, CT__HUB_COMMIT_LEN + 1);
        return CT_OK;
    }
    if (!(path = path_of(r, "%s/refs/%s%s", revision, "")))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    st = ct__read_file(path, 256, &text, &len);
    if (st == CT_OK) {
        text[strcspn(text, "\r\n")] = '\0';
        st = ct__hub_is_commit(text) ? CT_OK
                                     : ct__error(CT_ERR_FORMAT, "%s: not a commit hash", path);
        if (st == CT_OK)
            memcpy(commit, text, CT__HUB_COMMIT_LEN + 1);
    } else
        st = ct__error(CT_ERR_NOT_FOUND, "%s: no cached revision '%s' of %s", path, revision,
                       r->id);
    free(text);
    free(path);
    return st;
}

/* Make the folder holding `path` (its parents too). */
static ct_status make_parent(const char *path)
{
    char *dir = strdup(path), *slash;
    ct_status st;
    if (!dir)
        return ct__error(CT_ERR_NOMEM, "out of memory");
    if ((slash = strrchr(dir, '/')))
        *slash = '\0';
    st = ct__make_dirs(dir, "Hub cache folder");
    free(dir);
    return st;
}

ct_status ct__hub_ref_write(const ct__hub_repo *r, const char *revision, const char *commit)
{
    char *path;
    ct_status st;
    if (!strcmp(revision, commit))
        return CT_OK; /* a commit needs no ref */
    if (!(path = path_of(r, "%s/refs/%s%s", revision, "")))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    st = make_parent(path);
    if (st == CT_OK)
        st = ct__write_file_atomic(path, commit, strlen(commit));
    free(path);
    return st;
}

char *ct__hub_snapshot_path(const ct__hub_repo *r, const char *commit, const char *filename)
{
    char *out = NULL;
    if (asprintf(&out, "%s/snapshots/%s/%s", r->dir, commit, filename) < 0)
        return NULL;
    return out;
}

int ct__hub_snapshot_has(const ct__hub_repo *r, const char *commit, const char *filename)
{
    char *path = ct__hub_snapshot_path(r, commit, filename);
    struct stat sb;
    int ok = path && stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
    free(path);
    return ok;
}

char *ct__hub_blob_path(const ct__hub_repo *r, const char *etag)
{
    return path_of(r, "%s/blobs/%s%s", etag, "");
}

ct_status ct__hub_snapshot_link(const ct__hub_repo *r, const char *commit, const char *filename,
                                const char *etag)
{
    char *link = ct__hub_snapshot_path(r, commit, filename), *tmp = NULL, *target = NULL;
    ct__strbuf up = {0};
    ct_status st = CT_ERR_NOMEM;
    /* From snapshots/<commit>/<a/b/file>: one ".." per folder, two more. */
    ct__sb_puts(&up, "../..");
    for (const char *p = filename; *p; p++)
        if (*p == '/')
            ct__sb_puts(&up, "/..");
    if (!link || up.failed || asprintf(&target, "%s/blobs/%s", up.data, etag) < 0 ||
        asprintf(&tmp, "%s.link-%ld", link, (long)getpid()) < 0) {
        st = ct__error(CT_ERR_NOMEM, "out of memory");
        goto out;
    }
    if ((st = make_parent(link)) != CT_OK)
        goto out;
    unlink(tmp);
    if (symlink(target, tmp) != 0 || rename(tmp, link) != 0) {
        st = ct__error(CT_ERR_IO, "%s: cannot link to the blob: %s", link, strerror(errno));
        unlink(tmp);
    }
out:
    ct__sb_free(&up);
    free(link);
    free(tmp);
    free(target);
    return st;
}

void ct__hub_mark_absent(const ct__hub_repo *r, const char *commit, const char *filename)
{
    char *path = path_of(r, "%s/.no_exist/%s/%s", commit, filename);
    int fd;
    /* Only a hint for later offline runs: failing to write it loses nothing. */
    if (path && make_parent(path) == CT_OK &&
        (fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644)) >= 0)
        close(fd);
    free(path);
}

int ct__hub_known_absent(const ct__hub_repo *r, const char *commit, const char *filename)
{
    char *path = path_of(r, "%s/.no_exist/%s/%s", commit, filename);
    int yes = path && access(path, F_OK) == 0;
    free(path);
    return yes;
}

ct_status ct__hub_lock(const ct__hub_repo *r, const char *etag, int *fd)
{
    const char *folder = strrchr(r->dir, '/') ? strrchr(r->dir, '/') + 1 : r->dir;
    char *path = NULL;
    ct_status st = CT_OK;
    *fd = -1;
    if (asprintf(&path, "%s/.locks/%s/%s.lock", r->o->cache_dir, folder, etag) < 0)
        return ct__error(CT_ERR_NOMEM, "out of memory");
    if ((st = make_parent(path)) == CT_OK &&
        (*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644)) < 0)
        st = ct__error(CT_ERR_IO, "%s: cannot open the download lock: %s", path,
                       strerror(errno));
    if (st == CT_OK && flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        int rc;
        ct__log(CT_LOG_INFO, "%s: another process is downloading this file; waiting for it",
                path);
        while ((rc = flock(*fd, LOCK_EX)) != 0 && errno == EINTR)
            ;
        if (rc != 0) {
            st = ct__error(CT_ERR_IO, "%s: cannot take the download lock: %s", path,
                           strerror(errno));
            close(*fd);
            *fd = -1;
        }
    }
    free(path);
    return st;
}

void ct__hub_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* releases the flock */
}
