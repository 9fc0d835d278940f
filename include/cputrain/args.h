/* libcputrain public API: training arguments (ct_args), with Hugging Face
 * TrainingArguments' names, defaults and command-line conventions.
 * Included through <cputrain/cputrain.h>; do not include directly. */
#ifndef CPUTRAIN_ARGS_H
#define CPUTRAIN_ARGS_H

#ifndef CT_INSIDE_CPUTRAIN_H
#error "include <cputrain/cputrain.h> instead of <cputrain/args.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_args ct_args;

typedef enum ct_arg_type {
    CT_ARG_BOOL = 0,
    CT_ARG_INT = 1,    /* int64 */
    CT_ARG_FLOAT = 2,  /* double */
    CT_ARG_STRING = 3, /* free text, e.g. a path */
    CT_ARG_CHOICE = 4  /* one of a fixed list of strings */
} ct_arg_type;

/* A handle holding every field at its Hugging Face default. */
CT_API ct_status ct_args_create(ct_args **out);
CT_API ct_status ct_args_copy(const ct_args *src, ct_args **out);
CT_API void ct_args_free(ct_args *args);

/* ---- The field table (the same for every handle) ---------------------- */

CT_API size_t ct_args_field_count(void);
/* Index of a field by name (deprecated aliases such as no_cuda resolve to
 * their field); CT_ERR_NOT_FOUND for an unknown name. */
CT_API ct_status ct_args_field_index(const char *name, size_t *index);
/* Properties of field `index`; NULL / -1 when index is out of range. */
CT_API const char *ct_args_field_name(size_t index);
CT_API int ct_args_field_type(size_t index);          /* a ct_arg_type */
CT_API int ct_args_field_optional(size_t index);      /* 1: may be None */
CT_API const char *ct_args_field_default(size_t index); /* "None" if unset */
CT_API const char *ct_args_field_help(size_t index);
/* "linear|cosine|..." for CT_ARG_CHOICE fields, "" otherwise. */
CT_API const char *ct_args_field_choices(size_t index);

/* ---- Every argument a Transformers user may pass, and its fate --------- */
/* One table covers every TrainingArguments field of Transformers 4.x and
 * every argument of run_qa.py (ModelArguments, DataTrainingArguments): the
 * fields above (all CT_ARG_IMPLEMENTED) come first, then every other name.
 * A NO_EFFECT name given a value other than its default is accepted by
 * ct_args_set / ct_args_parse / ct_args_load_json with one CT_LOG_WARNING
 * (once per handle and name) saying why it has no effect; a REFUSED one fails
 * with CT_ERR_UNSUPPORTED and a message naming it, the reason and what to do
 * instead. Their default values are accepted silently. run_qa.py's own
 * arguments are left to the program (ct_args_parse keeps them unparsed,
 * ct_args_set refuses the IMPLEMENTED ones with CT_ERR_NOT_FOUND). */
typedef enum ct_arg_fate {
    CT_ARG_IMPLEMENTED = 0,
    CT_ARG_NO_EFFECT = 1, /* accepted, with a warning giving the reason */
    CT_ARG_REFUSED = 2    /* an error giving the reason and what to do */
} ct_arg_fate;

CT_API size_t ct_args_known_count(void);
/* Index of a name in that table (deprecated aliases resolve to their field);
 * CT_ERR_NOT_FOUND for a name Transformers and run_qa.py do not have. */
CT_API ct_status ct_args_known_index(const char *name, size_t *index);
/* Properties of entry `index`; NULL / -1 when index is out of range. */
CT_API const char *ct_args_known_name(size_t index);
/* "TrainingArguments", "ModelArguments", "DataTrainingArguments", or
 * "cputrain-qa" for the program's own. */
CT_API const char *ct_args_known_group(size_t index);
CT_API int ct_args_known_fate(size_t index);         /* a ct_arg_fate */
CT_API int ct_args_known_type(size_t index);         /* a ct_arg_type */
CT_API const char *ct_args_known_default(size_t index); /* "a|b": either spelling */
/* Why it has no effect or is refused, and what to do; "" if implemented. */
CT_API const char *ct_args_known_reason(size_t index);

/* ---- Values as strings, exactly as on a command line ------------------ */

/* Parse `value` as the field's type ("3e-5", "true", "cosine", "None" for an
 * optional field) and store it. Nothing changes on failure. */
CT_API ct_status ct_args_set(ct_args *args, const char *name, const char *value);
/* The value as a string ("3e-05", "True", "None", "cosine"), written with a
 * terminating NUL into buf. *length (if not NULL) receives the string's
 * length. buf NULL with size 0 only asks for the length (CT_OK); a buffer
 * with size <= length is CT_ERR_INVALID_ARG and nothing is written. */
