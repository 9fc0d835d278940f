/* Hugging Face model folders: load config.json + model.safetensors (or its
 * sharded index) into a ct_model, and save one that from_pretrained loads. */
#include "model/model.h"
#include "model/options.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/safetensors.h"
#include "core/strbuf.h"
#include "core/torch_bin.h"

#define MAX_SHARDS 1024

typedef struct weights {
    ct__st_file *files[MAX_SHARDS];
    char *paths[MAX_SHARDS];
    size_t n;
} weights;

static void weights_close(weights *w)
{
    for (size_t i = 0; i < w->n; i++) {
        ct__st_close(w->files[i]);
        free(w->paths[i]);
    }
    w->n = 0;
}

/* A file of weights: safetensors, or torch.save's pytorch_model*.bin. */
static int is_torch_file(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && strcmp(name + n - 4, ".bin") == 0;
}

/* `index` names the index file the shard comes from, for errors. */
static ct_status open_shard(weights *w, const char *dir, const char *name, const char *index)
{
    char path[4096];
    ct_status st;
    for (size_t i = 0; i < w->n; i++) {
        const char *base = strrchr(w->paths[i], '/');
        if (strcmp(base ? base + 1 : w->paths[i], name) == 0)
            return CT_OK;
    }
    if (w->n == MAX_SHARDS)
        return ct__error(CT_ERR_FORMAT, "%s: more than %d weight shards", dir, MAX_SHARDS);
    if (strchr(name, '/') || strcmp(name, "..") == 0)
        return ct__error(CT_ERR_FORMAT, "%s/%s: shard name '%s' is not a file name in the folder",
                         dir, index, name);
    if ((st = ct__path_format(path, sizeof path, "%s/%s", dir, name)) != CT_OK)
        return st;
    st = is_torch_file(name) ? ct__torch_open(path, &w->files[w->n])
                             : (ct_status)ct__st_open(path, &w->files[w->n]);
    if (st != CT_OK)
        return st;
    if (!(w->paths[w->n] = strdup(path))) {
        ct__st_close(w->files[w->n]);
        return ct__error(CT_ERR_NOMEM, "out of memory");
    }
    w->n++;
    return CT_OK;
}

/* As from_pretrained looks: model.safetensors, its sharded index, then
 * pytorch_model.bin and its sharded index; a sharded index's every shard. */
static ct_status open_weights(weights *w, const char *dir)
{
    static const char *const singles[] = {"model.safetensors", "pytorch_model.bin"};
    static const char *const indices[] = {"model.safetensors.index.json",
                                          "pytorch_model.bin.index.json"};
    char path[4096];
    struct stat sb;
    ct__json_doc *doc;
    const ct__json *map;
    ct_status st = CT_OK;
    int form;

    for (form = 0; form < 2; form++) {
        if ((st = ct__path_format(path, sizeof path, "%s/%s", dir, singles[form])) != CT_OK)
            return st;
        if (stat(path, &sb) == 0)
            return open_shard(w, dir, singles[form], singles[form]);
        if ((st = ct__path_format(path, sizeof path, "%s/%s", dir, indices[form])) != CT_OK)
            return st;
        if (stat(path, &sb) == 0)
            break;
    }
    if (form == 2)
        return ct__error(CT_ERR_NOT_FOUND, "%s: no model.safetensors, pytorch_model.bin or "
                                           "their sharded index", dir);
    if ((st = ct__json_parse_file(path, &doc)) != CT_OK)
        return st;
    map = ct__json_get(ct__json_root(doc), "weight_map");
    if (!map || map->type != CT_JSON_OBJECT) {
        ct__json_free(doc);
        return ct__error(CT_ERR_FORMAT, "%s: no \"weight_map\" object", path);
    }
    for (size_t i = 0; i < map->n && st == CT_OK; i++) {
        const ct__json *v = &map->members[i].value;
        if (v->type != CT_JSON_STRING)
            st = ct__error(CT_ERR_FORMAT, "%s: weight_map['%s'] is not a file name", path,
                           map->members[i].key);
        else
            st = open_shard(w, dir, v->str, indices[form]);
    }
    ct__json_free(doc);
    return st;
}

static const ct__st_tensor *find_in(const weights *w, const char *name, size_t *file)
{
    for (size_t i = 0; i < w->n; i++) {
        const ct__st_tensor *t = ct__st_find(w->files[i], name);
        if (t) {
            *file = i;
            return t;
        }
    }
    return NULL;
}

