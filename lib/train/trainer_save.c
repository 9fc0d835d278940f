/* The trainer's saves: checkpoints at the save points (every rank's
 * optimizer shard with them), the final model and result files, the best
 * checkpoint loaded back at the end; who writes, and every rank told how it
 * went. */
#include "train/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/json.h"
#include "data/dataset.h"
#include "model/model.h"
#include "optim/optim.h"
#include "train/ddp.h"
#include "train/metrics_file.h"

/* Whether this rank writes checkpoints and the final save (the ranks hold
 * the same state): rank 0, or with save_on_each_node the first rank of
 * every machine, for output_dirs that are not shared between machines. */
int ct__trainer_writes_files(const ct_trainer *t)
{
    return t->rank == 0 || (A_BOOL(save_on_each_node) && t->local_rank == 0);
}

/* optim_shard as given, else on with several ranks on shm, where the
 * reduce-scatter and the gather are memory copies that together move what
 * the allreduce did, and each rank does 1/N of AdamW: measured faster than
 * unsharded at every turn (bench/ddp_throughput.sh). Off on tcp, whose
 * gather is one broadcast per owner (one direction of each link at a time,
 * where the ring allreduce's second half uses both): measured within noise
 * of unsharded, sometimes slower. Off on mpi, whose reduce-scatter is an
 * allreduce, so the gather is extra traffic. Off with save_on_each_node:
 * machines that do not share output_dir would each hold only some of the
 * shards. */
int ct__trainer_optim_shard(const ct_trainer *t)
{
    if (ct__args_is_set(t->args, CT_A_optim_shard))
        return A_BOOL(optim_shard);
    return t->world > 1 && !A_BOOL(save_on_each_node) &&
           !strcmp(ct_dist_backend(t->dist), "shm");
}

static ct_status save_checkpoint_files(ct_trainer *t);

/* With a sharded optimizer, every rank writes its part: the others stage
 * theirs first, rank 0 moves them into its folder, and all learn the
 * outcome (a rank that could not write its shard fails every rank). */
ct_status ct__trainer_save_checkpoint(ct_trainer *t)
{
    ct_status st = ct__trainer_check_finite(t, "its checkpoint was");
    if (st != CT_OK)
        return st;
    if (!t->optim->dist || A_BOOL(save_only_model))
        return save_checkpoint_files(t);
    st = t->rank == 0 ? CT_OK : ct__checkpoint_stage_shard(t);
    if ((st = ct__trainer_all_agree(t, st, "write its optimizer shard")) != CT_OK)
        return ct__error_prefix(st, "checkpoint at step %lld", (long long)t->global_step);
    return ct__trainer_all_agree(t, save_checkpoint_files(t), "save the checkpoint");
}

static ct_status save_checkpoint_files(ct_trainer *t)
{
    char path[4096], *json;
    ct__strbuf sb = {0};
    ct_status st;
    /* _save_checkpoint: the best step's folder, once it exists (now, when
     * this step is the best), is best_model_checkpoint; every rank keeps
     * it, so that all load the same weights at the end. */
    if (t->best_global_step > 0) {
        ct__checkpoint_path(t, t->best_global_step, path, sizeof path);
        if (t->best_global_step == t->global_step || ct__checkpoint_is_complete(path)) {
            char *copy = strdup(path);
            if (!copy)
                return ct__error(CT_ERR_NOMEM, "out of memory");
            free(t->best_model_checkpoint);
            t->best_model_checkpoint = copy;
        }
    }
    if (!ct__trainer_writes_files(t)) {
        t->saved_step = t->global_step;
        return CT_OK;
    }
    if ((st = ct__checkpoint_save(t, path, sizeof path)) != CT_OK)
        return st;
    t->saved_step = t->global_step;
    ct__log(CT_LOG_INFO, "saved checkpoint %s", path);
    ct__sb_puts(&sb, "{\"checkpoint\": ");
    ct__json_write_string(&sb, path, strlen(path));
    ct__sb_puts(&sb, "}");
    if ((st = ct__sb_finish(&sb, "the SAVE event", &json)) != CT_OK)
        return st;
    st = ct__trainer_notify(t, CT_EVENT_SAVE, json);
    free(json);
    return st;
}

ct_status ct__trainer_save_state(const ct_trainer *t)
{
    char path[4096], *text = ct__trainer_state_json(t);
    ct_status st;
    if (!text)
        return ct__error(CT_ERR_NOMEM, "out of memory writing trainer_state.json");
    st = ct__path_format(path, sizeof path, "%s/trainer_state.json", A_STR(output_dir));
    if (st == CT_OK)
        st = ct__write_file_atomic(path, text, strlen(text));
    free(text);
    return st;
}

/* output_dir/train_results.json (merged into all_results.json),
 * trainer_state.json and the model. */
