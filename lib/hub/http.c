/* HTTP for the Hub client, through libcurl: a HEAD that reads the Hub's
 * headers (file_download.py's get_hf_file_metadata), a GET into a file
 * that resumes, and a small GET into memory (the API's JSON). Only http and
 * https, in both the request and any redirect; the token goes to the
 * endpoint's host only (libcurl drops a custom Authorization header when a
 * redirect changes host, port or scheme). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/error.h"
#include "hub/curl_api.h"
#include "hub/hub.h"

#define MAX_HEADER_BYTES (64 * 1024)
#define MAX_REDIRECTS 5

/* A transfer's state shared with libcurl's callbacks. */
typedef struct transfer {
    const ct_hub_options *o;
    ct__hub_head *head;   /* headers wanted (HEAD), or NULL */
    size_t header_bytes;
    long status;          /* of the last status line seen */
    int fd;               /* GET into a file: fd, have, expected */
    int64_t have, expected, written;
    int restarted;        /* the server ignored the Range: written from 0 */
    char *buf;            /* GET into memory */
    size_t len, max;
    const char *name;     /* for progress */
    int overflow;         /* more bytes than allowed */
    int io_errno;
} transfer;

static void copy_value(char *dst, size_t size, const char *v, size_t n)
{
    if (n >= size)
        n = size - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

/* An ETag as huggingface_hub normalises it: no W/ prefix, no quotes. */
static void set_etag(ct__hub_head *h, const char *v, size_t n)
{
    if (n >= 2 && !strncmp(v, "W/", 2))
        v += 2, n -= 2;
    if (n >= 2 && v[0] == '"' && v[n - 1] == '"')
        v++, n -= 2;
    h->etag_bad = n == 0 || n >= sizeof h->etag;
    copy_value(h->etag, sizeof h->etag, v, n);
    h->etag_bad |= !ct__hub_valid_etag(h->etag);
}

static int64_t parse_size(const char *v, size_t n)
{
    int64_t x = 0;
    if (n == 0 || n > 18)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        x = 10 * x + (v[i] - '0');
    }
    return x;
}

static void header_line(transfer *t, const char *line, size_t n)
{
    ct__hub_head *h = t->head;
    const char *colon = memchr(line, ':', n), *v;
    size_t name_len, vn;
    long status;
    while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == '\n'))
        n--;
    if (n > 5 && !strncmp(line, "HTTP/", 5)) {
        const char *sp = memchr(line, ' ', n);
        if (sp && sscanf(sp, " %ld", &status) == 1)
            t->status = status;
        if (h) { /* a new response (after a redirect): forget the last one's headers */
            long keep = t->status;
            memset(h, 0, sizeof *h);
            h->size = -1;
            h->status = keep;
        }
        return;
    }
    if (!h || !colon)
        return;
    name_len = (size_t)(colon - line);
    v = colon + 1;
    vn = n - name_len - 1;
    while (vn > 0 && (*v == ' ' || *v == '\t'))
        v++, vn--;
#define IS(name) (name_len == sizeof name - 1 && !strncasecmp(line, name, name_len))
    if (IS("X-Repo-Commit")) {
        char commit[CT__HUB_COMMIT_LEN + 2];
        copy_value(commit, sizeof commit, v, vn);
        if (ct__hub_is_commit(commit))
            memcpy(h->commit, commit, sizeof h->commit);
    } else if (IS("X-Linked-Etag"))
        set_etag(h, v, vn);
    else if (IS("ETag") && !h->etag[0] && !h->etag_bad)
        set_etag(h, v, vn);
    else if (IS("X-Linked-Size"))
        h->size = parse_size(v, vn);
    else if (IS("Content-Length") && h->size < 0)
        h->size = parse_size(v, vn);
    else if (IS("X-Error-Code"))
        copy_value(h->error_code, sizeof h->error_code, v, vn);
    else if (IS("X-Error-Message"))
        copy_value(h->error_message, sizeof h->error_message, v, vn);
    else if (IS("Location"))
        copy_value(h->location, sizeof h->location, v, vn);
