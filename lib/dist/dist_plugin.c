/* Loading a backend plugin (dist-<name>.so) with dlopen, so that the library
 * itself depends on no MPI: the plugin is opened only when its backend is
 * chosen. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "dist/dist_internal.h"

#ifndef CT_PLUGINDIR
#define CT_PLUGINDIR "/usr/local/lib/cputrain"
#endif

static const ct__dist_host host = {CT__DIST_API_VERSION, ct__error, ct__log};

/* The folder of the file this code was loaded from (the shared library, or
 * the program when linked statically), into dir. */
static int own_folder(char *dir, size_t size)
{
    Dl_info info;
    const char *slash;
    if (!dladdr((void *)ct__dist_plugin_load, &info) || !info.dli_fname)
        return 0;
    if (!(slash = strrchr(info.dli_fname, '/')))
        return 0;
    return snprintf(dir, size, "%.*s", (int)(slash - info.dli_fname), info.dli_fname) <
           (int)size;
}

ct_status ct__dist_plugin_load(const char *name, const ct__dist_backend **be, void **handle)
{
    char dirs[3][PATH_MAX], tried[3 * PATH_MAX + 64] = "";
    int ndirs = 0;
    const char *env = getenv("CPUTRAIN_PLUGIN_DIR");
    *be = NULL;
    *handle = NULL;
    if (env && *env) {
        if (strlen(env) > PATH_MAX - 32) /* room for "/dist-<name>.so" */
            return ct__error(CT_ERR_INVALID_ARG, "CPUTRAIN_PLUGIN_DIR: %zu bytes, a path "
                             "longer than %d bytes: refused", strlen(env), PATH_MAX - 32);
        snprintf(dirs[ndirs++], PATH_MAX, "%s", env);
    }
    if (own_folder(dirs[ndirs], PATH_MAX) &&
        strlen(dirs[ndirs]) + sizeof "/cputrain" <= PATH_MAX)
        strcat(dirs[ndirs++], "/cputrain");
    snprintf(dirs[ndirs++], PATH_MAX, "%s", CT_PLUGINDIR);

    for (int i = 0; i < ndirs; i++) {
        char path[PATH_MAX];
        void *h;
        ct__dist_plugin_fn entry;
        const ct__dist_backend *table;
        int len = snprintf(path, sizeof path, "%.*s/dist-%s.so", PATH_MAX - 32, dirs[i], name);
        if (len >= (int)sizeof path || access(path, F_OK) != 0) {
            size_t used = strlen(tried);
            snprintf(tried + used, sizeof tried - used, "%s%s", used ? ", " : "", dirs[i]);
            continue;
        }
        /* RTLD_GLOBAL: MPI libraries dlopen their own components, which
         * expect the MPI symbols to be visible globally. */
        if (!(h = dlopen(path, RTLD_NOW | RTLD_GLOBAL)))
            return ct__error(CT_ERR_UNSUPPORTED, "cannot load %s: %s", path, dlerror());
        *(void **)&entry = dlsym(h, CT__DIST_PLUGIN_ENTRY);
        if (!entry) {
            dlclose(h);
            return ct__error(CT_ERR_UNSUPPORTED, "%s has no %s", path, CT__DIST_PLUGIN_ENTRY);
        }
        if (!(table = entry(&host))) {
            dlclose(h);
            return ct__error_prefix(CT_ERR_UNSUPPORTED, "%s", path);
        }
        if (table->api_version != CT__DIST_API_VERSION) {
            dlclose(h);
            return ct__error(CT_ERR_UNSUPPORTED,
                             "%s implements backend interface %d, this library %d", path,
                             table->api_version,
                             CT__DIST_API_VERSION);
        }
        *be = table;
        *handle = h;
        return CT_OK;
    }
    return ct__error(CT_ERR_NOT_FOUND, "no dist-%s.so in %s (set CPUTRAIN_PLUGIN_DIR to its "
                                       "folder)", name, tried);
}
