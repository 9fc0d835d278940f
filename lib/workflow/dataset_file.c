/* ct_workflow_dataset_file: a split of --dataset_name read from a folder,
 * under the names the `datasets` library and the dataset's site give it. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cputrain/cputrain.h>

#include "core/error.h"

static int is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

ct_status ct_workflow_dataset_file(const char *dir, const char *name, const char *split,
                                   const char *official, char *path, size_t size)
{
    static const char *const exts[] = {"json", "jsonl"};
    CT__CHECK_ARG(name);
    CT__CHECK_ARG(split);
    CT__CHECK_ARG(path);
    if (!dir && !(dir = getenv("HF_DATASETS_CACHE")))
        return ct__error(CT_ERR_INVALID_ARG, "dataset '%s' needs a folder to read it from "
                         "(--dataset_dir, or HF_DATASETS_CACHE): nothing is downloaded", name);
    for (int sub = 0; sub < 2; sub++) {
        const char *in = sub ? name : "", *slash = sub ? "/" : "";
        for (int i = 0; i < 2; i++) {
            snprintf(path, size, "%s%s%s/%s.%s", dir, slash, in, split, exts[i]);
            if (is_file(path))
                return CT_OK;
        }
        if (official) {
            snprintf(path, size, "%s%s%s/%s", dir, slash, in, official);
            if (is_file(path))
                return CT_OK;
        }
    }
    return ct__error(CT_ERR_NOT_FOUND, "dataset '%s': no %s split in %s or %s/%s (looked for "
                     "%s.json, %s.jsonl%s%s); nothing is downloaded", name, split, dir, dir,
                     name, split, split, official ? ", " : "", official ? official : "");
}
