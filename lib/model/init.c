/* Hugging Face's initialisation (BertPreTrainedModel._init_weights and
 * DistilBERT's), drawn from a counter-based generator so a tensor's values
 * depend only on (seed, tensor name), not on thread count or order. */
#include "model/model.h"

#include <math.h>
#include <string.h>

#include "core/hash.h"

static uint64_t name_hash(const char *s)
{
    return ct__fnv1a(CT__FNV_OFFSET, s, strlen(s));
}

/* Uniform in (0, 1): 53 random bits, never 0 (so the log below is finite). */
static double uniform(uint64_t key, uint64_t i)
{
    return ((double)(ct__mix64(key + i * 0x9e3779b97f4a7c15ull) >> 11) + 0.5) / 9007199254740992.0;
}

typedef struct normal_job {
    float *x;
    size_t n;
    double stddev;
    uint64_t key;
    int ntasks;
} normal_job;

/* Box-Muller on pairs of counter draws; a task fills whole pairs. */
static void normal_task(void *ctx, int task, int thread)
{
    normal_job *j = ctx;
    size_t pairs = (j->n + 1) / 2;
    size_t lo = 2 * (pairs * task / j->ntasks), hi = 2 * (pairs * (task + 1) / j->ntasks);
    (void)thread;
    for (size_t i = lo; i < hi; i += 2) {
        double r = sqrt(-2.0 * log(uniform(j->key, i))), a = 2.0 * M_PI * uniform(j->key, i + 1);
        j->x[i] = (float)(j->stddev * r * cos(a));
        if (i + 1 < j->n)
            j->x[i + 1] = (float)(j->stddev * r * sin(a));
    }
}

static void normal_fill(ct__pool *pool, float *x, size_t n, double stddev, uint64_t key)
{
    normal_job j = {x, n, stddev, key, 0};
    j.ntasks = (int)((n + 65535) / 65536);
    ct__pool_run(pool, normal_task, &j, j.ntasks);
}

/* DistilBERT's create_sinusoidal_embeddings: even columns sin, odd cos of
 * pos / 10000^(2*(j/2)/dim). */
static void sinusoidal_fill(float *x, int P, int C)
{
    for (int pos = 0; pos < P; pos++)
        for (int j = 0; j < C; j++) {
            double angle = pos / pow(10000.0, 2.0 * (j / 2) / C);
            x[(size_t)pos * C + j] = (float)(j % 2 == 0 ? sin(angle) : cos(angle));
        }
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

void ct__init_tensor(ct_model *m, size_t index, uint64_t seed)
{
    const ct__tensor *t = &m->tensors[index];
    float *x = m->params + t->offset;
    const ct__config *c = &m->cfg;
    int is_norm = strstr(t->name, "LayerNorm") || strstr(t->name, "layer_norm");

    if (t->offset == m->w.wpe && c->sinusoidal_pos) {
        sinusoidal_fill(x, c->max_position, c->hidden_size);
    } else if (t->ndim == 1) {
        /* Biases 0 (the MLM output bias included), LayerNorm weight 1. */
        float v = is_norm && ends_with(t->name, ".weight") ? 1.0f : 0.0f;
        for (size_t i = 0; i < t->numel; i++)
            x[i] = v;
    } else {
        normal_fill(m->pool, x, t->numel, c->initializer_range, ct__mix64(seed) ^ name_hash(t->name));
        /* nn.Embedding(padding_idx=pad_token_id) keeps that row at zero. */
        if (t->offset == m->w.wte)
            memset(x + (size_t)c->pad_token_id * c->hidden_size, 0,
                   (size_t)c->hidden_size * sizeof *x);
    }
    m->bf16_stale = 1;
}

void ct__init_all(ct_model *m, uint64_t seed)
{
    for (size_t i = 0; i < m->n_tensors; i++)
        ct__init_tensor(m, i, seed);
}
