/* Internal: who started this process — rank, world size, local rank and
 * local world size, and the rendezvous address — read from the launcher's
 * environment: torchrun / PyTorchJob, then Intel MPI / MPICH (PMI), then
 * Open MPI; the first launcher whose variables are present wins. */
#ifndef CT_DIST_LAUNCHER_H
#define CT_DIST_LAUNCHER_H

#include <cputrain/cputrain.h>

typedef enum ct__launcher_kind {
    CT__LAUNCH_NONE,    /* no launcher: one process */
    CT__LAUNCH_TORCHRUN,/* RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_* */
    CT__LAUNCH_PMI,     /* PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS */
    CT__LAUNCH_OPENMPI  /* OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE */
} ct__launcher_kind;

typedef struct ct__launch {
    ct__launcher_kind kind;
    int rank, world, local_rank, local_world;
    char master_addr[256]; /* "" when not given */
    int master_port;       /* 0 when not given */
} ct__launch;

/* Fill *out from the environment. A launcher's variables that are present
 * but malformed or inconsistent (rank >= world, local_rank >= local_world,
 * a port outside 1..65535, one local variable without the other) are
 * CT_ERR_INVALID_ARG naming the variable and its value. Without local
 * variables the process is alone on its machine (local rank 0 of 1), as a
 * Kubeflow PyTorchJob starts one per pod when torchrun is not used. */
ct_status ct__launcher_detect(ct__launch *out);
/* For a process started by Open MPI's mpirun: a warning when the ranks
 * would be SIGKILLed too soon after a forwarded Ctrl-C / SIGTERM to save
 * a checkpoint (odls_base_sigkill_timeout below 30 s). openmpi_kill.c. */
void ct__launcher_note_kill_timeout(void);
/* "torchrun", "pmi", "openmpi" or "none". */
const char *ct__launcher_name(ct__launcher_kind kind);

#endif
