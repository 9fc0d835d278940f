/* Model configuration from Hugging Face config.json (bert, distilbert), the
 * built-in named configurations, and config.json output. */
#include "model/config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"

#define CONFIG_MAX_BYTES (16u << 20)

/* ---- reading keys ----------------------------------------------------------- */

typedef struct reader {
    const ct__json *root;
    const char *what;
} reader;

static ct_status get_int(const reader *r, const char *key, int lo, int hi, int *out)
{
    const ct__json *v = ct__json_get(r->root, key);
    int64_t x;
    if (!v)
        return CT_OK; /* keep the default */
    if (v->type != CT_JSON_NUMBER)
        return ct__error(CT_ERR_FORMAT, "%s: key '%s': expected an integer, got %s", r->what,
                         key, ct__json_type_name(v->type));
    if (!ct__json_int64(v, &x))
        return ct__error(CT_ERR_FORMAT, "%s: key '%s': expected an integer in [%d, %d], got %s",
                         r->what, key, lo, hi, v->str);
    if (x < lo || x > hi)
        return ct__error(CT_ERR_FORMAT, "%s: key '%s': %lld is outside [%d, %d]", r->what, key,
                         (long long)x, lo, hi);
    *out = (int)x;
    return CT_OK;
}

/* A float key; null leaves *out as it is and sets *was_null when asked. */
static ct_status get_float(const reader *r, const char *key, float lo, float hi, float *out)
{
    const ct__json *v = ct__json_get(r->root, key);
    if (!v || v->type == CT_JSON_NULL)
        return CT_OK;
    if (v->type != CT_JSON_NUMBER)
        return ct__error(CT_ERR_FORMAT, "%s: key '%s': expected a number, got %s", r->what, key,
                         ct__json_type_name(v->type));
    if (!(v->num >= lo && v->num <= hi))
        return ct__error(CT_ERR_FORMAT, "%s: key '%s': %g is outside [%g, %g]", r->what, key,
                         v->num, lo, hi);
    *out = (float)v->num;
    return CT_OK;
}

static ct_status get_bool(const reader *r, const char *key, int *out)
{
    const ct__json *v = ct__json_get(r->root, key);
    if (!v)
        return CT_OK;
    if (v->type != CT_JSON_TRUE && v->type != CT_JSON_FALSE)
        return ct__error(CT_ERR_FORMAT, "%s: key '%s': expected true or false, got %s", r->what,
                         key, ct__json_type_name(v->type));
    *out = v->type == CT_JSON_TRUE;
    return CT_OK;
}

static ct_status get_problem(const reader *r, ct__problem *out)
{
    static const char *const names[] = {"regression", "single_label_classification",
                                        "multi_label_classification"};
    const ct__json *v = ct__json_get(r->root, "problem_type");
    if (!v || v->type == CT_JSON_NULL)
        return CT_OK;
    for (int i = 0; v->type == CT_JSON_STRING && i < 3; i++)
        if (strcmp(v->str, names[i]) == 0) {
            *out = (ct__problem)(CT__PROBLEM_REGRESSION + i);
            return CT_OK;
        }
    return ct__error(CT_ERR_FORMAT, "%s: key 'problem_type': expected null, \"regression\", "
                                    "\"single_label_classification\" or "
                                    "\"multi_label_classification\"",
                     r->what);
}

static ct_status get_act(const reader *r, const char *key, ct__act *out)
{
    const ct__json *v = ct__json_get(r->root, key);
    if (!v)
        return CT_OK;
    if (v->type == CT_JSON_STRING) {
        if (strcmp(v->str, "gelu") == 0) {
            *out = CT__ACT_GELU;
            return CT_OK;
        }
        if (strcmp(v->str, "gelu_new") == 0 || strcmp(v->str, "gelu_pytorch_tanh") == 0) {
            *out = CT__ACT_GELU_NEW;
            return CT_OK;
        }
        if (strcmp(v->str, "relu") == 0) {
            *out = CT__ACT_RELU;
            return CT_OK;
        }
    }
    return ct__error(CT_ERR_UNSUPPORTED,
                     "%s: key '%s': activation %s%s%s is not supported (gelu, gelu_new, "
                     "gelu_pytorch_tanh, relu)",
                     r->what, key, v->type == CT_JSON_STRING ? "'" : "",
                     v->type == CT_JSON_STRING ? v->str : ct__json_type_name(v->type),
                     v->type == CT_JSON_STRING ? "'" : "");
}

