/* Where a run's model and tokenizer come from: a local folder (a Hub id
 * already made one by script_resolve_hub), a config.json, or a built-in
 * configuration; and what to say when a name is none of them — a folder
 * without the file, a path that is not there, or a Hub id the Hub did not
 * give. */
#include "script.h"

#include <stdio.h>
#include <sys/stat.h>

int script_file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static void not_local(const char *option, const char *name, const char *wanted)
{
    struct stat sb;
    if (stat(name, &sb) == 0 && S_ISDIR(sb.st_mode))
        fprintf(stderr, "%s: --%s %s: the folder has no %s\n", script_prog, option, name, wanted);
    else if (script_hub_miss[0])
        fprintf(stderr, "%s: --%s %s: %s\n", script_prog, option, name, script_hub_miss);
    else
        fprintf(stderr, "%s: --%s %s: no such file or folder\n", script_prog, option, name);
}

int script_make_model(const char *model_name_or_path, const char *config_name, ct_task task,
                      const ct_model_options *options, uint64_t seed, int rank, ct_model **out,
                      int *from_folder)
{
    const char *src = config_name ? config_name : model_name_or_path;
    const char *option = config_name ? "config_name" : "model_name_or_path";
    char cfg[4200], src_cfg[4200];
    struct stat sb;
    ct_status st;
    snprintf(cfg, sizeof cfg, "%s/config.json", model_name_or_path ? model_name_or_path : "");
    snprintf(src_cfg, sizeof src_cfg, "%s/config.json", src);
    *from_folder = model_name_or_path && script_file_exists(cfg);
    if (*from_folder)
        st = ct_model_load_with_options(model_name_or_path, task, seed, options, out);
    else if (stat(src, &sb) == 0 && S_ISREG(sb.st_mode))
        /* a config.json: fresh weights */
        st = ct_model_create_with_options(src, task, seed, options, out);
    else if (config_name && script_file_exists(src_cfg))
        /* --config_name as a folder, as AutoConfig takes it */
        st = ct_model_create_with_options(src_cfg, task, seed, options, out);
    else if (stat(src, &sb) != 0 && (config_name || script_hub_miss[0]) &&
             ct_model_create_with_options(src, task, seed, options, out) == CT_OK) {
        if (!config_name && rank == 0)
            fprintf(stderr,
                    "%s: WARNING: --model_name_or_path %s: the Hub did not give it (%s). "
                    "Using the library's built-in configuration of that name with RANDOM "
                    "weights, so this run does not fine-tune the pre-trained model. To do "
                    "that, run once with network access (or HF_ENDPOINT set to a mirror), or "
                    "pass a local folder.\n", script_prog, src, script_hub_miss);
        return 0;
    } else {
        not_local(option, src, "config.json");
        return -1;
    }
    return st == CT_OK ? 0 : (script_fail("model", st), -1);
}

int script_load_tokenizer(const char *tokenizer_name, const char *model_name_or_path,
                          ct_tokenizer **out)
{
    const char *t = tokenizer_name ? tokenizer_name : model_name_or_path;
    const char *option = tokenizer_name ? "tokenizer_name" : "model_name_or_path";
    char vocab[4200];
    struct stat sb;
    ct_status st;
    if (!t) {
        fprintf(stderr, "%s: --tokenizer_name is needed with --config_name\n", script_prog);
        return -1;
    }
    snprintf(vocab, sizeof vocab, "%s/vocab.txt", t);
    if (stat(t, &sb) != 0 || (S_ISDIR(sb.st_mode) && !script_file_exists(vocab))) {
        not_local(option, t, "vocab.txt (give --tokenizer_name with a folder that has one)");
        return -1;
    }
    if ((st = ct_tokenizer_load(t, out)) != CT_OK)
        return script_fail("tokenizer", st), -1;
    return 0;
}

int script_load_table(const char *file, ct_table **out)
{
    ct_status st = ct_table_load(file, out);
    return st == CT_OK ? 0 : (script_fail(file, st), -1);
}

int script_place(ct_model *model, const ct_dist *dist)
{
    ct_placement *p = NULL;
    ct_status st;
    if ((st = ct_placement_create(NULL, ct_dist_local_rank(dist), ct_dist_local_world_size(dist),
                                  0, &p)) == CT_OK)
        st = ct_model_set_placement(model, p);
    ct_placement_free(p); /* the library logs the placement once, at info level */
    return st == CT_OK ? 0 : (script_fail("placement", st), -1);
}

int script_fit_tokenizer(const ct_model *model, const ct_tokenizer *tok, long *len, int rank)
{
    int64_t positions = -1, max_len = -1, limit, vocab = -1;
    size_t ids = ct_tokenizer_vocab_size(tok);
    ct_model_config_int(model, "vocab_size", &vocab);
    if (vocab > 0 && ids > (size_t)vocab) {
        fprintf(stderr, "%s: the tokenizer has %zu tokens but the model's embedding only "
                        "%lld (vocab_size): ids from %lld up would fall outside it. Use the "
                        "model's own tokenizer (--tokenizer_name), or a configuration whose "
                        "vocab_size is at least %zu\n", script_prog, ids, (long long)vocab,
                (long long)vocab, ids);
        return -1;
    }
    ct_model_config_int(model, "max_position_embeddings", &positions);
    ct_tokenizer_get_option(tok, CT_TOKENIZER_MODEL_MAX_LENGTH, &max_len);
    limit = max_len > 0 && (positions <= 0 || max_len < positions) ? max_len : positions;
    if (limit <= 0)
        return 0;
    if (*len <= 0) {
        *len = (long)limit;
    } else if (*len > limit) {
        if (rank == 0)
            fprintf(stderr, "%s: warning: the max_seq_length passed (%ld) is larger than the "
                            "maximum length for the model (%lld). Using max_seq_length=%lld.\n",
                    script_prog, *len, (long long)limit, (long long)limit);
        *len = (long)limit;
    }
    return 0;
}

int script_label_options(const char *const *labels, int n_labels, const char *problem_type,
                         int ignore_mismatched_sizes, ct_model_options **out)
{
    char count[16];
    ct_status st = ct_model_options_create(out);
    snprintf(count, sizeof count, "%d", n_labels);
    if (st == CT_OK)
        st = labels ? ct_model_options_set_labels(*out, labels, n_labels)
                    : ct_model_options_set(*out, "num_labels", count);
    if (st == CT_OK && problem_type)
        st = ct_model_options_set(*out, "problem_type", problem_type);
    if (st == CT_OK && ignore_mismatched_sizes)
        st = ct_model_options_set(*out, "ignore_mismatched_sizes", "true");
    if (st == CT_OK)
        return 0;
    ct_model_options_free(*out);
    *out = NULL;
    return script_fail("model options", st), -1;
}
