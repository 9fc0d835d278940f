/* datasets.load_dataset(name, config, split=...) without Python: a split's
 * rows from the datasets library's own cache (the Arrow files of a
 * processed dataset under $HF_DATASETS_CACHE), else from the dataset
 * repo's Parquet files through the Hub cache and the Hub (its main
 * branch, else the refs/convert/parquet export the Hub makes of datasets
 * defined by a script). A split of several files is one table, in file
 * order. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/fileio.h"
#include "data/table.h"
#include "hub/hub.h"

#define PARQUET_EXPORT "refs/convert/parquet"

/* A config or split name: one path part of [A-Za-z0-9_.-]. */
static int valid_part(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128 || !strcmp(s, ".") || !strcmp(s, ".."))
        return 0;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
}

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

/* "train.parquet", "train-00000-of-00002.parquet" (and .arrow), or any file
 * in a folder named after the split ("train/0000.parquet"). */
static int file_of_split(const char *path, const char *split, const char *ext)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t n = strlen(split);
    if (!ends_with(base, ext))
        return 0;
    for (const char *p = path; p < base; p = strchr(p, '/') + 1)
        if (!strncmp(p, split, n) && p[n] == '/')
            return 1;
    return !strncmp(base, split, n) &&
           (!strcmp(base + n, ext) || (base[n] == '-' && base[n + 1] >= '0' && base[n + 1] <= '9'));
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- the datasets library's cache ------------------------------------------------ */

static char *datasets_cache_dir(void)
{
    const char *dir = getenv("HF_DATASETS_CACHE"), *home = getenv("HF_HOME");
    const char *xdg = getenv("XDG_CACHE_HOME"), *user = getenv("HOME");
    char *out = NULL;
    if (dir && *dir)
        return strdup(dir);
    if (home && *home)
        return asprintf(&out, "%s/datasets", home) < 0 ? NULL : out;
    if (xdg && *xdg)
        return asprintf(&out, "%s/huggingface/datasets", xdg) < 0 ? NULL : out;
    return asprintf(&out, "%s/.cache/huggingface/datasets", user ? user : "/") < 0 ? NULL : out;
}

typedef struct found_files {
    char *dir;     /* the <hash> folder chosen */
    time_t mtime;  /* its time: the newest wins */
    char **files;  /* full paths, sorted */
    size_t n;
} found_files;

static void found_free(found_files *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->files[i]);
    free(f->files);
    free(f->dir);
    memset(f, 0, sizeof *f);
}

/* The split's .arrow files in one <hash> folder, kept when it is newer. */
static void consider_hash_dir(const char *dir, const char *split, found_files *best)
{
    found_files here = {0};
    struct stat sb;
    struct dirent *e;
    DIR *d = opendir(dir);
    if (!d || stat(dir, &sb) != 0) {
        if (d)
            closedir(d);
        return;
    }
    while ((e = readdir(d))) {
        /* "<builder>-<split>.arrow" or "<builder>-<split>-00000-of-00002.arrow"; the
         * builder's name may hold dashes too */
        const char *dash = e->d_name;
        char **grown, *path;
        while ((dash = strchr(dash, '-')) && !file_of_split(dash + 1, split, ".arrow"))
            dash++;
        if (!dash)
            continue;
        if (!(path = ct__join_path(dir, e->d_name)))
            continue;
        if (!(grown = realloc(here.files, (here.n + 1) * sizeof *grown))) {
            free(path);
            continue;
        }
        here.files = grown;
        here.files[here.n++] = path;
    }
    closedir(d);
    if (here.n && (!best->n || sb.st_mtime > best->mtime) && (here.dir = strdup(dir))) {
        qsort(here.files, here.n, sizeof *here.files, by_name);
        here.mtime = sb.st_mtime;
        found_free(best);
        *best = here;
    } else
        found_free(&here);
}

/* The <hash> folders `depth` levels below dir's sub-folders (none starting
 * with '.', none an .incomplete or .lock leftover; at the first level only
 * `only`, when given). */
