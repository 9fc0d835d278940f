/* ct_args from a command line (HfArgumentParser conventions) and from/to
 * training_args.json. Every entry point works on a copy and commits it only
 * once everything parsed and validated, so a failure changes nothing. */
#include "args/args_priv.h"

#include "core/fileio.h"
#include "core/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ct_status keep_unparsed(ct_args *args, const char *text)
{
    char **grown = realloc(args->unparsed, (args->n_unparsed + 1) * sizeof *grown);
    if (!grown)
        return ct__error(CT_ERR_NOMEM, "out of memory keeping argument '%s'", text);
    args->unparsed = grown;
    if (!(grown[args->n_unparsed] = strdup(text)))
        return ct__error(CT_ERR_NOMEM, "out of memory keeping argument '%s'", text);
    args->n_unparsed++;
    return CT_OK;
}

static ct_status set_from_text(ct_args *args, int f, const char *text)
{
    ct__arg_value v;
    ct_status st = ct__arg_value_parse(f, text, &v);
    if (st != CT_OK)
        return st;
    ct__arg_value_free(&args->v[f]);
    args->v[f] = v;
    return CT_OK;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* "--per-device-train-batch-size" names the same field as the underscore
 * form; `key` is rewritten in place. */
static void underscores(char *key)
{
    for (; *key; key++)
        if (*key == '-')
            *key = '_';
}

static ct_status apply_json(ct_args *args, const char *path);

/* A TrainingArguments name that is not a field (args_fates.h): its value is
 * read as a field's would be, then accepted, warned about or refused. Any
 * other name is kept for the caller, run_qa.py's included. */
static ct_status parse_fate(ct_args *args, int argc, const char *const *argv, int *i,
                            const char *key, const char *inline_value, const char *typed)
{
    int row = ct__fate_find(key), negated = 0, b;
    if (row < 0 && strncmp(key, "no_", 3) == 0 && (row = ct__fate_find(key + 3)) >= 0) {
        negated = 1; /* --no_dataloader_pin_memory, as HfArgumentParser offers it */
        if (!ct__fate_is_flag(row) || strncmp(ct__arg_fates[row].def, "True", 4) != 0)
            row = -1;
    }
    if (row < 0 || !ct__fate_is_parsed(row))
        return keep_unparsed(args, typed);
    if (negated) {
        if (inline_value)
            return ct__error(CT_ERR_INVALID_ARG, "argument --%s: takes no value", key);
        return ct__fate_apply(args, row, "False");
    }
    if (inline_value)
        return ct__fate_apply(args, row, inline_value);
    if (ct__fate_is_flag(row)) {
        if (*i + 1 < argc && ct__parse_bool_text(argv[*i + 1], &b))
            return ct__fate_apply(args, row, argv[++*i]);
        return ct__fate_apply(args, row, "True");
    }
    if (*i + 1 >= argc || strncmp(argv[*i + 1], "--", 2) == 0)
        return ct__error(CT_ERR_INVALID_ARG, "argument --%s: expected one argument", key);
    return ct__fate_apply(args, row, argv[++*i]);
}

/* The caller's own argument names (ct_args_parse_with_names). */
typedef struct names {
    const char *const *v;
    size_t n;
} names;

/* Parse one "--name[=value]" at argv[*i], consuming a following value. An
 * abbreviation counts as the name it begins; kept for the caller, it is
 * kept written out in full. */
static ct_status parse_option(ct_args *args, int argc, const char *const *argv, int *i,
                              const names *own)
{
    const char *arg = argv[*i];
    const char *eq = strchr(arg, '=');
    const char *inline_value = eq ? eq + 1 : NULL;
    char key[160], full[160], typed[512];
    size_t key_len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
    int f, negated = 0, b;
    ct_status st;

    if (key_len >= sizeof key)
        return keep_unparsed(args, arg);
    memcpy(key, arg + 2, key_len);
    key[key_len] = '\0';
    underscores(key);
    if ((st = ct__args_expand(key, own->v, own->n, full, sizeof full)) != CT_OK)
        return st;
    snprintf(typed, sizeof typed, "%s", arg);
    if (full[0]) {
        snprintf(typed, sizeof typed, "--%s%s%s", full, eq ? "=" : "", eq ? inline_value : "");
        snprintf(key, sizeof key, "%s", full);
    }

    f = ct__args_find(key);
    /* Booleans that default to true also get a --no_<name> form. */
    if (f < 0 && strncmp(key, "no_", 3) == 0) {
        int g = ct__args_find(key + 3);
        if (g >= 0 && ct__arg_fields[g].type == CT_ARG_BOOL &&
            strcmp(ct__arg_fields[g].def, "True") == 0) {
            f = g;
            negated = 1;
        }
    }
    if (f < 0)
        return parse_fate(args, argc, argv, i, key, inline_value, typed);
    if (!negated && strcmp(key, ct__arg_fields[f].name) != 0)
        ct__log(CT_LOG_WARNING, "--%s is deprecated; use --%s", key, ct__arg_fields[f].name);

    if (negated) {
        if (inline_value)
            return ct__error(CT_ERR_INVALID_ARG, "argument --%s: takes no value", key);
        return set_from_text(args, f, "False");
    }
    if (ct__arg_fields[f].type == CT_ARG_BOOL) {
        if (inline_value)
            return set_from_text(args, f, inline_value);
        if (*i + 1 < argc && ct__parse_bool_text(argv[*i + 1], &b)) {
            (*i)++;
            return set_from_text(args, f, argv[*i]);
        }
        return set_from_text(args, f, "True");
    }
    if (inline_value)
        return set_from_text(args, f, inline_value);
    if (*i + 1 >= argc || strncmp(argv[*i + 1], "--", 2) == 0)
        return ct__error(CT_ERR_INVALID_ARG, "argument --%s: expected one argument", key);
    (*i)++;
    return set_from_text(args, f, argv[*i]);
}

ct_status ct_args_parse(ct_args *args, int argc, const char *const *argv)
{
    return ct_args_parse_with_names(args, argc, argv, NULL, 0);
}

ct_status ct_args_parse_with_names(ct_args *args, int argc, const char *const *argv,
                                   const char *const *own_names, size_t n_names)
{
    ct_args *work;
    ct_status st = CT_OK;
    names own = {own_names, own_names ? n_names : 0};
    int i;
    CT__CHECK_ARG(args);
    if (argc < 0 || (argc > 0 && !argv))
        return ct__error(CT_ERR_INVALID_ARG, "ct_args_parse: argc %d with argv %p", argc,
                         (const void *)argv);
    for (i = 0; i < argc; i++)
        if (!argv[i])
            return ct__error(CT_ERR_INVALID_ARG, "ct_args_parse: argv[%d] is NULL", i);
    if ((st = ct__args_clone(args, &work)) != CT_OK)
        return st;

    if (argc == 1 && ends_with(argv[0], ".json")) {
        st = apply_json(work, argv[0]);
    } else {
        for (i = 0; i < argc && st == CT_OK; i++) {
            if (strncmp(argv[i], "--", 2) == 0 && argv[i][2] != '\0')
                st = parse_option(work, argc, argv, &i, &own);
            else
                st = keep_unparsed(work, argv[i]);
        }
    }
    if (st == CT_OK)
        st = ct_args_validate(work);
    if (st != CT_OK) {
        ct_args_free(work);
        return st;
    }
    ct__args_move(args, work);
    return CT_OK;
}

size_t ct_args_unparsed_count(const ct_args *args)
{
    return args ? args->n_unparsed : 0;
}

const char *ct_args_unparsed(const ct_args *args, size_t index)
{
    return args && index < args->n_unparsed ? args->unparsed[index] : NULL;
}

/* ---- JSON ---------------------------------------------------------------- */

/* An unknown key comes back as "--key" "value", the value as it would be
 * typed on a command line. */
static ct_status keep_json_member(ct_args *args, const ct__json_member *m)
{
    ct__strbuf sb = {0};
    ct_status st;
    char *text;
    if ((st = ct__sb_printf(&sb, "--%s", m->key)) != CT_OK)
        return st;
    text = ct__sb_take(&sb);
    st = text ? keep_unparsed(args, text) : CT_ERR_NOMEM;
    free(text);
    if (st != CT_OK)
        return st;
    switch (m->value.type) {
    case CT_JSON_NULL: return keep_unparsed(args, "None");
    case CT_JSON_TRUE: return keep_unparsed(args, "True");
    case CT_JSON_FALSE: return keep_unparsed(args, "False");
    case CT_JSON_STRING: return keep_unparsed(args, m->value.str);
    case CT_JSON_NUMBER:
        ct__sb_append(&sb, m->value.str, m->value.len);
        break;
    default:
        return ct__error(CT_ERR_FORMAT, "key '%s': nested %s values are not supported",
                         m->key, ct__json_type_name(m->value.type));
    }
    text = ct__sb_take(&sb);
    st = text ? keep_unparsed(args, text) : CT_ERR_NOMEM;
    free(text);
    return st;
}

/* A fate row's JSON value, as the text a command line would hold. Nested
 * values (Transformers writes {} for lr_scheduler_kwargs) count as their
 * JSON text. */
static ct_status apply_json_fate(ct_args *args, int row, const ct__json_member *m)
{
    switch (m->value.type) {
    case CT_JSON_NULL: return ct__fate_apply(args, row, "None");
    case CT_JSON_TRUE: return ct__fate_apply(args, row, "True");
    case CT_JSON_FALSE: return ct__fate_apply(args, row, "False");
    case CT_JSON_STRING: return ct__fate_apply(args, row, m->value.str);
    case CT_JSON_NUMBER: {
        char text[64];
        snprintf(text, sizeof text, "%.*s", (int)m->value.len, m->value.str);
        return ct__fate_apply(args, row, text);
    }
    case CT_JSON_OBJECT: return ct__fate_apply(args, row, m->value.n ? "{...}" : "{}");
    default: return ct__fate_apply(args, row, m->value.n ? "[...]" : "[]");
    }
}

/* report_to as Transformers' training_args.json holds it: a list, [] for
 * none; ["tensorboard"] reads back as tensorboard, ["all"] as all. A list
 * of several names is refused by the first that is not tensorboard. */
static ct_status apply_report_to_list(ct_args *args, int f, const ct__json *v)
{
    const char *name = v->n ? NULL : "none";
    for (size_t i = 0; i < v->n; i++) {
        const ct__json *item = &v->items[i];
        if (item->type != CT_JSON_STRING || strlen(item->str) != item->len)
            return ct__error(CT_ERR_FORMAT, "field 'report_to': expected a list of names, "
                                            "item %zu is %s", i, ct__json_type_name(item->type));
        if (!name || strcmp(item->str, "tensorboard") != 0)
            name = item->str;
    }
    return set_from_text(args, f, name);
}

static ct_status apply_json_member(ct_args *args, const ct__json_member *m)
{
    const ct__json *v = &m->value;
    int f = ct__args_find(m->key);
    const ct__arg_field *fd;
    ct__arg_value nv;
    if (f < 0) {
        int row = ct__fate_find(m->key);
        if (row >= 0 && ct__fate_is_parsed(row))
            return apply_json_fate(args, row, m);
        return keep_json_member(args, m);
    }
    if (f == CT_A_report_to && v->type == CT_JSON_ARRAY)
        return apply_report_to_list(args, f, v);
    fd = &ct__arg_fields[f];
    memset(&nv, 0, sizeof nv);
    if (v->type == CT_JSON_NULL) {
        if (!fd->optional)
            return ct__error(CT_ERR_FORMAT, "field '%s' cannot be null", m->key);
        ct__arg_value_free(&args->v[f]);
        return CT_OK;
    }
    nv.set = 1;
    switch (fd->type) {
    case CT_ARG_BOOL:
        if (v->type != CT_JSON_TRUE && v->type != CT_JSON_FALSE)
            goto wrong_type;
        nv.i = v->type == CT_JSON_TRUE;
        break;
    case CT_ARG_INT:
        if (v->type != CT_JSON_NUMBER)
            goto wrong_type;
        if (!ct__json_int64(v, &nv.i))
            return ct__error(CT_ERR_FORMAT, "field '%s': expected an integer of 64 bits, got %s",
                             m->key, v->str);
        break;
    case CT_ARG_FLOAT:
        if (v->type != CT_JSON_NUMBER)
            goto wrong_type;
        nv.f = v->num;
        break;
    case CT_ARG_STRING:
    case CT_ARG_CHOICE:
        if (v->type != CT_JSON_STRING)
            goto wrong_type;
        if (strlen(v->str) != v->len)
            return ct__error(CT_ERR_FORMAT, "field '%s': string contains a NUL byte", m->key);
        return set_from_text(args, f, v->str);
    }
    ct__arg_value_free(&args->v[f]);
    args->v[f] = nv;
    return CT_OK;

wrong_type:
    return ct__error(CT_ERR_FORMAT, "field '%s': expected %s, got %s", m->key,
                     fd->type == CT_ARG_BOOL    ? "true or false"
                     : fd->type == CT_ARG_INT   ? "an integer"
                     : fd->type == CT_ARG_FLOAT ? "a number"
                                                : "a string",
                     ct__json_type_name(v->type));
}

static ct_status apply_json(ct_args *args, const char *path)
{
    ct__json_doc *doc;
    const ct__json *root;
    ct_status st;
    size_t i;
    /* NaN and Infinity as Python's json.dumps writes them: TrainingArguments
     * (and ct_args_save_json) write `"eval_steps": Infinity` for an unused
     * --eval_steps inf, and the file must read back. */
    if ((st = ct__json_parse_file_ex(path, CT__JSON_ALLOW_NAN, &doc)) != CT_OK)
        return st;
    root = ct__json_root(doc);
    if (root->type != CT_JSON_OBJECT) {
        st = ct__error(CT_ERR_FORMAT, "%s: expected a JSON object of training arguments, got %s",
                       path, ct__json_type_name(root->type));
        ct__json_free(doc);
        return st;
    }
    for (i = 0; i < root->n; i++) {
        if ((st = apply_json_member(args, &root->members[i])) != CT_OK) {
            st = ct__error_prefix(st, "%s", path);
            break;
        }
    }
    ct__json_free(doc);
    return st;
}

ct_status ct_args_load_json(ct_args *args, const char *path)
{
    ct_args *work;
    ct_status st;
    CT__CHECK_ARG(args);
    CT__CHECK_ARG(path);
    if ((st = ct__args_clone(args, &work)) != CT_OK)
        return st;
    st = apply_json(work, path);
    if (st == CT_OK && (st = ct_args_validate(work)) != CT_OK)
        st = ct__error_prefix(st, "%s", path);
    if (st != CT_OK) {
        ct_args_free(work);
        return st;
    }
    ct__args_move(args, work);
    return CT_OK;
}

ct_status ct_args_save_json(const ct_args *args, const char *path)
{
    ct__strbuf sb = {0};
    ct_status st;
    size_t f;
    char *text;
    CT__CHECK_ARG(args);
    CT__CHECK_ARG(path);
    ct__sb_puts(&sb, "{");
    for (f = 0; f < CT_ARGS_NFIELDS; f++) {
        const ct__arg_value *v = &args->v[f];
        ct__sb_puts(&sb, f ? ",\n  " : "\n  ");
        ct__json_write_string(&sb, ct__arg_fields[f].name, strlen(ct__arg_fields[f].name));
        ct__sb_puts(&sb, ": ");
        if (f == CT_A_report_to && v->set) {
            /* a list, as Transformers writes it ([] for none); a trainer has
             * resolved None and all to ["tensorboard"] by then */
            if (!strcmp(v->s, "none"))
                ct__sb_puts(&sb, "[]");
            else
                ct__sb_printf(&sb, "[\n    \"%s\"\n  ]", v->s);
            continue;
        }
        if (!v->set) {
            ct__sb_puts(&sb, "null");
            continue;
        }
        switch (ct__arg_fields[f].type) {
        case CT_ARG_BOOL: ct__sb_puts(&sb, v->i ? "true" : "false"); break;
        case CT_ARG_INT: ct__sb_printf(&sb, "%lld", (long long)v->i); break;
        case CT_ARG_FLOAT: ct__json_write_double(&sb, v->f); break;
        default: ct__json_write_string(&sb, v->s, strlen(v->s)); break;
        }
    }
    ct__sb_puts(&sb, "\n}\n");
    /* Any failure above (out of memory, a string that is not UTF-8) is
     * sticky in sb: nothing is written then, never a file with a hole. */
    if ((st = ct__sb_finish(&sb, path, &text)) != CT_OK)
        return st;
    st = ct__write_file_atomic(path, text, strlen(text));
    free(text);
    return st;
}
