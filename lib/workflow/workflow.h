/* Internal: the ct_workflow handle, shared by the files of lib/workflow/. */
#ifndef CT_WORKFLOW_WORKFLOW_H
#define CT_WORKFLOW_WORKFLOW_H

#include <cputrain/cputrain.h>

struct ct_workflow {
    char *script;        /* "run_qa.py" */
    ct_args *args;       /* borrowed */
    ct_dist *dist;       /* after ct_workflow_join */
    ct_output_lock *lock;
    int rank, world, local_rank;
    double bar_started;  /* the progress bar's start, 0 when none is drawn */
};

/* run_qa.py's rule for what output_dir holds (output_dir_rule.c). */
ct_status ct__workflow_output_dir_rule(ct_workflow *wf);

#endif
