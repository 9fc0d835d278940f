/* Internal: the advisory lock that lets one run at a time use an output_dir,
 * taken by the trainer, or for a whole run through ct_output_lock_create. */
#ifndef CT_TRAIN_OUTDIR_LOCK_H
#define CT_TRAIN_OUTDIR_LOCK_H

#include <cputrain/cputrain.h>

#include "core/error.h"

/* Lock `dir` (made when missing, parents too) for this run: *lock holds it
 * until ct__outdir_unlock. When this process already holds dir's lock
 * through ct_output_lock_create, the run joins it: *lock is NULL and the
 * lock stays with its creator. CT_ERR_BUSY, naming the holder's pid and the
 * folder, when another run (process or trainer) holds it. */
ct_status ct__outdir_lock(const char *dir, ct_output_lock **lock) CT__MUST_USE;
void ct__outdir_unlock(ct_output_lock *lock);

#endif
