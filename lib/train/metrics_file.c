/* Trainer.save_metrics(split, metrics, combined=True): <split>_results.json
 * and all_results.json, the union of every split's metrics of the run
 * (train_, eval_, predict_), both as json.dump(indent=4, sort_keys=True). */
#include "train/metrics_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/strbuf.h"

/* An entry of the merged file: a new metric, or a value kept from the
 * existing file (any JSON value, written back as it was). */
typedef struct merged {
    const char *key;
    const ct__metric *metric;
    const ct__json *old;
} merged;

static int merged_cmp(const void *a, const void *b)
{
    /* Byte order of UTF-8 is code point order: Python's sort_keys. */
    return strcmp(((const merged *)a)->key, ((const merged *)b)->key);
}

static void put_number(ct__strbuf *sb, const ct__metric *m)
{
    if (m->is_int)
        ct__sb_printf(sb, "%lld", (long long)m->value);
    else
        ct__json_write_double(sb, m->value);
}

/* The entries sorted, indent 4, no final newline (json.dump adds none). */
static CT__MUST_USE ct_status write_sorted(const char *path, merged *e, size_t n)
{
    ct__strbuf sb = {0};
    qsort(e, n, sizeof *e, merged_cmp);
    ct__sb_puts(&sb, n ? "{" : "{}");
    for (size_t i = 0; i < n; i++) {
        ct__sb_puts(&sb, i ? ",\n    " : "\n    ");
        ct__json_write_string(&sb, e[i].key, strlen(e[i].key));
        ct__sb_puts(&sb, ": ");
        if (e[i].metric)
            put_number(&sb, e[i].metric);
        else
            ct__json_write_value(&sb, e[i].old, 2);
    }
    if (n)
        ct__sb_puts(&sb, "\n}");
    return ct__write_text_atomic(path, &sb, "writing metrics");
}

ct_status ct__save_metrics(const char *dir, const char *split, const ct__metric *m, size_t n)
{
    char path[4096];
    ct__json_doc *doc = NULL;
    const ct__json *root = NULL;
    merged *e;
    size_t count = 0, old_n = 0;
    struct stat sb;
    ct_status st;

    if (!(e = malloc((n ? n : 1) * sizeof *e)))
        return ct__error(CT_ERR_NOMEM, "out of memory saving %s metrics", split);
    for (size_t i = 0; i < n; i++)
        e[count++] = (merged){m[i].name, &m[i], NULL};
    st = ct__path_format(path, sizeof path, "%s/%s_results.json", dir, split);
    if (st == CT_OK)
        st = write_sorted(path, e, count);
    free(e);
    if (st != CT_OK)
        return st;

    if ((st = ct__path_format(path, sizeof path, "%s/all_results.json", dir)) != CT_OK)
        return st;
    if (stat(path, &sb) == 0) {
        if ((st = ct__json_parse_file_ex(path, CT__JSON_ALLOW_NAN, &doc)) != CT_OK)
            return ct__error_prefix(st, "all_results.json (left as it is)");
        root = ct__json_root(doc);
        if (root->type != CT_JSON_OBJECT) {
            ct__json_free(doc);
            return ct__error(CT_ERR_FORMAT, "%s: not a JSON object (left as it is)", path);
        }
        old_n = root->n;
    }
    if (!(e = malloc((n + old_n ? n + old_n : 1) * sizeof *e))) {
        ct__json_free(doc);
        return ct__error(CT_ERR_NOMEM, "out of memory saving %s metrics", split);
    }
    count = 0;
    /* dict.update: an old key the new metrics hold takes the new value. */
    for (size_t i = 0; i < old_n; i++) {
        size_t k;
        for (k = 0; k < n && strcmp(m[k].name, root->members[i].key) != 0; k++)
            ;
        if (k == n)
            e[count++] = (merged){root->members[i].key, NULL, &root->members[i].value};
    }
    for (size_t i = 0; i < n; i++)
        e[count++] = (merged){m[i].name, &m[i], NULL};
    st = write_sorted(path, e, count);
    free(e);
    ct__json_free(doc);
    return st;
}

ct_status ct_squad_scores_save_metrics(const ct_squad_scores *scores, const char *output_dir,
                                       const char *split)
{
    size_t n;
    ct__metric *m;
    ct_status st;
    CT__CHECK_ARG(scores);
    CT__CHECK_ARG(output_dir);
    CT__CHECK_ARG(split);
    n = ct_squad_scores_count(scores);
    if (!(m = malloc((n ? n : 1) * sizeof *m)))
        return ct__error(CT_ERR_NOMEM, "out of memory saving %s metrics", split);
    for (size_t i = 0; i < n; i++)
        m[i] = (ct__metric){ct_squad_scores_name(scores, i), ct_squad_scores_value(scores, i),
                            ct_squad_scores_is_integer(scores, i)};
    st = ct__save_metrics(output_dir, split, m, n);
    free(m);
    return st;
}
