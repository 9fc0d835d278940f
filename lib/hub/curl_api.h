/* Internal: libcurl, loaded when the Hub is first used rather than linked.
 * A program that never downloads never maps libcurl and the TLS, LDAP,
 * Kerberos and PKCS#11 libraries it brings, nor runs their constructors
 * (p11-kit's sets up a locale at load time). */
#ifndef CT_HUB_CURL_API_H
#define CT_HUB_CURL_API_H

#define CURL_DISABLE_TYPECHECK /* the calls go through the pointers below */
/* CURLOPT_PROTOCOLS is deprecated in favour of its _STR form (7.85), which
 * older libcurls lack: both are used, so the warning is not wanted */
#define CURL_DISABLE_DEPRECATION
#include <curl/curl.h>

#include "core/error.h"

typedef struct ct__curl_api {
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
    CURLcode (*easy_perform)(CURL *curl);
    void (*easy_cleanup)(CURL *curl);
    const char *(*easy_strerror)(CURLcode code);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *text);
    void (*slist_free_all)(struct curl_slist *list);
    CURLU *(*url)(void);
    CURLUcode (*url_set)(CURLU *url, CURLUPart part, const char *content, unsigned int flags);
    CURLUcode (*url_get)(const CURLU *url, CURLUPart part, char **content, unsigned int flags);
    void (*url_cleanup)(CURLU *url);
    void (*free)(void *p);
    unsigned version; /* the loaded libcurl's, as LIBCURL_VERSION_NUM: 0x075301 is 7.83.1 */
} ct__curl_api;

/* libcurl.so.4, loaded and initialised once (thread-safe); NULL with
 * CT_ERR_UNSUPPORTED saying what to install when it is not there. */
const ct__curl_api *ct__curl(void);

#endif
