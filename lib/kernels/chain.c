/* Row chains (chain.h): blocks of rows through a list of kernel-table
 * steps, split across the pool by blocks. */
#include "kernels/chain.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/profile.h"

/* A block holds at least one row and otherwise at most this many floats
 * of each array, so that every array a block touches stays in L2 (and the
 * value in L1) from one step to the next. */
#define BLOCK_FLOATS 4096

/* The steps, for the profile's shares. */
enum { S_BIAS, S_ACT, S_DROPOUT, S_RESIDUAL, S_LAYERNORM, S_COPY, S_ROUND, STEPS };

static const ct__prof_family step_family[STEPS] = {
    CT__PROF_BIAS, CT__PROF_ACTIVATION, CT__PROF_DROPOUT, CT__PROF_BIAS,
    CT__PROF_LAYERNORM, CT__PROF_BIAS, CT__PROF_BF16_ROUND,
};

typedef struct job {
    const ct__kernels *k;
    const ct__chain_fwd *f;
    const ct__chain_bwd *b;
    int N, C, rows_per_block, blocks, ntasks;
    int unit; /* blocks a task's share is a multiple of: a group's, backward */
    /* backward: the column sums of each group of CT__COLSUM_ROWS rows,
     * [groups][C] each, when the chain makes them (NULL: the wrappers'
     * passes do) */
    float *sum_w, *sum_b, *sum_db;
    _Atomic int nomem;
    double (*seconds)[STEPS]; /* [ntasks] thread time per step, when profiling */
} job;

/* A task's time per step, when profiling (to NULL: a no-op). */
typedef struct stopwatch {
    double *to;
    double last;
} stopwatch;

static void lap(stopwatch *w, int s)
{
    if (w->to) {
        double now = ct__now_s();
        w->to[s] += now - w->last;
        w->last = now;
    }
}

/* Forward's steps on rows [r0, r1); tmp holds the activation when it is
 * not kept. */
static void forward_block(const job *j, stopwatch *w, float *tmp, size_t r0, size_t r1)
{
    const ct__kernels *k = j->k;
    const ct__chain_fwd *f = j->f;
    size_t C = (size_t)j->C, n = (r1 - r0) * C;
    int rows = (int)(r1 - r0);
    float *v = f->y + r0 * C; /* the value's rows */
    if (f->bias) {
        k->bias_add(v, f->bias, rows, j->C);
        lap(w, S_BIAS);
    }
    if (f->act || f->act_grad) {
        float *out = f->act_out ? f->act_out + r0 * C : tmp;
        if (f->act_grad)
            f->act_grad(out, v, v, n);
        else
            f->act(out, v, n);
        v = out;
        lap(w, S_ACT);
    }
    if (f->drop.p > 0) {
        ct__dropout_rows(k->dropout_forward, &f->drop, v, C, r0, r1);
        lap(w, S_DROPOUT);
    }
    if (f->residual) {
        k->add_inplace(v, f->residual + r0 * C, n);
        lap(w, S_RESIDUAL);
    }
    if (f->ln_w) {
        k->layernorm_forward(f->ln_out + r0 * C, f->mean + r0, f->rstd + r0, v, f->ln_w,
                             f->ln_b, rows, j->C, f->eps);
        v = f->ln_out + r0 * C;
        lap(w, S_LAYERNORM);
    }
    if (f->out_b) {
        k->f32_to_bf16(f->out_b + r0 * C, v, n);
        lap(w, S_ROUND);
    }
}

