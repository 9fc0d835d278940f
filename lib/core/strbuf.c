/* Growable text buffer and Python-style float formatting. */
#include "core/strbuf.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sb_reserve(ct__strbuf *sb, size_t extra)
{
    size_t need, cap;
    char *p;
    if (sb->failed)
        return sb->failed;
    need = sb->len + extra + 1;
    if (need <= sb->cap)
        return CT_OK;
    cap = sb->cap ? sb->cap : 64;
    while (cap < need)
        cap *= 2;
    p = realloc(sb->data, cap);
    if (!p) {
        sb->failed = CT_ERR_NOMEM;
        return ct__error(CT_ERR_NOMEM, "out of memory building a %zu-byte text", need);
    }
    sb->data = p;
    sb->cap = cap;
    return CT_OK;
}

int ct__sb_append(ct__strbuf *sb, const char *s, size_t len)
{
    if (sb_reserve(sb, len) != CT_OK)
        return sb->failed;
    memcpy(sb->data + sb->len, s, len);
    sb->len += len;
    sb->data[sb->len] = '\0';
    return CT_OK;
}

int ct__sb_puts(ct__strbuf *sb, const char *s)
{
    return ct__sb_append(sb, s, strlen(s));
}

int ct__sb_printf(ct__strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (sb->failed)
        return sb->failed;
    if (n < 0) {
        sb->failed = CT_ERR_INTERNAL;
        return ct__error(CT_ERR_INTERNAL, "bad format string '%s'", fmt);
    }
    if (sb_reserve(sb, (size_t)n) != CT_OK)
        return sb->failed;
    va_start(ap, fmt);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb->len += (size_t)n;
    return CT_OK;
}

char *ct__sb_take(ct__strbuf *sb)
{
    char *p = sb->failed ? NULL : sb->data;
    if (sb->failed)
        free(sb->data);
    else if (!p)
        p = calloc(1, 1);
    memset(sb, 0, sizeof *sb);
    return p;
}

ct_status ct__sb_finish(ct__strbuf *sb, const char *what, char **text)
{
    ct_status failed = (ct_status)sb->failed;
    *text = ct__sb_take(sb);
    if (failed)
        return ct__error_prefix(failed, "%s", what);
    return *text ? CT_OK : ct__error(CT_ERR_NOMEM, "%s: out of memory", what);
}

void ct__sb_free(ct__strbuf *sb)
{
    free(sb->data);
    memset(sb, 0, sizeof *sb);
}

/* Number text must not follow the application's LC_NUMERIC ("3,0e-05"):
 * conversions switch the calling thread to the C locale for their duration. */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void)
{
    c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

static locale_t enter_c_locale(void)
{
    pthread_once(&c_locale_once, make_c_locale);
    return c_locale ? uselocale(c_locale) : (locale_t)0;
}

static void leave_c_locale(locale_t old)
{
    if (old)
        uselocale(old);
}

double ct__strtod(const char *s, char **end)
{
    locale_t old = enter_c_locale();
    double v = strtod(s, end);
    leave_c_locale(old);
    return v;
}

double ct__float_decimal(float v)
{
    char buf[32];
    int p;
    locale_t old = enter_c_locale();
    double d = v;
    for (p = 1; p <= 9 && isfinite(v); p++) {
        snprintf(buf, sizeof buf, "%.*g", p, (double)v);
        if ((float)strtod(buf, NULL) == v) {
            d = strtod(buf, NULL);
            break;
        }
    }
    leave_c_locale(old);
    return d;
}

static void format_double_c(char *buf, size_t size, double v);

void ct__format_double(char *buf, size_t size, double v)
{
    locale_t old = enter_c_locale();
    format_double_c(buf, size, v);
    leave_c_locale(old);
}

static void format_double_c(char *buf, size_t size, double v)
{
    char digits[40], mant[40];
    int prec, exp10, ndig, i;
    char *e, *p;

    if (isnan(v)) {
        snprintf(buf, size, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, v < 0 ? "-inf" : "inf");
        return;
    }
    /* Shortest %.Ne that round-trips gives the digits and the exponent. */
    for (prec = 0; prec < 17; prec++) {
        snprintf(digits, sizeof digits, "%.*e", prec, v);
        if (strtod(digits, NULL) == v)
            break;
    }
    snprintf(digits, sizeof digits, "%.*e", prec, v);
    e = strchr(digits, 'e');
    exp10 = atoi(e + 1);
    *e = '\0';
    /* mant: the significant digits without sign or point. */
    ndig = 0;
    for (p = digits; *p; p++)
        if (*p >= '0' && *p <= '9')
            mant[ndig++] = *p;
    mant[ndig] = '\0';

    p = buf;
    if (v < 0 || (v == 0 && signbit(v)))
        *p++ = '-';
    /* Python's repr: fixed notation for 1e-4 <= |v| < 1e16, else exponent. */
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            *p++ = '0';
            *p++ = '.';
            for (i = 0; i < -exp10 - 1; i++)
                *p++ = '0';
            memcpy(p, mant, (size_t)ndig);
            p += ndig;
        } else {
            for (i = 0; i <= exp10; i++)
                *p++ = i < ndig ? mant[i] : '0';
            *p++ = '.';
            if (ndig > exp10 + 1) {
                memcpy(p, mant + exp10 + 1, (size_t)(ndig - exp10 - 1));
                p += ndig - exp10 - 1;
            } else {
                *p++ = '0';
            }
        }
        *p = '\0';
    } else {
        *p++ = mant[0];
        if (ndig > 1) {
            *p++ = '.';
            memcpy(p, mant + 1, (size_t)(ndig - 1));
            p += ndig - 1;
        }
        snprintf(p, size - (size_t)(p - buf), "e%c%02d", exp10 < 0 ? '-' : '+',
                 exp10 < 0 ? -exp10 : exp10);
    }
}
