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

/* Catch SIGINT and SIGTERM (unless ignored when the tool started): while
 * script_training() names a trainer the first one cancels it (a checkpoint
 * at the next step), outside training the tool exits; a second one exits
 * at once. */
void script_catch_signals(void);
void script_training(ct_trainer *trainer);
/* The signal received (0: none). */
int script_signal(void);
/* Say nothing from the handler (ranks other than 0). */
void script_quiet_signals(void);
/* After ct_trainer_train returned `st` with a signal received: what
 * happened and where to resume from; returns 128 + signal. */
int script_stopped_by_signal(ct_trainer *t, ct_status st, const char *output_dir, int rank);

/* ---- model and tokenizer (sources.c) --------------------------------------------- */

int script_file_exists(const char *path);
/* The model for the head `task`: the weights of --model_name_or_path's
 * folder, else fresh ones from a config (config_name, a config.json path
 * or a built-in name; a Hub id that is a built-in name gets a loud word that
 * its weights are random). `labels` as ct_model_create_with_labels takes
 * them (num_labels 0 keeps the configuration's). *from_folder: pre-trained
 * weights were loaded. 0, or -1 with the reason said. */
int script_make_model(const char *model_name_or_path, const char *config_name, ct_task task,
                      int num_labels, const char *const *labels, const char *problem_type,
                      uint64_t seed, int rank, ct_model **out, int *from_folder);
/* The tokenizer of --tokenizer_name, else of the model's folder. */
int script_load_tokenizer(const char *tokenizer_name, const char *model_name_or_path,
                          ct_tokenizer **out);

/* ---- results (results.c) ------------------------------------------------------------ */

/* The epoch of the trainer's last log entry (state.epoch at the end). */
double script_last_epoch(const ct_trainer *trainer);
/* "***** <split> metrics *****" and one "  name = value" line each. */
void script_print_metrics(const char *split, const char *const *names, const double *values,
                          size_t n);

#endif
