/* What the example-script front ends (cputrain-qa, and the tasks after it)
 * share around the library's workflow: the command line of a Transformers
 * example script, the log held until the rank is known, Ctrl-C and SIGTERM
 * while training, and where the model and tokenizer come from. Each tool is
 * its task's part on top. */
#ifndef CT_TOOLS_SCRIPT_H
#define CT_TOOLS_SCRIPT_H

#include <cputrain/cputrain.h>

#include <limits.h>
#include <stddef.h>

/* The tool's and the script's names in messages ("cputrain-qa",
 * "run_qa.py"); main sets them first. */
extern const char *script_prog, *script_name;

/* ---- the command line (options.c) ------------------------------------------- */

/* NO_EFFECT(_FLAG): accepted, its value (a flag's) skipped, with a warning
 * giving `help` as the reason. */
enum script_kind {
    SCRIPT_TEXT,
    SCRIPT_INT,
    SCRIPT_FLOAT,
    SCRIPT_FLAG,
    SCRIPT_NO_EFFECT,
    SCRIPT_NO_EFFECT_FLAG
};

/* One of the script's own arguments (its ModelArguments and
 * DataTrainingArguments): where in the tool's options struct its value
 * goes (const char *, long, double or int), and for INT the range it may
 * take. */
typedef struct script_option {
    const char *name;
    enum script_kind kind;
    size_t offset;
    const char *help;
    long min, max;
} script_option;

