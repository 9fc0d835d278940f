/* Internal growable byte buffer for building text (JSON, help, messages). */
#ifndef CT_CORE_STRBUF_H
#define CT_CORE_STRBUF_H

#include <stddef.h>

#include "core/error.h"

/* Failure is sticky: the first failed append (out of memory) or JSON write
 * (a string that is not UTF-8) stores its status in `failed` and every
 * later append is a no-op, so text is built with unchecked appends and
 * checked once at the end — by ct__sb_take (NULL on failure), which must
 * not be ignored, or by testing `failed`. Nothing half-built is ever
 * handed out as text. */
typedef struct ct__strbuf {
    char *data; /* always NUL-terminated once anything was appended */
    size_t len, cap;
    int failed; /* 0, or the ct_status of the first failure */
} ct__strbuf;

/* Each returns CT_OK or the buffer's failure (CT_ERR_NOMEM when it is this
 * append that failed). */
int ct__sb_append(ct__strbuf *sb, const char *s, size_t len);
int ct__sb_puts(ct__strbuf *sb, const char *s);
int ct__sb_printf(ct__strbuf *sb, const char *fmt, ...) CT__PRINTF(2, 3);
/* Give the buffer's text to the caller (free() it); the buffer is reset.
 * NULL if any append failed (ct_last_error() then says why, unless a later
 * call failed in between: use ct__sb_finish to keep the status). */
char *ct__sb_take(ct__strbuf *sb) CT__MUST_USE;
/* ct__sb_take with the status: CT_OK and *text, or the buffer's failure
 * (prefixed with `what`) and *text NULL. */
ct_status ct__sb_finish(ct__strbuf *sb, const char *what, char **text) CT__MUST_USE;
void ct__sb_free(ct__strbuf *sb);

/* Shortest text that reads back as exactly `v`, in Python's repr() form:
 * "3e-05", "0.9", "500.0", "1e+16", "nan", "inf", "-inf". buf >= 32 bytes. */
void ct__format_double(char *buf, size_t size, double v);
/* The double nearest the shortest decimal that reads back as the float v
 * (0.1f gives 0.1), for writing float32 values as Python would show them. */
double ct__float_decimal(float v);
/* strtod in the "C" locale, whatever the application set LC_NUMERIC to. */
double ct__strtod(const char *s, char **end);

#endif