static void defaults(ct__config *c, ct__arch arch)
{
    memset(c, 0, sizeof *c);
    c->arch = arch;
    c->vocab_size = 30522;
    c->hidden_size = 768;
    c->num_layers = arch == CT__ARCH_BERT ? 12 : 6;
    c->num_heads = 12;
    c->intermediate_size = 3072;
    c->max_position = 512;
    c->type_vocab_size = arch == CT__ARCH_BERT ? 2 : 0;
    c->pad_token_id = 0;
    c->num_labels = 2;
    c->act = CT__ACT_GELU;
    c->layer_norm_eps = 1e-12f;
    c->initializer_range = 0.02f;
    c->hidden_dropout = 0.1f;
    c->attention_dropout = 0.1f;
    c->qa_dropout = arch == CT__ARCH_BERT ? -1.0f : 0.1f;
    c->seq_classif_dropout = arch == CT__ARCH_BERT ? -1.0f : 0.2f;
    c->classifier_dropout = -1.0f;
}

/* The shape rules the model code relies on. */
static ct_status check_shape(const ct__config *c, const char *what)
{
    if (c->hidden_size % c->num_heads != 0)
        return ct__error(CT_ERR_FORMAT,
                         "%s: hidden size %d is not a multiple of the number of attention "
                         "heads %d", what, c->hidden_size, c->num_heads);
    if (c->pad_token_id >= c->vocab_size)
        return ct__error(CT_ERR_FORMAT, "%s: pad_token_id %d is not below vocab_size %d", what,
                         c->pad_token_id, c->vocab_size);
    if (c->sinusoidal_pos && c->hidden_size % 2 != 0)
        return ct__error(CT_ERR_FORMAT, "%s: sinusoidal positions need an even dim (got %d)",
                         what, c->hidden_size);
    return CT_OK;
}

static ct_status read_bert(const reader *r, ct__config *c)
{
    ct_status st;
#define TRY(x) if ((st = (x)) != CT_OK) return st
    TRY(get_int(r, "vocab_size", 1, 1 << 24, &c->vocab_size));
    TRY(get_int(r, "hidden_size", 1, 1 << 16, &c->hidden_size));
    TRY(get_int(r, "num_hidden_layers", 0, 1024, &c->num_layers));
    TRY(get_int(r, "num_attention_heads", 1, 1024, &c->num_heads));
    TRY(get_int(r, "intermediate_size", 1, 1 << 18, &c->intermediate_size));
    TRY(get_int(r, "max_position_embeddings", 1, 1 << 20, &c->max_position));
    TRY(get_int(r, "type_vocab_size", 1, 1 << 16, &c->type_vocab_size));
    TRY(get_int(r, "pad_token_id", 0, 1 << 24, &c->pad_token_id));
    TRY(get_act(r, "hidden_act", &c->act));
    TRY(get_float(r, "layer_norm_eps", 0, 1, &c->layer_norm_eps));
    TRY(get_float(r, "initializer_range", 0, 10, &c->initializer_range));
    TRY(get_float(r, "hidden_dropout_prob", 0, 1, &c->hidden_dropout));
    TRY(get_float(r, "attention_probs_dropout_prob", 0, 1, &c->attention_dropout));
    TRY(get_float(r, "classifier_dropout", 0, 1, &c->classifier_dropout));
    {
        const ct__json *v = ct__json_get(r->root, "position_embedding_type");
        if (v && !(v->type == CT_JSON_STRING && strcmp(v->str, "absolute") == 0))
            return ct__error(CT_ERR_UNSUPPORTED,
                             "%s: key 'position_embedding_type': only \"absolute\" is supported",
                             r->what);
    }
    return CT_OK;
}

