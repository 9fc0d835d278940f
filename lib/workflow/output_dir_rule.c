/* run_qa.py's rule for an output_dir that already holds something, when a
 * run trains without overwrite_output_dir: with a complete checkpoint,
 * resume from the newest (unless resume_from_checkpoint says otherwise);
 * with anything else, refuse. Complete means what the trainer resumes
 * from (its completeness marker), so the rule and the trainer agree on
 * which checkpoints exist. */
#include "workflow/workflow.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "args/args_internal.h"
#include "core/error.h"
#include "train/outdir_lock.h"
#include "train/trainer.h"

ct_status ct__workflow_output_dir_rule(ct_workflow *wf)
{
    const char *dir = ct__args_string(wf->args, CT_A_output_dir);
    char newest[4200], found[300] = "";
    int incomplete = 0;
    struct dirent *e;
    DIR *d;
    ct_status st = ct__output_dir_check(dir);
    if (st != CT_OK)
        return st;
    if (ct__args_bool(wf->args, CT_A_overwrite_output_dir) || !(d = opendir(dir)))
        return CT_OK; /* a folder that is not there yet is fine */
    /* The lock and a crashed save's tmp-checkpoint-* are not results. */
    while ((e = readdir(d))) {
        char path[4200];
        struct stat sb;
        int checkpoint;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, ".lock") ||
            !strncmp(e->d_name, "tmp-checkpoint-", 15))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        checkpoint = ct__checkpoint_step_of(e->d_name) >= 0 && stat(path, &sb) == 0 &&
                     S_ISDIR(sb.st_mode);
        if (checkpoint && ct__checkpoint_is_complete(path))
            continue;
        if (!found[0] || (checkpoint && !incomplete)) {
            snprintf(found, sizeof found, "%s", e->d_name);
            incomplete = checkpoint;
        }
    }
    closedir(d);
    if (ct__checkpoint_newest(dir, newest, sizeof newest)) {
        if (!ct__args_string(wf->args, CT_A_resume_from_checkpoint)) {
            ct__log(CT_LOG_INFO, "checkpoint detected, resuming training at %s. To avoid this "
                                 "behavior, change the --output_dir or add "
                                 "--overwrite_output_dir to train from scratch.", newest);
            return ct_args_set(wf->args, "resume_from_checkpoint", newest);
        }
        return CT_OK;
    }
    if (found[0])
        return ct__error(CT_ERR_INVALID_ARG, "output directory (%s) already exists and is not "
                         "empty (it holds %s%s). Use --overwrite_output_dir to overcome.", dir,
                         found, incomplete ? ", which is not a complete checkpoint" : "");
    return CT_OK;
}
