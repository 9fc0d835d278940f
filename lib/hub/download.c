/* One file from the Hub into the cache, as hf_hub_download does it: a HEAD
 * of the resolve URL gives the commit, the ETag (the blob's name) and the
 * size; a blob already cached is linked into the snapshot, otherwise it is
 * downloaded under the blob's lock into blobs/<etag>.incomplete (resumed
 * from what an interrupted run left), checked, and renamed into place.
 * Offline, or when the Hub cannot be reached, the cached snapshot of the
 * revision answers. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/sha256.h"
#include "hub/hub.h"

/* Without a size from the server, a file may still not grow past this. */
#define MAX_UNANNOUNCED_BYTES ((int64_t)1 << 40)

static ct_status from_cache(const ct__hub_repo *r, const char *revision, const char *filename,
                            const char *why, char **path, char commit[CT__HUB_COMMIT_LEN + 1],
                            int *how)
{
    char found[CT__HUB_COMMIT_LEN + 1];
    const char *prefix = strcmp(r->type, "dataset") ? "" : "datasets/";
    if (ct__hub_ref_read(r, revision, found) != CT_OK)
        return ct__error(CT_ERR_NOT_FOUND, "%s%s at revision '%s' is not in the Hub cache %s, "
                                           "and %s: run once with network access (or copy a "
                                           "filled cache there)",
                         prefix, r->id, revision, r->o->cache_dir, why);
    if (ct__hub_known_absent(r, found, filename)) {
        *how = CT__HUB_ABSENT;
        return ct__error(CT_ERR_NOT_FOUND, "%s%s has no file '%s' at revision '%s' (known "
                                           "from an earlier look-up)", prefix, r->id, filename,
                         revision);
    }
    if (!ct__hub_snapshot_has(r, found, filename))
        return ct__error(CT_ERR_NOT_FOUND, "%s%s: '%s' at revision '%s' (commit %s) is not in "
                                           "the cache %s, and %s: run once with network "
                                           "access", prefix, r->id, filename, revision, found,
                         r->o->cache_dir, why);
    if (!(*path = ct__hub_snapshot_path(r, found, filename)))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    if (commit)
        memcpy(commit, found, sizeof found);
    return CT_OK;
}

static char *resolve_url(const ct__hub_repo *r, const char *revision, const char *filename)
{
    char *rev = ct__hub_url_quote(revision, 0), *file = ct__hub_url_quote(filename, 1);
    char *url = NULL;
    if (rev && file &&
        asprintf(&url, "%s/%s%s/resolve/%s/%s", r->o->endpoint,
                 strcmp(r->type, "dataset") ? "" : "datasets/", r->id, rev, file) < 0)
        url = NULL;
    free(rev);
    free(file);
    return url;
}

