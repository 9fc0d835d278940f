/* A repository's files at a revision: the Hub's
 * /api/{models,datasets}/<id>/revision/<rev> ({"sha": ..., "siblings":
 * [{"rfilename": ...}, ...]}), or offline what the cached snapshot of that
 * revision holds. A name the listing gives is checked like any other
 * before it becomes a path. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/json.h"
#include "hub/hub.h"

#define MAX_LISTING_BYTES ((size_t)16 << 20)
#define MAX_FILES 100000
/* A listing's text could ask the JSON parser for 20 bytes a byte (320 MiB
 * for "[1,1,...]"); a file takes two values (its object and name) and the
 * rest of the Hub's answer a few thousand, so this holds the largest
 * listing with room to spare and its tree to about 56 MiB. */
#define MAX_LISTING_VALUES ((size_t)1 << 20)

void ct__hub_listing_free(ct__hub_listing *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->files[i]);
    free(l->files);
    memset(l, 0, sizeof *l);
}

static ct_status add_file(ct__hub_listing *l, const char *name)
{
    char **grown;
    if (l->n == MAX_FILES)
        return ct__error(CT_ERR_FORMAT, "a repository listing of more than %d files", MAX_FILES);
    if (!(grown = realloc(l->files, (l->n + 1) * sizeof *grown)) ||
        !(grown[l->n] = strdup(name))) {
        if (grown)
            l->files = grown;
        return ct__error(CT_ERR_NOMEM, "out of memory");
    }
    l->files = grown;
    l->n++;
    return CT_OK;
}

static ct_status parse_listing(const char *url, const char *body, size_t len,
                               ct__hub_listing *out)
{
    ct__json_doc *doc = NULL;
    const ct__json *root, *sha, *siblings;
    ct_status st = CT_OK;
    if (ct__json_parse_limited(body, len, url, 0, MAX_LISTING_VALUES, &doc) != CT_OK)
        return CT_ERR_FORMAT;
    root = ct__json_root(doc);
    sha = ct__json_get(root, "sha");
    siblings = ct__json_get(root, "siblings");
    if (!sha || sha->type != CT_JSON_STRING || !ct__hub_is_commit(sha->str) || !siblings ||
        siblings->type != CT_JSON_ARRAY)
        st = ct__error(CT_ERR_FORMAT, "%s: expected {\"sha\": <commit>, \"siblings\": [...]}",
                       url);
    else
        memcpy(out->commit, sha->str, CT__HUB_COMMIT_LEN + 1);
    for (size_t i = 0; st == CT_OK && i < siblings->n; i++) {
        const ct__json *name = ct__json_get(&siblings->items[i], "rfilename");
        if (!name || name->type != CT_JSON_STRING || strlen(name->str) != name->len ||
            !ct__hub_valid_filename(name->str))
            st = ct__error(CT_ERR_FORMAT, "%s: siblings[%zu] has no rfilename that is a path "
                                          "inside the repository", url, i);
        else
            st = add_file(out, name->str);
    }
    ct__json_free(doc);
    return st;
}

/* Every regular file under dir, as paths relative to the snapshot
 * folder: links to files followed (the snapshot's are), links to folders
 * not (a snapshot has none, and a loop of them would be walked 16 deep
 * for every link in it). */
static ct_status list_folder(const char *root, const char *rel, ct__hub_listing *out, int depth)
{
    char *dir = NULL;
    DIR *d;
    struct dirent *e;
    ct_status st = CT_OK;
    if (depth > 16)
        return CT_OK;
    if (asprintf(&dir, "%s%s%s", root, *rel ? "/" : "", rel) < 0)
        return ct__error(CT_ERR_NOMEM, "out of memory");
    if (!(d = opendir(dir))) {
        free(dir);
        return CT_OK;
    }
    while (st == CT_OK && (e = readdir(d))) {
        char *path = NULL, *name = NULL;
        struct stat sb;
        if (e->d_name[0] == '.')
            continue;
        if (asprintf(&name, "%s%s%s", rel, *rel ? "/" : "", e->d_name) < 0 ||
            asprintf(&path, "%s/%s", root, name) < 0)
            st = ct__error(CT_ERR_NOMEM, "out of memory");
        else if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            st = list_folder(root, name, out, depth + 1);
        else if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
            st = add_file(out, name);
        free(path);
        free(name);
    }
    closedir(d);
    free(dir);
    return st;
}

static ct_status list_cached(const ct__hub_repo *r, const char *revision, const char *why,
                             ct__hub_listing *out)
{
    char *dir;
    ct_status st = ct__hub_ref_read(r, revision, out->commit);
    if (st != CT_OK)
        return ct__error(CT_ERR_NOT_FOUND, "%s%s at revision '%s' is not in the Hub cache %s, and "
                                           "%s: run once with network access",
                         strcmp(r->type, "dataset") ? "" : "datasets/", r->id, revision,
                         r->o->cache_dir, why);
    if (!(dir = ct__hub_snapshot_path(r, out->commit, "")))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    dir[strlen(dir) - 1] = '\0'; /* the trailing '/' */
    st = list_folder(dir, "", out, 0);
    free(dir);
    return st;
}

ct_status ct__hub_list(const ct_hub_options *o, const char *repo_id, const char *type,
                       const char *revision, ct__hub_listing *out)
{
    ct__hub_repo r;
    char *url = NULL, *rev = NULL, *body = NULL;
    size_t len;
    ct__hub_head h;
    int unreachable = 0;
    ct_status st;
    memset(out, 0, sizeof *out);
    if ((st = ct__hub_repo_open(&r, repo_id, type, o)) != CT_OK)
        return st;
    if (o->local_files_only) {
        st = list_cached(&r, revision, "offline mode (HF_HUB_OFFLINE / local_files_only) "
                                       "forbids the network", out);
        goto out;
    }
    if (!(rev = ct__hub_url_quote(revision, 0)) ||
        asprintf(&url, "%s/api/%ss/%s/revision/%s", o->endpoint, type, repo_id, rev) < 0) {
        url = NULL;
        st = ct__error(CT_ERR_NOMEM, "out of memory");
        goto out;
    }
    st = ct__hub_http_get_text(o, url, MAX_LISTING_BYTES, &body, &len, &h, &unreachable);
    if (st != CT_OK && unreachable) {
        char why[512];
        snprintf(why, sizeof why, "the Hub could not be reached (%s)", ct_last_error());
        if ((st = list_cached(&r, revision, why, out)) == CT_OK)
            ct__log(CT_LOG_WARNING, "%s: %s; using the cached snapshot %s", url, why, out->commit);
        goto out;
    }
    if (st == CT_OK && h.status != 200)
        st = ct__hub_http_error(&h, repo_id, type, NULL, revision, o->endpoint);
    if (st == CT_OK && (st = parse_listing(url, body, len, out)) == CT_OK)
        st = ct__hub_ref_write(&r, revision, out->commit);
out:
    if (st != CT_OK)
        ct__hub_listing_free(out);
    free(body);
    free(url);
    free(rev);
    ct__hub_repo_close(&r);
    return st;
}
