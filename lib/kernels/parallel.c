/* Splitting ops.h kernels across the pool (see parallel.h), each call
 * through this process's kernel table, looked up once per call. */
#include "kernels/parallel.h"

#include "core/profile.h"

#include <string.h>

/* Work below this many floats per task is not worth a handoff. */
#define GRAIN 16384

static int task_count(const ct__pool *pool, size_t work, size_t units)
{
    size_t n = work / GRAIN + 1, most = (size_t)ct__pool_nthreads(pool) * 4;
    if (n > most)
        n = most;
    if (n > units)
        n = units;
    return n < 1 ? 1 : (int)n;
}

/* [lo, hi) of `units` for task t of n. */
static void span(size_t units, int t, int n, size_t *lo, size_t *hi)
{
    *lo = units * (size_t)t / (size_t)n;
    *hi = units * (size_t)(t + 1) / (size_t)n;
}

/* ---- flat maps ----------------------------------------------------------- */

typedef struct map_job {
    ct__map_fn fn;
    ct__map2_fn fn2;
    float *out;
    const float *a, *b;
    size_t n;
    int ntasks;
} map_job;

static void map_task(void *ctx, int t, int thread)
{
    map_job *j = ctx;
    size_t lo, hi;
    (void)thread;
    span(j->n, t, j->ntasks, &lo, &hi);
    if (j->fn)
        j->fn(j->out + lo, j->a + lo, hi - lo);
    else
        j->fn2(j->out + lo, j->a + lo, j->b + lo, hi - lo);
}

/* Callers pass the ops.h entry points (ct__gelu_forward, ...), each of which
 * looks the table up; swap in the table's function once here instead of
 * once per task. Anything else (a _generic variant, a test's function) runs
 * as given. */
static ct__map_fn table_map(const ct__kernels *k, ct__map_fn fn)
{
    if (fn == ct__gelu_forward)
        return k->gelu_forward;
    if (fn == ct__gelu_tanh_forward)
        return k->gelu_tanh_forward;
    if (fn == ct__relu_forward)
        return k->relu_forward;
    if (fn == ct__tanh_forward)
        return k->tanh_forward;
    if (fn == ct__add_inplace)
        return k->add_inplace;
    return fn;
}

static ct__map2_fn table_map2(const ct__kernels *k, ct__map2_fn fn)
{
    if (fn == ct__gelu_backward)
        return k->gelu_backward;
    if (fn == ct__gelu_tanh_backward)
        return k->gelu_tanh_backward;
    if (fn == ct__relu_backward)
        return k->relu_backward;
    if (fn == ct__tanh_backward)
        return k->tanh_backward;
    return fn;
}

void ct__p_map(ct__pool *pool, ct__map_fn fn, float *out, const float *in, size_t n)
{
    double t0 = ct__prof_begin();
    map_job j = {table_map(ct__kernels_get(), fn), NULL, out, in, NULL, n,
                 task_count(pool, n, n)};
    ct__pool_run(pool, map_task, &j, j.ntasks);
    ct__prof_end(CT__PROF_ACTIVATION, t0, 0, 8.0 * (double)n);
}

void ct__p_map2(ct__pool *pool, ct__map2_fn fn, float *out, const float *a, const float *b,
                size_t n)
{
    double t0 = ct__prof_begin();
    map_job j = {NULL, table_map2(ct__kernels_get(), fn), out, a, b, n,
                 task_count(pool, n, n)};
    ct__pool_run(pool, map_task, &j, j.ntasks);
    ct__prof_end(CT__PROF_ACTIVATION, t0, 0, 12.0 * (double)n);
}

typedef struct bf16_job {
    const ct__kernels *k;
    ct__bf16 *out;
    const float *in;
    size_t n;
    int ntasks;
} bf16_job;

static void bf16_task(void *ctx, int t, int thread)
{
    bf16_job *j = ctx;
    size_t lo, hi;
    (void)thread;
    span(j->n, t, j->ntasks, &lo, &hi);
    j->k->f32_to_bf16(j->out + lo, j->in + lo, hi - lo);
}

void ct__p_to_bf16(ct__pool *pool, const ct__kernels *k, ct__bf16 *out, const float *in,
                   size_t n)
{
    bf16_job j = {k, out, in, n, task_count(pool, n, n)};
    ct__pool_run(pool, bf16_task, &j, j.ntasks);
}