static void each_subdir(const char *dir, const char *only, int depth, const char *split,
                        found_files *best)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d))) {
        char *sub;
        struct stat sb;
        if (e->d_name[0] == '.' || (only && strcmp(e->d_name, only)) ||
            ends_with(e->d_name, ".incomplete") || ends_with(e->d_name, ".lock") ||
            !(sub = ct__join_path(dir, e->d_name)))
            continue;
        if (stat(sub, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            if (depth == 0)
                consider_hash_dir(sub, split, best);
            else
                each_subdir(sub, NULL, depth - 1, split, best);
        }
        free(sub);
    }
    closedir(d);
}

/* <cache>/<org>___<name> (or <name>)/<config>/<version>/<hash>/. Without
 * a config, a dataset cached under one configuration only. */
static void find_in_datasets_cache(const char *name, const char *config, const char *split,
                                   found_files *best)
{
    char *cache = datasets_cache_dir(), folder[256], *dir;
    const char *slash = strchr(name, '/');
    if (!cache)
        return;
    if (slash)
        snprintf(folder, sizeof folder, "%.*s___%s", (int)(slash - name), name, slash + 1);
    else
        snprintf(folder, sizeof folder, "%s", name);
    if ((dir = ct__join_path(cache, folder))) {
        size_t configs = 0;
        DIR *d = config ? NULL : opendir(dir);
        struct dirent *e;
        while (d && (e = readdir(d)))
            configs += e->d_name[0] != '.' && !ends_with(e->d_name, ".lock");
        if (d)
            closedir(d);
        if (config || configs == 1)
            each_subdir(dir, config, 2, split, best);
        free(dir);
    }
    free(cache);
}

/* ---- the Hub's Parquet files ----------------------------------------------------- */

#define MAX_CONFIGS 64

/* A Parquet file's configuration: its first folder ("" for the root and
 * data/, the default configuration's places). */
static void config_of(const char *file, char *out, size_t size)
{
    const char *slash = strchr(file, '/');
    snprintf(out, size, "%.*s", slash && strncmp(file, "data/", 5) ? (int)(slash - file) : 0,
             file);
}

/* The listing's Parquet files of (config, split), sorted (pointers into
 * the listing); CT_ERR_NOT_FOUND naming the configurations there are. */
static ct_status pick_parquet(const ct__hub_listing *l, const char *name, const char *config,
                              const char *split, char ***out, size_t *n)
{
    char configs[MAX_CONFIGS][130], c[130], names[MAX_CONFIGS * 132] = "";
    size_t nc = 0;
    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < l->n; i++) {
        size_t k = 0;
        if (!ends_with(l->files[i], ".parquet"))
            continue;
        config_of(l->files[i], c, sizeof c);
        while (k < nc && strcmp(configs[k], c))
            k++;
        if (k == nc && nc < MAX_CONFIGS) {
            snprintf(configs[nc++], sizeof c, "%s", c);
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                     nc > 1 ? ", " : "", *c ? c : "(default)");
        }
    }
    if (!config && nc > 1)
        return ct__error(CT_ERR_NOT_FOUND, "datasets/%s has several configurations (%s): name "
                                           "one (--dataset_config_name)", name, names);
    snprintf(c, sizeof c, "%s", config ? config : nc ? configs[0] : "");
    for (size_t i = 0; i < l->n; i++) {
        char mine[130], **grown;
        size_t skip = *c ? strlen(c) + 1 : 0;
        if (!ends_with(l->files[i], ".parquet"))
            continue;
        config_of(l->files[i], mine, sizeof mine);
        if (strcmp(mine, c) || !file_of_split(l->files[i] + skip, split, ".parquet"))
            continue;
        if (!(grown = realloc(*out, (*n + 1) * sizeof *grown))) {
            free(*out);
            *out = NULL;
            return ct__error(CT_ERR_NOMEM, "out of memory");
        }
        *out = grown;
        (*out)[(*n)++] = l->files[i];
    }
    if (!*n)
        return ct__error(CT_ERR_NOT_FOUND, "datasets/%s%s%s has no Parquet file of split '%s' "
                                           "(configurations with Parquet files: %s)",
                         name, config ? ", configuration " : "", config ? config : "", split,
                         nc ? names : "none");
    qsort(*out, *n, sizeof **out, by_name);
    return CT_OK;
}

