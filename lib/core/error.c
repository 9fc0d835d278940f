/* Thread-local error text, status names and the log callback. */
#include "core/error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ERROR_CAP 1024

static __thread char last_error[ERROR_CAP];

ct_status ct__error(ct_status status, const char *fmt, ...)
{
    /* Through a copy: an argument may be ct_last_error() itself. */
    char text[ERROR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    memcpy(last_error, text, sizeof text);
    return status;
}

ct_status ct__error_prefix(ct_status status, const char *fmt, ...)
{
    char prefix[ERROR_CAP], old[ERROR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, last_error, sizeof old);
    /* Over-long context is cut, not an error: the message stays readable. */
    if (snprintf(last_error, sizeof last_error, "%s: %s", prefix, old) >= ERROR_CAP)
        memcpy(last_error + ERROR_CAP - 4, "...", 4);
    return status;
}

const char *ct_last_error(void)
{
    return last_error;
}

const char *ct_status_name(ct_status status)
{
    switch (status) {
#define CT__STATUS_NAME(sym, val, desc) case sym: return #sym;
    CT_STATUS_LIST(CT__STATUS_NAME)
#undef CT__STATUS_NAME
    default: return "CT_UNKNOWN_STATUS";
    }
}

const char *ct_status_description(ct_status status)
{
    switch (status) {
#define CT__STATUS_DESC(sym, val, desc) case sym: return desc;
    CT_STATUS_LIST(CT__STATUS_DESC)
#undef CT__STATUS_DESC
    default: return "unknown status";
    }
}

unsigned ct_version_number(void)
{
    return CT_VERSION_NUMBER;
}

const char *ct_version_string(void)
{
    return CT_VERSION_STRING;
}

/* ---- logging ------------------------------------------------------------ */

/* Recursive, so a callback that logs or replaces itself cannot deadlock. */
static pthread_mutex_t log_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static ct_log_fn log_fn;
static void *log_user;
static ct_log_level log_level = CT_LOG_WARNING;

void ct_log_set_callback(ct_log_fn fn, void *user)
{
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    pthread_mutex_unlock(&log_lock);
}

void ct_log_get_callback(ct_log_fn *fn, void **user)
{
    pthread_mutex_lock(&log_lock);
    if (fn)
        *fn = log_fn;
    if (user)
        *user = log_user;
    pthread_mutex_unlock(&log_lock);
}

void ct_log_set_level(ct_log_level level)
{
    if (level < CT_LOG_OFF)
        level = CT_LOG_OFF;
    if (level > CT_LOG_DEBUG)
        level = CT_LOG_DEBUG;
    __atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
}

ct_log_level ct_log_get_level(void)
{
    return __atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

const char *ct_log_level_name(ct_log_level level)
{
    switch (level) {
    case CT_LOG_ERROR: return "error";
    case CT_LOG_WARNING: return "warning";
    case CT_LOG_INFO: return "info";
    case CT_LOG_DEBUG: return "debug";
    default: return "off";
    }
}

void ct_log_to_stderr(ct_log_level level, const char *message, void *user)
{
    (void)user;
    fprintf(stderr, "cputrain: %s: %s\n", ct_log_level_name(level), message);
}

int ct__log_enabled(ct_log_level level)
{
    return level != CT_LOG_OFF && level <= ct_log_get_level() &&
           __atomic_load_n(&log_fn, __ATOMIC_RELAXED) != NULL;
}

void ct__log(ct_log_level level, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    if (!ct__log_enabled(level))
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_lock);
    if (log_fn)
        log_fn(level, msg, log_user);
    pthread_mutex_unlock(&log_lock);
}
