/* Checkpoints: output_dir/checkpoint-<step>/ written into a temporary folder
 * (every file fsynced, a completeness marker last) and renamed into place,
 * rotation by save_total_limit, and resuming from the newest complete one. */
#define _XOPEN_SOURCE 700
#include "train/trainer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/json.h"
#include "model/model.h"
#include "optim/optim.h"
#include "data/dataset.h"

#define MARKER "cputrain_checkpoint_complete"
#define PREFIX "checkpoint-"
#define TMP_PREFIX "tmp-checkpoint-"


/* ---- files and folders ------------------------------------------------------ */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int remove_tree(const char *path)
{
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Step number of a folder named checkpoint-<digits>, else -1 (also past
 * int64: such names would all read as the same step). */
static int64_t checkpoint_step(const char *name)
{
    const char *p = name + strlen(PREFIX);
    char *end;
    long long v;
    if (strncmp(name, PREFIX, strlen(PREFIX)) != 0 || !*p || *p < '0' || *p > '9')
        return -1;
    errno = 0;
    v = strtoll(p, &end, 10);
    return *end || errno == ERANGE ? -1 : (int64_t)v;
}

static int is_complete(const char *dir)
{
    char path[4200];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, MARKER);
    return stat(path, &sb) == 0;
}

typedef struct found {
    int64_t step;
    char name[256];
} found;

static int found_cmp(const void *a, const void *b)
{
    int64_t x = ((const found *)a)->step, y = ((const found *)b)->step;
    return (x > y) - (x < y);
}

/* Complete checkpoints of `dir`, oldest first; incomplete ones are named in
 * a log message and left alone. *out is malloc'ed. */