/* The listing of the repo at the options' revision that has Parquet files
 * of the split; the Hub's Parquet export when the branch has none. */
static ct_status list_with_parquet(const ct_hub_options *o, const char *name, const char *config,
                                   const char *split, ct__hub_listing *l, char ***files,
                                   size_t *n)
{
    char first[1024];
    ct_status st = ct__hub_list(o, name, "dataset", o->revision, l);
    if (st == CT_OK && (st = pick_parquet(l, name, config, split, files, n)) == CT_OK)
        return CT_OK;
    if (st != CT_ERR_NOT_FOUND || strcmp(o->revision, "main"))
        return st;
    snprintf(first, sizeof first, "%s", ct_last_error());
    ct__hub_listing_free(l);
    if (ct__hub_list(o, name, "dataset", PARQUET_EXPORT, l) != CT_OK)
        return ct__error(st, "%s", first); /* the branch's failure says more */
    return pick_parquet(l, name, config, split, files, n);
}

static ct_status load_files(char *const *paths, size_t n, ct_table **out)
{
    ct_status st = CT_OK;
    *out = NULL;
    for (size_t i = 0; st == CT_OK && i < n; i++) {
        ct_table *part = NULL;
        if ((st = ct_table_load(paths[i], &part)) != CT_OK)
            break;
        if (!*out)
            *out = part;
        else {
            st = ct__table_append(*out, part, paths[i]);
            ct_table_free(part);
        }
    }
    if (st != CT_OK) {
        ct_table_free(*out);
        *out = NULL;
    }
    return st;
}

static ct_status from_hub(const ct_hub_options *o, const char *name, const char *config,
                          const char *split, ct_table **out)
{
    ct__hub_listing l = {0};
    char **files = NULL, **paths = NULL;
    size_t n = 0;
    ct_status st = list_with_parquet(o, name, config, split, &l, &files, &n);
    if (st == CT_OK && !(paths = calloc(n, sizeof *paths)))
        st = ct__error(CT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; st == CT_OK && i < n; i++) {
        int how;
        st = ct__hub_fetch(o, name, "dataset", l.commit, files[i], &paths[i], NULL, &how);
    }
    if (st == CT_OK)
        st = load_files(paths, n, out);
    for (size_t i = 0; paths && i < n; i++)
        free(paths[i]);
    free(paths);
    free(files);
    ct__hub_listing_free(&l);
    return st;
}

ct_status ct_table_load_dataset(const char *name, const char *config, const char *split,
                                const ct_hub_options *options, ct_table **out)
{
    ct_hub_options *own = NULL;
    found_files cached = {0};
    ct_status st;
    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(name);
    CT__CHECK_ARG(split);
    if (!ct__hub_valid_repo_id(name))
        return ct__error(CT_ERR_INVALID_ARG, "'%s' is not a dataset name (\"name\" or "
                                             "\"org/name\")", name);
    if ((config && !valid_part(config)) || !valid_part(split))
        return ct__error(CT_ERR_INVALID_ARG, "dataset %s: '%s' is not a %s name", name,
                         config && !valid_part(config) ? config : split,
                         config && !valid_part(config) ? "configuration" : "split");
    find_in_datasets_cache(name, config, split, &cached);
    if (cached.n) {
        ct__log(CT_LOG_INFO, "dataset %s, split %s: from the datasets cache %s (%zu file%s)",
                name, split, cached.dir, cached.n, cached.n == 1 ? "" : "s");
        st = load_files(cached.files, cached.n, out);
        found_free(&cached);
        return st;
    }
    if (!options && (st = ct_hub_options_create(&own)) != CT_OK)
        return st;
    st = from_hub(options ? options : own, name, config, split, out);
    if (st != CT_OK)
        ct__error_prefix(st, "dataset %s%s%s, split %s: not in the datasets cache; from the Hub",
                         name, config ? "/" : "", config ? config : "", split);
    ct_hub_options_free(own);
    return st;
}