#define SCRIPT_ROW(type, name, kind, help) \
    { #name, kind, offsetof(type, name), help, 0, INT_MAX }
#define SCRIPT_ROW_SAMPLES(type, name, help) \
    { #name, SCRIPT_INT, offsetof(type, name), help, -1, LONG_MAX }
#define SCRIPT_IGNORED(name, kind, reason) { #name, kind, 0, reason, 0, 0 }

/* argv as HfArgumentParser reads it: TrainingArguments into args, the
 * script's own into `values` by `table`, and any other name as the
 * library's table of fates says (accepted with a warning, refused with the
 * reason, or unknown) when its group is one of `groups` (NULL-terminated;
 * NULL: any). 0: go on; 1: --help was printed by `usage`; 2: a usage error,
 * said on stderr. */
int script_parse_args(ct_args *args, int argc, char **argv, const script_option *table,
                      size_t n, void *values, const char *const *groups,
                      void (*usage)(void));
/* --help's lines for the table, and for the names of the library's table
 * in `group` ("ModelArguments", ...) with `fate` (ct_arg_fate). */
void script_usage_options(const script_option *table, size_t n);
void script_usage_fates(const char *group, int fate);

/* ---- the log (log.c) ----------------------------------------------------------- */

/* Hold what the library logs (the arguments' warnings) until this process
 * knows its rank: every rank parses the same arguments, so only the main
 * process says it, once the rank is known. */
void script_hold_log(void);
/* Print what was held (when `say`) at the level now set, and log to stderr
 * from now on. */
void script_release_log(int say);
/* "<prog>: <what>: <STATUS>: <ct_last_error>" on stderr (held lines first);
 * returns 1, the exit status of a failed run. */
int script_fail(const char *what, ct_status st);
/* A warning through the log (held, like the library's, until the rank is
 * known). */
void script_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- Ctrl-C and SIGTERM (signals.c) -------------------------------------------- */

/* Catch SIGINT and SIGTERM (unless ignored when the tool started): during
 * script_train the first one cancels training (a checkpoint at the next
 * step), outside training the tool exits; a second one exits at once. */
void script_catch_signals(void);
/* Say nothing from the handler (ranks other than 0). */
void script_quiet_signals(void);

/* ---- the frame of main (run.c) --------------------------------------------------- */

typedef struct script_run {
    ct_args *args;
    int do_train, do_eval, do_predict;
    const char *output_dir;
    int64_t seed;
    ct_workflow *wf; /* after script_join */
    ct_dist *dist;
    int rank;
} script_run;

/* Names, the log held, signals caught, argv parsed (script_parse_args)
 * and the run's switches read (an eval_strategy sets do_eval, as
 * TrainingArguments does). -1 to go on, else the exit status: 0 after
 * --help, 1 or 2 after a failure (said). */
int script_start(script_run *s, const char *prog, const char *script, int argc, char **argv,
                 const script_option *table, size_t n, void *values,
                 const char *const *groups, void (*usage)(void));
/* The job joined through the workflow (script_name's), this rank's log
 * released, output_dir held with the scripts' rule. 0, or the exit status. */
int script_join(script_run *s);
/* Train on `train` (the library's bar on rank 0), with script_train's
 * signals; 0 or the exit status. */
int script_fit(const script_run *s, ct_trainer *trainer, const ct_dataset *train);
/* The held log said, the workflow and the arguments freed. */
void script_end(script_run *s);

/* ---- the Hub (hub.c) ---------------------------------------------------------------- */

/* run_qa.py's ModelArguments that say where a Hub model comes from; each
 * tool's options hold one as `hub` and list SCRIPT_HUB_ROWS. */
typedef struct script_hub {
    const char *cache_dir, *model_revision, *token;
} script_hub;
#define SCRIPT_HUB_ROW(type, name, help) \
    { #name, SCRIPT_TEXT, offsetof(type, hub.name), help, 0, INT_MAX }
#define SCRIPT_HUB_ROWS(type)                                                                \
    SCRIPT_HUB_ROW(type, cache_dir, "Hub cache of downloaded models (default $HF_HUB_CACHE, " \
                                    "else ~/.cache/huggingface/hub)."),                     \
    SCRIPT_HUB_ROW(type, model_revision, "Branch, tag or commit of a Hub model (main)."),    \
    SCRIPT_HUB_ROW(type, token, "Hub token for gated or private models (default $HF_TOKEN, " \
                                "else huggingface-cli login's).")

/* Hub options from the arguments (NULL: the environment's defaults);
 * repo_type "model" or "dataset". 0, or -1 with the reason said. */
int script_hub_options(const script_hub *hub, const char *repo_type, int rank,
                       ct_hub_options **out);
/* --model_name_or_path and --tokenizer_name that name no local path but a
 * Hub id, each replaced by its snapshot folder in the Hub cache (fetched
 * when missing, one process per machine at a time; HF_HUB_OFFLINE: the
 * cache only), as from_pretrained looks: local folder, cache, Hub; and
 * --config_name by the repo's config.json, as AutoConfig looks. A built-in
 * configuration's name the Hub cannot give keeps its name, and
 * script_make_model says loudly why its weights are random. Any of the
 * three may be NULL. 0, or -1 with the reason said. */
int script_resolve_hub(const script_hub *hub, const char **model_name_or_path,
                       const char **config_name, const char **tokenizer_name, int rank);
/* Why the Hub did not give the last name script_resolve_hub kept ("" when
 * none was kept). */
extern char script_hub_miss[1024];

/* ---- model and tokenizer (sources.c) --------------------------------------------- */

int script_file_exists(const char *path);
/* The model for the head `task`: the weights of --model_name_or_path's
 * folder, else fresh ones from a config (config_name, a config.json path
 * or a built-in name; a Hub id that is a built-in name gets a loud word that
 * its weights are random), with `options` (NULL: none) as from_pretrained's
 * keyword arguments. *from_folder: pre-trained weights were loaded. 0, or
 * -1 with the reason said. */
int script_make_model(const char *model_name_or_path, const char *config_name, ct_task task,
                      const ct_model_options *options, uint64_t seed, int rank, ct_model **out,
                      int *from_folder);
/* A classification head's options as run_glue / run_ner pass them to
 * from_pretrained: the label names (NULL: n_labels unnamed, as regression's
 * one), problem_type (NULL: none) and ignore_mismatched_sizes. 0 and *out
 * (ct_model_options_free it), or -1 with the reason said. */
int script_label_options(const char *const *labels, int n_labels, const char *problem_type,
                         int ignore_mismatched_sizes, ct_model_options **out);
/* The tokenizer of --tokenizer_name, else of the model's folder. */
int script_load_tokenizer(const char *tokenizer_name, const char *model_name_or_path,
                          ct_tokenizer **out);

/* A data file (CSV, JSON lines, Parquet, Arrow) as a table; -1 with the
 * reason said. */
int script_load_table(const char *file, ct_table **out);
/* datasets.load_dataset(name, config)[split] as a table (config NULL: the
 * one there is): the datasets cache, the Hub cache, the Hub. -1 with the
 * reason said. */
int script_load_dataset(const script_hub *hub, const char *name, const char *config,
                        const char *split, int rank, ct_table **out);
/* The model's threads on this rank's share of the machine (its socket or
 * NUMA node, or an even split of the cores). */
int script_place(ct_model *model, const ct_dist *dist);
/* The tokenizer against the model, before any data is read: its ids must
 * fit the embedding (refused naming both sizes), and max_seq_length is cut
 * to what both take (the scripts' warning when cut; <= 0 asks for that
 * limit). 0, or -1 with the reason said. */
int script_fit_tokenizer(const ct_model *model, const ct_tokenizer *tok, long *len, int rank);

/* ct_trainer_train with Ctrl-C / SIGTERM turned into a checkpoint: 0, or
 * the exit status with what happened said (128 + signal: where to resume
 * from). */
int script_train(ct_trainer *trainer, const char *output_dir, int rank);

/* ---- results (results.c) ------------------------------------------------------------ */

/* What Trainer.save_metrics writes: names, values, which ones are counts
 * (as many as the metrics give: one set per entity type, say). Zeroed to
 * start, script_results_free to end. */
typedef struct script_results {
    char **name;
    double *value;
    int *is_int;
    int n, cap;
    int nomem; /* an add found no memory: saving them fails */
} script_results;
void script_add_result(script_results *res, const char *prefix, const char *name,
                       const char *suffix, double value, int is_int);
void script_results_free(script_results *res);
/* Print them as Trainer.log_metrics does and save <split>_results.json
 * (merged into all_results.json) through the workflow. */
int script_save_results(ct_workflow *wf, const char *split, const script_results *res, int rank);
/* A clock for the *_runtime figures. */
double script_now(void);
/* A dataset's logits on every rank (*out [n, ...], malloc'd). */
ct_status script_predict(ct_trainer *trainer, const ct_dataset *d, float **out);

/* The epoch of the trainer's last log entry (state.epoch at the end). */
double script_last_epoch(const ct_trainer *trainer);
/* "***** <split> metrics *****" and one "  name = value" line each. */
void script_print_metrics(const char *split, const char *const *names, const double *values,
                          size_t n);

#endif
