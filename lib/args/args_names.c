/* Every argument name a command line may use — TrainingArguments' fields,
 * their deprecated aliases and --no_ forms, the other known names (fates),
 * and a script's own — for argparse's abbreviations and for suggestions. */
#include "args/args_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Calls fn(name, ctx) for each name until it returns non-zero. */
static int each_name(const char *const *extra, size_t n_extra,
                     int (*fn)(const char *name, void *ctx), void *ctx)
{
    char no[160];
    for (size_t i = 0; i < CT_ARGS_NFIELDS; i++) {
        const ct__arg_field *f = &ct__arg_fields[i];
        if (fn(f->name, ctx))
            return 1;
        if (f->type == CT_ARG_BOOL && strcmp(f->def, "True") == 0) {
            snprintf(no, sizeof no, "no_%s", f->name);
            if (fn(no, ctx))
                return 1;
        }
    }
    for (size_t i = 0; i < ct__args_alias_count(); i++)
        if (fn(ct__args_alias(i), ctx))
            return 1;
    for (size_t i = 0; i < CT_ARGS_NFATES; i++)
        if (fn(ct__arg_fates[i].name, ctx))
            return 1;
    for (size_t i = 0; i < n_extra; i++)
        if (extra[i] && fn(extra[i], ctx))
            return 1;
    return 0;
}

typedef struct prefix_ctx {
    const char *key;
    size_t len;
    int exact;
    size_t n;          /* names the key begins */
    char found[4][160]; /* the first few, for the error text */
} prefix_ctx;

static int prefix_visit(const char *name, void *ctx)
{
    prefix_ctx *p = ctx;
    if (strcmp(name, p->key) == 0) {
        p->exact = 1;
        return 1;
    }
    if (strncmp(name, p->key, p->len) != 0)
        return 0;
    for (size_t i = 0; i < p->n && i < 4; i++)
        if (strcmp(p->found[i], name) == 0)
            return 0; /* the same name twice (a script's and ours) */
    if (p->n < 4)
        snprintf(p->found[p->n], sizeof p->found[0], "%s", name);
    p->n++;
    return 0;
}

ct_status ct__args_expand(const char *key, const char *const *extra, size_t n_extra,
                          char *full, size_t size)
{
    prefix_ctx p;
    memset(&p, 0, sizeof p);
    p.key = key;
    p.len = strlen(key);
    full[0] = '\0';
    each_name(extra, n_extra, prefix_visit, &p);
    if (p.exact || p.n == 0 || p.len == 0)
        return CT_OK;
    if (p.n == 1) {
        snprintf(full, size, "%s", p.found[0]);
        return CT_OK;
    }
    return ct__error(CT_ERR_INVALID_ARG, "argument --%s: ambiguous option: could match --%s, "
                                         "--%s%s%s%s", key, p.found[0], p.found[1],
                     p.n > 2 ? ", --" : "", p.n > 2 ? p.found[2] : "", p.n > 3 ? ", ..." : "");
}

/* Levenshtein distance, over the first 127 bytes of each. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[128];
    la = la > 127 ? 127 : la;
    lb = lb > 127 ? 127 : lb;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

typedef struct near_ctx {
    const char *name;
    size_t best;
    char found[160];
} near_ctx;

static int near_visit(const char *name, void *ctx)
{
    near_ctx *c = ctx;
    size_t d = distance(c->name, name);
    if (d < c->best) {
        c->best = d;
        snprintf(c->found, sizeof c->found, "%s", name);
    }
    return 0;
}

const char *ct_args_closest_name(const char *name, const char *const *names, size_t n_names)
{
    static _Thread_local char out[160];
    near_ctx c;
    size_t limit;
    if (!name || !*name)
        return NULL;
    memset(&c, 0, sizeof c);
    c.name = name;
    c.best = SIZE_MAX;
    each_name(names, n_names, near_visit, &c);
    limit = strlen(name) / 3 > 2 ? strlen(name) / 3 : 2;
    if (c.best > limit || c.best == 0)
        return NULL;
    snprintf(out, sizeof out, "%s", c.found);
    return out;
}
