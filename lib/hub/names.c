/* Names that become paths in the cache or parts of a URL. Each comes from
 * a user or from a server, so each is checked here before it is used: a
 * path built from them never leaves the cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hub/hub.h"

#define MAX_REPO_ID 96
#define MAX_FILENAME 1024

static int is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* One part of a repo id: [A-Za-z0-9_.-]+, starting and ending with a
 * letter, digit or '_' (validate_repo_id's \b[\w\-.]+\b), no "--" or ".."
 * (the cache's separator and a parent folder). */
static int valid_id_part(const char *s, size_t n)
{
    if (n == 0 || !(is_alnum(s[0]) || s[0] == '_') || !(is_alnum(s[n - 1]) || s[n - 1] == '_'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_alnum(s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
            return 0;
        if (i > 0 && (s[i] == '-' || s[i] == '.') && s[i - 1] == s[i])
            return 0;
    }
    return 1;
}

int ct__hub_valid_repo_id(const char *id)
{
    const char *slash = strchr(id, '/');
    size_t n = strlen(id);
    if (n == 0 || n > MAX_REPO_ID)
        return 0;
    if (!slash)
        return valid_id_part(id, n);
    return !strchr(slash + 1, '/') && valid_id_part(id, (size_t)(slash - id)) &&
           valid_id_part(slash + 1, n - (size_t)(slash - id) - 1);
}

int ct__hub_valid_filename(const char *name)
{
    size_t n = strlen(name), start = 0;
    if (n == 0 || n > MAX_FILENAME)
        return 0;
    for (size_t i = 0; i <= n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (i < n && (c < 0x20 || c == 0x7f || c == '\\'))
            return 0;
        if (i == n || c == '/') {
            size_t len = i - start;
            if (len == 0 || (len == 1 && name[start] == '.') ||
                (len == 2 && name[start] == '.' && name[start + 1] == '.'))
                return 0;
            start = i + 1;
        }
    }
    return 1;
}

int ct__hub_valid_revision(const char *rev)
{
    return strlen(rev) <= 256 && ct__hub_valid_filename(rev) && !strchr(rev, ' ');
}

int ct__hub_is_commit(const char *text)
{
    size_t i = 0;
    for (; text[i]; i++)
        if (!((text[i] >= '0' && text[i] <= '9') || (text[i] >= 'a' && text[i] <= 'f')))
            return 0;
    return i == CT__HUB_COMMIT_LEN;
}

int ct__hub_valid_etag(const char *etag)
{
    size_t i = 0;
    for (; etag[i]; i++)
        if (!is_alnum(etag[i]) && etag[i] != '-' && etag[i] != '_')
            return 0;
    return i >= 1 && i <= 128;
}

char *ct__hub_url_quote(const char *s, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1), *p = out;
    if (!out)
        return NULL;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (is_alnum((char)c) || c == '-' || c == '_' || c == '.' || c == '~' ||
            (keep_slash && c == '/'))
            *p++ = (char)c;
        else {
            *p++ = '%';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 15];
        }
    }
    *p = '\0';
    return out;
}