static ct_status read_distilbert(const reader *r, ct__config *c)
{
    ct_status st;
    TRY(get_int(r, "vocab_size", 1, 1 << 24, &c->vocab_size));
    TRY(get_int(r, "dim", 1, 1 << 16, &c->hidden_size));
    TRY(get_int(r, "n_layers", 0, 1024, &c->num_layers));
    TRY(get_int(r, "n_heads", 1, 1024, &c->num_heads));
    TRY(get_int(r, "hidden_dim", 1, 1 << 18, &c->intermediate_size));
    TRY(get_int(r, "max_position_embeddings", 1, 1 << 20, &c->max_position));
    TRY(get_int(r, "pad_token_id", 0, 1 << 24, &c->pad_token_id));
    TRY(get_act(r, "activation", &c->act));
    TRY(get_float(r, "initializer_range", 0, 10, &c->initializer_range));
    TRY(get_float(r, "dropout", 0, 1, &c->hidden_dropout));
    TRY(get_float(r, "attention_dropout", 0, 1, &c->attention_dropout));
    TRY(get_float(r, "qa_dropout", 0, 1, &c->qa_dropout));
    TRY(get_float(r, "seq_classif_dropout", 0, 1, &c->seq_classif_dropout));
    TRY(get_bool(r, "sinusoidal_pos_embds", &c->sinusoidal_pos));
    return CT_OK;
}

ct_status ct__config_parse(const char *text, size_t len, const char *what, ct__config *cfg)
{
    ct__json_doc *doc;
    const ct__json *root, *mt;
    reader r;
    ct_status st;
    ct__arch arch;

    memset(cfg, 0, sizeof *cfg);
    if ((st = ct__json_parse(text, len, what, &doc)) != CT_OK)
        return st;
    root = ct__json_root(doc);
    if (root->type != CT_JSON_OBJECT) {
        st = ct__error(CT_ERR_FORMAT, "%s: expected a JSON object, got %s", what,
                       ct__json_type_name(root->type));
        ct__json_free(doc);
        return st;
    }
    mt = ct__json_get(root, "model_type");
    if (!mt || mt->type != CT_JSON_STRING) {
        ct__json_free(doc);
        return ct__error(CT_ERR_FORMAT, "%s: key 'model_type' is missing or not a string", what);
    }
    if (strcmp(mt->str, "bert") == 0) {
        arch = CT__ARCH_BERT;
    } else if (strcmp(mt->str, "distilbert") == 0) {
        arch = CT__ARCH_DISTILBERT;
    } else {
        st = ct__error(CT_ERR_UNSUPPORTED,
                       "%s: model_type '%s' is not supported (bert, distilbert)", what, mt->str);
        ct__json_free(doc);
        return st;
    }
    defaults(cfg, arch);
    r.root = root;
    r.what = what;
    st = arch == CT__ARCH_BERT ? read_bert(&r, cfg) : read_distilbert(&r, cfg);
    if (st == CT_OK)
        st = get_problem(&r, &cfg->problem_type);
    /* Transformers derives num_labels from id2label when it is there. */
    if (st == CT_OK)
        st = ct__config_read_labels(root, what, cfg);
    if (st == CT_OK && !cfg->label_names)
        st = get_int(&r, "num_labels", 1, 1 << 20, &cfg->num_labels);
    if (st == CT_OK)
        st = check_shape(cfg, what);
    ct__json_free(doc);
    if (st != CT_OK)
        ct__config_free_labels(cfg);
    if (st == CT_OK) {
        cfg->head_dropout = arch == CT__ARCH_BERT
                                ? (cfg->classifier_dropout >= 0 ? cfg->classifier_dropout
                                                                : cfg->hidden_dropout)
                                : cfg->qa_dropout;
        cfg->source_json = malloc(len + 1);
        if (!cfg->source_json) {
            ct__config_free_labels(cfg);
            return ct__error(CT_ERR_NOMEM, "%s: out of memory", what);
        }
        memcpy(cfg->source_json, text, len);
        cfg->source_json[len] = '\0';
    }
#undef TRY
    return st;
}

ct_status ct__config_load(const char *path, ct__config *cfg)
{
    char *text;
    size_t len;
    ct_status st = ct__read_file(path, CONFIG_MAX_BYTES, &text, &len);
    memset(cfg, 0, sizeof *cfg);
    if (st != CT_OK)
        return st;
    st = ct__config_parse(text, len, path, cfg);
    free(text);
    return st;
}

/* ---- built-in configurations -------------------------------------------- */

typedef struct named {
    const char *name;
    ct__arch arch;
    int V, C, L, NH, FF, P;
} named;

/* The guide's models, Google's small BERTs (same hyper-parameters as
 * google/bert_uncased_L-<L>_H-<C>_A-<NH>) and two tiny ones for tests. */