static size_t list_checkpoints(const char *dir, found **out)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    size_t n = 0, cap = 0;
    found *list = NULL;
    *out = NULL;
    if (!d)
        return 0;
    while ((e = readdir(d))) {
        char path[4096];
        int64_t step = checkpoint_step(e->d_name);
        if (step < 0 || strlen(e->d_name) >= sizeof list->name ||
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
            continue;
        if (!is_complete(path)) {
            ct__log(CT_LOG_WARNING, "%s is incomplete (no %s): skipped", path, MARKER);
            continue;
        }
        if (n == cap) {
            found *grown = realloc(list, (cap = cap ? 2 * cap : 16) * sizeof *grown);
            if (!grown)
                break;
            list = grown;
        }
        list[n].step = step;
        snprintf(list[n].name, sizeof list[n].name, "%s", e->d_name);
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(list, n, sizeof *list, found_cmp);
    *out = list;
    return n;
}

static int is_dir(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

ct_status ct__checkpoint_prepare_output_dir(ct_trainer *t)
{
    const char *out = A_STR(output_dir);
    int overwrite = A_BOOL(overwrite_output_dir), resuming = A_STR(resume_from_checkpoint) != NULL;
    char old[256] = "";
    ct_status st = CT_OK;
    DIR *d = opendir(out);
    struct dirent *e;
    if (!d)
        return ct__error(CT_ERR_IO, "output_dir %s: cannot list: %s", out, strerror(errno));
    while (st == CT_OK && (e = readdir(d))) {
        char path[4200];
        int tmp = strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0;
        if (!tmp && checkpoint_step(e->d_name) < 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", out, e->d_name);
        if (tmp) {
            /* Left by a save that crashed, or planted (a symlink, a file):
             * no other run is saving, the lock says so. A symlink goes
             * itself; what it points to is not touched. */
            ct__log(CT_LOG_INFO, "removing %s, left by an interrupted save", path);
            if (remove_tree(path) != 0)
                st = ct__error(CT_ERR_IO, "output_dir: cannot remove %s: %s", path,
                               strerror(errno));
            continue;
        }
        if (!is_dir(path))
            continue;
        if (resuming) {
            continue;
        } else if (overwrite) {
            ct__log(CT_LOG_INFO, "overwrite_output_dir: deleting %s of an earlier run", path);
            if (remove_tree(path) != 0)
                st = ct__error(CT_ERR_IO, "overwrite_output_dir: cannot delete %s: %s", path,
                               strerror(errno));
        } else if (!*old) {
            snprintf(old, sizeof old, "%s", e->d_name);
        }
    }
    closedir(d);
    if (st == CT_OK && overwrite && !resuming) {
        /* Trainer.save_metrics merges into all_results.json: an earlier
         * run's eval_ / predict_ entries would pass for this run's. */
        char path[4200];
        struct stat sb;
        snprintf(path, sizeof path, "%s/all_results.json", out);
        if (lstat(path, &sb) == 0) {
            ct__log(CT_LOG_INFO, "overwrite_output_dir: deleting %s of an earlier run", path);
            if (remove(path) != 0)
                st = ct__error(CT_ERR_IO, "overwrite_output_dir: cannot delete %s: %s", path,
                               strerror(errno));
        }
    }
    if (st == CT_OK && *old)
        st = ct__error(CT_ERR_INVALID_ARG,
                       "output_dir %s already holds %s of an earlier run: set "
                       "resume_from_checkpoint to continue it (true: from its newest checkpoint), "
                       "or overwrite_output_dir to start over (its checkpoints are deleted)",
                       out, old);
    return st;
}

/* ---- trainer_state.json and the RNG / data-order state ------------------------- */

/* A *_steps argument as TrainerState.compute_steps records it: a ratio
 * becomes ceil(ratio * max_steps), and the value is an integer (Transformers
 * turns whole floats above 1 into ints in TrainingArguments.__post_init__). */
static long long state_steps(const ct_trainer *t, double v)
{
    return v < 1 ? (long long)ceil(v * (double)t->max_steps) : (long long)v;
}

char *ct__trainer_state_json(const ct_trainer *t)
{
    ct__strbuf sb = {0};
    /* eval_steps: the argument, else logging_steps when evaluating by steps
     * (__post_init__), else TrainerState's default 500. */
    long long eval_steps =
        ct__args_is_set(t->args, CT_A_eval_steps) ? state_steps(t, A_FLOAT(eval_steps))
        : strcmp(A_STR(eval_strategy), "steps") == 0 ? state_steps(t, A_FLOAT(logging_steps))
                                                      : 500;
    ct__sb_puts(&sb, "{\n  \"best_global_step\": ");
    if (t->best_global_step > 0)
        ct__sb_printf(&sb, "%lld", (long long)t->best_global_step);
    else
        ct__sb_puts(&sb, "null");
    ct__sb_puts(&sb, ",\n  \"best_metric\": ");
    if (t->has_best)
        ct__json_write_double(&sb, t->best_metric);
    else
        ct__sb_puts(&sb, "null");
    ct__sb_puts(&sb, ",\n  \"best_model_checkpoint\": ");
    if (t->best_model_checkpoint)
        ct__json_write_string(&sb, t->best_model_checkpoint, strlen(t->best_model_checkpoint));
    else
        ct__sb_puts(&sb, "null");
    ct__sb_puts(&sb, ",\n  \"epoch\": ");
    ct__json_write_double(&sb, t->epoch);
    ct__sb_printf(&sb, ",\n  \"eval_steps\": %lld", eval_steps);
    ct__sb_printf(&sb, ",\n  \"global_step\": %lld", (long long)t->global_step);
    ct__sb_puts(&sb, ",\n  \"is_hyper_param_search\": false,\n  \"is_local_process_zero\": true,"
                     "\n  \"is_world_process_zero\": true,\n  \"log_history\": [");
    if (t->history.len) {
        ct__sb_puts(&sb, "\n    ");
        ct__sb_append(&sb, t->history.data, t->history.len);
        ct__sb_puts(&sb, "\n  ");
    }
    ct__sb_printf(&sb, "],\n  \"logging_steps\": %lld", state_steps(t, A_FLOAT(logging_steps)));
    ct__sb_printf(&sb, ",\n  \"max_steps\": %lld", (long long)t->max_steps);
    ct__sb_printf(&sb, ",\n  \"num_input_tokens_seen\": 0,\n  \"num_train_epochs\": %lld",
                  (long long)t->num_epochs);
    ct__sb_printf(&sb, ",\n  \"save_steps\": %lld", state_steps(t, A_FLOAT(save_steps)));
    ct__sb_puts(&sb, ",\n  \"stateful_callbacks\": {");
    if (t->early_patience) {
        ct__sb_printf(&sb, "\n    \"EarlyStoppingCallback\": {\n      \"args\": {\n        "
                           "\"early_stopping_patience\": %d,\n        "
                           "\"early_stopping_threshold\": ",
                      t->early_patience);
        ct__json_write_double(&sb, t->early_threshold);
        ct__sb_printf(&sb, "\n      },\n      \"attributes\": {\n        "
                           "\"early_stopping_patience_counter\": %lld\n      }\n    }\n  ",
                      (long long)t->early_counter);
    }
    ct__sb_puts(&sb, "},\n  \"total_flos\": ");
    ct__json_write_double(&sb, t->total_flos);
    ct__sb_printf(&sb, ",\n  \"train_batch_size\": %lld", (long long)A_INT(per_device_train_batch_size));
    ct__sb_puts(&sb, ",\n  \"trial_name\": null,\n  \"trial_params\": null\n}\n");
    return ct__sb_take(&sb);
}

/* What resuming needs beyond Transformers' files: where in which epoch's
 * order training stood, and the dropout generator's position. */
static CT__MUST_USE char *rng_state_json(const ct_trainer *t)
{
    ct__strbuf sb = {0};
    ct__sb_printf(&sb,
                  "{\n  \"batch_in_epoch\": %lld,\n  \"data_seed\": %llu,\n"
                  "  \"dropout_masks\": \"by_example\",\n"
                  "  \"dropout_seed\": %llu,\n  \"dropout_step\": %llu,\n"
                  "  \"epoch_index\": %lld,\n  \"last_logged_step\": %lld,\n  \"loss_since_log\": ",
                  (long long)t->batch_in_epoch, (unsigned long long)t->data_seed,
                  (unsigned long long)t->model->dropout_seed,
                  (unsigned long long)t->model->dropout_step, (long long)t->epoch_index,
                  (long long)t->last_logged_step);
    ct__json_write_double(&sb, t->loss_since_log);
    ct__sb_puts(&sb, ",\n  \"loss_sum_all\": ");
    ct__json_write_double(&sb, t->loss_sum_all);
    /* The split of the global batch this position counts in: a run resumed
     * at another world size keeps the global batch (elastic.c) and finds
     * its place in the epoch from these. */
    ct__sb_printf(&sb, ",\n  \"gradient_accumulation_steps\": %lld,"
                       "\n  \"per_device_train_batch_size\": %lld,\n  \"world_size\": %d",
                  (long long)A_INT(gradient_accumulation_steps),
                  (long long)A_INT(per_device_train_batch_size), t->world);
    ct__sb_printf(&sb, ",\n  \"steps_counted\": %lld\n}\n", (long long)t->steps_counted);
    return ct__sb_take(&sb);
}

/* ---- saving ------------------------------------------------------------------- */

/* A test hook: CPUTRAIN_TEST_CHECKPOINT_PAUSE_MS makes the writer pause after
 * each file, so a test can kill the process in the middle of a save. */
static void test_pause(void)
{
    const char *ms = getenv("CPUTRAIN_TEST_CHECKPOINT_PAUSE_MS");
    if (ms && atoi(ms) > 0) {
        struct timespec ts = {atoi(ms) / 1000, (long)(atoi(ms) % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static CT__MUST_USE ct_status put_text(const char *dir, const char *name, char *text)
{
    char path[4096];
    ct_status st;
    if (!text)
        return ct__error(CT_ERR_NOMEM, "out of memory writing %s", name);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    st = ct__write_file_atomic(path, text, strlen(text));
    free(text);
    test_pause();
    return st;
}

void ct__checkpoint_path(const ct_trainer *t, int64_t step, char *out, size_t size)
{
    snprintf(out, size, "%s/" PREFIX "%lld", A_STR(output_dir), (long long)step);
}

int ct__checkpoint_is_complete(const char *dir)
{
    return is_complete(dir);
}

/* Index of the best checkpoint in list, or n when it is not there. The
 * folder is compared, not its spelling (a resumed run may write output_dir
 * as ./out where the state says out), as Trainer compares resolved paths. */
static size_t best_index(const ct_trainer *t, const found *list, size_t n)
{
    struct stat best, sb;
    if (!t->best_model_checkpoint || stat(t->best_model_checkpoint, &best) != 0)
        return n;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", A_STR(output_dir), list[i].name);
        if (stat(path, &sb) == 0 && sb.st_dev == best.st_dev && sb.st_ino == best.st_ino)
            return i;
    }
    return n;
}

static void rotate(const ct_trainer *t)
{
    found *list;
    size_t n, best;
    int64_t limit;
    if (!ct__args_is_set(t->args, CT_A_save_total_limit) || (limit = A_INT(save_total_limit)) <= 0)
        return;
    n = list_checkpoints(A_STR(output_dir), &list);
    /* Trainer's _sorted_checkpoints: the best moves to just before the
     * newest, so deleting the oldest never takes it; with a limit of 1 and
     * a best that is not the newest, both stay. */
    if ((best = best_index(t, list, n)) < n) {
        for (size_t i = best; i + 2 < n; i++) {
            found tmp = list[i];
            list[i] = list[i + 1];
            list[i + 1] = tmp;
        }
        if (limit == 1 && best != n - 1)
            limit = 2;
    }
    /* Oldest first; the newest is never removed. */
    for (size_t i = 0; i + (size_t)limit < n && i + 1 < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", A_STR(output_dir), list[i].name);
        ct__log(CT_LOG_INFO, "deleting %s (save_total_limit %lld)", path, (long long)limit);
        remove_tree(path);
    }
    free(list);
}

void ct__checkpoint_keep_only_best(const ct_trainer *t)
{
    found *list;
    size_t n, best;
    if (!t->best_model_checkpoint || !ct__args_is_set(t->args, CT_A_save_total_limit) ||
        A_INT(save_total_limit) != 1)
        return;
    n = list_checkpoints(A_STR(output_dir), &list);
    if ((best = best_index(t, list, n)) < n)
        for (size_t i = 0; i < n; i++) {
            char path[4096];
            if (i == best)
                continue;
            snprintf(path, sizeof path, "%s/%s", A_STR(output_dir), list[i].name);
            ct__log(CT_LOG_INFO, "deleting %s (save_total_limit 1 keeps only the best, %s)",
                    path, t->best_model_checkpoint);
            remove_tree(path);
        }
    free(list);
}

/* Rank r's optimizer shard waits in this folder of its own for rank 0's
 * checkpoint folder (which only rank 0 names). Named like a temporary
 * checkpoint, so that an interrupted run's is cleared with them. */
static void shard_stage_dir(const ct_trainer *t, int r, char *out, size_t size)
{
    snprintf(out, size, "%s/" TMP_PREFIX "%lld-shard-%d-of-%d", A_STR(output_dir),
             (long long)t->global_step, r, t->optim->shard_world);
}

ct_status ct__checkpoint_stage_shard(ct_trainer *t)
{
    char dir[4200];
    struct stat sb;
    shard_stage_dir(t, t->rank, dir, sizeof dir);
    /* Made here, now, or not at all: whatever has the name already (a
     * symlink planted to send the shard elsewhere, a folder of unknown
     * origin) is not written into. */
    if (mkdir(dir, 0700) != 0) {
        int e = errno;
        if (e == EEXIST && lstat(dir, &sb) == 0)
            return ct__error(CT_ERR_IO, "%s: the optimizer shard's staging folder exists "
                             "already (%s, not made by this save): refusing to write there",
                             dir, S_ISLNK(sb.st_mode) ? "a symlink" : S_ISDIR(sb.st_mode)
                                                                          ? "a folder"
                                                                          : "a file");
        return ct__error(CT_ERR_IO, "%s: cannot create the optimizer shard's staging folder: "
                         "%s", dir, strerror(e));
    }
    return ct__optim_save_dir(t->optim, dir);
}

ct_status ct__checkpoint_save(ct_trainer *t, char *path_out, size_t path_size)
{
    const char *out = A_STR(output_dir);
    char tmp[4096], final[4096], trash[4200], path[4200];
    ct_status st;
    struct stat sb;
    snprintf(final, sizeof final, "%s/" PREFIX "%lld", out, (long long)t->global_step);
    snprintf(tmp, sizeof tmp, "%s/" TMP_PREFIX "%lld-XXXXXX", out, (long long)t->global_step);
    if (!mkdtemp(tmp))
        return ct__error(CT_ERR_IO, "%s: cannot create a temporary checkpoint folder: %s", out,
                         strerror(errno));
    /* mkdtemp makes 0700; checkpoints are meant to be shared like the model. */
    if (chmod(tmp, 0755) != 0) {
        st = ct__error(CT_ERR_IO, "%s: cannot set its mode: %s", tmp, strerror(errno));
        remove_tree(tmp);
        return ct__error_prefix(st, "checkpoint at step %lld", (long long)t->global_step);
    }
    st = ct_model_save(t->model, tmp, CT_DTYPE_F32);
    if (st == CT_OK && t->tokenizer) /* as Trainer saves its processing_class */
        st = ct_tokenizer_save(t->tokenizer, tmp);
    test_pause();
    if (st == CT_OK && !A_BOOL(save_only_model)) {
        /* One file, or (optim_shard) this rank's shard and the others',
         * which they staged before (ct__checkpoint_stage_shard). */
        st = ct__optim_save_dir(t->optim, tmp);
        for (int r = 1; st == CT_OK && t->optim->dist && r < t->optim->shard_world; r++) {
            char stage[4200], staged[4300];
            shard_stage_dir(t, r, stage, sizeof stage);
            snprintf(staged, sizeof staged, "%s/" CT__SHARD_FILE, stage, r,
                     t->optim->shard_world);
            snprintf(path, sizeof path, "%s/" CT__SHARD_FILE, tmp, r, t->optim->shard_world);
            if (rename(staged, path) != 0)
                st = ct__error(CT_ERR_IO, "%s: cannot move rank %d's optimizer shard into the "
                                          "checkpoint: %s", staged, r, strerror(errno));
            else
                rmdir(stage);
        }
        test_pause();
        if (st == CT_OK) {
            ct__strbuf sb = {0};
            ct__sb_printf(&sb, "{\n  \"last_epoch\": %lld,\n  \"_last_lr\": [",
                          (long long)ct_optim_get_step(t->optim));
            ct__json_write_double(&sb, ct_optim_get_lr(t->optim));
            ct__sb_printf(&sb, "],\n  \"lr_scheduler_type\": \"%s\",\n  \"total_steps\": %lld\n}\n",
                          A_STR(lr_scheduler_type), (long long)t->max_steps);
            st = put_text(tmp, "scheduler.json", ct__sb_take(&sb));
        }
        if (st == CT_OK)
            st = put_text(tmp, "rng_state.json", rng_state_json(t));
    }
    if (st == CT_OK)
        st = put_text(tmp, "trainer_state.json", ct__trainer_state_json(t));
    if (st == CT_OK) {
        snprintf(path, sizeof path, "%s/training_args.json", tmp);
        st = ct_args_save_json(t->args, path);
        test_pause();
    }
    if (st == CT_OK) /* last: the folder is whole */
        st = put_text(tmp, MARKER, strdup("complete\n"));
    if (st == CT_OK && (st = ct__fsync_dir(tmp)) == CT_OK) {
        int moved = 0;
        /* An older folder of the same step (a resumed run) steps aside, and
         * comes back if the new one cannot take its place. */
        snprintf(trash, sizeof trash, "%s.old", tmp);
        if (stat(final, &sb) == 0) {
            if (rename(final, trash) != 0)
                st = ct__error(CT_ERR_IO, "%s: cannot replace: %s", final, strerror(errno));
            else
                moved = 1;
        }
        if (st == CT_OK && rename(tmp, final) != 0) {
            st = ct__error(CT_ERR_IO, "%s: cannot rename into place: %s", final, strerror(errno));
            if (moved && rename(trash, final) != 0)
                ct__log(CT_LOG_ERROR, "%s could not be put back: it is kept as %s", final, trash);
            moved = 0; /* restored, or kept under its .old name: never deleted */
        }
        if (st == CT_OK)
            st = ct__fsync_dir(out);
        if (moved)
            remove_tree(trash);
    }
    if (st != CT_OK) {
        remove_tree(tmp);
        return ct__error_prefix(st, "checkpoint at step %lld", (long long)t->global_step);
    }
    snprintf(path_out, path_size, "%s", final);
    rotate(t);
    return CT_OK;
}

/* ---- resuming ----------------------------------------------------------------- */

static int truthy(const char *s)
{
    return strcasecmp(s, "true") == 0 || strcasecmp(s, "yes") == 0 || strcmp(s, "1") == 0;
}

static ct_status get_i64(const ct__json *root, const char *file, const char *key, int64_t *out)
{
    const ct__json *v = ct__json_get(root, key);
    if (!v || !ct__json_int64(v, out))
        return ct__error(CT_ERR_FORMAT, "%s: key '%s' is missing or not an integer", file, key);
    return CT_OK;
}

/* The dropout generator's seed and position are written as unsigned 64-bit
 * numbers (a negative --seed makes a seed above 2^63). */
static ct_status get_u64(const ct__json *root, const char *file, const char *key, uint64_t *out)
{
    const ct__json *v = ct__json_get(root, key);
    if (!v || !ct__json_uint64(v, out))
        return ct__error(CT_ERR_FORMAT, "%s: key '%s' is missing or not an unsigned 64-bit "
                                        "integer", file, key);
    return CT_OK;
}

/* Masks have been keyed by example (ct_batch_set_example_ids) since after 0.1.0;
 * a checkpoint without the field drew them by rank and step. It resumes,
 * but with example-keyed masks from here, so it cannot repeat what the
 * interrupted run would have done: said once, by rank 0. */
static ct_status check_dropout_masks(const ct_trainer *t, const ct__json *r, const char *file)
{
    const ct__json *v = ct__json_get(r, "dropout_masks");
    if (!v) {
        if (t->rank == 0)
            ct__log(CT_LOG_WARNING, "%s was written before dropout masks were keyed by example: "
                                    "resuming with masks by example, so the rest of the run "
                                    "differs from what the interrupted run would have done",
                    file);
        return CT_OK;
    }
    if (v->type != CT_JSON_STRING || strcmp(v->str, "by_example") != 0)
        return ct__error(CT_ERR_FORMAT, "%s: dropout_masks is not \"by_example\", the only "
                                        "kind this version draws", file);
    return CT_OK;
}

/* A data_seed other than the checkpoint's draws the epochs from here in
 * another order than the run that began them: the epoch in progress then
 * sees some examples twice and others not at all. Trainer lets that pass
 * unsaid; here rank 0 says it. */
static ct_status check_data_seed(const ct_trainer *t, const ct__json *r, const char *file,
                                 int64_t batch_in_epoch)
{
    uint64_t was;
    ct_status st;
    if (!ct__json_get(r, "data_seed"))
        return CT_OK; /* not recorded: nothing to compare with */
    if ((st = get_u64(r, file, "data_seed", &was)) != CT_OK)
        return st;
    if (was != t->data_seed && t->rank == 0)
        ct__log(CT_LOG_WARNING, "%s: the checkpoint's data order came from data_seed %llu, "
                                "this run's from %llu: %s", file, (unsigned long long)was,
                (unsigned long long)t->data_seed,
                batch_in_epoch > 0 ? "the rest of the epoch in progress is drawn in another "
                                     "order, so some of its examples are trained on twice and "
                                     "others not at all"
                                   : "the epochs to come are drawn in another order than the "
                                     "interrupted run's");
    return CT_OK;
}

static ct_status get_f64(const ct__json *root, const char *file, const char *key, double *out)
{
    const ct__json *v = ct__json_get(root, key);
    if (!v || v->type != CT_JSON_NUMBER)
        return ct__error(CT_ERR_FORMAT, "%s: key '%s' is missing or not a number", file, key);
    *out = v->num;
    return CT_OK;
}

/* EarlyStoppingCallback's count in stateful_callbacks (0 when the
 * checkpoint has none: a run without early stopping, or an older file). */
static ct_status get_early_counter(const ct__json *s, const char *file, int64_t *counter)
{
    const ct__json *v = ct__json_get(s, "stateful_callbacks");
    *counter = 0;
    if (v && v->type == CT_JSON_OBJECT && (v = ct__json_get(v, "EarlyStoppingCallback")) &&
        v->type == CT_JSON_OBJECT && (v = ct__json_get(v, "attributes")) &&
        v->type == CT_JSON_OBJECT &&
        (v = ct__json_get(v, "early_stopping_patience_counter")) &&
        (!ct__json_int64(v, counter) || *counter < 0 || *counter > CT__STEP_MAX))
        return ct__error(CT_ERR_FORMAT, "%s: stateful_callbacks.EarlyStoppingCallback."
                                        "attributes.early_stopping_patience_counter is not a "
                                        "count", file);
    return CT_OK;
}

/* best_global_step, best_metric and best_model_checkpoint (each may be
 * null; checkpoints of versions before load_best_model_at_end lack them). */
static ct_status get_best(const ct__json *s, const char *file, int64_t *step, int *has_metric,
                          double *metric, char **checkpoint)
{
    const ct__json *v = ct__json_get(s, "best_global_step");
    *step = 0;
    *has_metric = 0;
    *checkpoint = NULL;
    if (v && v->type != CT_JSON_NULL && (!ct__json_int64(v, step) || *step < 0))
        return ct__error(CT_ERR_FORMAT, "%s: best_global_step is not null or a step", file);
    if ((v = ct__json_get(s, "best_metric")) && v->type != CT_JSON_NULL) {
        if (v->type != CT_JSON_NUMBER)
            return ct__error(CT_ERR_FORMAT, "%s: best_metric is not null or a number", file);
        *has_metric = 1;
        *metric = v->num;
    }
    if ((v = ct__json_get(s, "best_model_checkpoint")) && v->type != CT_JSON_NULL) {
        if (v->type != CT_JSON_STRING || strlen(v->str) != v->len)
            return ct__error(CT_ERR_FORMAT, "%s: best_model_checkpoint is not null or a path",
                             file);
        if (!(*checkpoint = strdup(v->str)))
            return ct__error(CT_ERR_NOMEM, "out of memory");
    }
    return CT_OK;
}

/* best_model_checkpoint as Trainer writes it, <output_dir>/checkpoint-<best
 * step>: the step is taken from its name (best_global_step is null in
 * checkpoints of older Transformers) and must agree with best_global_step
 * and come before global_step; the folder is then this run's output_dir's,
 * wherever the recorded path led (load_best_model_at_end reads it and the
 * rotation keeps it). */
static ct_status best_in_output_dir(const ct_trainer *t, const char *file, int64_t global_step,
                                    int64_t *best_step, char **best_dir)
{
    const char *base = strrchr(*best_dir, '/');
    int64_t named = checkpoint_step(base ? base + 1 : *best_dir);
    char *anchored = NULL;
    if (named < 0 || named > global_step || (*best_step > 0 && named != *best_step))
        return ct__error(CT_ERR_FORMAT, "%s: best_model_checkpoint '%s' is not a checkpoint-N "
                         "folder of best_global_step %lld at or before global_step %lld", file,
                         *best_dir, (long long)*best_step, (long long)global_step);
    if (asprintf(&anchored, "%s/" PREFIX "%lld", A_STR(output_dir), (long long)named) < 0)
        return ct__error(CT_ERR_NOMEM, "out of memory");
    free(*best_dir);
    *best_dir = anchored;
    *best_step = named;
    return CT_OK;
}

/* log_history's entries as Trainer writes them, flat objects of numbers,
 * strings, booleans and nulls: anything else (nesting 500 deep grows
 * each time it is written back indented) is refused. */
static ct_status check_history(const ct__json *hist, const char *file)
{
    for (size_t i = 0; i < hist->n; i++) {
        const ct__json *e = &hist->items[i];
        if (e->type != CT_JSON_OBJECT)
            return ct__error(CT_ERR_FORMAT, "%s: log_history[%zu] is not an object", file, i);
        for (size_t k = 0; k < e->n; k++) {
            ct__json_type ty = e->members[k].value.type;
            if (ty == CT_JSON_OBJECT || ty == CT_JSON_ARRAY)
                return ct__error(CT_ERR_FORMAT, "%s: log_history[%zu][\"%s\"] is %s, not a "
                                 "logged value", file, i, e->members[k].key,
                                 ct__json_type_phrase(ty));
        }
    }
    return CT_OK;
}

int ct__checkpoint_newest(const char *output_dir, char *path, size_t size)
{
    found *list;
    size_t n = list_checkpoints(output_dir, &list);
    int fits = n > 0 && snprintf(path, size, "%s/%s", output_dir, list[n - 1].name) < (int)size;
    free(list);
    return fits;
}

int64_t ct__checkpoint_step_of(const char *name)
{
    return checkpoint_step(name);
}

ct_status ct__checkpoint_resume_dir(const ct_trainer *t, char *dir, size_t size)
{
    const char *spec = A_STR(resume_from_checkpoint), *out = A_STR(output_dir);
    if (truthy(spec)) {
        found *list;
        size_t n = list_checkpoints(out, &list);
        if (n == 0) {
            free(list);
            return ct__error(CT_ERR_NOT_FOUND,
                             "resume_from_checkpoint: no complete checkpoint in %s", out);
        }
        ct_status st = ct__path_format(dir, size, "%s/%s", out, list[n - 1].name);
        free(list);
        if (st != CT_OK)
            return ct__error_prefix(st, "resume_from_checkpoint");
    } else {
        ct_status st = ct__path_format(dir, size, "%s", spec);
        if (st != CT_OK)
            return ct__error_prefix(st, "resume_from_checkpoint");
        struct stat sb;
        if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            return ct__error(CT_ERR_NOT_FOUND, "resume_from_checkpoint: there is no folder %s",
                             dir);
        if (!is_complete(dir))
            return ct__error(CT_ERR_FORMAT, "resume_from_checkpoint: %s is not a complete "
                                            "checkpoint (no %s)", dir, MARKER);
    }
    return CT_OK;
}

ct_status ct__checkpoint_resume(ct_trainer *t)
{
    char dir[4096], path[4200];
    ct__json_doc *state = NULL, *rng = NULL;
    const ct__json *s, *r, *hist;
    int64_t global_step = 0, epoch_index = 0, batch_in_epoch = 0, last_logged = 0;
    int64_t steps_counted = 0;
    uint64_t dstep = 0, dseed = 0;
    double epoch = 0, flos = 0, loss_since = 0, loss_all = 0, best_metric = 0;
    int64_t best_step = 0, early_counter = 0;
    int has_best = 0;
    char *best_dir = NULL;
    ct_status st;

    if ((st = ct__checkpoint_resume_dir(t, dir, sizeof dir)) != CT_OK)
        return st;
    snprintf(path, sizeof path, "%s/rng_state.json", dir);
    if ((st = ct__json_parse_file_ex(path, CT__JSON_ALLOW_NAN, &rng)) != CT_OK)
        return ct__error_prefix(st, "resume_from_checkpoint (a model-only checkpoint cannot be "
                                    "resumed)");
    snprintf(path, sizeof path, "%s/trainer_state.json", dir);
    if ((st = ct__json_parse_file_ex(path, CT__JSON_ALLOW_NAN, &state)) != CT_OK) {
        ct__json_free(rng);
        return st;
    }
    s = ct__json_root(state);
    r = ct__json_root(rng);
    hist = ct__json_get(s, "log_history");
    snprintf(path, sizeof path, "%s/rng_state.json", dir);
    if ((st = get_i64(r, path, "epoch_index", &epoch_index)) != CT_OK ||
        (st = get_i64(r, path, "batch_in_epoch", &batch_in_epoch)) != CT_OK ||
        (st = get_i64(r, path, "last_logged_step", &last_logged)) != CT_OK ||
        (st = get_i64(r, path, "steps_counted", &steps_counted)) != CT_OK ||
        (st = get_u64(r, path, "dropout_step", &dstep)) != CT_OK ||
        (st = get_u64(r, path, "dropout_seed", &dseed)) != CT_OK ||
        (st = get_f64(r, path, "loss_since_log", &loss_since)) != CT_OK ||
        (st = get_f64(r, path, "loss_sum_all", &loss_all)) != CT_OK)
        goto done;
    snprintf(path, sizeof path, "%s/trainer_state.json", dir);
    if ((st = get_i64(s, path, "global_step", &global_step)) != CT_OK ||
        (st = get_f64(s, path, "epoch", &epoch)) != CT_OK ||
        (st = get_f64(s, path, "total_flos", &flos)) != CT_OK ||
        (st = get_best(s, path, &best_step, &has_best, &best_metric, &best_dir)) != CT_OK ||
        (st = get_early_counter(s, path, &early_counter)) != CT_OK)
        goto done;
    if (!hist || hist->type != CT_JSON_ARRAY) {
        st = ct__error(CT_ERR_FORMAT, "%s: no log_history array", path);
        goto done;
    }
    if ((st = check_history(hist, path)) != CT_OK)
        goto done;
    /* Every number is held to what it feeds and to the others: a value
     * that does not add up is refused here by file and field, before it
     * can wrap a counter or resume another run's position. */
    if (global_step < 0 || global_step > CT__STEP_MAX) {
        st = ct__error(CT_ERR_FORMAT, "%s: global_step %lld is out of range (0..%lld)", path,
                       (long long)global_step, (long long)CT__STEP_MAX);
        goto done;
    }
    if (!isfinite(epoch) || epoch < 0 || !isfinite(flos) || flos < 0) {
        st = ct__error(CT_ERR_FORMAT, "%s: %s %g is not a finite number >= 0", path,
                       !isfinite(epoch) || epoch < 0 ? "epoch" : "total_flos",
                       !isfinite(epoch) || epoch < 0 ? epoch : flos);
        goto done;
    }
    if (best_step > global_step) {
        st = ct__error(CT_ERR_FORMAT, "%s: best_global_step %lld is after global_step %lld",
                       path, (long long)best_step, (long long)global_step);
        goto done;
    }
    /* The folder's own name is its step: the rotation of old checkpoints
     * takes the newest by name, and a name ahead of the state would be kept
     * while every newer checkpoint is deleted. */
    {
        const char *base = strrchr(dir, '/');
        int64_t named = checkpoint_step(base ? base + 1 : dir);
        if (named >= 0 && named != global_step) {
            st = ct__error(CT_ERR_FORMAT, "%s: global_step %lld, but the folder is named for "
                           "step %lld", path, (long long)global_step, (long long)named);
            goto done;
        }
    }
    if (best_dir && (st = best_in_output_dir(t, path, global_step, &best_step, &best_dir)) !=
                        CT_OK)
        goto done;
    snprintf(path, sizeof path, "%s/rng_state.json", dir);
    if (last_logged < 0 || last_logged > global_step || steps_counted < 0 ||
        steps_counted > global_step) {
        st = ct__error(CT_ERR_FORMAT, "%s: last_logged_step %lld and steps_counted %lld do not "
                       "fit trainer_state.json's global_step %lld", path, (long long)last_logged,
                       (long long)steps_counted, (long long)global_step);
        goto done;
    }
    /* Each epoch ends with an optimizer step, and `epoch` runs from the
     * epoch's index to the next. */
    if (epoch_index < 0 || epoch_index > global_step ||
        !(epoch >= (double)epoch_index && epoch <= (double)epoch_index + 1)) {
        st = ct__error(CT_ERR_FORMAT, "%s: epoch_index %lld does not fit trainer_state.json's "
                       "global_step %lld and epoch %g", path, (long long)epoch_index,
                       (long long)global_step, epoch);
        goto done;
    }
    if ((st = ct__elastic_position(t, r, path, &batch_in_epoch)) != CT_OK)
        goto done;
    if ((st = check_dropout_masks(t, r, path)) != CT_OK ||
        (st = check_data_seed(t, r, path, batch_in_epoch)) != CT_OK)
        goto done;
    if (batch_in_epoch < 0 || batch_in_epoch > t->batches_per_epoch || epoch_index < 0) {
        st = ct__error(CT_ERR_FORMAT,
                       "%s/rng_state.json: position (epoch %lld, batch %lld) does not fit this "
                       "training set (%lld batches per epoch)", dir, (long long)epoch_index,
                       (long long)batch_in_epoch, (long long)t->batches_per_epoch);
        goto done;
    }
    /* The optimizer's files checked, then the weights checked and copied,
     * then the optimizer's copied: a refusal of either changes neither. */
    if ((st = ct__optim_load_dir(t->optim, dir, global_step, 0)) != CT_OK ||
        (st = ct__model_load_weights(t->model, dir, 0, 1, 0)) != CT_OK ||
        (st = ct__optim_load_dir(t->optim, dir, global_step, 1)) != CT_OK)
        goto done;
    t->optim->total_steps = t->max_steps;
    t->global_step = global_step;
    t->epoch = epoch;
    t->total_flos = flos;
    t->epoch_index = epoch_index;
    t->batch_in_epoch = batch_in_epoch;
    t->last_logged_step = last_logged;
    t->steps_counted = steps_counted;
    t->loss_since_log = loss_since;
    t->loss_sum_all = loss_all;
    t->model->dropout_seed = dseed;
    t->model->dropout_step = dstep;
    t->best_global_step = best_step;
    t->has_best = has_best;
    t->best_metric = best_metric;
    t->early_counter = early_counter;
    free(t->best_model_checkpoint);
    t->best_model_checkpoint = best_dir;
    best_dir = NULL;
    ct__sb_free(&t->history);
    for (size_t i = 0; i < hist->n; i++) {
        if (i)
            ct__sb_puts(&t->history, ",\n    ");
        ct__json_write_value(&t->history, &hist->items[i], 2);
    }
    ct__log(CT_LOG_INFO, "resuming from %s at step %lld (epoch %lld, batch %lld)", dir,
            (long long)global_step, (long long)epoch_index, (long long)batch_in_epoch);
done:
    free(best_dir);
    ct__json_free(state);
    ct__json_free(rng);
    return st;
}