CT_API ct_status ct_args_get(const ct_args *args, const char *name, char *buf,
                             size_t size, size_t *length);

/* ---- Typed access ------------------------------------------------------ */
/* A typed call on a field of another type is CT_ERR_INVALID_ARG; getting an
 * optional bool, int or float field that is None is CT_ERR_STATE (check
 * ct_args_is_set); ct_args_get_string gives NULL for None. */

CT_API ct_status ct_args_is_set(const ct_args *args, const char *name, int *is_set);
/* Make an optional field None again. */
CT_API ct_status ct_args_unset(ct_args *args, const char *name);
CT_API ct_status ct_args_set_bool(ct_args *args, const char *name, int value);
CT_API ct_status ct_args_get_bool(const ct_args *args, const char *name, int *out);
CT_API ct_status ct_args_set_int(ct_args *args, const char *name, int64_t value);
CT_API ct_status ct_args_get_int(const ct_args *args, const char *name, int64_t *out);
CT_API ct_status ct_args_set_float(ct_args *args, const char *name, double value);
CT_API ct_status ct_args_get_float(const ct_args *args, const char *name, double *out);
/* For CT_ARG_STRING and CT_ARG_CHOICE fields; NULL makes an optional field
 * None (the text "None" is taken literally, as it may be a path). */
CT_API ct_status ct_args_set_string(ct_args *args, const char *name, const char *value);
/* *out points into the handle, valid until the field changes or the handle
 * is freed; it is NULL (with CT_OK) when the field is None. */
CT_API ct_status ct_args_get_string(const ct_args *args, const char *name,
                                    const char **out);

/* ---- Command line, JSON, validation ------------------------------------ */

/* Parse arguments the way HfArgumentParser does: `--name value`,
 * `--name=value`, `--name-with-dashes`, a bare `--flag` for a boolean (and
 * `--no_flag` for one whose default is true), `--flag true|false|yes|no|1|0`,
 * or a single argument ending in ".json" naming a file of {"name": value}.
 * argv holds the arguments only (no program name). Arguments that are not
 * TrainingArguments fields (including --help) are not errors: they are kept,
 * in order, for the caller (ct_args_unparsed). On success the result is
 * validated (ct_args_validate); on any failure the handle is left exactly as
 * it was. */
CT_API ct_status ct_args_parse(ct_args *args, int argc, const char *const *argv);
/* ct_args_parse knowing the caller's own argument names too (a script's,
 * beside TrainingArguments), as HfArgumentParser knows every dataclass it
 * fills: a name that is no name itself but begins exactly one of all of
 * them — TrainingArguments' fields, their --no_ forms and old aliases, the
 * known names, `own_names` — counts as that one (argparse's allow_abbrev:
 * --learning_rat 3e-5); one of the caller's comes back among the unparsed
 * written out in full. A name that begins several is CT_ERR_INVALID_ARG
 * naming them. ct_args_parse is this with no own names. */
CT_API ct_status ct_args_parse_with_names(ct_args *args, int argc, const char *const *argv,
                                          const char *const *own_names, size_t n_names);
/* The name among those same ones (with `own_names`) nearest to `name` by
 * edit distance, for "did you mean --...?": NULL when none is within a
 * third of its length (at least 2 edits). Valid until the next call on
 * this thread. */
CT_API const char *ct_args_closest_name(const char *name, const char *const *own_names,
                                        size_t n_names);
/* What the last successful ct_args_parse / ct_args_load_json did not consume.
 * Keys from a JSON file come back as "--key" followed by the value. */
CT_API size_t ct_args_unparsed_count(const ct_args *args);
CT_API const char *ct_args_unparsed(const ct_args *args, size_t index);

/* The rules TrainingArguments enforces (mixed precision, ranges, steps,
 * output_dir for training ...). The error text names the field and rule. */
CT_API ct_status ct_args_validate(const ct_args *args);

/* `--help` text for every field: name, metavar, help and default, one table,
 * as argparse prints it. Static storage; never NULL. */
CT_API const char *ct_args_help(void);

/* training_args.json: every field by name, indented as json.dumps(indent=2). */
CT_API ct_status ct_args_save_json(const ct_args *args, const char *path);
/* Apply a JSON object of fields on top of the current values; unknown keys
 * are kept (ct_args_unparsed). Validated; nothing changes on failure. */
CT_API ct_status ct_args_load_json(ct_args *args, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* CPUTRAIN_ARGS_H */
