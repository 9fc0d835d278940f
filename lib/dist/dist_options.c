/* ct_dist_options: what ct_dist_create is told explicitly, as text keys. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/strbuf.h"
#include "dist/dist_internal.h"

ct_status ct_dist_options_create(ct_dist_options **out)
{
    ct_dist_options *o;
    CT__CHECK_ARG(out);
    if (!(*out = o = calloc(1, sizeof *o)))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    o->rank = o->world = o->local_rank = o->local_world = -1;
    return CT_OK;
}

void ct_dist_options_free(ct_dist_options *o)
{
    if (!o)
        return;
    free(o->backend);
    free(o->master_addr);
    free(o->job);
    free(o->secret);
    free(o->secret_file);
    free(o);
}

static ct_status set_int(const char *key, const char *value, long lo, long hi, int *out)
{
    char *end;
    long x;
    errno = 0;
    x = strtol(value, &end, 10);
    if (errno || end == value || *end || x < lo || x > hi)
        return ct__error(CT_ERR_INVALID_ARG, "dist option %s='%s': expected an integer in "
                                             "[%ld, %ld]", key, value, lo, hi);
    *out = (int)x;
    return CT_OK;
}

static ct_status set_text(const char *key, const char *value, char **out)
{
    char *copy;
    if (!*value)
        return ct__error(CT_ERR_INVALID_ARG, "dist option %s: empty", key);
    if (!(copy = strdup(value)))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    free(*out);
    *out = copy;
    return CT_OK;
}

/* Transformers' other ddp_backend values, and what does their job here. */
static const char *other_backend(const char *name)
{
    static const struct {
        const char *name, *why;
    } others[] = {
        {"ccl", "Intel's oneCCL is not used: under Intel MPI's or MPICH's mpirun, mpi (or "
                "auto) reduces over the launcher's own MPI and its fabric"},
        {"gloo", "PyTorch's gloo is not used: tcp (or auto) is its counterpart here"},
        {"nccl", "a GPU backend; this library trains on CPUs: use auto"},
        {"hccl", "an accelerator backend; this library trains on CPUs: use auto"},
        {"cncl", "an accelerator backend; this library trains on CPUs: use auto"},
        {"mccl", "an accelerator backend; this library trains on CPUs: use auto"},
    };
    for (size_t i = 0; i < sizeof others / sizeof *others; i++)
        if (!strcmp(name, others[i].name))
            return others[i].why;
    return NULL;
}

ct_status ct__dist_check_backend(const char *what, const char *name)
{
    static const char *const names[] = {"auto", "local", "shm", "tcp", "mpi"};
    const char *why;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i]))
            return CT_OK;
    if ((why = other_backend(name)))
        return ct__error(CT_ERR_UNSUPPORTED, "%s='%s' is not available here: %s", what, name,
                         why);
    return ct__error(CT_ERR_INVALID_ARG, "%s='%s': expected auto, local, shm, tcp or mpi", what,
                     name);
}

ct_status ct_dist_options_set(ct_dist_options *o, const char *key, const char *value)
{
    CT__CHECK_ARG(o);
    CT__CHECK_ARG(key);
    CT__CHECK_ARG(value);
    if (!strcmp(key, "backend")) {
        ct_status st = ct__dist_check_backend("dist option backend", value);
        return st != CT_OK ? st : set_text(key, value, &o->backend);
    }
    if (!strcmp(key, "rank"))
        return set_int(key, value, 0, 1 << 24, &o->rank);
    if (!strcmp(key, "world_size"))
        return set_int(key, value, 1, 1 << 24, &o->world);
    if (!strcmp(key, "local_rank"))
        return set_int(key, value, 0, 1 << 24, &o->local_rank);
    if (!strcmp(key, "local_world_size"))
        return set_int(key, value, 1, 1 << 24, &o->local_world);
    if (!strcmp(key, "master_addr"))
        return set_text(key, value, &o->master_addr);
    if (!strcmp(key, "master_port"))
        return set_int(key, value, 1, 65535, &o->master_port);
    if (!strcmp(key, "job"))
        return set_text(key, value, &o->job);
    /* Secrets: the later of the two keys replaces the earlier. */
    if (!strcmp(key, "secret") || !strcmp(key, "secret_file")) {
        int file = key[6] == '_';
        ct_status st = set_text(key, value, file ? &o->secret_file : &o->secret);
        if (st == CT_OK) {
            char **other = file ? &o->secret : &o->secret_file;
            free(*other);
            *other = NULL;
        }
        return st;
    }
    if (!strcmp(key, "timeout")) {
        char *end;
        double t;
        errno = 0;
        t = ct__strtod(value, &end);
        if (errno || end == value || *end || !isfinite(t) || t <= 0)
            return ct__error(CT_ERR_INVALID_ARG, "dist option timeout='%s': expected seconds "
                                                 "above 0", value);
        o->timeout_s = t;
        return CT_OK;
    }
    return ct__error(CT_ERR_INVALID_ARG,
                     "dist option '%s' is unknown (backend, rank, world_size, local_rank, "
                     "local_world_size, master_addr, master_port, timeout, job, secret, "
                     "secret_file)", key);
}
