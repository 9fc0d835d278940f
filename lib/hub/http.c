/* HTTP for the Hub client, through libcurl: a HEAD that reads the Hub's
 * headers (file_download.py's get_hf_file_metadata), a GET into a file
 * that resumes, and a small GET into memory (the API's JSON). Only http and
 * https, in both the request and any redirect (a libcurl that cannot be
 * held to them is not used); the token goes to the endpoint's scheme, host
 * and port only. libcurl drops a custom Authorization header when a
 * redirect changes host, and since 7.83.1 also port or scheme
 * (CVE-2022-27776): an older one follows no redirect of a request that
 * carries the token.
 *
 * Every transfer is bounded in time as huggingface_hub bounds its own (a
 * connect and a read timeout of HF_HUB_ETAG_TIMEOUT for metadata,
 * HF_HUB_DOWNLOAD_TIMEOUT for a file's bytes): libcurl has no per-read
 * timeout, so the same seconds bound the connection and the time a
 * transfer may go on moving less than STALL_BYTES_PER_S, which catches a
 * server that stops mid-way and one that trickles a byte at a time (a
 * per-read timeout would wait forever for the latter). The body of an
 * answer that is not the one asked for (an error page, a redirect's) is
 * read no further than what the error message needs. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/error.h"
#include "core/json.h"
#include "core/text.h"
#include "hub/curl_api.h"
#include "hub/hub.h"

#define MAX_HEADER_BYTES (64 * 1024)
#define MAX_REDIRECTS 5
/* Slower than this for a whole timeout, a transfer counts as stalled: far
 * below any real link, far above a trickle meant to hold a client. */
#define STALL_BYTES_PER_S 1024L
/* Of an error page: kept for the message; the transfer stops past it. */
#define ERROR_BODY_KEEP 4096
/* Of a redirect's body, which libcurl reads to its end on its own before
 * following: stopped past this (a real one is a line or two of HTML). */
#define MAX_SKIPPED_BODY (64 * 1024)

/* A transfer's state shared with libcurl's callbacks. */
typedef struct transfer {
    const ct_hub_options *o;
    ct__hub_head *head;   /* the last answer's headers */
    size_t header_bytes;
    long status;          /* of the last status line seen */
    long timeout;         /* seconds: o->timeout or o->etag_timeout */
    const char *timeout_by; /* what sets it, for the error text */
    int fd;               /* GET into a file: fd, have, expected */
    int64_t have, expected, written;
    char *buf;            /* GET into memory */
    size_t len, max;
    const char *name;     /* for progress */
    int overflow;         /* more bytes than allowed */
    int io_errno;
    int token_sent;       /* the request carries the Authorization header */
    int cut;              /* stopped on purpose in an unwanted body */
    char error_body[ERROR_BODY_KEEP + 1]; /* the start of an error page */
    size_t error_len;
    char curl_error[CURL_ERROR_SIZE]; /* libcurl's account of a failure */
} transfer;

static int is_success(long status)
{
    return status >= 200 && status <= 299;
}

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

/* The body of an answer that is not the one asked for (an error page, a
 * redirect not followed): its start kept for the message, and the transfer
 * stopped past that, since a hostile or broken server can make it endless
 * and its status already says what happened. */
static size_t on_other_body(transfer *t, const char *data, size_t n)
{
    size_t room = sizeof t->error_body - 1 - t->error_len, keep = n < room ? n : room;
    memcpy(t->error_body + t->error_len, data, keep);
    t->error_len += keep;
    t->error_body[t->error_len] = '\0';
    if (keep < n) {
        t->cut = 1;
        return 0; /* stops the transfer (CURLE_WRITE_ERROR, settled below) */
    }
    return n;
}

static size_t on_body_file(char *data, size_t size, size_t count, void *user)
{
    transfer *t = user;
    size_t n = size * count, done = 0;
    if (!is_success(t->status))
        return on_other_body(t, data, n); /* not the file */
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
    if (!is_success(t->status))
        return on_other_body(t, data, n);
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
    (void)ut, (void)un, (void)total;
    if (!is_success(t->status) && now > MAX_SKIPPED_BODY) {
        t->cut = 1; /* a body libcurl skips itself (a redirect's) and no end to it */
        return 1;
    }
    if (t->name && t->o->progress && is_success(t->status))
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
    cu->easy_setopt(c, CURLOPT_CONNECTTIMEOUT, t->timeout);
    cu->easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, STALL_BYTES_PER_S);
    cu->easy_setopt(c, CURLOPT_LOW_SPEED_TIME, t->timeout);
    cu->easy_setopt(c, CURLOPT_ERRORBUFFER, t->curl_error);
    cu->easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    cu->easy_setopt(c, CURLOPT_HEADERDATA, t);
    cu->easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    cu->easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    cu->easy_setopt(c, CURLOPT_XFERINFODATA, t);
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
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return ct__error(CT_ERR_IO, "%s: timed out: %s (allowed: %ld s to connect, %ld s "
                                    "under %ld bytes/s; %s sets it)",
                         url, t->curl_error[0] ? t->curl_error : cu->easy_strerror(rc),
                         t->timeout, t->timeout, STALL_BYTES_PER_S, t->timeout_by);
    return ct__error(CT_ERR_IO, "%s from %s", t->curl_error[0] ? t->curl_error
                                                               : cu->easy_strerror(rc), url);
}

/* A transfer stopped on purpose in an unwanted body is over: its status
 * says what happened. */
