/* libcputrain public API: status codes, error text, version, logging.
 * Included through <cputrain/cputrain.h>; do not include directly. */
#ifndef CPUTRAIN_CORE_H
#define CPUTRAIN_CORE_H

#ifndef CT_INSIDE_CPUTRAIN_H
#error "include <cputrain/cputrain.h> instead of <cputrain/core.h>"
#endif

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The one place the version lives; the Makefile and pkg-config read it. */
#define CT_VERSION_MAJOR 0
#define CT_VERSION_MINOR 1
#define CT_VERSION_PATCH 0

#define CT_VERSION_NUMBER \
    (CT_VERSION_MAJOR * 10000 + CT_VERSION_MINOR * 100 + CT_VERSION_PATCH)
#define CT__STR2(x) #x
#define CT__STR(x) CT__STR2(x)
#define CT_VERSION_STRING \
    CT__STR(CT_VERSION_MAJOR) "." CT__STR(CT_VERSION_MINOR) "." CT__STR(CT_VERSION_PATCH)

#if defined(CT_STATIC_DEFINE)
#define CT_API
#elif defined(__GNUC__) || defined(__clang__)
#define CT_API __attribute__((visibility("default")))
#else
#define CT_API
#endif

/* Every status: symbol, pinned value, one-line description. Values are part
 * of the ABI and never change; a retired status keeps its slot. */
#define CT_STATUS_LIST(X)                                                     \
    X(CT_OK, 0, "success")                                                    \
    X(CT_ERR_INVALID_ARG, 1, "invalid argument")                              \
    X(CT_ERR_NOMEM, 2, "out of memory")                                       \
    X(CT_ERR_IO, 3, "input/output error")                                     \
    X(CT_ERR_FORMAT, 4, "malformed file or data")                             \
    X(CT_ERR_UNSUPPORTED, 5, "unsupported feature or value")                  \
    X(CT_ERR_STATE, 6, "call not valid in the current state")                 \
    X(CT_ERR_NOT_FOUND, 7, "no such name, file or item")                      \
    X(CT_ERR_DIST, 8, "distributed communication failed")                     \
    X(CT_ERR_NUMERIC, 9, "non-finite value")                                  \
    X(CT_ERR_CANCELLED, 10, "cancelled (by a callback or ct_trainer_cancel)") \
    X(CT_ERR_INTERNAL, 11, "internal error")                                  \
    X(CT_ERR_BUSY, 12, "resource in use by another process")                  \
    X(CT_ERR_ACCESS, 13, "access denied (authentication or permission)")

typedef enum ct_status {
#define CT__STATUS_ENUM(sym, val, desc) sym = val,
    CT_STATUS_LIST(CT__STATUS_ENUM)
#undef CT__STATUS_ENUM
    CT__STATUS_FORCE_INT = 0x7fffffff /* keeps the enum int-sized; not a status */
} ct_status;

/* "CT_ERR_FORMAT" for CT_ERR_FORMAT; "CT_UNKNOWN_STATUS" for values not in
 * the list. Never NULL. */
CT_API const char *ct_status_name(ct_status status);
/* One-line English description of a status; never NULL. */
CT_API const char *ct_status_description(ct_status status);

/* Text describing the most recent failure on the calling thread: what was
 * wrong and where (file, field, tensor, rank). Like errno it is only
 * meaningful right after a call returned a status other than CT_OK.
 * Never NULL; the pointer stays valid until the thread's next failing call. */
CT_API const char *ct_last_error(void);

/* Version of the library actually loaded, as CT_VERSION_NUMBER / _STRING.
 * Bindings compare these with the version they were written for. */
CT_API unsigned ct_version_number(void);
CT_API const char *ct_version_string(void);

/* The kernel level this process runs: "generic", "avx2", "avx512",
 * "avx512bf16" or "amx" — the best the CPU and OS support, or what CPUTRAIN_ISA asked for
 * when that is supported. Never NULL. */
CT_API const char *ct_kernel_isa(void);

/* The profile: where the library's time goes, by kernel family (each GEMM
 * class, attention forward and backward, LayerNorm, activations, dropout,
 * bias, bf16 rounding, embeddings, losses, the optimizer, the weights'
 * repacking, the gradient allreduce's wait after backward), summed over the whole process
 * while enabled (off by default; its cost when off is one load per
 * operation). Families are numbered 0 .. ct_profile_count() - 1, in a fixed
 * order; a family's time is wall time on the calling thread (a pass that
 * fuses several, such as AdamW with the repack or a chain of element-wise
 * steps, shares its wall time among them as its threads' time went), its
 * FLOPs the useful matrix work (2 per multiply-add) and its bytes the
 * memory an element-wise pass reads and writes. */
CT_API void ct_profile_set_enabled(int enabled);
/* Zero every family's sums. */
CT_API void ct_profile_reset(void);
CT_API size_t ct_profile_count(void);
/* "gemm_forward", "attention_backward", "optimizer", ...; NULL past the last. */
CT_API const char *ct_profile_name(size_t family);
/* The sums of `family` (any output may be NULL); CT_ERR_INVALID_ARG for a
 * family past the last. */
CT_API ct_status ct_profile_get(size_t family, double *seconds, int64_t *calls,
                                double *flops, double *bytes);

/* Logging. The library is silent unless the application installs a
 * callback; messages at or below the set level are delivered. */
typedef enum ct_log_level {
    CT_LOG_OFF = 0,
    CT_LOG_ERROR = 1,
    CT_LOG_WARNING = 2,
    CT_LOG_INFO = 3,
    CT_LOG_DEBUG = 4
} ct_log_level;

/* Called from any thread of the library, one message at a time: the library
 * holds a (recursive) lock during the call, so a callback may log or replace
 * itself but should return quickly. `message` has no trailing newline. */
typedef void (*ct_log_fn)(ct_log_level level, const char *message, void *user);

/* Install (or with NULL remove) the process-wide log callback. */
CT_API void ct_log_set_callback(ct_log_fn fn, void *user);
/* The callback and user pointer now installed (NULL, NULL if none), so a
 * binding or plugin can chain to it or restore it. Either may be NULL. */
CT_API void ct_log_get_callback(ct_log_fn *fn, void **user);
/* Most verbose level delivered; default CT_LOG_WARNING once a callback is set. */
CT_API void ct_log_set_level(ct_log_level level);
CT_API ct_log_level ct_log_get_level(void);
/* A ready-made callback writing "cputrain: warning: message" lines to stderr,
 * for programs that want the library's messages there. */
CT_API void ct_log_to_stderr(ct_log_level level, const char *message, void *user);
/* "error", "warning", "info", "debug" or "off"; never NULL. */
CT_API const char *ct_log_level_name(ct_log_level level);

#ifdef __cplusplus
}
#endif
#endif /* CPUTRAIN_CORE_H */
