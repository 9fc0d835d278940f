/* A classification head's labels in the configuration: id2label read from
 * config.json (Transformers turns its keys into ints), and the labels,
 * their count and problem_type given when a head is made, as
 * from_pretrained(num_labels=, id2label=, problem_type=) override the
 * file. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/json.h"
#include "model/config.h"

void ct__config_free_labels(ct__config *cfg)
{
    if (cfg->label_names)
        for (int i = 0; i < cfg->num_labels; i++)
            free(cfg->label_names[i]);
    free(cfg->label_names);
    cfg->label_names = NULL;
}

/* names[0..n) copied (a caller's are checked by ct_model_options_set_labels;
 * a file's are taken as Transformers takes them). */
static ct_status copy_names(const char *const *names, int n, char ***out)
{
    char **copy = calloc((size_t)n, sizeof *copy);
    if (!copy)
        return ct__error(CT_ERR_NOMEM, "out of memory for %d labels", n);
    for (int i = 0; i < n; i++)
        if (!(copy[i] = strdup(names[i]))) {
            for (int j = 0; j < i; j++)
                free(copy[j]);
            free(copy);
            return ct__error(CT_ERR_NOMEM, "out of memory for %d labels", n);
        }
    *out = copy;
    return CT_OK;
}

ct_status ct__config_read_labels(const ct__json *root, const char *what, ct__config *cfg)
{
    const ct__json *map = ct__json_get(root, "id2label");
    const char **names;
    ct_status st;
    int n;
    if (!map || map->type == CT_JSON_NULL || (map->type == CT_JSON_OBJECT && map->n == 0))
        return CT_OK;
    if (map->type != CT_JSON_OBJECT || map->n == 0 || map->n > (1u << 20))
        return ct__error(CT_ERR_FORMAT, "%s: key 'id2label': expected an object of 1 to 2^20 "
                                        "\"<id>\": \"<label>\" entries", what);
    n = (int)map->n;
    if (!(names = calloc((size_t)n, sizeof *names)))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", what);
    for (int i = 0; i < n; i++) {
        const ct__json_member *e = &map->members[i];
        char *end;
        long id = strtol(e->key, &end, 10);
        if (!e->key[0] || *end || id < 0 || id >= n || names[id] ||
            e->value.type != CT_JSON_STRING || strlen(e->value.str) != e->value.len) {
            free(names);
            return ct__error(CT_ERR_FORMAT,
                             "%s: id2label[\"%.40s\"]: expected ids 0 to %d, each once, with a "
                             "label each (a string)", what, e->key, n - 1);
        }
        names[id] = e->value.str;
    }
    cfg->num_labels = n;
    st = copy_names(names, n, &cfg->label_names);
    free(names);
    return st;
}

ct_status ct__config_set_labels(ct__config *cfg, int num_labels, const char *const *names,
                                const char *problem_type)
{
    static const char *const problems[] = {"regression", "single_label_classification",
                                           "multi_label_classification"};
    char **copy = NULL;
    ct_status st;
    int problem = -1;
    if (num_labels < 0 || num_labels > (1 << 20))
        return ct__error(CT_ERR_INVALID_ARG, "num_labels %d is outside [1, 2^20] (0 keeps the "
                                             "configuration's)", num_labels);
    if (names && num_labels == 0)
        return ct__error(CT_ERR_INVALID_ARG, "labels given without num_labels");
    if (problem_type) {
        for (int i = 0; i < 3; i++)
            if (strcmp(problem_type, problems[i]) == 0)
                problem = CT__PROBLEM_REGRESSION + i;
        if (problem < 0)
            return ct__error(CT_ERR_INVALID_ARG, "problem_type \"%s\" is not \"regression\", "
                                                 "\"single_label_classification\" or "
                                                 "\"multi_label_classification\"",
                             problem_type);
    }
    if (names && (st = copy_names(names, num_labels, &copy)) != CT_OK)
        return st;
    if (num_labels) {
        ct__config_free_labels(cfg);
        cfg->num_labels = num_labels;
        cfg->label_names = copy; /* NULL: LABEL_<i> */
        cfg->labels_set = 1;
    }
    if (problem >= 0) {
        cfg->problem_type = (ct__problem)problem;
        cfg->problem_set = 1;
    }
    return CT_OK;
}