void ct__p_to_bf16_profiled(ct__pool *pool, const ct__kernels *k, ct__bf16 *out,
                            const float *in, size_t n)
{
    double t0 = ct__prof_begin();
    ct__p_to_bf16(pool, k, out, in, n);
    ct__prof_end(CT__PROF_BF16_ROUND, t0, 0, (4.0 + sizeof(ct__bf16)) * (double)n);
}

typedef struct dropout_job {
    ct__dropout_fn fn;
    const ct__seq_dropout *d;
    float *x;
    size_t width, rows;
    int ntasks;
} dropout_job;

static size_t seq_first_row(const ct__seq_dropout *d, int s)
{
    return d->seq_start ? (size_t)d->seq_start[s] : (size_t)s;
}

/* The sequence holding token t: the last one starting at or before it. */
static int seq_of(const ct__seq_dropout *d, size_t t)
{
    int s = 0, top = d->n_seq;
    while (s + 1 < top) {
        int mid = (s + top) / 2;
        if (seq_first_row(d, mid) <= t)
            s = mid;
        else
            top = mid;
    }
    return s;
}

void ct__dropout_rows(ct__dropout_fn fn, const ct__seq_dropout *d, float *x, size_t width,
                      size_t lo, size_t hi)
{
    int s;
    if (d->tokens) { /* gathered rows: each row its token's mask */
        for (size_t row = lo; row < hi; row++) {
            size_t t = (size_t)d->tokens[row];
            float *at = x + (row - lo) * width;
            s = seq_of(d, t);
            fn(at, at, width, d->p,
               ct__dropout_seq_key(d->key, d->ids ? d->ids[s] : (uint64_t)s),
               (t - seq_first_row(d, s)) * width);
        }
        return;
    }
    s = seq_of(d, lo);
    for (size_t row = lo; row < hi;) {
        size_t first = seq_first_row(d, s), end = seq_first_row(d, s + 1);
        if (end <= row) {
            s++;
            continue;
        }
        if (end > hi)
            end = hi;
        uint64_t key = ct__dropout_seq_key(d->key, d->ids ? d->ids[s] : (uint64_t)s);
        float *at = x + (row - lo) * width;
        fn(at, at, (end - row) * width, d->p, key, (row - first) * width);
        row = end;
    }
}

static void dropout_task(void *ctx, int t, int thread)
{
    dropout_job *j = ctx;
    size_t lo, hi;
    (void)thread;
    span(j->rows, t, j->ntasks, &lo, &hi);
    ct__dropout_rows(j->fn, j->d, j->x + lo * j->width, j->width, lo, hi);
}

void ct__p_dropout_rows(ct__pool *pool, const ct__seq_dropout *d, float *x, size_t width)
{
    double t0 = ct__prof_begin();
    size_t rows = ct__seq_dropout_rows(d);
    dropout_job j = {ct__kernels_get()->dropout_forward, d, x, width, rows,
                     task_count(pool, rows * width, rows)};
    if (rows == 0 || d->p <= 0)
        return;
    ct__pool_run(pool, dropout_task, &j, j.ntasks);
    ct__prof_end(CT__PROF_DROPOUT, t0, 0, 8.0 * (double)(rows * width));
}

void ct__p_dropout(ct__pool *pool, float *x, int n_seq, const int *seq_start, size_t width,
                   const uint64_t *ids, float p, uint64_t key)
{
    ct__seq_dropout d = {p, key, n_seq, seq_start, ids, NULL, 0};
    ct__p_dropout_rows(pool, &d, x, width);
}

/* ---- row and column kernels ------------------------------------------------ */

typedef struct rows_job {
    const ct__kernels *k;
    float *out, *mean, *rstd, *dw, *db;
    const float *inp, *dout, *w, *b, *cmean, *crstd;
    int N, C;
    float eps;
    int ntasks;
} rows_job;

static void ln_fwd_task(void *ctx, int t, int thread)
{
    rows_job *j = ctx;
    size_t lo, hi, C = (size_t)j->C;
    (void)thread;
    span((size_t)j->N, t, j->ntasks, &lo, &hi);
    j->k->layernorm_forward(j->out + lo * C, j->mean + lo, j->rstd + lo, j->inp + lo * C, j->w,
                            j->b, (int)(hi - lo), j->C, j->eps);
}

void ct__p_layernorm_forward(ct__pool *pool, float *out, float *mean, float *rstd,
                             const float *inp, const float *w, const float *b, int N, int C,
                             float eps)
{
    double t0 = ct__prof_begin();
    rows_job j = {.k = ct__kernels_get(), .out = out, .mean = mean, .rstd = rstd, .inp = inp,
                  .w = w, .b = b, .N = N, .C = C, .eps = eps};
    j.ntasks = task_count(pool, (size_t)N * C, (size_t)N);
    ct__pool_run(pool, ln_fwd_task, &j, j.ntasks);
    ct__prof_end(CT__PROF_LAYERNORM, t0, 0, 8.0 * N * C);
}

