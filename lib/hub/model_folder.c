/* The folder from_pretrained reads: a local folder, or a Hub model's
 * snapshot completed in the cache with the files this library loads, all
 * at the commit config.json came from (a branch that moves mid-way cannot
 * mix two versions). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/json.h"
#include "hub/hub.h"

/* The largest models' indexes are a few hundred KiB (some 100000
 * tensors); a hostile one is held to this size, and to this many values,
 * which bounds its parsed tree to about 56 MiB where the text alone would
 * allow 20 bytes a byte. */
#define MAX_INDEX_BYTES ((size_t)8 << 20)
#define MAX_INDEX_VALUES ((size_t)1 << 20)

/* from_pretrained's order; an index names its shards in "weight_map". */
static const struct {
    const char *name;
    int is_index;
} WEIGHTS[] = {
    {"model.safetensors", 0},
    {"model.safetensors.index.json", 1},
    {"pytorch_model.bin", 0},
    {"pytorch_model.bin.index.json", 1},
};
static const char *const TOKENIZER_FILES[] = {"vocab.txt", "tokenizer.json",
                                              "tokenizer_config.json", "special_tokens_map.json"};

typedef struct model_fetch {
    const ct_hub_options *o;
    const char *id;
    char commit[CT__HUB_COMMIT_LEN + 1];
} model_fetch;

/* One file at the pinned commit (*how as ct__hub_fetch says). */
static ct_status fetch(model_fetch *m, const char *filename, char **path, int *how)
{
    return ct__hub_fetch(m->o, m->id, "model", m->commit, filename, path, NULL, how);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Each shard the index names, once (names sorted: an index maps every
 * tensor to its shard, so names repeat). */
static ct_status fetch_shards(model_fetch *m, const char *index_path)
{
    ct__json_doc *doc = NULL;
    const ct__json *map;
    const char **names = NULL;
    char *text = NULL;
    size_t len, n = 0;
    ct_status st;
    if ((st = ct__read_file(index_path, MAX_INDEX_BYTES, &text, &len)) != CT_OK)
        return st;
    st = ct__json_parse_limited(text, len, index_path, 0, MAX_INDEX_VALUES, &doc);
    free(text);
    if (st != CT_OK)
        return st;
    map = ct__json_get(ct__json_root(doc), "weight_map");
    if (!map || map->type != CT_JSON_OBJECT)
        st = ct__error(CT_ERR_FORMAT, "%s: no \"weight_map\" object", index_path);
    else if (!(names = malloc((map->n ? map->n : 1) * sizeof *names)))
        st = ct__error(CT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; st == CT_OK && i < map->n; i++) {
        const ct__json *shard = &map->members[i].value;
        if (shard->type != CT_JSON_STRING || strlen(shard->str) != shard->len)
            st = ct__error(CT_ERR_FORMAT, "%s: weight_map[\"%s\"] is not a file name",
                           index_path, map->members[i].key);
        else
            names[n++] = shard->str;
    }
    if (st == CT_OK)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; st == CT_OK && i < n; i++) {
        char *path = NULL;
        int how;
        if (i > 0 && !strcmp(names[i], names[i - 1]))
            continue;
        if ((st = fetch(m, names[i], &path, &how)) != CT_OK)
            ct__error_prefix(st, "%s names shard '%s'", index_path, names[i]);
        free(path);
    }
    free(names);
    ct__json_free(doc);
    return st;
}

static ct_status fetch_weights(model_fetch *m)
{
    for (size_t i = 0; i < sizeof WEIGHTS / sizeof *WEIGHTS; i++) {
        char *path = NULL;
        int how = 0;
        ct_status st = fetch(m, WEIGHTS[i].name, &path, &how);
        if (st == CT_OK && WEIGHTS[i].is_index)
            st = fetch_shards(m, path);
        free(path);
        if (st == CT_OK || how != CT__HUB_ABSENT)
            return st;
    }
    return ct__error(CT_ERR_NOT_FOUND, "%s at commit %s has no weights: none of "
                                       "model.safetensors, model.safetensors.index.json, "
                                       "pytorch_model.bin, pytorch_model.bin.index.json",
                     m->id, m->commit);
}

