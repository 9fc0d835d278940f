/* ct_args: the handle, the field table, and getting/setting values by name
 * as command-line text or typed. */
#include "args/args_priv.h"

#include "core/json.h"
#include "dist/dist_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const ct__arg_field ct__arg_fields[CT_ARGS_NFIELDS] = {
#define CT__FIELD_ROW(id, type, opt, def, choices, help) \
    {#id, CT_ARG_##type, opt, def, choices, help},
    CT_ARGS_FIELDS(CT__FIELD_ROW)
#undef CT__FIELD_ROW
};

static const struct {
    const char *alias, *target;
} aliases[] = {
#define CT__ALIAS_ROW(alias, target) {#alias, #target},
    CT_ARGS_ALIASES(CT__ALIAS_ROW)
#undef CT__ALIAS_ROW
};

size_t ct__args_alias_count(void)
{
    return sizeof aliases / sizeof aliases[0];
}

const char *ct__args_alias(size_t i)
{
    return aliases[i].alias;
}

int ct__args_find(const char *name)
{
    size_t i;
    for (i = 0; i < CT_ARGS_NFIELDS; i++)
        if (strcmp(ct__arg_fields[i].name, name) == 0)
            return (int)i;
    for (i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(aliases[i].alias, name) == 0)
            return ct__args_find(aliases[i].target);
    return -1;
}

static ct_status find_field(const char *func, const char *name, int *index)
{
    *index = -1;
    if (!name)
        return ct__error(CT_ERR_INVALID_ARG, "%s: argument 'name' is NULL", func);
    *index = ct__args_find(name);
    if (*index < 0)
        return ct__error(CT_ERR_NOT_FOUND, "%s: no training argument named '%s'", func, name);
    return CT_OK;
}

/* ---- value parsing ------------------------------------------------------ */

int ct__parse_int_text(const char *s, int64_t *out)
{
    char *end;
    long long v;
    errno = 0; /* ERANGE below tells the caller "out of range" from "not a number" */
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s || (!(*s >= '0' && *s <= '9') && *s != '-' && *s != '+'))
        return 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s)
        return 0;
    while (*end == ' ' || *end == '\t')
        end++;
    if (*end)
        return 0;
    *out = v;
    return 1;
}

ct_status ct__int_text_error(const char *name, const char *text)
{
    return ct__error(CT_ERR_INVALID_ARG,
                     errno == ERANGE ? "argument --%s: %s is out of range (a 64-bit integer)"
                                     : "argument --%s: invalid int value: '%s'",
                     name, text);
}

/* Python's float(): decimal only (strtod alone would take hexadecimal too),
 * and independent of the application's LC_NUMERIC. */
int ct__parse_double_text(const char *s, double *out)
{
    char *end;
    double v;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s || strpbrk(s, "xX"))
        return 0;
    v = ct__strtod(s, &end);
    if (end == s)
        return 0;
    while (*end == ' ' || *end == '\t')
        end++;
    if (*end)
        return 0;
    *out = v;
    return 1;
}

static int choice_valid(const char *choices, const char *value)
{
    size_t n = strlen(value);
    const char *p = choices;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, value, n) == 0)
            return 1;
        p += len + (bar != NULL);
    }
    return 0;
}

/* Transformers' other reporting integrations (INTEGRATION_TO_CALLBACK):
 * named on purpose, so they are refused with the reason rather than as a
 * typo. */
static int other_integration(const char *name)
{
    static const char *const names[] = {"azure_ml", "clearml",  "codecarbon", "comet_ml",
                                        "dagshub",  "dvclive",  "flyte",      "kubeflow",
                                        "mlflow",   "neptune",  "swanlab",    "trackio",
                                        "wandb"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i]))
            return 1;
    return 0;
}

static int is_none_text(const char *s)
{
    return strcmp(s, "None") == 0;
}

/* Strings must be UTF-8, refused when set rather than when written.
 * Every string field ends up in training_args.json (the root's and every
 * checkpoint's), which is JSON: UTF-8 by RFC 8259, read back by resume and
 * by Python. A Linux path may hold any bytes (a Latin-1 "caf\xe9"), and
 * Python would write one with surrogate escapes ("\udce9") that only
 * Python's own surrogateescape decoding turns back into the path; any
 * other reader gets a different string or an error. So, as Rust's and
 * Go's JSON libraries refuse such text, the library refuses it at once,
 * with the byte, instead of a run that trains for hours and then cannot
 * write or resume its checkpoint. */