static const named builtins[] = {
    {"bert-base-uncased", CT__ARCH_BERT, 30522, 768, 12, 12, 3072, 512},
    {"bert-large-uncased", CT__ARCH_BERT, 30522, 1024, 24, 16, 4096, 512},
    {"distilbert-base-uncased", CT__ARCH_DISTILBERT, 30522, 768, 6, 12, 3072, 512},
    {"bert-tiny", CT__ARCH_BERT, 30522, 128, 2, 2, 512, 512},
    {"bert-mini", CT__ARCH_BERT, 30522, 256, 4, 4, 1024, 512},
    {"bert-small", CT__ARCH_BERT, 30522, 512, 4, 8, 2048, 512},
    {"bert-test", CT__ARCH_BERT, 128, 32, 2, 4, 64, 64},
    {"distilbert-test", CT__ARCH_DISTILBERT, 128, 32, 2, 4, 64, 64},
};

ct_status ct__config_named(const char *name, ct__config *cfg)
{
    size_t i;
    for (i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
        const named *b = &builtins[i];
        if (strcmp(b->name, name) != 0)
            continue;
        defaults(cfg, b->arch);
        cfg->vocab_size = b->V;
        cfg->hidden_size = b->C;
        cfg->num_layers = b->L;
        cfg->num_heads = b->NH;
        cfg->intermediate_size = b->FF;
        cfg->max_position = b->P;
        cfg->head_dropout = b->arch == CT__ARCH_BERT ? cfg->hidden_dropout : cfg->qa_dropout;
        return CT_OK;
    }
    return ct__error(CT_ERR_NOT_FOUND, "no built-in model configuration named '%s' (%s)", name,
                     ct__config_names());
}

const char *ct__config_names(void)
{
    return "bert-base-uncased, bert-large-uncased, distilbert-base-uncased, bert-tiny, "
           "bert-mini, bert-small, bert-test, distilbert-test";
}

void ct__config_free(ct__config *cfg)
{
    free(cfg->source_json);
    cfg->source_json = NULL;
    ct__config_free_labels(cfg);
}

ct_status ct__config_copy(const ct__config *src, ct__config *dst)
{
    *dst = *src;
    dst->source_json = NULL;
    dst->label_names = NULL;
    if (src->source_json && !(dst->source_json = strdup(src->source_json)))
        return ct__error(CT_ERR_NOMEM, "out of memory copying a model configuration");
    if (src->label_names) {
        if (!(dst->label_names = calloc((size_t)src->num_labels, sizeof *dst->label_names))) {
            ct__config_free(dst);
            return ct__error(CT_ERR_NOMEM, "out of memory copying a model configuration");
        }
        for (int i = 0; i < src->num_labels; i++)
            if (!(dst->label_names[i] = strdup(src->label_names[i]))) {
                ct__config_free(dst);
                return ct__error(CT_ERR_NOMEM, "out of memory copying a model configuration");
            }
    }
    return CT_OK;
}

/* ---- writing config.json ------------------------------------------------- */

static const char *act_name(ct__act a)
{
    return a == CT__ACT_GELU ? "gelu" : a == CT__ACT_GELU_NEW ? "gelu_new" : "relu";
}

static void put_key(ct__strbuf *sb, int *first, const char *key)
{
    ct__sb_puts(sb, *first ? "{\n  " : ",\n  ");
    *first = 0;
    ct__json_write_string(sb, key, strlen(key));
    ct__sb_puts(sb, ": ");
}

static void put_float(ct__strbuf *sb, int *first, const char *key, float v)
{
    put_key(sb, first, key);
    ct__json_write_double(sb, ct__float_decimal(v));
}

static void put_int(ct__strbuf *sb, int *first, const char *key, int v)
{
    put_key(sb, first, key);
    ct__sb_printf(sb, "%d", v);
}

static void put_string(ct__strbuf *sb, int *first, const char *key, const char *v)
{
    put_key(sb, first, key);
    ct__json_write_string(sb, v, strlen(v));
}

static void put_architectures(ct__strbuf *sb, int *first, const char *architecture)
{
    put_key(sb, first, "architectures");
    ct__sb_puts(sb, "[\n    ");
    ct__json_write_string(sb, architecture, strlen(architecture));
    ct__sb_puts(sb, "\n  ]");
}

