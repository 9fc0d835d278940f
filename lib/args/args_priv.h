/* Private to the ct_args implementation files: the handle's layout, the
 * field table rows and value helpers shared by args*.c. */
#ifndef CT_ARGS_ARGS_PRIV_H
#define CT_ARGS_ARGS_PRIV_H

#include "core/error.h"
#include "core/strbuf.h"
#include "core/text.h"
#include "args/args_fates.h"
#include "args/args_internal.h"

typedef struct ct__arg_field {
    const char *name;
    ct_arg_type type;
    int optional;
    const char *def;
    const char *choices;
    const char *help;
} ct__arg_field;

/* One field's value. Booleans live in i; CHOICE and STRING in s. */
typedef struct ct__arg_value {
    int set; /* 0: None */
    int64_t i;
    double f;
    char *s;
} ct__arg_value;

/* Rows of args_fates.h: names that are not fields, and their fate. */
enum ct__arg_group { CT__GROUP_TRAINING, CT__GROUP_MODEL, CT__GROUP_DATA, CT__GROUP_TOOL };

enum {
#define CT__FATE_ENUM(name, group, fate, type, def, reason) CT__FATE_##name,
    CT_ARGS_FATES(CT__FATE_ENUM)
#undef CT__FATE_ENUM
    CT_ARGS_NFATES
};

typedef struct ct__arg_fate_row {
    const char *name;
    enum ct__arg_group group;
    ct_arg_fate fate;
    ct_arg_type type;
    const char *def;
    const char *reason;
} ct__arg_fate_row;

extern const ct__arg_fate_row ct__arg_fates[CT_ARGS_NFATES];

/* Row of a name in args_fates.h, -1 if none. */
int ct__fate_find(const char *name);
/* 1 for a BOOL row: a bare --flag means true. */
int ct__fate_is_flag(int row);
/* 1 when ct_args_parse consumes the row's name (a TrainingArguments name
 * that is not implemented); run_qa.py's names are left to the program. */
int ct__fate_is_parsed(int row);
/* A value given to row's name: its default passes silently; otherwise a
 * NO_EFFECT name warns (once per handle), a REFUSED one fails. */
ct_status ct__fate_apply(ct_args *args, int row, const char *text);

struct ct_args {
    ct__arg_value v[CT_ARGS_NFIELDS];
    unsigned char warned[CT_ARGS_NFATES]; /* no-effect warning given for this row */
    char **unparsed;
    size_t n_unparsed;
};

extern const ct__arg_field ct__arg_fields[CT_ARGS_NFIELDS];

/* Field index by name or alias, -1 if unknown. */
int ct__args_find(const char *name);
/* The deprecated aliases of fields (args.c). */
size_t ct__args_alias_count(void);
const char *ct__args_alias(size_t i);
/* args_names.c: `key` (underscores) as a name of a command line: when it
 * is no name itself but begins exactly one (a field, an alias, a --no_
 * form, a known name, or one of `extra`), that one goes into full;
 * otherwise full is "". Beginning several is CT_ERR_INVALID_ARG naming
 * them, as argparse's allow_abbrev refuses it. */
ct_status ct__args_expand(const char *key, const char *const *extra, size_t n_extra,
                          char *full, size_t size);
/* Decimal text, blanks around it allowed, as int() and float() take it;
 * 0 when it is not one (errno ERANGE: an integer past 64 bits). */
int ct__parse_int_text(const char *s, int64_t *out);
/* CT_ERR_INVALID_ARG for argument `name`'s `text` that ct__parse_int_text
 * refused (read right after it: out of range, or no int). */
ct_status ct__int_text_error(const char *name, const char *text);
int ct__parse_double_text(const char *s, double *out);
ct_status ct__arg_value_parse(int f, const char *text, ct__arg_value *v);
void ct__arg_value_free(ct__arg_value *v);
/* snprintf-like: the value as command-line text. */
int ct__arg_value_format(int f, const ct__arg_value *v, char *buf, size_t size);

ct_status ct__args_clone(const ct_args *src, ct_args **out);
void ct__args_clear(ct_args *args);
/* Replace dst's contents with src's and free the src handle. */
void ct__args_move(ct_args *dst, ct_args *src);

#endif