#undef IS
}

static size_t on_header(char *data, size_t size, size_t count, void *user)
{
    transfer *t = user;
    size_t n = size * count;
    if ((t->header_bytes += n) > MAX_HEADER_BYTES) {
        t->overflow = 1;
        return 0; /* aborts the transfer */
    }
    header_line(t, data, n);
    return n;
}

static size_t on_body_file(char *data, size_t size, size_t count, void *user)
{
    transfer *t = user;
    size_t n = size * count, done = 0;
    if (t->status >= 300)
        return n; /* an error page or a redirect's body: not the file */
    if (t->have > 0 && t->status == 200 && !t->restarted && t->written == 0) {
        /* The server sent the whole file, not the range asked for. */
        if (ftruncate(t->fd, 0) != 0 || lseek(t->fd, 0, SEEK_SET) != 0) {
            t->io_errno = errno;
            return 0;
        }
        t->have = 0;
        t->restarted = 1;
    }
    if (t->expected >= 0 && t->have + t->written + (int64_t)n > t->expected) {
        t->overflow = 1;
        return 0;
    }
    while (done < n) {
        ssize_t w = write(t->fd, data + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            t->io_errno = w < 0 ? errno : EIO;
            return 0;
        }
        done += (size_t)w;
    }
    t->written += (int64_t)n;
    return n;
}

static size_t on_body_memory(char *data, size_t size, size_t count, void *user)
{
    transfer *t = user;
    size_t n = size * count;
    char *grown;
    if (t->len + n > t->max) {
        t->overflow = 1;
        return 0;
    }
    if (!(grown = realloc(t->buf, t->len + n + 1)))
        return 0;
    t->buf = grown;
    memcpy(t->buf + t->len, data, n);
    t->len += n;
    t->buf[t->len] = '\0';
    return n;
}

static int on_progress(void *user, curl_off_t total, curl_off_t now, curl_off_t ut,
                       curl_off_t un)
{
    transfer *t = user;
    (void)ut, (void)un, (void)now, (void)total;
    if (t->o->progress && t->status < 300)
        t->o->progress(t->name, (uint64_t)(t->have + t->written),
                       (uint64_t)(t->expected >= 0 ? t->expected : 0), t->o->progress_user);
    return 0;
}

/* The host part of a URL ("" when it has none), to compare two URLs'. */
static void host_of(const char *url, char *out, size_t size)
{
    const char *p = strstr(url, "://"), *end;
    p = p ? p + 3 : url;
    end = p + strcspn(p, "/?#");
    copy_value(out, size, p, (size_t)(end - p));
}

static CURL *easy_for(const ct_hub_options *o, const char *url, transfer *t,
                      struct curl_slist **headers)
{
    const ct__curl_api *cu = ct__curl();
    char host[256], endpoint_host[256], *auth = NULL;
    CURL *c;
    if (!cu || !(c = cu->easy_init()))
        return NULL;
    cu->easy_setopt(c, CURLOPT_URL, url);
    cu->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    cu->easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    cu->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    cu->easy_setopt(c, CURLOPT_USERAGENT, "libcputrain/" CT_VERSION_STRING "; huggingface_hub-cache");
    cu->easy_setopt(c, CURLOPT_CONNECTTIMEOUT, o->timeout);
    cu->easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    cu->easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o->timeout);
    cu->easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    cu->easy_setopt(c, CURLOPT_HEADERDATA, t);
    *headers = NULL;
    host_of(url, host, sizeof host);
    host_of(o->endpoint, endpoint_host, sizeof endpoint_host);
    if (o->token[0] && !strcmp(host, endpoint_host) &&
        asprintf(&auth, "Authorization: Bearer %s", o->token) >= 0) {
        *headers = cu->slist_append(NULL, auth);
        memset(auth, 0, strlen(auth));
        free(auth);
        cu->easy_setopt(c, CURLOPT_HTTPHEADER, *headers);
    }
    return c;
}

/* Why easy_for gave no handle: libcurl missing (said by ct__curl), or
 * curl_easy_init failing. */
