/* Internal growable byte buffer for building text (JSON, help, messages). */
#ifndef CT_CORE_STRBUF_H
#define CT_CORE_STRBUF_H

#include <stddef.h>

#include "core/error.h"

typedef struct ct__strbuf {
    char *data; /* always NUL-terminated once anything was appended */
    size_t len, cap;
    int failed; /* an allocation failed; later appends are no-ops */
} ct__strbuf;

/* Each returns CT_OK or CT_ERR_NOMEM (and then marks the buffer failed). */
int ct__sb_append(ct__strbuf *sb, const char *s, size_t len);
int ct__sb_puts(ct__strbuf *sb, const char *s);
int ct__sb_printf(ct__strbuf *sb, const char *fmt, ...) CT__PRINTF(2, 3);
/* Give the buffer's text to the caller (free() it); the buffer is reset. */
char *ct__sb_take(ct__strbuf *sb);
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
