/* ct_workflow_write_model_card: output_dir/README.md as Trainer's
 * create_model_card writes it at the end of an example script — what the
 * model was trained from and on, its evaluation results and the
 * hyperparameters — saying it was trained with libcputrain. Names come
 * from the user and the files (a folder, a dataset, a metric), so each is
 * written as one YAML scalar in the front matter and as one line of text
 * in the Markdown: a name cannot add a metadata key or a section. */
#include "workflow/workflow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "args/args_internal.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/strbuf.h"
#include "core/utf8.h"

#define A_I(f) ct__args_int(wf->args, CT_A_##f)
#define A_F(f) ct__args_float(wf->args, CT_A_##f)
#define A_S(f) ct__args_string(wf->args, CT_A_##f)

/* "eval_exact_match" -> "Exact Match", as Transformers titles a result. */
static void title_of(const char *metric, char *out, size_t size)
{
    size_t n = 0;
    int start = 1;
    if (!strncmp(metric, "eval_", 5))
        metric += 5;
    for (; *metric && n + 1 < size; metric++) {
        char c = *metric == '_' ? ' ' : *metric;
        out[n++] = start && c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
        start = c == ' ';
    }
    out[n] = '\0';
}

/* ---- YAML scalars, as yaml.dump (Trainer's card) writes them ---------------- */

static int ascii_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* A name YAML 1.1 (PyYAML, which reads the Hub's metadata) could take for
 * a number, a date or a sexagesimal: it starts with a digit or '.' and holds
 * only what those forms are made of. Wider than the forms themselves: such
 * a name is quoted, which reads back the same. */
static int may_resolve_to_number(const char *s)
{
    if (!((*s >= '0' && *s <= '9') || *s == '.'))
        return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || strchr("_.:+- abcdefABCDEFxXoOtTzZiInN", *s)))
            return 0;
    return 1;
}

/* yaml.dump leaves a string plain when it reads back as that string.
 * Checked narrowly: letters, digits, '_', '.', '/', '-', '+' and inner
 * spaces, not a word YAML reads as a boolean or null, not a number, not a
 * document marker. Every ordinary model and dataset name passes; anything
 * else is quoted. */
static int yaml_plain(const char *s)
{
    static const char *const words[] = {"yes", "no", "true", "false", "on", "off", "null",
                                        "y", "n"};
    size_t n = strlen(s);
    if (!n || s[n - 1] == ' ' || !strncmp(s, "---", 3) || !strncmp(s, "...", 3) ||
        may_resolve_to_number(s) || !(ascii_alnum(s[0]) || strchr("_./", s[0])))
        return 0;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (!strcasecmp(s, words[i]))
            return 0;
    for (; *s; s++)
        if (!ascii_alnum(*s) && !strchr("_./-+ ", *s))
            return 0;
    return 1;
}

static int printable_ascii(const char *s)
{
    for (; *s; s++)
        if (*s < 0x20 || *s > 0x7e)
            return 0;
    return 1;
}

/* A double-quoted scalar with yaml.dump's escapes (allow_unicode off):
 * everything outside printable ASCII, '"' and '\\' escaped, so no line
 * break reaches the file. A byte that is not UTF-8 is U+FFFD. */
static void yaml_double_quoted(ct__strbuf *sb, const char *s)
{
    static const char short_escapes[][2] = {{0, '0'},    {7, 'a'},    {8, 'b'},  {9, 't'},
                                            {10, 'n'},   {11, 'v'},   {12, 'f'}, {13, 'r'},
                                            {27, 'e'},   {'"', '"'},  {'\\', '\\'}};
    const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
    ct__sb_puts(sb, "\"");
    while (p < end) {
        uint32_t cp = *p;
        size_t n = cp < 0x80 ? 1 : ct__utf8_decode(p, (size_t)(end - p), &cp);
        char esc = 0;
        if (n == 0)
            cp = 0xFFFD, n = 1;
        p += n;
        for (size_t i = 0; i < sizeof short_escapes / sizeof *short_escapes; i++)
            if (cp == (unsigned char)short_escapes[i][0])
                esc = short_escapes[i][1];
        if (esc)
            ct__sb_printf(sb, "\\%c", esc);
        else if (cp >= 0x20 && cp <= 0x7e)
            ct__sb_printf(sb, "%c", (char)cp);
        else if (cp == 0x85 || cp == 0xA0 || cp == 0x2028 || cp == 0x2029)
            ct__sb_printf(sb, "\\%c", cp == 0x85 ? 'N' : cp == 0xA0 ? '_' : cp == 0x2028 ? 'L' : 'P');
        else
            ct__sb_printf(sb, cp <= 0xFF ? "\\x%02X" : cp <= 0xFFFF ? "\\u%04X" : "\\U%08X",
                          (unsigned)cp);
    }
    ct__sb_puts(sb, "\"");
}