/* Label `i`'s name, as a JSON string literal. */
static void put_label_name(ct__strbuf *sb, const ct__config *c, int i)
{
    if (c->label_names)
        ct__json_write_string(sb, c->label_names[i], strlen(c->label_names[i]));
    else
        ct__sb_printf(sb, "\"LABEL_%d\"", i);
}

/* id2label and label2id; Transformers leaves out its default (two labels
 * named LABEL_0 and LABEL_1). */
static int has_labels(const ct__config *c)
{
    return c->num_labels != 2 || c->label_names;
}

static void put_id2label(ct__strbuf *sb, int *first, const ct__config *c)
{
    put_key(sb, first, "id2label");
    for (int i = 0; i < c->num_labels; i++) {
        ct__sb_printf(sb, "%s\"%d\": ", i ? ",\n    " : "{\n    ", i);
        put_label_name(sb, c, i);
    }
    ct__sb_puts(sb, "\n  }");
}

static void put_label2id(ct__strbuf *sb, int *first, const ct__config *c)
{
    put_key(sb, first, "label2id");
    for (int i = 0; i < c->num_labels; i++) {
        ct__sb_puts(sb, i ? ",\n    " : "{\n    ");
        put_label_name(sb, c, i);
        ct__sb_printf(sb, ": %d", i);
    }
    ct__sb_puts(sb, "\n  }");
}

static void put_problem(ct__strbuf *sb, int *first, const ct__config *c)
{
    static const char *const names[] = {NULL, "regression", "single_label_classification",
                                        "multi_label_classification"};
    if (c->problem_type != CT__PROBLEM_INFER)
        put_string(sb, first, "problem_type", names[c->problem_type]);
}

/* Keys for a configuration that did not come from a file, in the order
 * Transformers writes them (sorted). */
static void write_builtin(const ct__config *c, const char *architecture, const char *dtype,
                          ct__strbuf *sb)
{
    int first = 1;
    if (c->arch == CT__ARCH_BERT) {
        put_architectures(sb, &first, architecture);
        put_float(sb, &first, "attention_probs_dropout_prob", c->attention_dropout);
        put_key(sb, &first, "classifier_dropout");
        if (c->classifier_dropout >= 0)
            ct__json_write_double(sb, ct__float_decimal(c->classifier_dropout));
        else
            ct__sb_puts(sb, "null");
        put_string(sb, &first, "hidden_act", act_name(c->act));
        put_float(sb, &first, "hidden_dropout_prob", c->hidden_dropout);
        put_int(sb, &first, "hidden_size", c->hidden_size);
        if (has_labels(c))
            put_id2label(sb, &first, c);
        put_float(sb, &first, "initializer_range", c->initializer_range);
        put_int(sb, &first, "intermediate_size", c->intermediate_size);
        if (has_labels(c))
            put_label2id(sb, &first, c);
        put_float(sb, &first, "layer_norm_eps", c->layer_norm_eps);
        put_int(sb, &first, "max_position_embeddings", c->max_position);
        put_string(sb, &first, "model_type", "bert");
        put_int(sb, &first, "num_attention_heads", c->num_heads);
        put_int(sb, &first, "num_hidden_layers", c->num_layers);
        put_int(sb, &first, "pad_token_id", c->pad_token_id);
        put_string(sb, &first, "position_embedding_type", "absolute");
        put_problem(sb, &first, c);
        put_string(sb, &first, "torch_dtype", dtype);
        put_int(sb, &first, "type_vocab_size", c->type_vocab_size);
        put_int(sb, &first, "vocab_size", c->vocab_size);
    } else {
        put_string(sb, &first, "activation", act_name(c->act));
        put_architectures(sb, &first, architecture);
        put_float(sb, &first, "attention_dropout", c->attention_dropout);
        put_int(sb, &first, "dim", c->hidden_size);
        put_float(sb, &first, "dropout", c->hidden_dropout);
        put_int(sb, &first, "hidden_dim", c->intermediate_size);
        if (has_labels(c))
            put_id2label(sb, &first, c);
        put_float(sb, &first, "initializer_range", c->initializer_range);
        if (has_labels(c))
            put_label2id(sb, &first, c);
        put_int(sb, &first, "max_position_embeddings", c->max_position);
        put_string(sb, &first, "model_type", "distilbert");
        put_int(sb, &first, "n_heads", c->num_heads);
        put_int(sb, &first, "n_layers", c->num_layers);
        put_int(sb, &first, "pad_token_id", c->pad_token_id);
        put_problem(sb, &first, c);
        put_float(sb, &first, "qa_dropout", c->qa_dropout);
        put_float(sb, &first, "seq_classif_dropout", c->seq_classif_dropout);
        put_key(sb, &first, "sinusoidal_pos_embds");
        ct__sb_puts(sb, c->sinusoidal_pos ? "true" : "false");
        put_key(sb, &first, "tie_weights_");
        ct__sb_puts(sb, "true");
        put_string(sb, &first, "torch_dtype", dtype);
        put_int(sb, &first, "vocab_size", c->vocab_size);
    }
    ct__sb_puts(sb, "\n}\n");
}

