/* Internal: the advisory lock that lets one run at a time use an output_dir. */
#ifndef CT_TRAIN_OUTDIR_LOCK_H
#define CT_TRAIN_OUTDIR_LOCK_H

#include "core/error.h"

/* Lock `dir` (which must exist) for this run: *fd holds the lock until
 * ct__outdir_unlock. CT_ERR_BUSY, naming the holder's pid and the folder,
 * when another run (process or trainer) holds it. */
ct_status ct__outdir_lock(const char *dir, int *fd) CT__MUST_USE;
void ct__outdir_unlock(int fd);

#endif