static ct_status check_utf8(const ct__arg_field *fd, const char *text)
{
    const char *why;
    size_t n = strlen(text), valid = ct__utf8_valid_prefix(text, n, &why);
    if (valid == n)
        return CT_OK;
    return ct__error(CT_ERR_INVALID_ARG,
                     "argument --%s: not valid UTF-8 at byte %zu (%s): training_args.json "
                     "must hold it as JSON text, which is UTF-8; use a UTF-8 name (e.g. rename "
                     "the folder)", fd->name, valid, why);
}

/* Parse `text` for field f into *v (not touching the handle). */
ct_status ct__arg_value_parse(int f, const char *text, ct__arg_value *v)
{
    const ct__arg_field *fd = &ct__arg_fields[f];
    ct__arg_value nv;
    int b;
    memset(&nv, 0, sizeof nv);
    if (fd->optional && is_none_text(text)) {
        *v = nv;
        return CT_OK;
    }
    nv.set = 1;
    switch (fd->type) {
    case CT_ARG_BOOL:
        if (!ct__parse_bool_text(text, &b))
            return ct__error(CT_ERR_INVALID_ARG,
                             "argument --%s: expected a truthy or falsy value "
                             "(true/false, yes/no, 1/0), got '%s'", fd->name, text);
        nv.i = b;
        break;
    case CT_ARG_INT:
        if (!ct__parse_int_text(text, &nv.i))
            return ct__int_text_error(fd->name, text);
        break;
    case CT_ARG_FLOAT:
        if (!ct__parse_double_text(text, &nv.f))
            return ct__error(CT_ERR_INVALID_ARG,
                             "argument --%s: invalid float value: '%s'", fd->name, text);
        break;
    case CT_ARG_CHOICE:
        if (!choice_valid(fd->choices, text) && f == CT_A_report_to && other_integration(text))
            return ct__error(CT_ERR_UNSUPPORTED,
                             "argument --report_to: '%s' is not available here: only "
                             "tensorboard (or none, or all)", text);
        /* Transformers' other backends: refused with what does their job */
        if (f == CT_A_ddp_backend && !choice_valid(fd->choices, text) &&
            ct__dist_check_backend("argument --ddp_backend", text) == CT_ERR_UNSUPPORTED)
            return CT_ERR_UNSUPPORTED;
        if (!choice_valid(fd->choices, text))
            return ct__error(CT_ERR_INVALID_ARG,
                             "argument --%s: invalid choice '%s' (choose from %s)",
                             fd->name, text, fd->choices);
        /* fall through */
    case CT_ARG_STRING:
        if (check_utf8(fd, text) != CT_OK)
            return CT_ERR_INVALID_ARG;
        nv.s = strdup(text);
        if (!nv.s)
            return ct__error(CT_ERR_NOMEM, "out of memory storing --%s", fd->name);
        break;
    }
    *v = nv;
    return CT_OK;
}

void ct__arg_value_free(ct__arg_value *v)
{
    free(v->s);
    memset(v, 0, sizeof *v);
}

/* Replace field f of args with *v, taking ownership of its string. */
static void store(ct_args *args, int f, ct__arg_value *v)
{
    ct__arg_value_free(&args->v[f]);
    args->v[f] = *v;
    memset(v, 0, sizeof *v);
}

int ct__arg_value_format(int f, const ct__arg_value *v, char *buf, size_t size)
{
    if (!v->set)
        return snprintf(buf, size, "None");
    switch (ct__arg_fields[f].type) {
    case CT_ARG_BOOL: return snprintf(buf, size, "%s", v->i ? "True" : "False");
    case CT_ARG_INT: return snprintf(buf, size, "%lld", (long long)v->i);
    case CT_ARG_FLOAT: {
        char tmp[40];
        ct__format_double(tmp, sizeof tmp, v->f);
        return snprintf(buf, size, "%s", tmp);
    }
    default: return snprintf(buf, size, "%s", v->s);
    }
}