/* The checkpoint's tensor for our name: as is, without the encoder prefix
 * (a checkpoint of the bare BertModel), with LayerNorm's old gamma/beta
 * names, and BertForMaskedLM's decoder bias that ties to the output bias. */
static const ct__st_tensor *lookup(const weights *w, const char *name, size_t *file)
{
    static const char *const prefixes[] = {"bert.", "distilbert."};
    char alt[160];
    const ct__st_tensor *t = find_in(w, name, file);
    const char *base = name;
    size_t n;
    if (t)
        return t;
    for (size_t i = 0; i < 2; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            base = name + strlen(prefixes[i]);
    if (base != name && (t = find_in(w, base, file)))
        return t;
    n = strlen(base);
    if (strstr(base, "LayerNorm.") && n > 7) {
        int is_w = strcmp(base + n - 7, ".weight") == 0;
        int is_b = n > 5 && strcmp(base + n - 5, ".bias") == 0;
        if (is_w || is_b) {
            snprintf(alt, sizeof alt, "%.*s.%s", (int)(strlen(name) - (is_w ? 7 : 5)), name,
                     is_w ? "gamma" : "beta");
            if ((t = find_in(w, alt, file)))
                return t;
            if (base != name &&
                (t = find_in(w, alt + (base - name), file)))
                return t;
        }
    }
    if (strcmp(name, "cls.predictions.bias") == 0)
        return find_in(w, "cls.predictions.decoder.bias", file);
    return NULL;
}

static ct_status add_new_name(ct_model *m, const char *name)
{
    char **grown = realloc(m->new_tensors, (m->n_new_tensors + 1) * sizeof *grown);
    if (!grown)
        return ct__error(CT_ERR_NOMEM, "out of memory");
    m->new_tensors = grown;
    if (!(grown[m->n_new_tensors] = strdup(name)))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    m->n_new_tensors++;
    return CT_OK;
}

static int same_shape(const ct__tensor *t, const ct__st_tensor *s)
{
    int same = s->ndim == (size_t)t->ndim;
    for (int d = 0; same && d < t->ndim; d++)
        same = s->shape[d] == (size_t)t->dim[d];
    return same;
}

/* "found shape [2, 32] in the checkpoint and [4, 32] in the model". */
static void shapes_text(const ct__tensor *t, const ct__st_tensor *s, char *out, size_t size)
{
    char got[96] = "", want[96];
    for (size_t d = 0; d < s->ndim; d++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%zu", d ? ", " : "",
                 s->shape[d]);
    if (t->ndim == 2)
        snprintf(want, sizeof want, "%lld, %lld", (long long)t->dim[0], (long long)t->dim[1]);
    else
        snprintf(want, sizeof want, "%lld", (long long)t->dim[0]);
    snprintf(out, size, "[%s] in the checkpoint, [%s] in the model", got, want);
}

/* Dtype and shape of a checkpoint tensor against the model's; with
 * `ignore_mismatched` another shape is *mismatched = 1, not an error. */
static ct_status check_tensor(const ct__tensor *t, const ct__st_tensor *s, const char *path,
                              int ignore_mismatched, int *mismatched)
{
    char shapes[256];
    *mismatched = 0;
    if (s->dtype != CT_ST_F32 && s->dtype != CT_ST_BF16 && s->dtype != CT_ST_F16)
        return ct__error(CT_ERR_FORMAT, "%s: tensor '%s' is %s; F32, BF16 or F16 expected", path,
                         s->name, ct__st_dtype_name(s->dtype));
    if (same_shape(t, s))
        return CT_OK;
    shapes_text(t, s, shapes, sizeof shapes);
    if (!ignore_mismatched)
        return ct__error(CT_ERR_FORMAT, "%s: tensor '%s' has shape %s (a config.json that "
                                        "does not fit the weights, or a head with another "
                                        "number of labels, which ignore_mismatched_sizes "
                                        "initialises anew)", path, s->name, shapes);
    ct__log(CT_LOG_WARNING, "%s: tensor '%s' is newly initialised: its shape is %s "
                            "(ignore_mismatched_sizes)", path, s->name, shapes);
    *mismatched = 1;
    return CT_OK;
}

/* Weights that are NaN or infinite load (a file may be inspected, or be a
 * deliberate test), but a run that trains them can only skip its steps:
 * say which tensors, so the user need not wait for a failed run to learn. */
static void warn_non_finite(const ct_model *m, const char *dir)
{
    size_t bad = 0;
    const char *first = NULL;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const float *p = m->params + m->tensors[i].offset;
        for (size_t j = 0; j < m->tensors[i].numel; j++)
            if (!isfinite(p[j])) {
                if (!bad++)
                    first = m->tensors[i].name;
                ct__log(CT_LOG_WARNING, "%s: tensor %s holds non-finite values (the first at "
                                        "index %zu); training it will skip every step",
                        dir, m->tensors[i].name, j);
                break;
            }
    }
    if (bad > 1)
        ct__log(CT_LOG_WARNING, "%s: %zu tensors hold non-finite values (first: %s)", dir, bad,
                first);
}

