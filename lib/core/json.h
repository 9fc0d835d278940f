/* Internal JSON: a strict DOM parser (RFC 8259, UTF-8 validated) into one
 * arena, and a small writer on top of ct__strbuf. */
#ifndef CT_CORE_JSON_H
#define CT_CORE_JSON_H

#include "core/strbuf.h"
#include "core/utf8.h"

#include <stddef.h>
#include <stdint.h>

typedef enum ct__json_type {
    CT_JSON_NULL,
    CT_JSON_FALSE,
    CT_JSON_TRUE,
    CT_JSON_NUMBER,
    CT_JSON_STRING,
    CT_JSON_ARRAY,
    CT_JSON_OBJECT
} ct__json_type;

typedef struct ct__json ct__json;
typedef struct ct__json_member ct__json_member;

/* One value: 40 bytes, since a document of small values ("[1,1,1,...]")
 * holds one per two bytes of text. The fields of a type share their
 * place with another type's, so read only those of v->type (a string's
 * num is 0; NULL, TRUE and FALSE have none). */
struct ct__json {
    ct__json_type type;
    /* 1-based position of the value in the text, for error messages. */
    unsigned line, col;
    union {
        /* STRING: decoded UTF-8, NUL-terminated (len excludes the NUL; the
         * string may itself contain NUL bytes from \u0000), num 0.
         * NUMBER: the literal as written (for exact integers) and its value. */
        struct {
            const char *str;
            size_t len;
            double num;
        };
        /* ARRAY: items[n]; OBJECT: members[n], in document order (NULL
         * when n is 0). */
        struct {
            size_t n;
            union {
                ct__json *items;
                ct__json_member *members;
            };
        };
    };
};

struct ct__json_member {
    const char *key; /* decoded, NUL-terminated */
    size_t key_len;
    ct__json value;
};

typedef struct ct__json_doc ct__json_doc;

/* Parse text[0..len). `what` names the source in error text (a path, or
 * "training_args.json"). On failure returns CT_ERR_FORMAT (or CT_ERR_NOMEM)
 * with "<what>: line L column C: <problem>" set as the error. Nesting deeper
 * than 512 levels is refused. The text is read twice, to size the tree and
 * to build it in one allocation: about sizeof(ct__json) per value (a
 * member: sizeof(ct__json_member)) plus each string and number literal
 * with its NUL, and 4 bytes per array or object while parsing. */
int ct__json_parse(const char *text, size_t len, const char *what, ct__json_doc **out);
/* Read a whole file and parse it; CT_ERR_IO names the path when unreadable. */
int ct__json_parse_file(const char *path, ct__json_doc **out);
/* With flags: CT__JSON_ALLOW_NAN also takes Python's NaN, Infinity and
 * -Infinity as numbers (json.dumps writes them; trainer_state.json can hold
 * a NaN loss). */
enum { CT__JSON_ALLOW_NAN = 1 };
int ct__json_parse_ex(const char *text, size_t len, const char *what, int flags,
                      ct__json_doc **out);
int ct__json_parse_file_ex(const char *path, int flags, ct__json_doc **out);
/* ct__json_parse_ex for text from the network, whose tree may be held to
 * less than the worst the text allows (20 bytes a byte, "[1,1,...]"):
 * more than max_values values in all (0: no bound) is refused with
 * CT_ERR_FORMAT at the first value past it, before the tree is made. */
int ct__json_parse_limited(const char *text, size_t len, const char *what, int flags,
                           size_t max_values, ct__json_doc **out);
const ct__json *ct__json_root(const ct__json_doc *doc);
void ct__json_free(ct__json_doc *doc);

/* Member of an object by key (last one wins if repeated), NULL if absent or
 * if obj is not an object. */
const ct__json *ct__json_get(const ct__json *obj, const char *key);
/* Name of the first key that appears twice in obj, or NULL. */
const char *ct__json_duplicate_key(const ct__json *obj);
/* A NUMBER holding an integer written without fraction or exponent that fits
 * int64: 1 and *out set; else 0. Likewise for uint64. */
int ct__json_int64(const ct__json *v, int64_t *out);
int ct__json_uint64(const ct__json *v, uint64_t *out);
/* "null", "boolean", "number", "string", "array", "object". */
const char *ct__json_type_name(ct__json_type type);
/* The same with its article, for "found ..." in error text: "null",
 * "a boolean", "a number", "a string", "an array", "an object". */
const char *ct__json_type_phrase(ct__json_type type);

/* Writer helpers: append a JSON string literal (quoted, escaped as Python's
 * json.dumps with ensure_ascii=False would: ", \\, \n, \r, \t, \b, \f, other
 * controls as \u00XX) and a number in Python's repr form (3e-05, 0.9, 500.0;
 * NaN / Infinity as Python writes them). */
int ct__json_write_string(ct__strbuf *sb, const char *s, size_t len);
int ct__json_write_double(ct__strbuf *sb, double v);
/* Any parsed value, laid out as json.dumps(indent=2) would at nesting level
 * `depth` (the caller has written the key and ": "). Numbers keep their
 * original literal text. */
int ct__json_write_value(ct__strbuf *sb, const ct__json *v, int depth);

#endif
