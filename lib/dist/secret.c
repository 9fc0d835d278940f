/* The job's secret: read from the options or the environment (a file, as
 * Kubernetes mounts secrets, or the value itself) and turned into the key
 * every backend authenticates with. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/sha256.h"
#include "dist/dist_internal.h"

#define SECRET_FILE_MAX ((size_t)64 << 10)
/* Below this many bytes a secret could be guessed offline from one
 * recorded handshake. */
#define SECRET_WEAK_BYTES 16

/* The key is an HMAC of the secret under a fixed label, so the secret's
 * own bytes are never used as the key of any exchange. */
static void derive_key(const char *secret, size_t len, unsigned char key[32])
{
    static const char label[] = "cputrain dist secret v1";
    const void *parts[] = {label};
    size_t lens[] = {sizeof label - 1};
    ct__hmac_sha256(secret, len, parts, lens, 1, key);
}

static ct_status use_secret(const char *source, const char *secret, size_t len,
                            ct__dist_member *m)
{
    /* A file written with echo ends in a newline that is not part of the
     * secret (Kubernetes secrets made from literals have none). */
    if (len && secret[len - 1] == '\n')
        len--;
    if (len && secret[len - 1] == '\r')
        len--;
    if (!len)
        return ct__error(CT_ERR_INVALID_ARG, "dist: the secret from %s is empty", source);
    if (len < SECRET_WEAK_BYTES)
        ct__log(CT_LOG_WARNING, "dist: the secret from %s has %zu bytes; use %d or more random "
                                "bytes (e.g. `openssl rand -hex 32`)", source, len,
                SECRET_WEAK_BYTES);
    derive_key(secret, len, m->secret_key);
    m->has_secret = 1;
    return CT_OK;
}

static ct_status use_file(const char *source, const char *path, ct__dist_member *m)
{
    struct stat sb;
    char *data;
    size_t len;
    ct_status st = ct__read_file(path, SECRET_FILE_MAX, &data, &len);
    if (st != CT_OK)
        return ct__error_prefix(st, "dist: the secret file from %s", source);
    if (stat(path, &sb) == 0 && (sb.st_mode & 077))
        ct__log(CT_LOG_WARNING, "dist: the secret file %s is readable by other users (mode "
                                "%03o); chmod 600 it (Kubernetes: defaultMode 0400)",
                path, (unsigned)(sb.st_mode & 0777));
    st = use_secret(path, data, len, m);
    memset(data, 0, len);
    free(data);
    return st;
}

ct_status ct__dist_secret_load(const ct_dist_options *o, ct__dist_member *m)
{
    const char *file = getenv("CPUTRAIN_DIST_SECRET_FILE");
    const char *value = getenv("CPUTRAIN_DIST_SECRET");
    m->has_secret = 0;
    if (o && o->secret_file)
        return use_file("dist option secret_file", o->secret_file, m);
    if (o && o->secret)
        return use_secret("dist option secret", o->secret, strlen(o->secret), m);
    if (file && *file && value && *value)
        return ct__error(CT_ERR_INVALID_ARG, "dist: both CPUTRAIN_DIST_SECRET_FILE and "
                                             "CPUTRAIN_DIST_SECRET are set; set one");
    if (file && *file)
        return use_file("environment CPUTRAIN_DIST_SECRET_FILE", file, m);
    if (value && *value)
        return use_secret("environment CPUTRAIN_DIST_SECRET", value, strlen(value), m);
    return CT_OK;
}