/* One YAML scalar for s: plain, else single-quoted (printable ASCII, ''
 * for '), else double-quoted, the order in which yaml.dump picks them. */
static void yaml_scalar(ct__strbuf *sb, const char *s)
{
    if (yaml_plain(s)) {
        ct__sb_puts(sb, s);
    } else if (printable_ascii(s)) {
        ct__sb_puts(sb, "'");
        for (; *s; s++)
            ct__sb_append(sb, *s == '\'' ? "''" : s, *s == '\'' ? 2 : 1);
        ct__sb_puts(sb, "'");
    } else {
        yaml_double_quoted(sb, s);
    }
}

/* ---- Markdown text -------------------------------------------------------------- */

/* s as text within one Markdown line: control characters (line breaks
 * among them) become spaces, '|' is escaped (a table cell stays one), '<'
 * and '>' are entities (no HTML, no end to the card's comment), a byte
 * that is not UTF-8 is U+FFFD (the card stays UTF-8). */
static void md_text(ct__strbuf *sb, const char *s)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
    while (p < end) {
        uint32_t cp;
        size_t n = *p < 0x80 ? 1 : ct__utf8_decode(p, (size_t)(end - p), &cp);
        if (n == 0)
            ct__sb_puts(sb, "\xEF\xBF\xBD"), n = 1;
        else if (*p < 0x20 || *p == 0x7f)
            ct__sb_puts(sb, " ");
        else if (*p == '|')
            ct__sb_puts(sb, "\\|");
        else if (*p == '<' || *p == '>')
            ct__sb_puts(sb, *p == '<' ? "&lt;" : "&gt;");
        else
            ct__sb_append(sb, (const char *)p, n);
        p += n;
    }
}

/* The model's name, as Trainer takes Path(output_dir).name: the last
 * component, trailing slashes and "." components ignored. */
static char *folder_name(const char *dir)
{
    size_t n = strlen(dir), start;
    for (;;) {
        while (n > 1 && dir[n - 1] == '/')
            n--;
        if (n >= 2 && dir[n - 1] == '.' && dir[n - 2] == '/')
            n -= 2;
        else
            break;
    }
    if (n == 1 && (dir[0] == '/' || dir[0] == '.'))
        n = 0;
    for (start = n; start > 0 && dir[start - 1] != '/';)
        start--;
    return strndup(dir + start, n - start);
}

static int left_out(const char *metric)
{
    size_t n = strlen(metric);
    return !strcmp(metric, "epoch") || (n >= 8 && !strcmp(metric + n - 8, "_samples"));
}

/* The YAML front matter: what Trainer's card puts there that applies. */
static void front_matter(ct__strbuf *sb, const char *name, const char *base, int fine_tuned,
                         const char *dataset, int dataset_is_named)
{
    ct__sb_puts(sb, "---\nlibrary_name: transformers\n");
    if (*base && fine_tuned) {
        ct__sb_puts(sb, "base_model: ");
        yaml_scalar(sb, base);
        ct__sb_puts(sb, "\n");
    }
    ct__sb_puts(sb, "tags:\n- generated_from_trainer\n- libcputrain\n");
    if (dataset_is_named) {
        ct__sb_puts(sb, "datasets:\n- ");
        yaml_scalar(sb, dataset);
        ct__sb_puts(sb, "\n");
    }
    ct__sb_puts(sb, "model-index:\n- name: ");
    yaml_scalar(sb, name);
    ct__sb_puts(sb, "\n  results: []\n---\n\n");
}

/* The title, what was trained from and on, and the evaluation results. */
static void summary(ct__strbuf *sb, const ct_workflow *wf, const char *name, const char *task,
                    const char *base, int fine_tuned, const char *dataset,
                    int dataset_is_named, const char *const *names, const double *values,
                    size_t n)
{
    ct__sb_puts(sb, "<!-- This model card was generated by libcputrain, as Transformers' ");
    md_text(sb, wf->script);
    ct__sb_puts(sb, " would. Proofread and complete it, then remove this comment. -->\n\n# ");
    md_text(sb, name);
    ct__sb_puts(sb, fine_tuned ? "\n\nThis model is a fine-tuned version of "
                               : "\n\nThis model was trained from scratch (configuration ");
    md_text(sb, base);
    ct__sb_puts(sb, fine_tuned ? " on " : ") on ");
    ct__sb_puts(sb, dataset_is_named ? "the " : "");
    md_text(sb, dataset);
    ct__sb_puts(sb, " for ");
    md_text(sb, task);
    ct__sb_puts(sb, dataset_is_named ? " dataset.\n" : ".\n");
    if (n)
        ct__sb_puts(sb, "It achieves the following results on the evaluation set:\n");
    for (size_t i = 0; i < n; i++) {
        char title[128];
        if (!names[i] || left_out(names[i]))
            continue;
        title_of(names[i], title, sizeof title);
        ct__sb_puts(sb, "- ");
        md_text(sb, title);
        ct__sb_printf(sb, ": %.4f\n", values[i]);
    }
}