ct_status ct__model_load_weights(ct_model *m, const char *dir, uint64_t seed, int strict,
                                 int ignore_mismatched_sizes)
{
    weights w;
    ct_status st;
    size_t used = 0, total = 0;
    unsigned char *mismatched = calloc(m->n_tensors ? m->n_tensors : 1, 1);
    memset(&w, 0, sizeof w);
    if (!mismatched)
        return ct__error(CT_ERR_NOMEM, "out of memory loading %s", dir);
    if ((st = open_weights(&w, dir)) != CT_OK) {
        weights_close(&w);
        free(mismatched);
        return st;
    }
    /* Pass 1: everything must fit before anything changes. */
    for (size_t i = 0; i < m->n_tensors && st == CT_OK; i++) {
        size_t file = 0;
        int other;
        const ct__st_tensor *s = lookup(&w, m->tensors[i].name, &file);
        if (s) {
            st = check_tensor(&m->tensors[i], s, w.paths[file], ignore_mismatched_sizes && !strict,
                              &other);
            mismatched[i] = (unsigned char)other;
        } else if (strict) {
            st = ct__error(CT_ERR_FORMAT, "%s: no tensor '%s' (a checkpoint of another model?)",
                           dir, m->tensors[i].name);
        }
    }
    /* Pass 2: copy, or initialise what is missing or mismatched. */
    for (size_t i = 0; i < m->n_tensors && st == CT_OK; i++) {
        const ct__tensor *t = &m->tensors[i];
        size_t file = 0;
        const ct__st_tensor *s = mismatched[i] ? NULL : lookup(&w, t->name, &file);
        if (s) {
            st = ct__st_tensor_to_f32(s, w.paths[file], m->params + t->offset, t->numel);
            used++;
        } else {
            ct__init_tensor(m, i, seed);
            st = add_new_name(m, t->name);
        }
    }
    for (size_t i = 0; i < w.n; i++)
        total += ct__st_count(w.files[i]);
    if (st == CT_OK)
        warn_non_finite(m, dir);
    if (st == CT_OK && m->n_new_tensors)
        ct__log(CT_LOG_WARNING,
                "%s: %zu tensors of %s were not in the checkpoint (or had another shape) and are "
                "newly initialised (first: %s); train the model before using it",
                dir, m->n_new_tensors, ct_model_architecture(m), m->new_tensors[0]);
    if (st == CT_OK && total > used)
        ct__log(CT_LOG_INFO, "%s: %zu checkpoint tensors are not used by %s (other heads)", dir,
                total - used, ct_model_architecture(m));
    m->bf16_stale = 1;
    weights_close(&w);
    free(mismatched);
    return st;
}

ct_status ct_model_load(const char *dir, ct_task task, uint64_t seed, ct_model **out)
{
    return ct_model_load_with_options(dir, task, seed, NULL, out);
}

ct_status ct_model_load_with_options(const char *dir, ct_task task, uint64_t seed,
                                     const ct_model_options *options, ct_model **out)
{
    char path[4096];
    ct__config cfg;
    ct_status st;
    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(dir);
    if ((unsigned)task > CT_TASK_TOKEN_CLASSIFICATION)
        return ct__error(CT_ERR_INVALID_ARG, "task %d is not a ct_task", (int)task);
    if ((st = ct__path_format(path, sizeof path, "%s/config.json", dir)) != CT_OK ||
        (st = ct__config_load(path, &cfg)) != CT_OK)
        return st;
    if ((st = ct__model_apply_labels(&cfg, task, options)) != CT_OK ||
        (st = ct__model_new(&cfg, task, out)) != CT_OK)
        return st;
    (*out)->dropout_seed = seed;
    if ((st = ct__model_load_weights(*out, dir, seed, 0,
                                     options && options->ignore_mismatched_sizes)) != CT_OK) {
        ct_model_free(*out);
        *out = NULL;
    }
    return st;
}

/* ---- saving ---------------------------------------------------------------- */