/* The sha256 of the file at fd (read from its start), as lowercase hex. */
static ct_status sha256_hex(int fd, const char *what, char hex[65])
{
    ct__sha256_ctx c;
    unsigned char buf[1 << 16], digest[CT__SHA256_BYTES];
    ssize_t n;
    ct__sha256_init(&c);
    if (lseek(fd, 0, SEEK_SET) != 0)
        return ct__error(CT_ERR_IO, "%s: %s", what, strerror(errno));
    while ((n = read(fd, buf, sizeof buf)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return ct__error(CT_ERR_IO, "%s: %s", what, strerror(errno));
        ct__sha256_update(&c, buf, (size_t)n);
    }
    ct__sha256_final(&c, digest);
    for (int i = 0; i < CT__SHA256_BYTES; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return CT_OK;
}

static int is_sha256(const char *etag)
{
    size_t i = 0;
    for (; etag[i]; i++)
        if (!((etag[i] >= '0' && etag[i] <= '9') || (etag[i] >= 'a' && etag[i] <= 'f')))
            return 0;
    return i == 64;
}

/* The blob's bytes checked against what the server said: its size, and
 * the sha256 an LFS file's ETag is. A mismatch throws the bytes away. */
static ct_status check_blob(int fd, const char *partial, const ct__hub_head *h)
{
    struct stat sb;
    char hex[65];
    ct_status st;
    if (fstat(fd, &sb) != 0)
        return ct__error(CT_ERR_IO, "%s: %s", partial, strerror(errno));
    if (h->size >= 0 && sb.st_size != h->size)
        return ct__error(CT_ERR_IO, "%s: the download stopped at %lld of %lld bytes; run again "
                                    "to resume it", partial, (long long)sb.st_size,
                         (long long)h->size);
    if (!is_sha256(h->etag))
        return CT_OK; /* a git blob id: not checked here */
    if ((st = sha256_hex(fd, partial, hex)) != CT_OK)
        return st;
    if (strcmp(hex, h->etag)) {
        unlink(partial);
        return ct__error(CT_ERR_FORMAT, "%s: the file's sha256 is %s, the server announced %s: "
                                        "discarded", partial, hex, h->etag);
    }
    return CT_OK;
}

/* Download the blob into blobs/<etag>, under its lock. */
static ct_status download_blob(const ct__hub_repo *r, const char *url, const char *filename,
                               const ct__hub_head *h)
{
    char *blob = ct__hub_blob_path(r, h->etag), *partial = NULL;
    const char *from = h->location[0] ? h->location : url;
    int lock = -1, fd = -1, unreachable;
    struct stat sb;
    off_t have;
    ct_status st;
    if (!blob || asprintf(&partial, "%s.incomplete", blob) < 0) {
        free(blob);
        return ct__error(CT_ERR_NOMEM, "out of memory");
    }
    if ((st = ct__hub_lock(r, h->etag, &lock)) != CT_OK)
        goto out;
    if (stat(blob, &sb) == 0)
        goto out; /* another process finished it while this one waited */
    *strrchr(blob, '/') = '\0';
    st = ct__make_dirs(blob, "Hub cache blobs folder");
    blob[strlen(blob)] = '/';
    if (st != CT_OK)
        goto out;
    if ((fd = open(partial, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644)) < 0 ||
        (have = lseek(fd, 0, SEEK_END)) < 0) {
        st = ct__error(CT_ERR_IO, "%s: %s", partial, strerror(errno));
        goto out;
    }
    if (h->size >= 0 && have > h->size) { /* not the start of this blob */
        if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
            st = ct__error(CT_ERR_IO, "%s: %s", partial, strerror(errno));
            goto out;
        }
        have = 0;
    }
    if (have > 0)
        ct__log(CT_LOG_INFO, "%s/%s: resuming the download of %s at byte %lld", r->id, filename,
                h->etag, (long long)have);
    if ((h->size < 0 || have < h->size) &&
        (st = ct__hub_http_get_file(r->o, from, filename, fd, have,
                                    h->size >= 0 ? h->size : MAX_UNANNOUNCED_BYTES,
                                    &unreachable)) != CT_OK) {
        ct__error_prefix(st, "%s/%s: the download stopped (the part received is kept in %s; "
                             "run again to resume it)", r->id, filename, partial);
        goto out;
    }
    if ((st = check_blob(fd, partial, h)) != CT_OK)
        goto out;
    if (fsync(fd) != 0 || rename(partial, blob) != 0)
        st = ct__error(CT_ERR_IO, "%s: %s", blob, strerror(errno));
out:
    if (fd >= 0)
        close(fd);
    ct__hub_unlock(lock);
    free(blob);
    free(partial);
    return st;
}

/* The HEAD's answer checked: what it names becomes paths. */
static ct_status check_head(const char *url, const ct__hub_head *h)
{
    if (!h->commit[0])
        return ct__error(CT_ERR_FORMAT, "%s: the server's answer has no X-Repo-Commit header "
                                        "with a commit hash: not the Hub or a mirror of it",
                         url);
    if (h->etag_bad || !h->etag[0])
        return ct__error(CT_ERR_FORMAT, "%s: the server's ETag is %s: refused (a blob name "
                                        "must be letters, digits, '-' or '_')", url,
                         h->etag[0] ? "not a safe cache name" : "missing");
    if (h->size > MAX_UNANNOUNCED_BYTES)
        return ct__error(CT_ERR_FORMAT, "%s: announced size %lld is over 1 TiB", url,
                         (long long)h->size);
    return CT_OK;
}

ct_status ct__hub_fetch(const ct_hub_options *o, const char *repo_id, const char *type,
                        const char *revision, const char *filename, char **path,
                        char commit[CT__HUB_COMMIT_LEN + 1], int *how)
{
    ct__hub_repo r;
    ct__hub_head h;
    char *url = NULL, *blob = NULL;
    int unreachable = 0;
    struct stat sb;
    ct_status st;
    *path = NULL;
    *how = 0;
    if (!ct__hub_valid_filename(filename))
        return ct__error(CT_ERR_INVALID_ARG, "'%s' is not a file name inside a repository",
                         filename);
    if (!ct__hub_valid_revision(revision))
        return ct__error(CT_ERR_INVALID_ARG, "'%s' is not a revision name", revision);
    if ((st = ct__hub_repo_open(&r, repo_id, type, o)) != CT_OK)
        return st;
    if (o->local_files_only) {
        st = from_cache(&r, revision, filename, "offline mode (HF_HUB_OFFLINE / local_files_only) "
                                                "forbids the network", path, commit, how);
        goto out;
    }
    if (!(url = resolve_url(&r, revision, filename))) {
        st = ct__error(CT_ERR_NOMEM, "out of memory");
        goto out;
    }
    st = ct__hub_http_head(o, url, &h, &unreachable);
    if (st != CT_OK && unreachable) {
        char why[768];
        snprintf(why, sizeof why, "the Hub could not be reached (%s)", ct_last_error());
        st = from_cache(&r, revision, filename, why, path, commit, how);
        if (st == CT_OK) {
            *how = CT__HUB_UNREACHABLE;
            ct__log(CT_LOG_WARNING, "%s: %s; using the cached copy %s", repo_id, why, *path);
        }
        goto out;
    }
    if (st != CT_OK)
        goto out;
    if (h.status >= 400) {
        if (h.status == 404 && (!h.error_code[0] || !strcmp(h.error_code, "EntryNotFound"))) {
            *how = CT__HUB_ABSENT;
            if (h.commit[0])
                ct__hub_mark_absent(&r, h.commit, filename);
        }
        st = ct__hub_http_error(&h, repo_id, type, filename, revision, o->endpoint);
        goto out;
    }
    if ((st = check_head(url, &h)) != CT_OK ||
        (st = ct__hub_ref_write(&r, revision, h.commit)) != CT_OK)
        goto out;
    if (!(blob = ct__hub_blob_path(&r, h.etag))) {
        st = ct__error(CT_ERR_NOMEM, "out of memory");
        goto out;
    }
    if (stat(blob, &sb) != 0 && (st = download_blob(&r, url, filename, &h)) != CT_OK)
        goto out;
    if ((st = ct__hub_snapshot_link(&r, h.commit, filename, h.etag)) != CT_OK)
        goto out;
    if (!(*path = ct__hub_snapshot_path(&r, h.commit, filename)))
        st = ct__error(CT_ERR_NOMEM, "out of memory");
    else if (commit)
        memcpy(commit, h.commit, sizeof h.commit);
out:
    free(url);
    free(blob);
    ct__hub_repo_close(&r);
    return st;
}

static ct_status copy_out(char *found, char *out, size_t size)
{
    size_t n = strlen(found);
    ct_status st = CT_OK;
    if (n >= size)
        st = ct__error(CT_ERR_INVALID_ARG, "%s: the path needs %zu bytes, the buffer has %zu",
                       found, n + 1, size);
    else
        memcpy(out, found, n + 1);
    free(found);
    return st;
}

ct_status ct_hub_download(const char *repo_id, const char *filename, const ct_hub_options *o,
                          char *path, size_t size)
{
    ct_hub_options *own = NULL;
    char *found;
    int how;
    ct_status st;
    CT__CHECK_ARG(repo_id);
    CT__CHECK_ARG(filename);
    CT__CHECK_ARG(path);
    if (!o && (st = ct_hub_options_create(&own)) != CT_OK)
        return st;
    st = ct__hub_fetch(o ? o : own, repo_id, (o ? o : own)->repo_type, (o ? o : own)->revision,
                       filename, &found, NULL, &how);
    ct_hub_options_free(own);
    return st == CT_OK ? copy_out(found, path, size) : st;
}