static CURLcode settled(CURLcode rc, const transfer *t)
{
    if (t->cut && (rc == CURLE_WRITE_ERROR || rc == CURLE_ABORTED_BY_CALLBACK))
        return CURLE_OK;
    return rc;
}

#define BY_ETAG_TIMEOUT "HF_HUB_ETAG_TIMEOUT or the etag_timeout option"
#define BY_DOWNLOAD_TIMEOUT "HF_HUB_DOWNLOAD_TIMEOUT or the timeout option"

/* A metadata request's transfer (a HEAD, the API's JSON), bounded as
 * huggingface_hub bounds get_hf_file_metadata's. */
static transfer metadata_transfer(const ct_hub_options *o, ct__hub_head *head)
{
    transfer t = {.o = o, .head = head, .fd = -1, .timeout = o->etag_timeout,
                  .timeout_by = BY_ETAG_TIMEOUT};
    return t;
}

/* What the server said of an error, as huggingface_hub's
 * hf_raise_for_status adds it to its own: X-Error-Message, else the JSON
 * body's "error" string, else the body's first line unless it is an HTML
 * page. Kept in h->error_message, printable. */
static void server_message(const transfer *t, ct__hub_head *h)
{
    const char *text = t->error_body, *end;
    ct__json_doc *doc = NULL;
    const ct__json *error;
    if (h->error_message[0] || !t->error_len)
        return;
    /* a parse failure's error text is replaced by the caller's own */
    if (ct__json_parse(t->error_body, t->error_len, "error body", &doc) == CT_OK) {
        error = ct__json_get(ct__json_root(doc), "error");
        if (error && error->type == CT_JSON_STRING)
            copy_printable(h->error_message, sizeof h->error_message, error->str, error->len);
        ct__json_free(doc);
        return;
    }
    while (*text == ' ' || *text == '\t' || *text == '\r' || *text == '\n')
        text++;
    if (*text == '<')
        return; /* a page for a browser: nothing to quote */
    end = text + strcspn(text, "\r\n");
    copy_printable(h->error_message, sizeof h->error_message, text, (size_t)(end - text));
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
        transfer t = metadata_transfer(o, out);
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
                               int fd, int64_t have, int64_t expected, ct__hub_head *head,
                               CURLcode *rc, int *unreachable)
{
    const ct__curl_api *cu = ct__curl();
    transfer t = {.o = o, .head = head, .fd = fd, .have = have, .expected = expected,
                  .name = name, .timeout = o->timeout, .timeout_by = BY_DOWNLOAD_TIMEOUT};
    struct curl_slist *headers;
    ct_status st;
    CURL *c;
    memset(head, 0, sizeof *head);
    head->size = -1;
    if (!(c = easy_for(o, url, &t, &headers, &st)))
        return st;
    get_into(cu, c, on_body_file, &t);
    if (have > 0)
        cu->easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)have);
    *rc = settled(perform(cu, c), &t);
    head->status = t.status;
    easy_done(c, headers);
    if (*rc != CURLE_OK && !(*rc == CURLE_RANGE_ERROR && have > 0))
        return transfer_error(*rc, &t, url, unreachable);
    server_message(&t, head);
    return CT_OK;
}

ct_status ct__hub_http_get_file(const ct_hub_options *o, const char *url, const char *name,
                                int fd, int64_t have, int64_t expected, int *unreachable)
{
    ct__hub_head head;
    CURLcode rc = CURLE_OK;
    ct_status st;
    *unreachable = 0;
    st = get_file_from(o, url, name, fd, have, expected, &head, &rc, unreachable);
    if (st == CT_OK && have > 0 && (rc == CURLE_RANGE_ERROR || head.status == 416)) {
        /* The server would not resume (libcurl stops at a 200 answering a
         * Range, before its body) or will not serve that range: the whole
         * file again, from byte 0. */
        if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)
            return ct__error(CT_ERR_IO, "%s: restarting the download in the cache failed: %s",
                             url, strerror(errno));
        st = get_file_from(o, url, name, fd, 0, expected, &head, &rc, unreachable);
    }
    if (st != CT_OK)
        return st;
    if (head.status != 200 && head.status != 206)
        return ct__error(CT_ERR_IO, "%s: HTTP %ld%s%s%s", url, head.status,
                         head.status >= 300 && head.status <= 399 ? " (a redirect not followed)"
                                                                  : "",
                         head.error_message[0] ? ": " : "", head.error_message);
    return CT_OK;
}

ct_status ct__hub_http_get_text(const ct_hub_options *o, const char *url, size_t max,
                                char **body, size_t *len, ct__hub_head *head, int *unreachable)
{
    const ct__curl_api *cu = ct__curl();
    transfer t = metadata_transfer(o, head);
    struct curl_slist *headers;
    ct_status st;
    CURL *c;
    CURLcode rc;
    *unreachable = 0;
    *body = NULL;
    memset(head, 0, sizeof *head);
    head->size = -1;
    if (!(c = easy_for(o, url, &t, &headers, &st)))
        return st;
    t.max = max;
    get_into(cu, c, on_body_memory, &t);
    rc = settled(perform(cu, c), &t);
    easy_done(c, headers);
    head->status = t.status;
    if (rc != CURLE_OK) {
        free(t.buf);
        return transfer_error(rc, &t, url, unreachable);
    }
    server_message(&t, head);
    if (!t.buf && !(t.buf = calloc(1, 1)))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    *body = t.buf;
    *len = t.len;
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