/* Backward's steps on rows [r0, r1), within one group of column sums. */
static void backward_block(const job *j, stopwatch *w, size_t r0, size_t r1)
{
    const ct__kernels *k = j->k;
    const ct__chain_bwd *b = j->b;
    size_t C = (size_t)j->C, n = (r1 - r0) * C, g = r0 / CT__COLSUM_ROWS;
    int rows = (int)(r1 - r0);
    float *dy = b->dy + r0 * C;
    if (r0 % CT__COLSUM_ROWS == 0) { /* a group starts: its sums from 0 */
        float *sums[] = {j->sum_w, j->sum_b, j->sum_db};
        for (int i = 0; i < 3; i++)
            if (sums[i])
                memset(sums[i] + g * C, 0, C * sizeof(float));
    }
    if (j->sum_w)
        k->layernorm_backward_params(j->sum_w + g * C, j->sum_b + g * C, b->ln_dout + r0 * C,
                                     b->ln_inp + r0 * C, b->ln_mean + r0, b->ln_rstd + r0, rows,
                                     j->C, j->C);
    if (b->ln_w) {
        k->layernorm_backward_input(dy, b->ln_dout + r0 * C, b->ln_inp + r0 * C, b->ln_w,
                                    b->ln_mean + r0, b->ln_rstd + r0, (int)(r1 - r0), j->C);
        lap(w, S_LAYERNORM);
    }
    if (b->copy) {
        memcpy(b->copy + r0 * C, dy, n * sizeof *dy);
        lap(w, S_COPY);
    }
    if (b->act) {
        b->act(dy, dy, b->act_inp + r0 * C, n);
        lap(w, S_ACT);
    }
    if (b->drop.p > 0) {
        ct__dropout_rows(k->dropout_backward, &b->drop, dy, C, r0, r1);
        lap(w, S_DROPOUT);
    }
    if (b->out_b) {
        k->f32_to_bf16(b->out_b + r0 * C, dy, n);
        lap(w, S_ROUND);
    }
    if (j->sum_db) {
        k->bias_backward(j->sum_db + g * C, dy, rows, j->C, j->C);
        lap(w, S_BIAS);
    }
}

/* Task t: its share of the blocks, in either direction. */
static void chain_task(void *ctx, int t, int thread)
{
    job *j = ctx;
    const ct__chain_fwd *f = j->f;
    float *tmp = NULL;
    stopwatch w = {j->seconds ? j->seconds[t] : NULL, j->seconds ? ct__now_s() : 0};
    int units = (j->blocks + j->unit - 1) / j->unit;
    int b0 = (int)((long)units * t / j->ntasks) * j->unit;
    int b1 = (int)((long)units * (t + 1) / j->ntasks) * j->unit;
    (void)thread;
    if (b1 > j->blocks)
        b1 = j->blocks;
    /* scratch slot 0 is the GEMM's, idle between products */
    if (f && (f->act || f->act_grad) && !f->act_out &&
        !(tmp = ct__scratch(0, (size_t)j->rows_per_block * j->C * sizeof *tmp))) {
        j->nomem = 1;
        return;
    }
    for (int blk = b0; blk < b1; blk++) {
        size_t r0 = (size_t)blk * j->rows_per_block, r1 = r0 + (size_t)j->rows_per_block;
        if (r1 > (size_t)j->N)
            r1 = (size_t)j->N;
        if (f)
            forward_block(j, &w, tmp, r0, r1);
        else
            backward_block(j, &w, r0, r1);
    }
}

/* Blocks and tasks for N rows of C; the timing table when profiling
 * (without memory for it, the chain runs untimed). Backward's blocks tile
 * the groups of column sums: a power of two of rows, at most a group. */
static void job_init(job *j, ct__pool *pool, int N, int C, int backward)
{
    int most = ct__pool_nthreads(pool) * 4, units;
    memset(j, 0, sizeof *j);
    j->k = ct__kernels_get();
    j->N = N;
    j->C = C;
    j->rows_per_block = C < BLOCK_FLOATS ? BLOCK_FLOATS / C : 1;
    j->unit = 1;
    if (backward) {
        int r = 1;
        while (2 * r <= j->rows_per_block && 2 * r <= CT__COLSUM_ROWS)
            r *= 2;
        j->rows_per_block = r;
        j->unit = CT__COLSUM_ROWS / r;
    }
    j->blocks = (N + j->rows_per_block - 1) / j->rows_per_block;
    units = (j->blocks + j->unit - 1) / j->unit;
    j->ntasks = units < most ? units : most;
    if (ct__prof_enabled())
        j->seconds = calloc((size_t)j->ntasks, sizeof *j->seconds);
}