static uint16_t f32_to_f16(float f)
{
    /* Round to nearest even, overflow to inf, NaN kept NaN; through
     * double-precision arithmetic so subnormal halves round correctly. */
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    double a = fabs((double)f);
    if (isnan(f))
        return sign | 0x7E00;
    if (a >= 65520.0)
        return sign | 0x7C00;
    if (a < 0x1p-14) /* subnormal half: units of 2^-24 */
        return sign | (uint16_t)nearbyint(a * 0x1p24);
    {
        int e;
        double m = frexp(a, &e); /* a = m 2^e, m in [0.5, 1) */
        uint32_t q = (uint32_t)nearbyint(m * 2048.0); /* 11 significant bits */
        if (q == 2048) {
            q = 1024;
            e++;
        }
        if (e + 14 >= 31)
            return sign | 0x7C00;
        return sign | (uint16_t)((uint32_t)(e + 14) << 10 | (q & 0x3FF));
    }
}

ct_status ct_model_save(const ct_model *m, const char *dir, ct_dtype dtype)
{
    char path[4096];
    ct__strbuf sb = {0};
    ct__st_tensor *list;
    size_t (*shapes)[2];
    void *data = NULL;
    size_t esize;
    ct_status st;
    char *text;
    struct stat dsb;
    static const ct__st_meta meta = {"format", "pt", 6, 2};

    CT__CHECK_ARG(m);
    CT__CHECK_ARG(dir);
    if (dtype != CT_DTYPE_F32 && dtype != CT_DTYPE_BF16 && dtype != CT_DTYPE_F16)
        return ct__error(CT_ERR_INVALID_ARG, "ct_model_save: dtype %d is not F32, BF16 or F16",
                         (int)dtype);
    /* as save_pretrained does: the folder (and its parents) made when missing */
    if ((st = ct__make_dirs(dir, "ct_model_save")) != CT_OK)
        return st;
    if (stat(dir, &dsb) != 0 || !S_ISDIR(dsb.st_mode))
        return ct__error(CT_ERR_IO, "%s: not an existing folder", dir);
    esize = dtype == CT_DTYPE_F32 ? 4 : 2;
    list = calloc(m->n_tensors, sizeof *list);
    shapes = calloc(m->n_tensors, sizeof *shapes);
    if (dtype != CT_DTYPE_F32)
        data = malloc(m->n_floats * esize);
    if (!list || !shapes || (dtype != CT_DTYPE_F32 && !data)) {
        free(list);
        free(shapes);
        free(data);
        return ct__error(CT_ERR_NOMEM, "%s: out of memory saving the model", dir);
    }
    for (size_t i = 0; i < m->n_tensors; i++) {
        const ct__tensor *t = &m->tensors[i];
        const float *src = m->params + t->offset;
        list[i].name = t->name;
        list[i].ndim = (size_t)t->ndim;
        shapes[i][0] = (size_t)t->dim[0];
        shapes[i][1] = (size_t)t->dim[1];
        list[i].shape = shapes[i];
        list[i].nbytes = t->numel * esize;
        if (dtype == CT_DTYPE_F32) {
            list[i].dtype = CT_ST_F32;
            list[i].data = src;
        } else {
            uint16_t *dst = (uint16_t *)data + t->offset;
            list[i].dtype = dtype == CT_DTYPE_BF16 ? CT_ST_BF16 : CT_ST_F16;
            list[i].data = dst;
            for (size_t j = 0; j < t->numel; j++)
                dst[j] = dtype == CT_DTYPE_BF16 ? ct__f32_to_bf16(src[j]) : f32_to_f16(src[j]);
        }
    }
    st = ct__path_format(path, sizeof path, "%s/model.safetensors", dir);
    if (st == CT_OK)
        st = ct__st_save(path, list, m->n_tensors, &meta, 1);
    free(list);
    free(shapes);
    free(data);
    if (st != CT_OK)
        return st;
    if ((st = ct__config_write_json(&m->cfg, ct_model_architecture(m),
                                    dtype == CT_DTYPE_F32    ? "float32"
                                    : dtype == CT_DTYPE_BF16 ? "bfloat16"
                                                             : "float16",
                                    &sb)) != CT_OK) {
        ct__sb_free(&sb);
        return st;
    }
    text = ct__sb_take(&sb);
    st = text ? ct__path_format(path, sizeof path, "%s/config.json", dir)
              : ct__error(CT_ERR_NOMEM, "out of memory");
    if (st == CT_OK)
        st = ct__write_file_atomic(path, text, strlen(text));
    free(text);
    return st;
}
