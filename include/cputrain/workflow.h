/* libcputrain public API: the workflow of an example script around the
 * trainer (ct_workflow) — what Transformers' run_qa.py and its siblings do
 * besides their task: join the job, set each rank's log level, hold
 * output_dir for the whole run and apply run_qa.py's rule for what it
 * already holds, find a dataset's files, write results files and the model
 * card, draw progress bars. A front end (cputrain-qa, Python's run_qa) is
 * its task's part on top of it.
 * Included through <cputrain/cputrain.h>; do not include directly. */
#ifndef CPUTRAIN_WORKFLOW_H
#define CPUTRAIN_WORKFLOW_H

#ifndef CT_INSIDE_CPUTRAIN_H
#error "include <cputrain/cputrain.h> instead of <cputrain/workflow.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_workflow ct_workflow;

/* A workflow over the script's training arguments, which it borrows (they
 * must outlive it) and may change: ct_workflow_hold_output_dir sets
 * resume_from_checkpoint when it resumes. `script` names the Transformers
 * example it stands for ("run_qa.py"), as the model card says. */
CT_API ct_status ct_workflow_create(const char *script, ct_args *args, ct_workflow **out);
/* Frees the workflow, its lock on output_dir and its ct_dist. Accepts NULL. */
CT_API void ct_workflow_free(ct_workflow *workflow);

/* Joins the job: a ct_dist from ddp_backend, ddp_timeout and the
 * launcher's environment. Then this process's log level, as Trainer sets
 * it: log_level on the main process (rank 0, and with log_on_each_node the
 * first rank of every machine), log_level_replica on the others;
 * "passive" is info on the main process and warning elsewhere. */
CT_API ct_status ct_workflow_join(ct_workflow *workflow);
/* The job (NULL before ct_workflow_join); owned by the workflow. */
CT_API ct_dist *ct_workflow_dist(const ct_workflow *workflow);
/* 1 on rank 0 (it reports and writes results), else 0; 1 before the join. */
CT_API int ct_workflow_is_main(const ct_workflow *workflow);

/* Holds output_dir for the rest of the run on the ranks that write it
 * (rank 0; with save_on_each_node the first of every machine), with
 * ct_output_lock; every rank learns whether all got it, so none waits for
 * one that gave up (CT_ERR_BUSY naming the holder on that rank, CT_ERR_DIST
 * on the others). With `training`, then run_qa.py's rule for what
 * output_dir already holds (its .lock and tmp-checkpoint-* left aside),
 * unless overwrite_output_dir: complete checkpoints make the run resume
 * from the newest, which resume_from_checkpoint is set to when unset (said
 * at INFO in run_qa.py's words); other entries — a checkpoint that is not
 * complete among them — refuse it (CT_ERR_INVALID_ARG naming one). */
CT_API ct_status ct_workflow_hold_output_dir(ct_workflow *workflow, int training);

/* metric_for_best_model — "loss" by default with load_best_model_at_end,
 * Trainer's "eval_" prefix optional — checked against the n metrics the
 * script's evaluation reports (names without the prefix), before training
 * rather than at the first evaluation: CT_ERR_INVALID_ARG listing them.
 * CT_OK when neither argument is set. */
CT_API ct_status ct_workflow_check_best_metric(const ct_workflow *workflow,
                                               const char *const *reported, size_t n);

/* A tqdm-style bar "what: 42%|####      | 21/50 [3s, 7.00 it/s]" on stderr
 * (timed from the first call with done 0), on the main process only, when
 * stderr is a terminal and disable_tqdm is off; done == total clears it. */
CT_API void ct_workflow_progress(ct_workflow *workflow, const char *what, size_t done,
                                 size_t total);

/* --dataset_name NAME read from a folder (nothing is downloaded): split's
 * file as `datasets` or the dataset's own site names it — dir/split.json,
 * dir/split.jsonl, dir/official, then the same under dir/NAME/ (official
 * may be NULL: a split the dataset does not publish). dir NULL means
 * $HF_DATASETS_CACHE. Into path (size bytes). CT_ERR_NOT_FOUND names every
 * place looked at; CT_ERR_INVALID_ARG when there is no folder to look in. */
CT_API ct_status ct_workflow_dataset_file(const char *dir, const char *name, const char *split,
                                          const char *official, char *path, size_t size);

/* Trainer.save_metrics(split, metrics) on the main process:
 * output_dir/<split>_results.json (the metrics, sorted, indent 4) merged
 * into output_dir/all_results.json. is_int (may be NULL) marks values
 * written as integers. The other ranks do nothing. */
CT_API ct_status ct_workflow_save_metrics(const ct_workflow *workflow, const char *split,
                                          const char *const *names, const double *values,
                                          const int *is_int, size_t n);

/* Trainer.create_model_card, on the main process: output_dir/README.md
 * saying what the model was trained from (`base`: a model it fine-tunes
 * when fine_tuned, else the configuration it was made from), for `task`
 * ("extractive question answering"), on `dataset` (a dataset's name, else
 * the training file's path; dataset_is_named says which), with its
 * evaluation metrics (epoch and *_samples left out, the others titled as
 * Transformers titles them), the hyperparameters of the arguments, and the
 * trainer's loss and steps. Replaced whole or not at all. */
CT_API ct_status ct_workflow_write_model_card(const ct_workflow *workflow,
                                              const ct_trainer *trainer, const char *task,
                                              const char *base, int fine_tuned,
                                              const char *dataset, int dataset_is_named,
                                              const char *const *metric_names,
                                              const double *metric_values, size_t n_metrics);

#ifdef __cplusplus
}
#endif
#endif /* CPUTRAIN_WORKFLOW_H */