/* A configuration read from a file is written back key for key (so labels,
 * versions and keys this library does not use survive), but for the keys
 * that describe what is saved now: architectures (the head trained),
 * torch_dtype (and "dtype", its newer name, when the file has it: what
 * model.safetensors holds), and the labels and problem_type when they were
 * given for a new head. Each of those not in the file goes in at its sorted
 * place, as Transformers writes keys sorted. */
enum { OWN_ARCH, OWN_ID2LABEL, OWN_LABEL2ID, OWN_PROBLEM, OWN_TORCH_DTYPE, OWN_DTYPE, N_OWNED };
static const char *const owned_keys[N_OWNED] = {"architectures", "id2label", "label2id",
                                                "problem_type", "torch_dtype", "dtype"};

static void put_owned(ct__strbuf *sb, int *first, int k, const ct__config *c,
                      const char *architecture, const char *dtype)
{
    switch (k) {
    case OWN_ARCH: put_architectures(sb, first, architecture); break;
    case OWN_ID2LABEL: put_id2label(sb, first, c); break;
    case OWN_LABEL2ID: put_label2id(sb, first, c); break;
    case OWN_PROBLEM: put_problem(sb, first, c); break;
    default: put_string(sb, first, owned_keys[k], dtype); break;
    }
}

static ct_status write_from_source(const ct__config *c, const char *architecture,
                                   const char *dtype, ct__strbuf *sb)
{
    /* "dtype" is replaced where the file has it, never added */
    int insert[N_OWNED] = {1, c->labels_set, c->labels_set, c->problem_set, 1, 0};
    int done[N_OWNED] = {0};
    ct__json_doc *doc;
    const ct__json *root;
    int first = 1;
    ct_status st = ct__json_parse(c->source_json, strlen(c->source_json), "config.json", &doc);
    if (st != CT_OK)
        return st;
    root = ct__json_root(doc);
    for (size_t i = 0; i <= root->n; i++) {
        const char *key = i < root->n ? root->members[i].key : NULL;
        int k;
        /* ours the file lacks that sort before this key (the rest at the end) */
        for (k = 0; k < N_OWNED; k++)
            if (insert[k] && !done[k] && (!key || strcmp(owned_keys[k], key) < 0)) {
                put_owned(sb, &first, k, c, architecture, dtype);
                done[k] = 1;
            }
        if (!key)
            break;
        for (k = 0; k < N_OWNED && strcmp(owned_keys[k], key) != 0; k++)
            ;
        if (k < N_OWNED && (insert[k] || k == OWN_DTYPE)) {
            if (!done[k])
                put_owned(sb, &first, k, c, architecture, dtype);
            done[k] = 1;
            continue;
        }
        if (c->labels_set && strcmp(key, "num_labels") == 0)
            continue; /* id2label says it now */
        put_key(sb, &first, key);
        ct__json_write_value(sb, &root->members[i].value, 1);
    }
    ct__sb_puts(sb, first ? "{}\n" : "\n}\n");
    ct__json_free(doc);
    return CT_OK;
}

ct_status ct__config_write_json(const ct__config *cfg, const char *architecture,
                                const char *torch_dtype, ct__strbuf *sb)
{
    ct_status st = CT_OK;
    if (cfg->source_json)
        st = write_from_source(cfg, architecture, torch_dtype, sb);
    else
        write_builtin(cfg, architecture, torch_dtype, sb);
    if (st == CT_OK && sb->failed)
        st = ct__error_prefix((ct_status)sb->failed, "writing config.json");
    return st;
}
