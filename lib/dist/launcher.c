/* Reading rank, world size and rendezvous from the launcher's environment. */
#include "dist/launcher.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

typedef struct scheme {
    ct__launcher_kind kind;
    const char *rank, *world, *local_rank, *local_world;
} scheme;

/* In the order the first present one wins. */
static const scheme schemes[] = {
    {CT__LAUNCH_TORCHRUN, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {CT__LAUNCH_PMI, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {CT__LAUNCH_OPENMPI, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
};

const char *ct__launcher_name(ct__launcher_kind kind)
{
    switch (kind) {
    case CT__LAUNCH_TORCHRUN: return "torchrun";
    case CT__LAUNCH_PMI: return "pmi";
    case CT__LAUNCH_OPENMPI: return "openmpi";
    default: return "none";
    }
}

/* An integer environment variable in [lo, hi]; *present says whether it was set. */
static ct_status env_int(const char *name, long lo, long hi, int *out, int *present)
{
    const char *v = getenv(name);
    char *end;
    long x;
    *present = v != NULL;
    if (!v)
        return CT_OK;
    errno = 0;
    x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return ct__error(CT_ERR_INVALID_ARG, "environment %s='%s': expected an integer in "
                                             "[%ld, %ld]", name, v, lo, hi);
    *out = (int)x;
    return CT_OK;
}

ct_status ct__launcher_detect(ct__launch *out)
{
    ct_status st;
    int present, have_world, have_lr, have_lw, port = 0;
    CT__CHECK_ARG(out);
    memset(out, 0, sizeof *out);
    out->world = out->local_world = 1;
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        const scheme *s = &schemes[i];
        if ((st = env_int(s->rank, 0, 1 << 24, &out->rank, &present)) != CT_OK)
            return st;
        if (!present)
            continue;
        out->kind = s->kind;
        if ((st = env_int(s->world, 1, 1 << 24, &out->world, &have_world)) != CT_OK ||
            (st = env_int(s->local_rank, 0, 1 << 24, &out->local_rank, &have_lr)) != CT_OK ||
            (st = env_int(s->local_world, 1, 1 << 24, &out->local_world, &have_lw)) != CT_OK)
            return st;
        if (!have_world)
            return ct__error(CT_ERR_INVALID_ARG, "environment %s is set but %s is not",
                             s->rank, s->world);
        /* No local variables (a PyTorchJob pod started without torchrun):
         * one process on its machine. Assuming more would be wrong across
         * machines (shm chosen, cores split for absent neighbours). */
        if (!have_lr || !have_lw) {
            if (have_lr != have_lw)
                return ct__error(CT_ERR_INVALID_ARG, "environment %s and %s go together (only "
                                                     "%s is set)", s->local_rank, s->local_world,
                                 have_lr ? s->local_rank : s->local_world);
            out->local_rank = 0;
            out->local_world = 1;
        }
        if (out->rank >= out->world)
            return ct__error(CT_ERR_INVALID_ARG, "environment %s=%d is not below %s=%d", s->rank,
                             out->rank, s->world, out->world);
        if (out->local_rank >= out->local_world || out->local_world > out->world)
            return ct__error(CT_ERR_INVALID_ARG,
                             "environment %s=%d, %s=%d do not fit a world of %d", s->local_rank,
                             out->local_rank, s->local_world, out->local_world, out->world);
        break;
    }
    {
        const char *addr = getenv("MASTER_ADDR");
        if (addr) {
            if (strlen(addr) >= sizeof out->master_addr || !*addr)
                return ct__error(CT_ERR_INVALID_ARG, "environment MASTER_ADDR='%s' is not a "
                                                     "usable address", addr);
            strcpy(out->master_addr, addr);
        }
        if ((st = env_int("MASTER_PORT", 1, 65535, &port, &present)) != CT_OK)
            return st;
        out->master_port = port;
    }
    return CT_OK;
}