static ct_status no_handle(void)
{
    return ct__curl() ? ct__error(CT_ERR_NOMEM, "curl_easy_init failed") : CT_ERR_UNSUPPORTED;
}

static void easy_done(CURL *c, struct curl_slist *headers)
{
    const ct__curl_api *cu = ct__curl();
    cu->easy_cleanup(c);
    cu->slist_free_all(headers);
}

static int is_unreachable(CURLcode rc)
{
    return rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY ||
           rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT ||
           rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_GOT_NOTHING || rc == CURLE_RECV_ERROR ||
           rc == CURLE_SEND_ERROR;
}

static ct_status transfer_error(CURLcode rc, const transfer *t, const char *url,
                                int *unreachable)
{
    const ct__curl_api *cu = ct__curl();
    if (t->overflow)
        return ct__error(CT_ERR_FORMAT, "%s: the server sent more than announced (headers "
                                        "over 64 KiB, or a body over its size)", url);
    if (t->io_errno)
        return ct__error(CT_ERR_IO, "%s: writing to the cache failed: %s", url,
                         strerror(t->io_errno));
    *unreachable = is_unreachable(rc);
    return ct__error(CT_ERR_IO, "%s from %s", cu->easy_strerror(rc), url);
}

ct_status ct__hub_http_head(const ct_hub_options *o, const char *url, ct__hub_head *out,
                            int *unreachable)
{
    const ct__curl_api *cu = ct__curl();
    char *current = strdup(url), first_host[256], host[256];
    ct_status st = CT_OK;
    *unreachable = 0;
    if (!current)
        return ct__error(CT_ERR_NOMEM, "out of memory");
    host_of(url, first_host, sizeof first_host);
    for (int hop = 0;; hop++) {
        transfer t = {.o = o, .head = out, .fd = -1};
        struct curl_slist *headers;
        CURL *c = easy_for(o, current, &t, &headers);
        CURLcode rc;
        CURLU *u;
        char *next = NULL;
        memset(out, 0, sizeof *out);
        out->size = -1;
        if (!c) {
            st = no_handle();
            break;
        }
        cu->easy_setopt(c, CURLOPT_NOBODY, 1L);
        rc = cu->easy_perform(c);
        easy_done(c, headers);
        if (rc != CURLE_OK) {
            st = transfer_error(rc, &t, current, unreachable);
            break;
        }
        out->status = t.status;
        if (t.status < 300 || t.status > 399 || !out->location[0])
            break;
        /* A redirect: followed when it stays on the endpoint's host (a renamed
         * repo), reported otherwise (the file store of a large file). */
        if (!(u = cu->url()))
            break;
        if (cu->url_set(u, CURLUPART_URL, current, 0) == CURLUE_OK &&
            cu->url_set(u, CURLUPART_URL, out->location, 0) == CURLUE_OK &&
            cu->url_get(u, CURLUPART_URL, &next, 0) == CURLUE_OK) {
            host_of(next, host, sizeof host);
            copy_value(out->location, sizeof out->location, next, strlen(next));
        }
        cu->url_cleanup(u);
        if (!next || strcmp(host, first_host) || hop == MAX_REDIRECTS) {
            cu->free(next);
            break;
        }
        free(current);
        current = strdup(next);
        cu->free(next);
        if (!current)
            return ct__error(CT_ERR_NOMEM, "out of memory");
    }
    free(current);
    return st;
}

/* A GET following redirects (the file store's), its body to `write`. */
static void get_into(const ct__curl_api *cu, CURL *c,
                     size_t (*write)(char *, size_t, size_t, void *), transfer *t)
{
    cu->easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    cu->easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    cu->easy_setopt(c, CURLOPT_WRITEFUNCTION, write);
    cu->easy_setopt(c, CURLOPT_WRITEDATA, t);
}

