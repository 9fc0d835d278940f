/* cputrain-plot's JSON reader: a strict RFC 8259 DOM parser with UTF-8
 * validation, plus Python's NaN / Infinity / -Infinity (json.dumps writes
 * them, so a trainer_state.json with a diverged loss holds them). Its own
 * because the tools use only libcputrain's public API, which has no JSON
 * reader. The input is treated as hostile: every byte is checked, nesting
 * is capped, and a failure leaves a message with line and column. */
#ifndef CPUTRAIN_PLOT_JSON_H
#define CPUTRAIN_PLOT_JSON_H

#include <stddef.h>

typedef enum pj_type { PJ_NULL, PJ_BOOL, PJ_NUMBER, PJ_STRING, PJ_ARRAY, PJ_OBJECT } pj_type;

typedef struct pj_value pj_value;
struct pj_value {
    pj_type type;
    int boolean;
    double number;  /* NUMBER (non-finite for NaN, Infinity, or 1e400) */
    char *string;   /* STRING: decoded UTF-8, NUL-terminated (a \u0000 in
                     * the text becomes U+FFFD, so no key hides a NUL) */
    size_t count;   /* ARRAY items / OBJECT members */
    pj_value *items; /* ARRAY: items[count]; OBJECT: member values */
    char **keys;    /* OBJECT: keys[count], decoded UTF-8, in document order */
};

/* Nesting deeper than this is refused (the parser recurses); the same cap
 * as the library's own reader. */
#define PJ_MAX_DEPTH 512

/* Parse text[0..len) into *out. Returns 0, or -1 with "line L, column C:
 * problem" written to err[errlen]. On failure *out is left empty. */
int pj_parse(const char *text, size_t len, pj_value *out, char *err, size_t errlen);
void pj_free(pj_value *v);

/* An OBJECT's member by key (the last one when repeated, as Python's json
 * does), or NULL. */
const pj_value *pj_get(const pj_value *obj, const char *key);
/* "null", "a boolean", "a number", ... for error messages. */
const char *pj_type_name(pj_type type);

#endif