/* Shares `wall` seconds among the steps' families as the threads' time
 * went; `nc` elements per array, `act_bytes` what the activation step moves
 * per element: 8 forward (x in, y out), 12 when it also writes the
 * derivative and backward (dy, and act_inp or the derivative, in; dx out). */
static void report(job *j, double wall, double nc, double act_bytes)
{
    /* what each step's kernel reads and writes, run alone */
    const double bytes_per[STEPS] = {
        [S_BIAS] = 8, [S_ACT] = act_bytes, [S_DROPOUT] = 8, [S_RESIDUAL] = 12,
        [S_LAYERNORM] = 8, [S_COPY] = 8, [S_ROUND] = 6,
    };
    double per_step[STEPS] = {0}, total = 0;
    if (!j->seconds)
        return;
    for (int t = 0; t < j->ntasks; t++)
        for (int s = 0; s < STEPS; s++)
            per_step[s] += j->seconds[t][s];
    for (int s = 0; s < STEPS; s++)
        total += per_step[s];
    for (int s = 0; s < STEPS; s++)
        if (per_step[s] > 0)
            ct__prof_add(step_family[s], wall * per_step[s] / total, 0, bytes_per[s] * nc);
    free(j->seconds);
}

ct_status ct__p_chain_forward(ct__pool *pool, const ct__chain_fwd *f)
{
    job j;
    double t0 = ct__prof_begin();
    if (f->N <= 0 || f->C <= 0)
        return CT_OK;
    job_init(&j, pool, f->N, f->C, 0);
    j.f = f;
    ct__pool_run(pool, chain_task, &j, j.ntasks);
    report(&j, t0 ? ct__now_s() - t0 : 0, (double)f->N * f->C, f->act_grad ? 12 : 8);
    if (j.nomem)
        return ct__error(CT_ERR_NOMEM, "out of memory for a row block (%d floats) of the "
                         "activation", j.rows_per_block * f->C);
    return CT_OK;
}

void ct__p_chain_backward(ct__pool *pool, const ct__chain_bwd *b)
{
    job j;
    double t0 = ct__prof_begin();
    size_t groups, per;
    int arrays;
    float *sums = NULL;
    if (b->N <= 0 || b->C <= 0)
        return;
    job_init(&j, pool, b->N, b->C, 1);
    j.b = b;
    groups = ((size_t)b->N + CT__COLSUM_ROWS - 1) / CT__COLSUM_ROWS;
    per = groups * (size_t)b->C;
    arrays = (b->ln_w ? 2 : 0) + (b->db ? 1 : 0);
    if (arrays && (sums = malloc(arrays * per * sizeof *sums)) != NULL) {
        j.sum_w = b->ln_w ? sums : NULL;
        j.sum_b = b->ln_w ? sums + per : NULL;
        j.sum_db = b->db ? sums + (arrays - 1) * per : NULL;
    } else if (b->ln_w) { /* no memory: the column pass first, alone */
        ct__p_layernorm_backward_params(pool, b->ln_dw, b->ln_db, b->ln_dout, b->ln_inp,
                                        b->ln_mean, b->ln_rstd, b->N, b->C);
    }
    ct__pool_run(pool, chain_task, &j, j.ntasks);
    if (sums) { /* the groups' sums, in order */
        const ct__kernels *k = j.k;
        if (j.sum_w) {
            k->bias_backward(b->ln_dw, j.sum_w, (int)groups, b->C, b->C);
            k->bias_backward(b->ln_db, j.sum_b, (int)groups, b->C, b->C);
        }
        if (j.sum_db)
            k->bias_backward(b->db, j.sum_db, (int)groups, b->C, b->C);
    } else if (b->db) {
        ct__p_bias_backward(pool, b->db, b->dy, b->N, b->C);
    }
    free(sums);
    report(&j, t0 ? ct__now_s() - t0 : 0, (double)b->N * b->C, 12);
}