/* ---- the handle ----------------------------------------------------------- */

void ct__args_clear(ct_args *args)
{
    size_t i;
    for (i = 0; i < CT_ARGS_NFIELDS; i++)
        ct__arg_value_free(&args->v[i]);
    for (i = 0; i < args->n_unparsed; i++)
        free(args->unparsed[i]);
    free(args->unparsed);
    args->unparsed = NULL;
    args->n_unparsed = 0;
}

ct_status ct_args_create(ct_args **out)
{
    ct_args *args;
    size_t i;
    CT__CHECK_ARG(out);
    *out = NULL;
    args = calloc(1, sizeof *args);
    if (!args)
        return ct__error(CT_ERR_NOMEM, "ct_args_create: out of memory");
    for (i = 0; i < CT_ARGS_NFIELDS; i++) {
        ct_status st = ct__arg_value_parse((int)i, ct__arg_fields[i].def, &args->v[i]);
        if (st != CT_OK) {
            ct_args_free(args);
            return st;
        }
    }
    *out = args;
    return CT_OK;
}

ct_status ct__args_clone(const ct_args *src, ct_args **out)
{
    ct_args *dst = calloc(1, sizeof *dst);
    size_t i;
    if (!dst)
        return ct__error(CT_ERR_NOMEM, "out of memory copying training arguments");
    memcpy(dst->warned, src->warned, sizeof dst->warned);
    for (i = 0; i < CT_ARGS_NFIELDS; i++) {
        dst->v[i] = src->v[i];
        dst->v[i].s = NULL;
        if (src->v[i].s && !(dst->v[i].s = strdup(src->v[i].s))) {
            ct_args_free(dst);
            return ct__error(CT_ERR_NOMEM, "out of memory copying training arguments");
        }
    }
    *out = dst;
    return CT_OK;
}

ct_status ct_args_copy(const ct_args *src, ct_args **out)
{
    ct_status st;
    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(src);
    st = ct__args_clone(src, out);
    if (st == CT_OK && src->n_unparsed) {
        ct_args *dst = *out;
        size_t i;
        dst->unparsed = calloc(src->n_unparsed, sizeof *dst->unparsed);
        for (i = 0; dst->unparsed && i < src->n_unparsed; i++)
            if (!(dst->unparsed[i] = strdup(src->unparsed[i])))
                break;
        dst->n_unparsed = dst->unparsed ? i : 0;
        if (i < src->n_unparsed) {
            ct_args_free(dst);
            *out = NULL;
            return ct__error(CT_ERR_NOMEM, "out of memory copying training arguments");
        }
    }
    return st;
}

/* Move everything from src into dst (dst's old contents are freed). */
void ct__args_move(ct_args *dst, ct_args *src)
{
    ct__args_clear(dst);
    *dst = *src;
    memset(src, 0, sizeof *src);
    free(src);
}

void ct_args_free(ct_args *args)
{
    if (!args)
        return;
    ct__args_clear(args);
    free(args);
}

/* ---- the field table ---------------------------------------------------- */

size_t ct_args_field_count(void)
{
    return CT_ARGS_NFIELDS;
}

ct_status ct_args_field_index(const char *name, size_t *index)
{
    int f;
    ct_status st;
    CT__CHECK_ARG(index);
    st = find_field(__func__, name, &f);
    if (st == CT_OK)
        *index = (size_t)f;
    return st;
}

#define FIELD_OR(index, what, bad) \
    ((index) < CT_ARGS_NFIELDS ? ct__arg_fields[index].what : (bad))

const char *ct_args_field_name(size_t index) { return FIELD_OR(index, name, NULL); }
int ct_args_field_type(size_t index) { return FIELD_OR(index, type, (ct_arg_type)-1); }
int ct_args_field_optional(size_t index) { return FIELD_OR(index, optional, -1); }
const char *ct_args_field_default(size_t index) { return FIELD_OR(index, def, NULL); }
const char *ct_args_field_help(size_t index) { return FIELD_OR(index, help, NULL); }
const char *ct_args_field_choices(size_t index) { return FIELD_OR(index, choices, NULL); }

/* ---- by name, as text ----------------------------------------------------- */

