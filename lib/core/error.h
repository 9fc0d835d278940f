/* Internal error and log helpers: set the calling thread's error text,
 * deliver log messages to the application's callback. */
#ifndef CT_CORE_ERROR_H
#define CT_CORE_ERROR_H

#include <cputrain/cputrain.h>

#if defined(__GNUC__)
#define CT__PRINTF(f, a) __attribute__((format(printf, f, a)))
/* On every internal function whose failure would otherwise go unnoticed
 * (file writers, the end of a text being built): ignoring the result is a
 * warning, and -Werror makes it a build failure. */
#define CT__MUST_USE __attribute__((warn_unused_result))
#else
#define CT__PRINTF(f, a)
#define CT__MUST_USE
#endif

/* Format the thread's ct_last_error() text and return `status`, so a failing
 * path reads `return ct__error(CT_ERR_IO, "%s: %s", path, strerror(errno));`. */
ct_status ct__error(ct_status status, const char *fmt, ...) CT__PRINTF(2, 3);
/* Prefix the current error text with "<prefix>: " and return `status`, for
 * callers that add context (a file name) to a lower layer's message. */
ct_status ct__error_prefix(ct_status status, const char *fmt, ...) CT__PRINTF(2, 3);

/* Deliver a message if a callback is set and `level` is enabled. */
void ct__log(ct_log_level level, const char *fmt, ...) CT__PRINTF(2, 3);
int ct__log_enabled(ct_log_level level);

/* Checks for the entry of a public function: a NULL pointer argument is
 * CT_ERR_INVALID_ARG naming the function and parameter. */
#define CT__CHECK_ARG(p)                                                       \
    do {                                                                       \
        if ((p) == NULL)                                                       \
            return ct__error(CT_ERR_INVALID_ARG, "%s: argument '%s' is NULL",  \
                             __func__, #p);                                    \
    } while (0)

#endif
