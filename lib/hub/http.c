/* HTTP for the Hub client, through libcurl: a HEAD that reads the Hub's
 * headers (file_download.py's get_hf_file_metadata), a GET into a file
 * that resumes, and a small GET into memory (the API's JSON). Only http and
 * https, in both the request and any redirect (a libcurl that cannot be
 * held to them is not used); the token goes to the endpoint's scheme, host
 * and port only. libcurl drops a custom Authorization header when a
 * redirect changes host, and since 7.83.1 also port or scheme
 * (CVE-2022-27776): an older one follows no redirect of a request that
 * carries the token. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/error.h"
#include "core/text.h"
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
    char *buf;            /* GET into memory */
    size_t len, max;
    const char *name;     /* for progress */
    int overflow;         /* more bytes than allowed */
    int io_errno;
    int token_sent;       /* the request carries the Authorization header */
} transfer;

static void copy_value(char *dst, size_t size, const char *v, size_t n)
{
    if (n >= size)
        n = size - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

/* A server's text for error messages (ct__printable). */
static void copy_printable(char *dst, size_t size, const char *v, size_t n)
{
    copy_value(dst, size, v, n);
    ct__printable(dst);
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
        /* libcurl's line is not NUL-ended: the code is read from a copy */
        const char *sp = memchr(line, ' ', n);
        char code[8];
        if (sp) {
            copy_value(code, sizeof code, sp, n - (size_t)(sp - line));
            if (sscanf(code, " %3ld", &status) == 1)
                t->status = status;
        }
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
        copy_printable(h->error_code, sizeof h->error_code, v, vn);
    else if (IS("X-Error-Message"))
        copy_printable(h->error_message, sizeof h->error_message, v, vn);
    else if (IS("Location") && !(h->location_long = vn >= sizeof h->location))
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

/* url's scheme, host and port ("https://huggingface.co:443"), to tell
 * whether two URLs are one origin; 0 (and "") when url is no http(s) URL. */
static int origin_of(const ct__curl_api *cu, const char *url, char *out, size_t size)
{
    CURLU *u = cu->url();
    char *scheme = NULL, *host = NULL, *port = NULL;
    int ok = u && cu->url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
             cu->url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
             cu->url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
             cu->url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
             (!strcasecmp(scheme, "http") || !strcasecmp(scheme, "https")) &&
             snprintf(out, size, "%s://%s:%s", scheme, host, port) < (int)size;
    cu->free(scheme);
    cu->free(host);
    cu->free(port);
    if (u)
        cu->url_cleanup(u);
    if (!ok)
        out[0] = '\0';
    return ok;
}

static int same_origin(const ct__curl_api *cu, const char *a, const char *b)
{
    char oa[CT__HUB_MAX_TEXT], ob[CT__HUB_MAX_TEXT];
    return origin_of(cu, a, oa, sizeof oa) && origin_of(cu, b, ob, sizeof ob) &&
           !strcasecmp(oa, ob);
}

/* Only http and https, asked for in the form this libcurl knows (the
 * _STR options came in 7.85); a libcurl that takes neither is not used. */
static int http_only(const ct__curl_api *cu, CURL *c)
{
    long both = CURLPROTO_HTTP | CURLPROTO_HTTPS;
    if (cu->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
        cu->easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") == CURLE_OK)
        return 1;
    return cu->easy_setopt(c, CURLOPT_PROTOCOLS, both) == CURLE_OK &&
           cu->easy_setopt(c, CURLOPT_REDIR_PROTOCOLS, both) == CURLE_OK;
}

/* A handle for url, or NULL with the error set and returned in *why. */
static CURL *easy_for(const ct_hub_options *o, const char *url, transfer *t,
                      struct curl_slist **headers, ct_status *why)
{
    const ct__curl_api *cu = ct__curl();
    char *auth = NULL;
    CURL *c;
    *headers = NULL;
    if (!cu) {
        *why = CT_ERR_UNSUPPORTED; /* ct__curl said what to install */
        return NULL;
    }
    if (!(c = cu->easy_init())) {
        *why = ct__error(CT_ERR_NOMEM, "curl_easy_init failed");
        return NULL;
    }
    if (!http_only(cu, c)) {
        cu->easy_cleanup(c);
        *why = ct__error(CT_ERR_UNSUPPORTED, "this libcurl cannot be limited to http and "
                                             "https (CURLOPT_PROTOCOLS): not used");
        return NULL;
    }
    cu->easy_setopt(c, CURLOPT_URL, url);
    cu->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    cu->easy_setopt(c, CURLOPT_USERAGENT, "libcputrain/" CT_VERSION_STRING "; huggingface_hub-cache");
    cu->easy_setopt(c, CURLOPT_CONNECTTIMEOUT, o->timeout);
    cu->easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    cu->easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o->timeout);
    cu->easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    cu->easy_setopt(c, CURLOPT_HEADERDATA, t);
    if (o->token[0] && same_origin(cu, url, o->endpoint) &&
        asprintf(&auth, "Authorization: Bearer %s", o->token) >= 0) {
        *headers = cu->slist_append(NULL, auth);
        memset(auth, 0, strlen(auth));
        free(auth);
        cu->easy_setopt(c, CURLOPT_HTTPHEADER, *headers);
        t->token_sent = *headers != NULL;
    }
    return c;
}

/* SIGPIPE held off this thread while libcurl writes to a socket: with
 * CURLOPT_NOSIGNAL libcurl may still raise one (a TLS library writing to
 * a connection the server closed), which would end the whole program. One
 * raised meanwhile is taken before the thread's mask is restored. */
typedef struct quiet {
    sigset_t old;
    int was_pending, held;
} quiet;

static void quiet_begin(quiet *q)
{
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigemptyset(&pending);
    q->held = pthread_sigmask(SIG_BLOCK, &pipe, &q->old) == 0;
    q->was_pending = q->held && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
}

static void quiet_end(quiet *q)
{
    sigset_t pipe, pending;
    struct timespec now = {0, 0};
    if (!q->held)
        return;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigemptyset(&pending);
    if (!q->was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
        while (sigtimedwait(&pipe, NULL, &now) < 0 && errno == EINTR)
            ;
    pthread_sigmask(SIG_SETMASK, &q->old, NULL);
}

static CURLcode perform(const ct__curl_api *cu, CURL *c)
{
    quiet q;
    CURLcode rc;
    quiet_begin(&q);
    rc = cu->easy_perform(c);
    quiet_end(&q);
    return rc;
}

static void easy_done(CURL *c, struct curl_slist *headers)
{
    const ct__curl_api *cu = ct__curl();
    quiet q;
    quiet_begin(&q); /* closing a TLS connection writes to it */
    cu->easy_cleanup(c);
    quiet_end(&q);
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
    char *current = strdup(url);
    ct_status st = CT_OK;
    *unreachable = 0;
    if (!current)
        return ct__error(CT_ERR_NOMEM, "out of memory");
    for (int hop = 0;; hop++) {
        transfer t = {.o = o, .head = out, .fd = -1};
        struct curl_slist *headers;
        CURL *c = easy_for(o, current, &t, &headers, &st);
        CURLcode rc;
        CURLU *u;
        char *next = NULL;
        memset(out, 0, sizeof *out);
        out->size = -1;
        if (!c)
            break;
        cu->easy_setopt(c, CURLOPT_NOBODY, 1L);
        rc = perform(cu, c);
        easy_done(c, headers);
        if (rc != CURLE_OK) {
            st = transfer_error(rc, &t, current, unreachable);
            break;
        }
        out->status = t.status;
        if (t.status < 300 || t.status > 399 || (!out->location[0] && !out->location_long))
            break;
        /* A redirect: followed when it stays on the first URL's scheme,
         * host and port (a renamed repo), reported otherwise (the file
         * store of a large file), and refused when it leads anywhere but
         * http(s) (the GET that follows would not take it either) */
        if (out->location_long) {
            st = ct__error(CT_ERR_IO, "%s: HTTP %ld to a Location over %zu bytes: refused",
                           current, t.status, sizeof out->location - 1);
            break;
        }
        if (!(u = cu->url())) {
            st = ct__error(CT_ERR_NOMEM, "out of memory");
            break;
        }
        if (cu->url_set(u, CURLUPART_URL, current, 0) != CURLUE_OK ||
            cu->url_set(u, CURLUPART_URL, out->location, 0) != CURLUE_OK ||
            cu->url_get(u, CURLUPART_URL, &next, 0) != CURLUE_OK ||
            strlen(next) >= sizeof out->location) {
            cu->free(next);
            next = NULL;
        }
        cu->url_cleanup(u);
        char origin[CT__HUB_MAX_TEXT];
        if (!next || !origin_of(cu, next, origin, sizeof origin)) {
            st = ct__error(CT_ERR_IO, "%s: HTTP %ld to '%.200s', not an http(s) URL: refused",
                           current, t.status, out->location);
            cu->free(next);
            break;
        }
        copy_value(out->location, sizeof out->location, next, strlen(next));
        if (!same_origin(cu, next, url) || hop == MAX_REDIRECTS) {
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
    int follow = !t->token_sent || cu->version >= 0x075301;
    cu->easy_setopt(c, CURLOPT_FOLLOWLOCATION, (long)follow);
    cu->easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    cu->easy_setopt(c, CURLOPT_WRITEFUNCTION, write);
    cu->easy_setopt(c, CURLOPT_WRITEDATA, t);
}

/* One GET of the file from byte `have`. */
static ct_status get_file_from(const ct_hub_options *o, const char *url, const char *name,
                               int fd, int64_t have, int64_t expected, long *status,
                               CURLcode *rc, int *unreachable)
{
    const ct__curl_api *cu = ct__curl();
    transfer t = {.o = o, .fd = fd, .have = have, .expected = expected, .name = name};
    struct curl_slist *headers;
    ct_status st;
    CURL *c = easy_for(o, url, &t, &headers, &st);
    if (!c)
        return st;
    get_into(cu, c, on_body_file, &t);
    cu->easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    cu->easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    cu->easy_setopt(c, CURLOPT_XFERINFODATA, &t);
    if (have > 0)
        cu->easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)have);
    *rc = perform(cu, c);
    *status = t.status;
    easy_done(c, headers);
    if (*rc != CURLE_OK && !(*rc == CURLE_RANGE_ERROR && have > 0))
        return transfer_error(*rc, &t, url, unreachable);
    return CT_OK;
}

ct_status ct__hub_http_get_file(const ct_hub_options *o, const char *url, const char *name,
                                int fd, int64_t have, int64_t expected, int *unreachable)
{
    long status = 0;
    CURLcode rc = CURLE_OK;
    ct_status st;
    *unreachable = 0;
    st = get_file_from(o, url, name, fd, have, expected, &status, &rc, unreachable);
    if (st == CT_OK && have > 0 && (rc == CURLE_RANGE_ERROR || status == 416)) {
        /* The server would not resume (libcurl stops at a 200 answering a
         * Range, before its body) or will not serve that range: the whole
         * file again, from byte 0. */
        if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)
            return ct__error(CT_ERR_IO, "%s: restarting the download in the cache failed: %s",
                             url, strerror(errno));
        st = get_file_from(o, url, name, fd, 0, expected, &status, &rc, unreachable);
    }
    if (st != CT_OK)
        return st;
    if (status != 200 && status != 206)
        return ct__error(CT_ERR_IO, "%s: HTTP %ld", url, status);
    return CT_OK;
}

ct_status ct__hub_http_get_text(const ct_hub_options *o, const char *url, size_t max,
                                char **body, size_t *len, long *status, int *unreachable)
{
    const ct__curl_api *cu = ct__curl();
    transfer t = {.o = o, .fd = -1, .max = max};
    struct curl_slist *headers;
    ct_status st;
    CURL *c = easy_for(o, url, &t, &headers, &st);
    CURLcode rc;
    *unreachable = 0;
    *body = NULL;
    if (!c)
        return st;
    get_into(cu, c, on_body_memory, &t);
    rc = perform(cu, c);
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