ct_status ct_args_set(ct_args *args, const char *name, const char *value)
{
    ct__arg_value v;
    int f;
    ct_status st;
    CT__CHECK_ARG(args);
    CT__CHECK_ARG(value);
    if (name && ct__args_find(name) < 0 && (f = ct__fate_find(name)) >= 0)
        return ct__fate_apply(args, f, value);
    if ((st = find_field(__func__, name, &f)) != CT_OK)
        return st;
    if ((st = ct__arg_value_parse(f, value, &v)) != CT_OK)
        return st;
    store(args, f, &v);
    return CT_OK;
}

ct_status ct_args_get(const ct_args *args, const char *name, char *buf, size_t size,
                      size_t *length)
{
    int f, n;
    ct_status st;
    CT__CHECK_ARG(args);
    if ((st = find_field(__func__, name, &f)) != CT_OK)
        return st;
    n = ct__arg_value_format(f, &args->v[f], NULL, 0);
    if (length)
        *length = (size_t)n;
    if (!buf && size == 0)
        return CT_OK;
    if (!buf || size <= (size_t)n)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_args_get: value of '%s' needs %d bytes, buffer has %zu",
                         name, n + 1, buf ? size : 0);
    ct__arg_value_format(f, &args->v[f], buf, size);
    return CT_OK;
}

/* ---- typed -------------------------------------------------------------- */

static const char *const type_names[] = {"bool", "int", "float", "string", "choice"};

/* Find the field and check it has one of the two accepted types. */
static ct_status typed_field(const char *func, const ct_args *args, const char *name,
                             ct_arg_type want, ct_arg_type also, int *f)
{
    ct_status st;
    if (!args)
        return ct__error(CT_ERR_INVALID_ARG, "%s: argument 'args' is NULL", func);
    if ((st = find_field(func, name, f)) != CT_OK)
        return st;
    if (ct__arg_fields[*f].type != want && ct__arg_fields[*f].type != also)
        return ct__error(CT_ERR_INVALID_ARG, "%s: field '%s' is of type %s, not %s", func,
                         ct__arg_fields[*f].name, type_names[ct__arg_fields[*f].type],
                         type_names[want]);
    return CT_OK;
}

static ct_status typed_get(const char *func, const ct_args *args, const char *name,
                           ct_arg_type want, ct_arg_type also, const void *out, int *f)
{
    ct_status st = typed_field(func, args, name, want, also, f);
    if (st != CT_OK)
        return st;
    if (!out)
        return ct__error(CT_ERR_INVALID_ARG, "%s: argument 'out' is NULL", func);
    if (!args->v[*f].set)
        return ct__error(CT_ERR_STATE, "%s: field '%s' is None", func, name);
    return CT_OK;
}

ct_status ct_args_is_set(const ct_args *args, const char *name, int *is_set)
{
    int f;
    ct_status st;
    CT__CHECK_ARG(args);
    CT__CHECK_ARG(is_set);
    if ((st = find_field(__func__, name, &f)) != CT_OK)
        return st;
    *is_set = args->v[f].set;
    return CT_OK;
}

ct_status ct_args_unset(ct_args *args, const char *name)
{
    int f;
    ct_status st;
    CT__CHECK_ARG(args);
    if ((st = find_field(__func__, name, &f)) != CT_OK)
        return st;
    if (!ct__arg_fields[f].optional)
        return ct__error(CT_ERR_INVALID_ARG, "ct_args_unset: field '%s' cannot be None", name);
    ct__arg_value_free(&args->v[f]);
    return CT_OK;
}

ct_status ct_args_set_bool(ct_args *args, const char *name, int value)
{
    int f;
    char text[48];
    if (args && name && ct__args_find(name) < 0 && (f = ct__fate_find(name)) >= 0) {
        snprintf(text, sizeof text, "%s", value ? "True" : "False");
        return ct__fate_apply(args, f, text);
    }
    ct_status st = typed_field(__func__, args, name, CT_ARG_BOOL, CT_ARG_BOOL, &f);
    if (st != CT_OK)
        return st;
    args->v[f].set = 1;
    args->v[f].i = value != 0;
    return CT_OK;
}