static void ln_bwd_rows_task(void *ctx, int t, int thread)
{
    rows_job *j = ctx;
    size_t lo, hi, C = (size_t)j->C;
    (void)thread;
    span((size_t)j->N, t, j->ntasks, &lo, &hi);
    j->k->layernorm_backward_input(j->out + lo * C, j->dout + lo * C, j->inp + lo * C, j->w,
                                   j->cmean + lo, j->crstd + lo, (int)(hi - lo), j->C);
}

/* Columns in multiples of 16 floats so each task owns whole cache lines. */
static void column_span(int C, int t, int n, size_t *lo, size_t *hi)
{
    size_t blocks = ((size_t)C + 15) / 16;
    span(blocks, t, n, lo, hi);
    *lo *= 16;
    *hi = *hi * 16 > (size_t)C ? (size_t)C : *hi * 16;
}

/* Columns at a time that a column task sums per group on its stack. */
enum { STRIP = 256 };

/* The column sums of CT__COLSUM_ROWS order over columns [lo, hi): per
 * strip of columns and group of rows, the group's sums into zeroed
 * buffers, then added (a one-row bias_backward) to the destinations. */
static void colsum_strips(const rows_job *j, size_t lo, size_t hi, int ln)
{
    float tw[STRIP], tb[STRIP];
    for (size_t c0 = lo; c0 < hi; c0 += STRIP) {
        int w = (int)(hi - c0 < STRIP ? hi - c0 : STRIP);
        for (int r0 = 0; r0 < j->N; r0 += CT__COLSUM_ROWS) {
            int rows = j->N - r0 < CT__COLSUM_ROWS ? j->N - r0 : CT__COLSUM_ROWS;
            size_t at = (size_t)r0 * j->C + c0;
            memset(tb, 0, (size_t)w * sizeof *tb);
            if (ln) {
                memset(tw, 0, (size_t)w * sizeof *tw);
                j->k->layernorm_backward_params(tw, tb, j->dout + at, j->inp + at,
                                                j->cmean + r0, j->crstd + r0, rows, w, j->C);
                j->k->bias_backward(j->dw + c0, tw, 1, w, w);
            } else {
                j->k->bias_backward(tb, j->dout + at, rows, w, j->C);
            }
            j->k->bias_backward(j->db + c0, tb, 1, w, w);
        }
    }
}

static void ln_bwd_cols_task(void *ctx, int t, int thread)
{
    rows_job *j = ctx;
    size_t lo, hi;
    (void)thread;
    column_span(j->C, t, j->ntasks, &lo, &hi);
    colsum_strips(j, lo, hi, 1);
}

static int column_tasks(const ct__pool *pool, int N, int C)
{
    return task_count(pool, (size_t)N * C, ((size_t)C + 15) / 16);
}

void ct__p_layernorm_backward_params(ct__pool *pool, float *dw, float *db, const float *dout,
                                     const float *inp, const float *mean, const float *rstd,
                                     int N, int C)
{
    rows_job j = {.k = ct__kernels_get(), .dw = dw, .db = db, .dout = dout, .inp = inp,
                  .cmean = mean, .crstd = rstd, .N = N, .C = C};
    j.ntasks = column_tasks(pool, N, C);
    ct__pool_run(pool, ln_bwd_cols_task, &j, j.ntasks);
}

void ct__p_layernorm_backward(ct__pool *pool, float *dinp, float *dw, float *db,
                              const float *dout, const float *inp, const float *w,
                              const float *mean, const float *rstd, int N, int C)
{
    double t0 = ct__prof_begin();
    rows_job j = {.k = ct__kernels_get(), .out = dinp, .dout = dout, .inp = inp, .w = w,
                  .cmean = mean, .crstd = rstd, .N = N, .C = C};
    ct__p_layernorm_backward_params(pool, dw, db, dout, inp, mean, rstd, N, C);
    j.ntasks = task_count(pool, (size_t)N * C, (size_t)N);
    ct__pool_run(pool, ln_bwd_rows_task, &j, j.ntasks);
    ct__prof_end(CT__PROF_LAYERNORM, t0, 0, 16.0 * N * C);
}

