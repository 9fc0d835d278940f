/* ct_hub_options: huggingface_hub's keyword arguments, each defaulting to
 * what huggingface_hub reads from the environment (constants.py), read
 * once when the handle is made so that a run sees one configuration. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/text.h"
#include "hub/hub.h"

#define MAX_TOKEN_BYTES 4096

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* $HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface. */
static char *hf_home(void)
{
    const char *home = env("HF_HOME"), *xdg = env("XDG_CACHE_HOME"), *user = env("HOME");
    char *out = NULL;
    if (home)
        return strdup(home);
    if (xdg && asprintf(&out, "%s/huggingface", xdg) < 0)
        return NULL;
    if (!xdg && asprintf(&out, "%s/.cache/huggingface", user ? user : "/") < 0)
        return NULL;
    return out;
}

static char *default_cache_dir(void)
{
    const char *cache = env("HF_HUB_CACHE");
    char *home, *out = NULL;
    if (!cache)
        cache = env("HUGGINGFACE_HUB_CACHE"); /* the older name, still read */
    if (cache)
        return strdup(cache);
    if (!(home = hf_home()))
        return NULL;
    if (asprintf(&out, "%s/hub", home) < 0)
        out = NULL;
    free(home);
    return out;
}

/* A token as huggingface_hub's _clean_token leaves it: line breaks
 * removed, blanks around it stripped (in place). */
static char *clean_token(char *t)
{
    size_t n = 0, start;
    if (!t)
        return NULL;
    for (char *p = t; *p; p++)
        if (*p != '\r' && *p != '\n')
            t[n++] = *p;
    while (n > 0 && isspace((unsigned char)t[n - 1]))
        n--;
    t[n] = '\0';
    for (start = 0; isspace((unsigned char)t[start]); start++)
        ;
    memmove(t, t + start, n - start + 1);
    return t;
}

/* What goes into the Authorization header: no control bytes, which would
 * end the header line or add others to the request. */
static int token_ok(const char *t)
{
    for (; *t; t++)
        if ((unsigned char)*t < 0x20 || *t == 0x7f)
            return 0;
    return 1;
}

/* $HF_TOKEN (or the older HUGGING_FACE_HUB_TOKEN), else the token file's
 * first line; "" when there is none. */
static char *default_token(void)
{
    const char *t = env("HF_TOKEN"), *file = env("HF_TOKEN_PATH");
    char *path = NULL, *text = NULL, *home;
    size_t len;
    if (!t)
        t = env("HUGGING_FACE_HUB_TOKEN");
    if (t)
        return clean_token(strdup(t));
    if (file)
        path = strdup(file);
    else if ((home = hf_home())) {
        path = ct__join_path(home, "token");
        free(home);
    }
    if (!path)
        return NULL;
    if (ct__read_file(path, MAX_TOKEN_BYTES, &text, &len) != CT_OK) {
        free(path); /* no token file is the common case, not an error */
        return strdup("");
    }
    free(path);
    text[strcspn(text, "\r\n")] = '\0';
    return clean_token(text);
}

#define DEFAULT_TIMEOUT 10 /* huggingface_hub's DEFAULT_{ETAG,DOWNLOAD}_TIMEOUT */
#define MAX_TIMEOUT 86400

/* Whole seconds in [min, MAX_TIMEOUT]; NULL, or why not. */
static const char *timeout_fault(const char *text, long min, long *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(text, &end, 10);
    if (end == text || *end)
        return "not a whole number of seconds";
    if (v < 0)
        return "negative";
    if (errno == ERANGE || v > MAX_TIMEOUT)
        return "over 86400 seconds (a day)";
    if (v < min)
        return "under 1 second";
    *out = v;
    return NULL;
}

/* A timeout from the environment, as huggingface_hub's constants.py reads
 * it (int(value) or 10: 0 stands for the default). A value it would not
 * take either is refused with the reason, never passed over in silence: a
 * warning in a log nobody asked for would leave the user's bound unused. */
static ct_status env_timeout(const char *name, long *out)
{
    const char *text = env(name), *why;
    long v = 0;
    *out = DEFAULT_TIMEOUT;
    if (!text)
        return CT_OK;
    if ((why = timeout_fault(text, 0, &v)))
        return ct__error(CT_ERR_INVALID_ARG, "%s='%.40s': %s; expected whole seconds in "
                                             "[0, %d] (0: the default, %d)",
                         name, text, why, MAX_TIMEOUT, DEFAULT_TIMEOUT);
    if (v > 0)
        *out = v;
    return CT_OK;
}

static ct_status replace(char **field, const char *value)
{
    char *copy = strdup(value);
    if (!copy)
        return ct__error(CT_ERR_NOMEM, "out of memory");
    free(*field);
    *field = copy;
    return CT_OK;
}

static ct_status set_endpoint(ct_hub_options *o, const char *value)
{
    size_t n = strlen(value);
    if ((strncmp(value, "https://", 8) && strncmp(value, "http://", 7)) || n > 1024 ||
        strpbrk(value, " \t\r\n"))
        return ct__error(CT_ERR_INVALID_ARG, "Hub option endpoint='%s': expected an http:// or "
                                             "https:// URL", value);
    if (replace(&o->endpoint, value) != CT_OK)
        return CT_ERR_NOMEM;
    while (n > 0 && o->endpoint[n - 1] == '/')
        o->endpoint[--n] = '\0'; /* URLs are built as endpoint + "/..." */
    return CT_OK;
}

