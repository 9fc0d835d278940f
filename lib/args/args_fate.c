/* The fate table (args_fates.h) behind the fields: looking names up, and
 * applying a value given to a name that is not a field — accepted silently
 * at its default, else a warning (no effect) or an error (refused). */
#include "args/args_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const ct__arg_fate_row ct__arg_fates[CT_ARGS_NFATES] = {
#define CT__FATE_ROW(name, group, fate, type, def, reason) \
    {#name, CT__GROUP_##group, CT_ARG_##fate, CT_ARG_##type, def, reason},
    CT_ARGS_FATES(CT__FATE_ROW)
#undef CT__FATE_ROW
};

static const char *const group_names[] = {"TrainingArguments", "ModelArguments",
                                          "DataTrainingArguments", "cputrain-qa"};

int ct__fate_find(const char *name)
{
    for (size_t i = 0; i < CT_ARGS_NFATES; i++)
        if (strcmp(ct__arg_fates[i].name, name) == 0)
            return (int)i;
    return -1;
}

int ct__fate_is_flag(int row)
{
    return ct__arg_fates[row].type == CT_ARG_BOOL;
}

int ct__fate_is_parsed(int row)
{
    const ct__arg_fate_row *r = &ct__arg_fates[row];
    return r->group == CT__GROUP_TRAINING && r->fate != CT_ARG_IMPLEMENTED;
}

/* Is `text` one of the '|'-separated spellings in `list`? */
static int in_list(const char *list, const char *text)
{
    size_t n = strlen(text);
    const char *p = list;
    for (;;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, text, n) == 0)
            return 1;
        if (!bar)
            return 0;
        p = bar + 1;
    }
}

/* Check `text` as the row's type; *is_default tells whether it asks for
 * Transformers' default (then nothing here differs from Transformers). */
static ct_status check_value(const ct__arg_fate_row *r, const char *text, int *is_default)
{
    int b, d;
    int64_t i, j;
    double x, y;
    char first[64];
    const char *bar = strchr(r->def, '|');
    snprintf(first, sizeof first, "%.*s", (int)(bar ? (size_t)(bar - r->def) : strlen(r->def)),
             r->def);
    *is_default = in_list(r->def, text);
    if (*is_default || strcmp(text, "None") == 0) {
        *is_default = *is_default || in_list(r->def, "None");
        return CT_OK;
    }
    switch (r->type) {
    case CT_ARG_BOOL:
        if (!ct__parse_bool_text(text, &b))
            return ct__error(CT_ERR_INVALID_ARG,
                             "argument --%s: expected a truthy or falsy value "
                             "(true/false, yes/no, 1/0), got '%s'", r->name, text);
        *is_default = ct__parse_bool_text(first, &d) && b == d;
        break;
    case CT_ARG_INT:
        if (!ct__parse_int_text(text, &i))
            return ct__int_text_error(r->name, text);
        *is_default = ct__parse_int_text(first, &j) && i == j;
        break;
    case CT_ARG_FLOAT:
        if (!ct__parse_double_text(text, &x))
            return ct__error(CT_ERR_INVALID_ARG, "argument --%s: invalid float value: '%s'",
                             r->name, text);
        *is_default = ct__parse_double_text(first, &y) && x == y;
        break;
    default:
        break;
    }
    return CT_OK;
}

ct_status ct__fate_apply(ct_args *args, int row, const char *text)
{
    const ct__arg_fate_row *r = &ct__arg_fates[row];
    int is_default;
    ct_status st;
    if (r->fate == CT_ARG_IMPLEMENTED) {
        if (r->group != CT__GROUP_TRAINING)
            return ct__error(CT_ERR_NOT_FOUND,
                             "'%s' is an argument of run_qa.py's %s, which cputrain-qa reads; "
                             "it is not a training argument", r->name, group_names[r->group]);
        return ct__error(CT_ERR_NOT_FOUND, "training argument '%s' is not in this build",
                         r->name);
    }
    if ((st = check_value(r, text, &is_default)) != CT_OK || is_default)
        return st;
    if (r->fate == CT_ARG_REFUSED)
        return ct__error(CT_ERR_UNSUPPORTED, "argument --%s %s is refused: %s", r->name, text,
                         r->reason);
    if (!args->warned[row]) {
        args->warned[row] = 1;
        ct__log(CT_LOG_WARNING, "--%s %s has no effect here: %s", r->name, text, r->reason);
    }
    return CT_OK;
}

/* ---- the public table: fields first, then the fate rows ------------------------ */

/* A row whose name has since become a field (an IMPLEMENTED row written for
 * a field another part adds) is that field: the table lists it once. */
static int row_shown(size_t row)
{
    return ct__args_find(ct__arg_fates[row].name) < 0;
}

size_t ct_args_known_count(void)
{
    size_t n = CT_ARGS_NFIELDS;
    for (size_t i = 0; i < CT_ARGS_NFATES; i++)
        n += row_shown(i);
    return n;
}

ct_status ct_args_known_index(const char *name, size_t *index)
{
    int f;
    CT__CHECK_ARG(name);
    CT__CHECK_ARG(index);
    if ((f = ct__args_find(name)) >= 0) {
        *index = (size_t)f;
        return CT_OK;
    }
    if ((f = ct__fate_find(name)) >= 0) {
        size_t k = CT_ARGS_NFIELDS;
        for (int i = 0; i < f; i++)
            k += row_shown((size_t)i);
        *index = k;
        return CT_OK;
    }
    return ct__error(CT_ERR_NOT_FOUND, "ct_args_known_index: neither TrainingArguments nor "
                                       "run_qa.py has an argument named '%s'", name);
}

static const ct__arg_fate_row *fate_row(size_t index)
{
    if (index < CT_ARGS_NFIELDS)
        return NULL;
    index -= CT_ARGS_NFIELDS;
    for (size_t i = 0; i < CT_ARGS_NFATES; i++)
        if (row_shown(i) && index-- == 0)
            return &ct__arg_fates[i];
    return NULL;
}

const char *ct_args_known_name(size_t index)
{
    return index < CT_ARGS_NFIELDS ? ct__arg_fields[index].name
                                   : fate_row(index) ? fate_row(index)->name : NULL;
}

const char *ct_args_known_group(size_t index)
{
    return index < CT_ARGS_NFIELDS ? group_names[CT__GROUP_TRAINING]
                                   : fate_row(index) ? group_names[fate_row(index)->group] : NULL;
}

int ct_args_known_fate(size_t index)
{
    return index < CT_ARGS_NFIELDS ? CT_ARG_IMPLEMENTED
                                   : fate_row(index) ? (int)fate_row(index)->fate : -1;
}

int ct_args_known_type(size_t index)
{
    if (index < CT_ARGS_NFIELDS)
        return ct__arg_fields[index].type;
    return fate_row(index) ? (int)fate_row(index)->type : -1;
}

const char *ct_args_known_default(size_t index)
{
    return index < CT_ARGS_NFIELDS ? ct__arg_fields[index].def
                                   : fate_row(index) ? fate_row(index)->def : NULL;
}

const char *ct_args_known_reason(size_t index)
{
    return index < CT_ARGS_NFIELDS ? "" : fate_row(index) ? fate_row(index)->reason : NULL;
}
