/* libcurl loaded on first use (curl_api.h says why), every function this
 * library calls looked up at once so that a libcurl too old for one of
 * them is refused here, by name, and never half-used. */
#include "hub/curl_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static ct__curl_api api;
static int loaded;
static char why[512];

/* dlsym's object pointer as a function pointer: the one conversion POSIX
 * promises, done through memcpy so that no compiler warns about it. */
#define LOOK_UP(field, symbol)                                                  \
    do {                                                                        \
        void *p = dlsym(lib, symbol);                                           \
        if (!p) {                                                               \
            snprintf(why, sizeof why, "libcurl.so.4 has no %s (libcurl 7.62 or " \
                                      "later is needed)", symbol);              \
            return;                                                             \
        }                                                                       \
        memcpy(&api.field, &p, sizeof p);                                       \
    } while (0)

static void load(void)
{
    CURLcode (*global_init)(long flags);
    curl_version_info_data *(*version_info)(CURLversion);
    void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL), *p;
    if (!lib) {
        snprintf(why, sizeof why, "Hub downloads need libcurl (Debian: apt-get install "
                                  "libcurl4): %s", dlerror());
        return;
    }
    LOOK_UP(easy_init, "curl_easy_init");
    LOOK_UP(easy_setopt, "curl_easy_setopt");
    LOOK_UP(easy_perform, "curl_easy_perform");
    LOOK_UP(easy_cleanup, "curl_easy_cleanup");
    LOOK_UP(easy_strerror, "curl_easy_strerror");
    LOOK_UP(slist_append, "curl_slist_append");
    LOOK_UP(slist_free_all, "curl_slist_free_all");
    LOOK_UP(url, "curl_url");
    LOOK_UP(url_set, "curl_url_set");
    LOOK_UP(url_get, "curl_url_get");
    LOOK_UP(url_cleanup, "curl_url_cleanup");
    LOOK_UP(free, "curl_free");
    if (!(p = dlsym(lib, "curl_version_info"))) {
        snprintf(why, sizeof why, "libcurl.so.4 has no curl_version_info");
        return;
    }
    memcpy(&version_info, &p, sizeof p);
    api.version = version_info(CURLVERSION_NOW)->version_num;
    if (!(p = dlsym(lib, "curl_global_init"))) {
        snprintf(why, sizeof why, "libcurl.so.4 has no curl_global_init");
        return;
    }
    memcpy(&global_init, &p, sizeof p);
    if (global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(why, sizeof why, "libcurl could not be initialised (curl_global_init)");
        return;
    }
    loaded = 1; /* the library stays mapped for the process's life */
}

const ct__curl_api *ct__curl(void)
{
    pthread_once(&once, load);
    if (!loaded) {
        ct__error(CT_ERR_UNSUPPORTED, "%s", why);
        return NULL;
    }
    return &api;
}