static ct_status fetch_tokenizer(model_fetch *m)
{
    for (size_t i = 0; i < sizeof TOKENIZER_FILES / sizeof *TOKENIZER_FILES; i++) {
        char *path = NULL;
        int how = 0;
        ct_status st = fetch(m, TOKENIZER_FILES[i], &path, &how);
        free(path);
        if (st != CT_OK && how != CT__HUB_ABSENT)
            return st; /* a file the repo may lack is fine; a failed download is not */
    }
    return CT_OK;
}

static ct_status snapshot_folder(const ct_hub_options *o, const char *id, const char *commit,
                                 char *folder, size_t size)
{
    ct__hub_repo r;
    char *path;
    ct_status st = ct__hub_repo_open(&r, id, "model", o);
    if (st != CT_OK)
        return st;
    path = ct__hub_snapshot_path(&r, commit, "");
    ct__hub_repo_close(&r);
    if (!path)
        return ct__error(CT_ERR_NOMEM, "out of memory");
    path[strlen(path) - 1] = '\0'; /* the trailing '/' */
    if (strlen(path) >= size)
        st = ct__error(CT_ERR_INVALID_ARG, "%s: the path needs %zu bytes, the buffer has %zu",
                       path, strlen(path) + 1, size);
    else
        memcpy(folder, path, strlen(path) + 1);
    free(path);
    return st;
}

static ct_status from_hub(const ct_hub_options *o, const char *id, char *folder, size_t size)
{
    ct_hub_options offline = *o;
    model_fetch m = {.o = o, .id = id};
    char *config = NULL;
    int how = 0;
    ct_status st = ct__hub_fetch(o, id, "model", o->revision, "config.json", &config, m.commit,
                                 &how);
    free(config);
    if (st == CT_OK && how == CT__HUB_UNREACHABLE) {
        offline.local_files_only = 1; /* the rest from the same cached snapshot, no retries */
        m.o = &offline;
    }
    if (st != CT_OK && how == CT__HUB_ABSENT)
        return ct__error(CT_ERR_NOT_FOUND, "%s has no config.json at revision '%s': not a "
                                           "Transformers model repository", id, o->revision);
    if (st == CT_OK && (st = fetch_weights(&m)) == CT_OK && (st = fetch_tokenizer(&m)) == CT_OK)
        st = snapshot_folder(o, id, m.commit, folder, size);
    return st;
}

ct_status ct_hub_model_folder(const char *name_or_path, const ct_hub_options *o, char *folder,
                              size_t size)
{
    ct_hub_options *own = NULL;
    struct stat sb;
    ct_status st;
    CT__CHECK_ARG(name_or_path);
    CT__CHECK_ARG(folder);
    if (stat(name_or_path, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode))
            return ct__error(CT_ERR_INVALID_ARG, "%s is a file: a model is a folder (or a Hub "
                                                 "id)", name_or_path);
        if (strlen(name_or_path) >= size)
            return ct__error(CT_ERR_INVALID_ARG, "%s: the buffer has %zu bytes", name_or_path,
                             size);
        memcpy(folder, name_or_path, strlen(name_or_path) + 1);
        return CT_OK;
    }
    if (!ct__hub_valid_repo_id(name_or_path))
        return ct__error(CT_ERR_NOT_FOUND, "%s: no such local folder (%s), and not a Hub model "
                                           "id (\"name\" or \"org/name\")", name_or_path,
                         strerror(errno));
    if (!o && (st = ct_hub_options_create(&own)) != CT_OK)
        return st;
    st = from_hub(o ? o : own, name_or_path, folder, size);
    if (st != CT_OK)
        ct__error_prefix(st, "%s is not a local folder; as a Hub id", name_or_path);
    ct_hub_options_free(own);
    return st;
}