ct_status ct_args_get_bool(const ct_args *args, const char *name, int *out)
{
    int f;
    ct_status st = typed_get(__func__, args, name, CT_ARG_BOOL, CT_ARG_BOOL, out, &f);
    if (st == CT_OK)
        *out = (int)args->v[f].i;
    return st;
}

ct_status ct_args_set_int(ct_args *args, const char *name, int64_t value)
{
    int f;
    char text[48];
    if (args && name && ct__args_find(name) < 0 && (f = ct__fate_find(name)) >= 0) {
        snprintf(text, sizeof text, "%lld", (long long)value);
        return ct__fate_apply(args, f, text);
    }
    ct_status st = typed_field(__func__, args, name, CT_ARG_INT, CT_ARG_INT, &f);
    if (st != CT_OK)
        return st;
    args->v[f].set = 1;
    args->v[f].i = value;
    return CT_OK;
}

ct_status ct_args_get_int(const ct_args *args, const char *name, int64_t *out)
{
    int f;
    ct_status st = typed_get(__func__, args, name, CT_ARG_INT, CT_ARG_INT, out, &f);
    if (st == CT_OK)
        *out = args->v[f].i;
    return st;
}

ct_status ct_args_set_float(ct_args *args, const char *name, double value)
{
    int f;
    char text[48];
    if (args && name && ct__args_find(name) < 0 && (f = ct__fate_find(name)) >= 0) {
        ct__format_double(text, sizeof text, value);
        return ct__fate_apply(args, f, text);
    }
    ct_status st = typed_field(__func__, args, name, CT_ARG_FLOAT, CT_ARG_FLOAT, &f);
    if (st != CT_OK)
        return st;
    args->v[f].set = 1;
    args->v[f].f = value;
    return CT_OK;
}

ct_status ct_args_get_float(const ct_args *args, const char *name, double *out)
{
    int f;
    ct_status st = typed_get(__func__, args, name, CT_ARG_FLOAT, CT_ARG_FLOAT, out, &f);
    if (st == CT_OK)
        *out = args->v[f].f;
    return st;
}

ct_status ct_args_set_string(ct_args *args, const char *name, const char *value)
{
    int f;
    ct__arg_value v;
    if (args && name && ct__args_find(name) < 0 && (f = ct__fate_find(name)) >= 0)
        return ct__fate_apply(args, f, value ? value : "None");
    ct_status st = typed_field(__func__, args, name, CT_ARG_STRING, CT_ARG_CHOICE, &f);
    if (st != CT_OK)
        return st;
    if (!value) {
        if (!ct__arg_fields[f].optional)
            return ct__error(CT_ERR_INVALID_ARG,
                             "ct_args_set_string: field '%s' cannot be None", name);
        ct__arg_value_free(&args->v[f]);
        return CT_OK;
    }
    /* "None" is a legitimate path, so only NULL means None here. */
    if (ct__arg_fields[f].type == CT_ARG_STRING) {
        if ((st = check_utf8(&ct__arg_fields[f], value)) != CT_OK)
            return st;
        memset(&v, 0, sizeof v);
        v.set = 1;
        if (!(v.s = strdup(value)))
            return ct__error(CT_ERR_NOMEM, "out of memory storing '%s'", name);
    } else if ((st = ct__arg_value_parse(f, value, &v)) != CT_OK) {
        return st;
    }
    store(args, f, &v);
    return CT_OK;
}

ct_status ct_args_get_string(const ct_args *args, const char *name, const char **out)
{
    int f;
    ct_status st = typed_field(__func__, args, name, CT_ARG_STRING, CT_ARG_CHOICE, &f);
    if (st != CT_OK)
        return st;
    CT__CHECK_ARG(out);
    *out = args->v[f].s;
    return CT_OK;
}

/* ---- internal typed access ---------------------------------------------- */

int ct__args_is_set(const ct_args *args, enum ct__args_field f) { return args->v[f].set; }
int ct__args_bool(const ct_args *args, enum ct__args_field f) { return (int)args->v[f].i; }
int64_t ct__args_int(const ct_args *args, enum ct__args_field f) { return args->v[f].i; }
double ct__args_float(const ct_args *args, enum ct__args_field f) { return args->v[f].f; }
const char *ct__args_string(const ct_args *args, enum ct__args_field f) { return args->v[f].s; }