ct_status ct__hub_http_get_file(const ct_hub_options *o, const char *url, const char *name,
                                int fd, int64_t have, int64_t expected, int *unreachable)
{
    const ct__curl_api *cu = ct__curl();
    transfer t = {.o = o, .fd = fd, .have = have, .expected = expected, .name = name};
    struct curl_slist *headers;
    CURL *c = easy_for(o, url, &t, &headers);
    CURLcode rc;
    *unreachable = 0;
    if (!c)
        return no_handle();
    get_into(cu, c, on_body_file, &t);
    cu->easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    cu->easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    cu->easy_setopt(c, CURLOPT_XFERINFODATA, &t);
    if (have > 0)
        cu->easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)have);
    rc = cu->easy_perform(c);
    easy_done(c, headers);
    if (rc != CURLE_OK)
        return transfer_error(rc, &t, url, unreachable);
    if (t.status != 200 && t.status != 206)
        return ct__error(CT_ERR_IO, "%s: HTTP %ld", url, t.status);
    return CT_OK;
}

ct_status ct__hub_http_get_text(const ct_hub_options *o, const char *url, size_t max,
                                char **body, size_t *len, long *status, int *unreachable)
{
    const ct__curl_api *cu = ct__curl();
    transfer t = {.o = o, .fd = -1, .max = max};
    struct curl_slist *headers;
    CURL *c = easy_for(o, url, &t, &headers);
    CURLcode rc;
    *unreachable = 0;
    *body = NULL;
    if (!c)
        return no_handle();
    get_into(cu, c, on_body_memory, &t);
    rc = cu->easy_perform(c);
    easy_done(c, headers);
    if (rc != CURLE_OK) {
        free(t.buf);
        return transfer_error(rc, &t, url, unreachable);
    }
    if (!t.buf && !(t.buf = calloc(1, 1)))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    *body = t.buf;
    *len = t.len;
    *status = t.status;
    return CT_OK;
}

ct_status ct__hub_http_error(const ct__hub_head *h, const char *repo_id, const char *type,
                             const char *what, const char *revision, const char *endpoint)
{
    const char *code = h->error_code, *prefix = strcmp(type, "dataset") ? "" : "datasets/";
    if (h->status == 401)
        return ct__error(CT_ERR_ACCESS, "%s%s: repository not found, or private and no valid "
                                        "token was sent (HTTP 401%s%s): check the name; for a "
                                        "private repository set HF_TOKEN or log in "
                                        "(huggingface-cli login writes $HF_HOME/token)",
                         prefix, repo_id, code[0] ? ", " : "", code);
    if (h->status == 403)
        return ct__error(CT_ERR_ACCESS, "%s%s is %s (HTTP 403%s%s): ask for access at %s/%s%s "
                                        "and pass a token of that account (HF_TOKEN)",
                         prefix, repo_id,
                         strcmp(code, "GatedRepo") ? "not accessible with this token"
                                                   : "a gated repository your token has no "
                                                     "access to",
                         code[0] ? ", " : "", code, endpoint, prefix, repo_id);
    if (h->status == 404 && !strcmp(code, "RevisionNotFound"))
        return ct__error(CT_ERR_NOT_FOUND, "%s%s has no revision '%s' (HTTP 404)", prefix,
                         repo_id, revision);
    if (h->status == 404 && !strcmp(code, "RepoNotFound"))
        return ct__error(CT_ERR_NOT_FOUND, "%s%s: no such repository on %s (HTTP 404)", prefix,
                         repo_id, endpoint);
    if (h->status == 404 && !what)
        return ct__error(CT_ERR_NOT_FOUND, "%s%s: no such repository on %s, or no revision "
                                           "'%s' (HTTP 404)", prefix, repo_id, endpoint,
                         revision);
    if (h->status == 404)
        return ct__error(CT_ERR_NOT_FOUND, "%s%s has no file '%s' at revision '%s' (HTTP 404)",
                         prefix, repo_id, what, revision);
    return ct__error(CT_ERR_IO, "%s%s, %s at '%s': HTTP %ld from %s%s%s", prefix, repo_id,
                     what ? what : "listing", revision, h->status, endpoint, h->error_message[0] ? ": " : "",
                     h->error_message);
}
