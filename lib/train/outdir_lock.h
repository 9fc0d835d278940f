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
/* An output_dir is at most this many bytes long, so that the paths of what
 * a run writes under it (a checkpoint's temporary folder and its files)
 * fit the 4096-byte buffers they are formed in, never cut short. */
#define CT__OUTPUT_DIR_MAX 3840
/* CT_ERR_INVALID_ARG naming output_dir when it is longer than that. */
ct_status ct__output_dir_check(const char *dir) CT__MUST_USE;
void ct__outdir_unlock(ct_output_lock *lock);

#endif
