/* Typed, unchecked access to ct_args fields for code inside the library,
 * indexed by the CT_A_<name> enum generated from args_fields.h. */
#ifndef CT_ARGS_ARGS_INTERNAL_H
#define CT_ARGS_ARGS_INTERNAL_H

#include <cputrain/cputrain.h>

#include "args/args_fields.h"

enum ct__args_field {
#define CT__FIELD_ENUM(id, type, opt, def, choices, help) CT_A_##id,
    CT_ARGS_FIELDS(CT__FIELD_ENUM)
#undef CT__FIELD_ENUM
    CT_ARGS_NFIELDS
};

int ct__args_is_set(const ct_args *args, enum ct__args_field f);
int ct__args_bool(const ct_args *args, enum ct__args_field f);
int64_t ct__args_int(const ct_args *args, enum ct__args_field f);
double ct__args_float(const ct_args *args, enum ct__args_field f);
/* NULL when the field is None. */
const char *ct__args_string(const ct_args *args, enum ct__args_field f);

#endif