static void bias_add_task(void *ctx, int t, int thread)
{
    rows_job *j = ctx;
    size_t lo, hi;
    (void)thread;
    span((size_t)j->N, t, j->ntasks, &lo, &hi);
    j->k->bias_add(j->out + lo * (size_t)j->C, j->b, (int)(hi - lo), j->C);
}

void ct__p_bias_add(ct__pool *pool, float *out, const float *b, int N, int C)
{
    double t0 = ct__prof_begin();
    rows_job j = {.k = ct__kernels_get(), .out = out, .b = b, .N = N, .C = C};
    j.ntasks = task_count(pool, (size_t)N * C, (size_t)N);
    ct__pool_run(pool, bias_add_task, &j, j.ntasks);
    ct__prof_end(CT__PROF_BIAS, t0, 0, 8.0 * N * C);
}

static void bias_bwd_task(void *ctx, int t, int thread)
{
    rows_job *j = ctx;
    size_t lo, hi;
    (void)thread;
    column_span(j->C, t, j->ntasks, &lo, &hi);
    colsum_strips(j, lo, hi, 0);
}

void ct__p_bias_backward(ct__pool *pool, float *db, const float *dout, int N, int C)
{
    double t0 = ct__prof_begin();
    rows_job j = {.k = ct__kernels_get(), .db = db, .dout = dout, .N = N, .C = C};
    j.ntasks = column_tasks(pool, N, C);
    ct__pool_run(pool, bias_bwd_task, &j, j.ntasks);
    ct__prof_end(CT__PROF_BIAS, t0, 0, 4.0 * N * C);
}

/* ---- cross-entropy ------------------------------------------------------------ */

#define CE_MAX_TASKS 256

typedef struct ce_job {
    const ct__kernels *k;
    float *dlogits;
    const float *logits;
    const int32_t *target;
    int N, V;
    int32_t ignore;
    float scale;
    int ntasks;
    double sum[CE_MAX_TASKS];
    int count[CE_MAX_TASKS];
} ce_job;

static void ce_fwd_task(void *ctx, int t, int thread)
{
    ce_job *j = ctx;
    size_t lo, hi, V = (size_t)j->V;
    (void)thread;
    span((size_t)j->N, t, j->ntasks, &lo, &hi); /* = fixed chunks: see below */
    j->sum[t] = j->k->cross_entropy_forward(j->logits + lo * V, j->V, j->target + lo,
                                            (int)(hi - lo), j->V, j->ignore, &j->count[t]);
}

double ct__p_cross_entropy_forward(ct__pool *pool, const float *logits, const int32_t *target,
                                   int N, int V, int32_t ignore, int *count)
{
    ce_job j = {.k = ct__kernels_get(), .logits = logits, .target = target, .N = N, .V = V,
                .ignore = ignore};
    double total = 0;
    /* Chunks fixed by (N, V) alone, so the order of the sum, and with it the
     * result, does not depend on the number of threads. */
    size_t rows = (size_t)(GRAIN / V > 0 ? GRAIN / V : 1);
    if (((size_t)N + rows - 1) / rows > CE_MAX_TASKS)
        rows = ((size_t)N + CE_MAX_TASKS - 1) / CE_MAX_TASKS;
    j.ntasks = N > 0 ? (int)(((size_t)N + rows - 1) / rows) : 1;
    ct__pool_run(pool, ce_fwd_task, &j, j.ntasks);
    *count = 0;
    for (int t = 0; t < j.ntasks; t++) {
        total += j.sum[t];
        *count += j.count[t];
    }
    return total;
}

static void ce_bwd_task(void *ctx, int t, int thread)
{
    ce_job *j = ctx;
    size_t lo, hi, V = (size_t)j->V;
    (void)thread;
    span((size_t)j->N, t, j->ntasks, &lo, &hi);
    j->k->cross_entropy_backward(j->dlogits + lo * V, j->V, j->logits + lo * V, j->V,
                                 j->target + lo, (int)(hi - lo), j->V, j->ignore, j->scale);
}

void ct__p_cross_entropy_backward(ct__pool *pool, float *dlogits, const float *logits,
                                  const int32_t *target, int N, int V, int32_t ignore,
                                  float scale)
{
    ce_job j = {.k = ct__kernels_get(), .dlogits = dlogits, .logits = logits, .target = target,
                .N = N, .V = V, .ignore = ignore, .scale = scale};
    j.ntasks = task_count(pool, (size_t)N * V, (size_t)N);
    ct__pool_run(pool, ce_bwd_task, &j, j.ntasks);
}
