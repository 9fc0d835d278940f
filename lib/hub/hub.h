/* Internal: the Hub client behind include/cputrain/hub.h — options
 * (options.c), names that may enter the cache (names.c), the cache's
 * layout (cache.c), HTTP through libcurl (http.c), one file (download.c),
 * a repository's listing (repo_info.c) and a model's files
 * (model_folder.c). */
#ifndef CT_HUB_HUB_H
#define CT_HUB_HUB_H

#include <stddef.h>
#include <stdint.h>

#include <cputrain/cputrain.h>

struct ct_hub_options {
    char *revision, *repo_type, *cache_dir, *endpoint, *token;
    int local_files_only;
    /* Seconds to connect, and of a stalled transfer (see http.c), as
     * huggingface_hub's two: timeout for a file's bytes
     * (HF_HUB_DOWNLOAD_TIMEOUT), etag_timeout for the metadata asked first
     * (a HEAD, a listing: HF_HUB_ETAG_TIMEOUT). */
    long timeout, etag_timeout;
    ct_hub_progress_fn progress;
    void *progress_user;
};

#define CT__HUB_COMMIT_LEN 40
/* A Hub path, URL or header value never needs more. */
#define CT__HUB_MAX_TEXT 4096

/* ---- names.c: what may become a path or a URL ---- */
/* "name" or "org/name" as huggingface_hub's validate_repo_id accepts. */
int ct__hub_valid_repo_id(const char *id);
/* A path inside a repo: '/'-separated, no empty, "." or ".." part, no
 * leading '/', no backslash or control byte. */
int ct__hub_valid_filename(const char *name);
/* A branch or tag (parts as a filename's) or a commit. */
int ct__hub_valid_revision(const char *rev);
/* 40 lowercase hex digits. */
int ct__hub_is_commit(const char *text);
/* A blob name from a header: [A-Za-z0-9_-] only, 1 to 128 of them. */
int ct__hub_valid_etag(const char *etag);
/* s with every byte outside RFC 3986's unreserved set (and '/' when
 * keep_slash) percent-encoded; NULL when out of memory. */
char *ct__hub_url_quote(const char *s, int keep_slash);

/* ---- cache.c: huggingface_hub's cache layout ---- */
typedef struct ct__hub_repo {
    const ct_hub_options *o;
    const char *id, *type; /* type "model" or "dataset" */
    char *dir;             /* <cache>/models--org--name */
} ct__hub_repo;
ct_status ct__hub_repo_open(ct__hub_repo *r, const char *id, const char *type,
                           const ct_hub_options *o);
void ct__hub_repo_close(ct__hub_repo *r);
/* The commit refs/<revision> names (a commit is itself); CT_ERR_NOT_FOUND
 * when the cache has no such ref. */
ct_status ct__hub_ref_read(const ct__hub_repo *r, const char *revision,
                           char commit[CT__HUB_COMMIT_LEN + 1]);
ct_status ct__hub_ref_write(const ct__hub_repo *r, const char *revision, const char *commit);
/* <repo>/snapshots/<commit>/<filename> (malloc'd; NULL when out of memory). */
char *ct__hub_snapshot_path(const ct__hub_repo *r, const char *commit, const char *filename);
/* 1 when the snapshot has the file (a link whose blob exists). */
int ct__hub_snapshot_has(const ct__hub_repo *r, const char *commit, const char *filename);
/* The snapshot's link to blobs/<etag>, made (or replaced) atomically. */
ct_status ct__hub_snapshot_link(const ct__hub_repo *r, const char *commit, const char *filename,
                                const char *etag);
/* .no_exist/<commit>/<filename>: mark a file known to be absent, or ask. */
void ct__hub_mark_absent(const ct__hub_repo *r, const char *commit, const char *filename);
int ct__hub_known_absent(const ct__hub_repo *r, const char *commit, const char *filename);
/* <repo>/blobs/<etag> (malloc'd). */
char *ct__hub_blob_path(const ct__hub_repo *r, const char *etag);
/* Take .locks/<repo folder>/<etag>.lock (waiting for another process that
 * holds it); *fd to give to ct__hub_unlock. */
