/* Internal: the ct_dist handle and the pieces ct_dist_create puts together —
 * options (dist_options.c), built-in backends (dist_builtin.c), the plugin
 * loader (dist_plugin.c). */
#ifndef CT_DIST_INTERNAL_H
#define CT_DIST_INTERNAL_H

#include <cputrain/cputrain.h>

#include "dist/backend.h"

struct ct_dist_options {
    char *backend;
    int rank, world, local_rank, local_world; /* -1: unset */
    char *master_addr;
    int master_port; /* 0: unset */
    double timeout_s; /* 0: unset */
    char *job;
    char *secret, *secret_file; /* at most one is set */
};

struct ct_dist {
    const ct__dist_backend *be;
    void *state;
    void *plugin; /* dlopen handle of a plugin backend, else NULL */
    int rank, world, local_rank, local_world;
    const char *launcher;
    double timeout_s;
    int failed; /* a collective failed: refuse the next ones */
    float *scratch; /* bf16 reductions go through fp32 in chunks */
};

/* dist_options.c: CT_OK for a backend name (auto, local, shm, tcp, mpi);
 * Transformers' others (ccl, gloo, nccl, ...) CT_ERR_UNSUPPORTED saying
 * what does their job here; anything else CT_ERR_INVALID_ARG. `what` and
 * the name are in the text. */
ct_status ct__dist_check_backend(const char *what, const char *name);

/* secret.c: m->secret_key from the options' secret or secret_file, else
 * CPUTRAIN_DIST_SECRET_FILE or CPUTRAIN_DIST_SECRET; none: has_secret 0.
 * A file that cannot be read, an empty secret or two sources given at once
 * is CT_ERR_INVALID_ARG (or CT_ERR_IO) naming the source. */
ct_status ct__dist_secret_load(const ct_dist_options *o, ct__dist_member *m);

/* dist_builtin.c */
extern const ct__dist_backend ct__dist_local, ct__dist_shm, ct__dist_tcp;

/* dist_plugin.c: load backend `name` from "<dir>/dist-<name>.so", dir being
 * CPUTRAIN_PLUGIN_DIR, else the cputrain/ folder beside the loaded library,
 * else the installed plugin folder. On success *handle is the dlopen handle
 * (dlclose it after the backend's close). CT_ERR_NOT_FOUND when no such
 * file exists (the error lists the folders tried), CT_ERR_UNSUPPORTED when
 * one exists but cannot be used (its dlerror, or a version mismatch). */
ct_status ct__dist_plugin_load(const char *name, const ct__dist_backend **be, void **handle);

#endif
