/* Private to the ct_args implementation files: the handle's layout, the
 * field table rows and value helpers shared by args*.c. */
#ifndef CT_TRAIN_ARGS_PRIV_H
#define CT_TRAIN_ARGS_PRIV_H

#include "core/error.h"
#include "core/strbuf.h"
#include "train/args_internal.h"

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

struct ct_args {
    ct__arg_value v[CT_ARGS_NFIELDS];
    char **unparsed;
    size_t n_unparsed;
};

extern const ct__arg_field ct__arg_fields[CT_ARGS_NFIELDS];

/* Field index by name or alias, -1 if unknown. */
int ct__args_find(const char *name);
/* "true"/"yes"/"1"... -> 1 and *out; 0 if s is not a boolean word. */
int ct__parse_bool_text(const char *s, int *out);
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