ct_status ct_hub_options_create(ct_hub_options **out)
{
    ct_hub_options *o;
    const char *offline = env("HF_HUB_OFFLINE");
    ct_status st;
    CT__CHECK_ARG(out);
    *out = NULL;
    if (!(o = calloc(1, sizeof *o)))
        return ct__error(CT_ERR_NOMEM, "out of memory creating Hub options");
    o->revision = strdup("main");
    o->repo_type = strdup("model");
    o->cache_dir = default_cache_dir();
    o->endpoint = strdup("https://huggingface.co");
    o->token = default_token();
    if (!o->revision || !o->repo_type || !o->cache_dir || !o->endpoint || !o->token) {
        ct_hub_options_free(o);
        return ct__error(CT_ERR_NOMEM, "out of memory creating Hub options");
    }
    if (!token_ok(o->token)) {
        ct_hub_options_free(o);
        return ct__error(CT_ERR_INVALID_ARG, "the Hub token (HF_TOKEN, HUGGING_FACE_HUB_TOKEN "
                                             "or the token file) holds a control character");
    }
    /* a mirror's address as users write it ("https://hf-mirror.com/"), checked */
    if (env("HF_ENDPOINT") && set_endpoint(o, env("HF_ENDPOINT")) != CT_OK) {
        ct_hub_options_free(o);
        return ct__error_prefix(CT_ERR_INVALID_ARG, "HF_ENDPOINT");
    }
    if (offline && !ct__parse_bool_text(offline, &o->local_files_only))
        ct__log(CT_LOG_WARNING, "HF_HUB_OFFLINE='%s' is not a boolean (1/0, true/false): "
                             "taken as off", offline);
    if ((st = env_timeout("HF_HUB_DOWNLOAD_TIMEOUT", &o->timeout)) != CT_OK ||
        (st = env_timeout("HF_HUB_ETAG_TIMEOUT", &o->etag_timeout)) != CT_OK) {
        ct_hub_options_free(o);
        return st;
    }
    *out = o;
    return CT_OK;
}

void ct_hub_options_free(ct_hub_options *o)
{
    if (!o)
        return;
    free(o->revision);
    free(o->repo_type);
    free(o->cache_dir);
    free(o->endpoint);
    if (o->token)
        memset(o->token, 0, strlen(o->token)); /* a secret: not left in freed memory */
    free(o->token);
    free(o);
}

ct_status ct_hub_options_set(ct_hub_options *o, const char *key, const char *value)
{
    CT__CHECK_ARG(o);
    CT__CHECK_ARG(key);
    CT__CHECK_ARG(value);
    if (!strcmp(key, "revision")) {
        if (!ct__hub_valid_revision(value))
            return ct__error(CT_ERR_INVALID_ARG, "Hub option revision='%s': not a branch, tag "
                                                 "or commit name", value);
        return replace(&o->revision, value);
    }
    if (!strcmp(key, "repo_type")) {
        if (strcmp(value, "model") && strcmp(value, "dataset"))
            return ct__error(CT_ERR_INVALID_ARG, "Hub option repo_type='%s': expected model or "
                                                 "dataset", value);
        return replace(&o->repo_type, value);
    }
    if (!strcmp(key, "cache_dir")) {
        if (!*value)
            return ct__error(CT_ERR_INVALID_ARG, "Hub option cache_dir: empty");
        return replace(&o->cache_dir, value);
    }
    if (!strcmp(key, "endpoint"))
        return set_endpoint(o, value);
    if (!strcmp(key, "token")) {
        if (!token_ok(value))
            return ct__error(CT_ERR_INVALID_ARG, "Hub option token: a control character (a "
                                                 "line break?) in a token");
        return replace(&o->token, value);
    }
    if (!strcmp(key, "local_files_only")) {
        if (!ct__parse_bool_text(value, &o->local_files_only))
            return ct__error(CT_ERR_INVALID_ARG, "Hub option local_files_only='%s': expected "
                                                 "true or false", value);
        return CT_OK;
    }
    if (!strcmp(key, "timeout") || !strcmp(key, "etag_timeout")) {
        long *field = !strcmp(key, "timeout") ? &o->timeout : &o->etag_timeout;
        const char *why = timeout_fault(value, 1, field);
        if (why)
            return ct__error(CT_ERR_INVALID_ARG, "Hub option %s='%.40s': %s; expected whole "
                                                 "seconds in [1, %d]", key, value, why,
                             MAX_TIMEOUT);
        return CT_OK;
    }
    return ct__error(CT_ERR_INVALID_ARG, "unknown Hub option '%s' (revision, repo_type, "
                                         "cache_dir, endpoint, token, local_files_only, "
                                         "timeout, etag_timeout)", key);
}

void ct_hub_options_set_progress(ct_hub_options *o, ct_hub_progress_fn fn, void *user)
{
    if (!o)
        return;
    o->progress = fn;
    o->progress_user = user;
}