/* The hyperparameters as Trainer lists them, and the training's loss. */
static void procedure(ct__strbuf *sb, const ct_workflow *wf, const ct_trainer *trainer)
{
    int64_t bs = A_I(per_device_train_batch_size), ga = A_I(gradient_accumulation_steps);
    ct__sb_printf(sb, "\n## Training procedure\n\nTrained on the CPU with libcputrain %s (the "
                      "counterpart of Transformers' ", ct_version_string());
    md_text(sb, wf->script);
    ct__sb_printf(sb, " and Trainer); the files are Transformers' own and load with "
                      "from_pretrained.\n\n### Training hyperparameters\n\nThe following "
                      "hyperparameters were used during training:\n- learning_rate: %g\n"
                      "- train_batch_size: %lld\n- eval_batch_size: %lld\n- seed: %lld\n",
                  A_F(learning_rate), (long long)bs, (long long)A_I(per_device_eval_batch_size),
                  (long long)A_I(seed));
    if (wf->world > 1)
        ct__sb_printf(sb, "- distributed_type: multi-CPU\n- num_devices: %d\n", wf->world);
    if (ga > 1)
        ct__sb_printf(sb, "- gradient_accumulation_steps: %lld\n", (long long)ga);
    if (ga > 1 || wf->world > 1)
        ct__sb_printf(sb, "- total_train_batch_size: %lld\n", (long long)(bs * ga * wf->world));
    ct__sb_puts(sb, "- optimizer: ");
    md_text(sb, A_S(optim));
    ct__sb_printf(sb, " with betas=(%g,%g) and epsilon=%g\n- lr_scheduler_type: ",
                  A_F(adam_beta1), A_F(adam_beta2), A_F(adam_epsilon));
    md_text(sb, A_S(lr_scheduler_type));
    ct__sb_puts(sb, "\n");
    if (A_F(warmup_ratio) != 0)
        ct__sb_printf(sb, "- lr_scheduler_warmup_ratio: %g\n", A_F(warmup_ratio));
    if (A_I(warmup_steps) != 0)
        ct__sb_printf(sb, "- lr_scheduler_warmup_steps: %lld\n", (long long)A_I(warmup_steps));
    if (A_I(max_steps) > 0)
        ct__sb_printf(sb, "- training_steps: %lld\n", (long long)A_I(max_steps));
    else
        ct__sb_printf(sb, "- num_epochs: %g\n", A_F(num_train_epochs));
    if (ct__args_bool(wf->args, CT_A_bf16))
        ct__sb_puts(sb, "- mixed_precision_training: bf16 (bf16 matrix products, fp32 master "
                        "weights; saved in float32)\n");
    ct__sb_printf(sb, "\n### Training results\n\n- Training loss: %.4f after %lld steps\n",
                  ct_trainer_train_loss(trainer), (long long)ct_trainer_global_step(trainer));
    ct__sb_printf(sb, "\n### Framework versions\n\n- libcputrain %s\n", ct_version_string());
}

ct_status ct_workflow_write_model_card(const ct_workflow *wf, const ct_trainer *trainer,
                                       const char *task, const char *base, int fine_tuned,
                                       const char *dataset, int dataset_is_named,
                                       const char *const *names, const double *values,
                                       size_t n)
{
    ct__strbuf sb = {0};
    char *path, *name;
    ct_status st;
    CT__CHECK_ARG(wf);
    CT__CHECK_ARG(trainer);
    CT__CHECK_ARG(task);
    if (n && (!names || !values))
        return ct__error(CT_ERR_INVALID_ARG, "ct_workflow_write_model_card: %zu metrics "
                         "without names or values", n);
    if (wf->rank != 0)
        return CT_OK;
    base = base ? base : "";
    dataset = dataset ? dataset : "";
    if (!(name = folder_name(A_S(output_dir))))
        return ct__error(CT_ERR_NOMEM, "model card: out of memory");
    front_matter(&sb, name, base, fine_tuned, dataset, dataset_is_named);
    summary(&sb, wf, name, task, base, fine_tuned, dataset, dataset_is_named, names, values, n);
    procedure(&sb, wf, trainer);
    free(name);
    if (!(path = ct__join_path(A_S(output_dir), "README.md"))) {
        ct__sb_free(&sb);
        return ct__error(CT_ERR_NOMEM, "model card: out of memory");
    }
    st = ct__write_text_atomic(path, &sb, "model card");
    free(path);
    return st;
}