ct_status ct__hub_lock(const ct__hub_repo *r, const char *etag, int *fd);
void ct__hub_unlock(int fd);

/* ---- http.c: one request through libcurl ---- */
typedef struct ct__hub_head {
    long status;
    char commit[CT__HUB_COMMIT_LEN + 1]; /* X-Repo-Commit; "" when absent */
    char etag[130];                      /* X-Linked-Etag, else ETag, unquoted */
    char error_code[64];                 /* X-Error-Code (RepoNotFound, GatedRepo, ...) */
    char error_message[256];             /* X-Error-Message */
    char location[CT__HUB_MAX_TEXT];     /* Location of a redirect */
    int64_t size;                        /* X-Linked-Size, else Content-Length; -1 */
    int etag_bad;                        /* an ETag was sent but is not a safe name */
    int location_long;                   /* a Location too long for `location` */
} ct__hub_head;
/* HEAD url (redirects within the same scheme, host and port followed, as
 * huggingface_hub follows a renamed repo's; others reported in location,
 * always an http(s) URL). CT_ERR_IO when the server could not be reached
 * (*unreachable set), or when a redirect leads anywhere but http(s);
 * CT_OK with any HTTP status otherwise. */
ct_status ct__hub_http_head(const ct_hub_options *o, const char *url, ct__hub_head *out,
                            int *unreachable);
/* GET url (redirects followed; the token only to the endpoint's scheme,
 * host and port) appending to the open file fd from byte `have` (a Range
 * request; a server that ignores it or refuses it gets the file again
 * from byte 0), at most `expected` bytes in all when expected >= 0.
 * Progress through o->progress with `name`. Bounded by o->timeout (the
 * HEAD and the listing by o->etag_timeout): a stalled or trickling
 * transfer fails with CT_ERR_IO saying so. */
ct_status ct__hub_http_get_file(const ct_hub_options *o, const char *url, const char *name,
                                int fd, int64_t have, int64_t expected, int *unreachable);
/* GET url into memory, at most max bytes: *body (malloc'd, NUL-ended; ""
 * unless the status is 2xx), *head the answer's status and headers, with
 * the server's own words on an error in error_message (from the header or
 * the first 4 KiB of the error page, the rest of which is not read). */
ct_status ct__hub_http_get_text(const ct_hub_options *o, const char *url, size_t max,
                                char **body, size_t *len, ct__hub_head *head, int *unreachable);
/* The error a failed answer means, naming the repo, revision and file
 * (`what`; NULL for the repository's listing). */
ct_status ct__hub_http_error(const ct__hub_head *h, const char *repo_id, const char *type,
                             const char *what, const char *revision, const char *endpoint);

/* ---- download.c ---- */
/* ct_hub_download at an explicit revision and repo type; *commit (may be
 * NULL) the commit it came from. *how: CT__HUB_ABSENT with
 * CT_ERR_NOT_FOUND for a file the repo does not have (callers try the next
 * name); CT__HUB_UNREACHABLE with CT_OK when the cache answered because
 * the Hub could not be reached (warned once: callers go on offline). */
enum { CT__HUB_ABSENT = 1, CT__HUB_UNREACHABLE = 2 };
ct_status ct__hub_fetch(const ct_hub_options *o, const char *repo_id, const char *type,
                        const char *revision, const char *filename, char **path,
                        char commit[CT__HUB_COMMIT_LEN + 1], int *how);

/* ---- repo_info.c: /api/{models,datasets}/<id>/revision/<rev> ---- */
typedef struct ct__hub_listing {
    char commit[CT__HUB_COMMIT_LEN + 1];
    char **files; /* every path in the repo at that commit */
    size_t n;
} ct__hub_listing;
/* Online: the Hub's answer (cached as <repo>/snapshots/<commit>'s file
 * list is not a thing huggingface_hub keeps, so offline the snapshot
 * folder's files are listed instead). */
ct_status ct__hub_list(const ct_hub_options *o, const char *repo_id, const char *type,
                       const char *revision, ct__hub_listing *out);
void ct__hub_listing_free(ct__hub_listing *l);

#endif
