/* Models named by Hub ids: looked up as from_pretrained looks (the local
 * folder, the Hub cache, the Hub), with a download bar on rank 0's
 * terminal. A built-in configuration's name that the Hub cannot give is
 * kept, with the reason, for script_make_model's loud warning. */
#include "script.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char script_hub_miss[1024];

static void show_progress(const char *filename, uint64_t done, uint64_t total, void *user)
{
    (void)user;
    if (total)
        fprintf(stderr, "\rDownloading %s: %3d%% %.1f/%.1f MB", filename,
                (int)(100 * done / total), done / 1e6, total / 1e6);
    else
        fprintf(stderr, "\rDownloading %s: %.1f MB", filename, done / 1e6);
    if (total && done == total)
        fputc('\n', stderr);
}

int script_hub_options(const script_hub *hub, const char *repo_type, int rank,
                       ct_hub_options **out)
{
    ct_status st = ct_hub_options_create(out);
    if (st == CT_OK)
        st = ct_hub_options_set(*out, "repo_type", repo_type);
    if (st == CT_OK && hub->cache_dir)
        st = ct_hub_options_set(*out, "cache_dir", hub->cache_dir);
    if (st == CT_OK && hub->model_revision && !strcmp(repo_type, "model"))
        st = ct_hub_options_set(*out, "revision", hub->model_revision);
    if (st == CT_OK && hub->token)
        st = ct_hub_options_set(*out, "token", hub->token);
    if (st == CT_OK && rank == 0 && isatty(2))
        ct_hub_options_set_progress(*out, show_progress, NULL);
    if (st == CT_OK)
        return 0;
    ct_hub_options_free(*out);
    *out = NULL;
    return script_fail("Hub options", st), -1;
}

/* One name: a local path stays; a Hub id becomes its snapshot folder, or
 * with `file` that file of the repo (AutoConfig's config.json). A name the
 * Hub does not have (or lets no one see) stays too, the reason kept: it
 * may be a built-in configuration (script_make_model decides). */
static int resolve(const ct_hub_options *o, const char *option, const char *file,
                   const char **name, char *buf, size_t size)
{
    struct stat sb;
    ct_status st;
    if (!*name || stat(*name, &sb) == 0)
        return 0;
    st = file ? ct_hub_download(*name, file, o, buf, size)
              : ct_hub_model_folder(*name, o, buf, size);
    if (st == CT_OK)
        *name = buf;
    else if (st == CT_ERR_NOT_FOUND || st == CT_ERR_ACCESS)
        snprintf(script_hub_miss, sizeof script_hub_miss, "%s", ct_last_error());
    else {
        fprintf(stderr, "%s: --%s %s: %s: %s\n", script_prog, option, *name,
                ct_status_name(st), ct_last_error());
        return -1;
    }
    return 0;
}

int script_resolve_hub(const script_hub *hub, const char **model_name_or_path,
                       const char **config_name, const char **tokenizer_name, int rank)
{
    static char model_dir[4096], config_file[4096], tokenizer_dir[4096];
    ct_hub_options *o = NULL;
    int rc;
    if (script_hub_options(hub, "model", rank, &o) != 0)
        return -1;
    rc = resolve(o, "model_name_or_path", NULL, model_name_or_path, model_dir,
                 sizeof model_dir);
    if (rc == 0)
        rc = resolve(o, "config_name", "config.json", config_name, config_file,
                     sizeof config_file);
    if (rc == 0)
        rc = resolve(o, "tokenizer_name", NULL, tokenizer_name, tokenizer_dir,
                     sizeof tokenizer_dir);
    ct_hub_options_free(o);
    return rc;
}

int script_load_dataset(const script_hub *hub, const char *name, const char *config,
                        const char *split, int rank, ct_table **out)
{
    ct_hub_options *o = NULL;
    ct_status st;
    if (script_hub_options(hub, "dataset", rank, &o) != 0)
        return -1;
    st = ct_table_load_dataset(name, config, split, o, out);
    ct_hub_options_free(o);
    return st == CT_OK ? 0 : (script_fail("dataset", st), -1);
}