static ct_status final_save(ct_trainer *t, double runtime)
{
    const char *dir = A_STR(output_dir);
    ct_status st;
    int64_t samples = t->global_step * A_INT(per_device_train_batch_size) *
                      A_INT(gradient_accumulation_steps) * t->world;
    if ((st = ct_model_save(t->model, dir, CT_DTYPE_F32)) != CT_OK ||
        (t->tokenizer && (st = ct_tokenizer_save(t->tokenizer, dir)) != CT_OK))
        return st;
    {
        char path[4096];
        if ((st = ct__path_format(path, sizeof path, "%s/training_args.json", dir)) != CT_OK ||
            (st = ct_args_save_json(t->args, path)) != CT_OK)
            return st;
    }
    {
        /* run_qa.py's trainer.save_metrics("train", metrics), with
         * train_samples added as it does. */
        ct__metric m[8] = {
            {"epoch", t->epoch, 0},
            {"total_flos", t->total_flos, 0},
            {"train_loss", ct_trainer_train_loss(t), 0},
            {"train_runtime", ct__round_to(runtime, 4), 0},
            {"train_samples", (double)t->train->n, 1},
            {"train_samples_per_second", ct__round_to((double)samples / runtime, 3), 0},
            {"train_steps_per_second", ct__round_to((double)t->global_step / runtime, 3), 0},
            {"train_tokens_per_second", t->tokens_per_second, 0},
        };
        /* the last only with include_tokens_per_second, as Trainer */
        if ((st = ct__save_metrics(dir, "train", m, isnan(t->tokens_per_second) ? 7 : 8)) !=
            CT_OK)
            return st;
    }
    return ct__trainer_save_state(t);
}

/* Every rank's verdict on a step only some ranks do (the writing ranks'
 * work in output_dir), so that all return the same one: this rank's own
 * error text, or "rank r could not <what> (see its log)". */
ct_status ct__trainer_all_agree(ct_trainer *t, ct_status verdict, const char *what)
{
    int32_t mine = (int32_t)verdict, *all = t->verdicts;
    char saved_error[1024];
    ct_status st;
    if (t->world == 1)
        return verdict;
    snprintf(saved_error, sizeof saved_error, "%s", ct_last_error());
    st = ct_dist_allgather(t->dist, &mine, sizeof mine, all);
    for (int r = 0; st == CT_OK && r < t->world; r++)
        if (all[r] != CT_OK)
            st = r == t->rank ? ct__error((ct_status)mine, "%s", saved_error)
                              : ct__error((ct_status)all[r], "rank %d could not %s (see its log)",
                                          r, what);
    return st;
}


/* CT_ERR_NUMERIC naming the first tensor with a NaN or an infinity: a
 * model that is not finite is never useful, so it is never saved (over a
 * good one, or as a checkpoint to resume). Every rank holds the same
 * weights, so every rank reaches the same verdict. */
ct_status ct__trainer_check_finite(const ct_trainer *t, const char *what)
{
    const ct_model *m = t->model;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const float *p = m->params + m->tensors[i].offset;
        for (size_t j = 0; j < m->tensors[i].numel; j++)
            if (!isfinite(p[j]))
                return ct__error(CT_ERR_NUMERIC, "after step %lld the weights are not finite "
                                 "(%s[%zu] is %g): %s not saved to %s (a learning rate too "
                                 "large, adam_epsilon 0?)", (long long)t->global_step,
                                 m->tensors[i].name, j, (double)p[j], what, A_STR(output_dir));
    }
    return CT_OK;
}

/* The writing ranks save; every rank learns whether they managed. */
ct_status ct__trainer_final_save_all(ct_trainer *t, double runtime)
{
    ct_status st = ct__trainer_check_finite(t, "the model was");
    if (st != CT_OK)
        return st;
    return ct__trainer_all_agree(t, ct__trainer_writes_files(t) ? final_save(t, runtime) : CT_OK,
                     "save the model into output_dir");
}

/* load_best_model_at_end: the best checkpoint's weights replace the last
 * step's before the final save (Trainer's _load_best_model; the optimizer
 * state is not loaded). The writing ranks hold the checkpoint; then every
 * rank takes rank 0's weights — always, with several ranks, so that no rank
 * waits in a collective another skipped. */
ct_status ct__trainer_load_best_model(ct_trainer *t)
{
    ct_status st = CT_OK;
    if (!A_BOOL(load_best_model_at_end))
        return CT_OK;
    if (t->best_model_checkpoint) {
        if (t->rank == 0)
            ct__log(CT_LOG_INFO, "loading best model from %s (score: %g)",
                    t->best_model_checkpoint, t->best_metric);
        if (ct__trainer_writes_files(t))
            st = ct__model_load_weights(t->model, t->best_model_checkpoint, 0, 1, 0);
    }
    if ((st = ct__trainer_all_agree(t, st, "load the best checkpoint")) != CT_OK)
        return ct__error_prefix(st, "load_best_model_at_end");
    return t->ddp ? ct__ddp_sync_params(t->ddp) : CT_OK;
}
