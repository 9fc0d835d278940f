/* Streamed multi-head attention over packed sequences (model/attention.h):
 * one pool task per (sequence, head), tiles of query rows against the
 * sequence's whole key range, per-thread scratch only. fp32, and bf16 by
 * rounding operands in place; attention_dot.c has the bf16 dot-product
 * path. */
#include "model/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/parallel.h"
#include "model/attention_impl.h"

/* ct__scratch slot: 0-2 belong to the GEMM packers (kernels/), which these
 * tasks never call, but keeping clear of them costs nothing. */
enum { SLOT = 3 };

/* Per-thread scratch of one task, in floats: regions are 64-byte aligned.
 * kt, vt: K^T and V^T of the head [HD][Tp]; kc, vc: bf16-rounded copies of
 * K or V [T][HD]; qt, dct: the tile's rounded q and dctx [TILE][HD]; p, pd,
 * dp: [TILE][Tp] (scores -> probabilities, dropped probabilities, dP -> dS);
 * d: the tile's rowsum(dctx * ctx). Unused regions have size 0. */
typedef struct layout {
    size_t kt, vt, kc, vc, qt, dct, p, pd, dp, d, total;
} layout;

static layout plan(const ct__attn *a, int T, int backward)
{
    size_t Tp = up16((size_t)T), HD = (size_t)a->HD, o = 0;
    int bf = a->bf16 != 0, drop = a->dropout > 0;
    layout l;
#define TAKE(field, n) (l.field = o, o += up16(n))
    TAKE(kt, HD * Tp);
    TAKE(vt, backward ? HD * Tp : 0);
    TAKE(kc, backward && bf ? (size_t)T * HD : 0);
    TAKE(vc, !backward && bf ? (size_t)T * HD : 0);
    TAKE(qt, bf ? (size_t)TILE * HD : 0);
    TAKE(dct, backward && bf ? (size_t)TILE * HD : 0);
    TAKE(p, (size_t)TILE * Tp);
    TAKE(pd, backward && (bf || drop) ? (size_t)TILE * Tp : 0);
    TAKE(dp, backward ? (size_t)TILE * Tp : 0);
    TAKE(d, backward ? TILE : 0);
#undef TAKE
    l.total = o;
    return l;
}

size_t ct__attn_scratch_bytes(const ct__attn *a, int T)
{
    if (!a || !a->k || T <= 0 || a->HD <= 0)
        return 0;
    if (ct__attn_use_dot(a, ct__attn_tiles_for(a->k->isa)))
        return ct__attn_dot_words(a, T) * sizeof(float);
    size_t f = plan(a, T, 0).total, b = plan(a, T, 1).total;
    return (f > b ? f : b) * sizeof(float);
}

/* ---- helpers ------------------------------------------------------------------ */

/* dst[rows][cols] (dense) = src's rows (ld apart), rounded to bf16 values:
 * one pass, no copy first. */
static void copy_rounded(const ct__attn *a, float *dst, const float *src, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        a->k->round_bf16(dst + (size_t)r * cols, src + (size_t)r * a->ld, (size_t)cols);
}

/* dst[HD][Tp] = src^T for T rows of HD columns, rounded when bf16. */
static void transpose(const ct__attn *a, const ct__attn_tiles *t, float *dst, const float *src,
                      int T, size_t Tp)
{
    t->transpose32(dst, (int)Tp, src, a->ld, T, a->HD);
    if (a->bf16)
        for (int d = 0; d < a->HD; d++)
            a->k->round_bf16(dst + (size_t)d * Tp, dst + (size_t)d * Tp, (size_t)T);
}

static ct_status check(const ct__attn *a, const char *who, const void *p1, const void *p2,
                       const void *p3, const void *p4, const void *p5)
{
    if (!a || !a->k)
        return ct__error(CT_ERR_INVALID_ARG, "%s: no attention description or kernel table",
                         who);
    if (a->n_seq < 0 || (a->n_seq > 0 && !a->seq_start))
        return ct__error(CT_ERR_INVALID_ARG, "%s: n_seq %d without seq_start", who, a->n_seq);
    if (a->NH <= 0 || a->HD <= 0 || a->ld < a->NH * a->HD)
        return ct__error(CT_ERR_INVALID_ARG, "%s: NH %d, HD %d, ld %d (need ld >= NH * HD)",
                         who, a->NH, a->HD, a->ld);
    if (!(a->dropout >= 0 && a->dropout < 1))
        return ct__error(CT_ERR_INVALID_ARG, "%s: dropout %g outside [0, 1)", who,
                         (double)a->dropout);
    if (!isfinite(a->scale))
        return ct__error(CT_ERR_INVALID_ARG, "%s: scale %g is not finite", who,
                         (double)a->scale);
    if (a->n_seq == 0)
        return CT_OK;
    if (a->seq_start[0] != 0)
        return ct__error(CT_ERR_INVALID_ARG, "%s: seq_start[0] = %d, not 0", who,
                         a->seq_start[0]);
    for (int s = 0; s < a->n_seq; s++)
        if (a->seq_start[s + 1] < a->seq_start[s])
            return ct__error(CT_ERR_INVALID_ARG, "%s: seq_start[%d] = %d < seq_start[%d] = %d",
                             who, s + 1, a->seq_start[s + 1], s, a->seq_start[s]);
    if (a->seq_start[a->n_seq] > 0 && (!p1 || !p2 || !p3 || !p4 || !p5))
        return ct__error(CT_ERR_INVALID_ARG, "%s: NULL array", who);
    return CT_OK;
}

/* The longest sequence: the scratch every task may need. */
static int max_len(const ct__attn *a)
{
    int T = 0;
    for (int s = 0; s < a->n_seq; s++)
        if (a->seq_start[s + 1] - a->seq_start[s] > T)
            T = a->seq_start[s + 1] - a->seq_start[s];
    return T;
}

/* Asks for rows [0, T) of one head's columns of x (rows ld apart) in the
 * cache ahead of use. A head's slice is HD of every row's NH * HD floats,
 * a stride the hardware prefetchers follow poorly: read plainly, each row
 * waits out a miss, and with prefetches they overlap. */
static void prefetch_head(const ct__attn *a, const float *x, int T)
{
    for (int j = 0; j < T; j++)
        for (int d = 0; d < a->HD; d += 16)
            __builtin_prefetch(x + (size_t)j * a->ld + d, 0, 2);
}

/* This thread's scratch for a task, or NULL with the job marked failed. */
static float *task_scratch(ct__attn_job *J)
{
    float *w = ct__scratch(SLOT, J->bytes);
    if (!w)
        __atomic_store_n(&J->failed, 1, __ATOMIC_RELAXED);
    return w;
}

/* ---- forward ------------------------------------------------------------------ */

/* The task's rows and head of ctx into ctx_b, if asked for. */
static void round_ctx(const ct__attn_job *J, int T, size_t off)
{
    const ct__attn *a = J->a;
    if (!a->ctx_b)
        return;
    for (int r = 0; r < T; r++)
        a->k->f32_to_bf16(a->ctx_b + off + (size_t)r * a->ld, J->ctx + off + (size_t)r * a->ld,
                          (size_t)a->HD);
}

static void fwd_task(void *ctx, int task, int thread)
{
    ct__attn_job *J = ctx;
    const ct__attn *a = J->a;
    const ct__attn_tiles *t = J->t;
    int s = task / a->NH, h = task % a->NH, HD = a->HD, ld = a->ld;
    int n0 = a->seq_start[s], T = a->seq_start[s + 1] - n0, N = a->seq_start[a->n_seq];
    (void)thread;
    if (T <= 0)
        return;
    float *w = task_scratch(J);
    if (!w)
        return;
    size_t off = (size_t)n0 * ld + (size_t)h * HD;
    const float *ins[] = {J->k + off, J->v + off, J->q + off};
    for (int i = 0; i < 3; i++)
        prefetch_head(a, ins[i], T);
    if (ct__attn_use_dot(a, t)) {
        ct__attn_dot_forward(J, w, s, h);
        round_ctx(J, T, off);
        return;
    }
    layout L = plan(a, T, 0);
    size_t Tp = up16((size_t)T);
    const float *q = J->q + off, *k = J->k + off, *v = J->v + off;
    float *kt = w + L.kt, *S = w + L.p, *out = J->ctx + off, *lse = J->lse + (size_t)h * N + n0;

    transpose(a, t, kt, k, T, Tp);
    const float *vb = v;
    int ldv = ld;
    if (a->bf16) {
        copy_rounded(a, w + L.vc, v, T, HD);
        vb = w + L.vc;
        ldv = HD;
    }
    for (int i0 = 0; i0 < T; i0 += TILE) {
        int R = T - i0 < TILE ? T - i0 : TILE;
        const float *qa = q + (size_t)i0 * ld;
        int ldq = ld;
        if (a->bf16) {
            copy_rounded(a, w + L.qt, qa, R, HD);
            qa = w + L.qt;
            ldq = HD;
        }
        ct__attn_drop drop;
        t->mm(S, (int)Tp, qa, ldq, 1, kt, (int)Tp, R, T, HD, 0);
        t->softmax_rows(S, lse + i0, S, (int)Tp, R, T, a->scale,
                        ct__attn_tile_drop(a, &drop, s, h, T, i0), a->bf16, NULL, 0);
        t->mm(out + (size_t)i0 * ld, ld, S, (int)Tp, 1, vb, ldv, R, HD, T, 0);
    }
    round_ctx(J, T, off);
}

ct_status ct__attn_forward(const ct__attn *a, float *ctx, float *lse, const float *q,
                           const float *k, const float *v)
{
    ct_status st = check(a, "attention forward", ctx, lse, q, k, v);
    if (st != CT_OK || a->n_seq == 0)
        return st;
    ct__attn_job J = {a, ct__attn_tiles_for(a->k->isa), ctx, lse, NULL, NULL, NULL, q, k, v,
             NULL, NULL, NULL, 0, 0, NULL};
    J.bytes = ct__attn_scratch_bytes(a, max_len(a));
    ct__pool_run(a->pool, fwd_task, &J, a->n_seq * a->NH);
    if (J.failed)
        return ct__error(CT_ERR_NOMEM, "attention forward: no %zu bytes of per-thread scratch",
                         J.bytes);
    return CT_OK;
}

/* ---- backward ----------------------------------------------------------------- */

/* The task's rows and head of dq, dk and dv, complete: into their bf16
 * copies and column sums, if asked for, while they are in cache. */
static void grad_outputs(const ct__attn_job *J, int s, int h, int T, size_t off)
{
    const ct__attn *a = J->a;
    float *const grads[3] = {J->dq, J->dk, J->dv};
    ct__bf16 *const out_b[3] = {a->dq_b, a->dk_b, a->dv_b};
    size_t width = (size_t)a->NH * a->HD;
    for (int i = 0; i < 3; i++) {
        const float *g = grads[i] + off;
        for (int r = 0; out_b[i] && r < T; r++)
            a->k->f32_to_bf16(out_b[i] + off + (size_t)r * a->ld, g + (size_t)r * a->ld,
                              (size_t)a->HD);
        if (J->sums) {
            float *sum = J->sums + ((size_t)i * a->n_seq + s) * width + (size_t)h * a->HD;
            memset(sum, 0, (size_t)a->HD * sizeof *sum);
            a->k->bias_backward(sum, g, T, a->HD, a->ld);
        }
    }
}

static void bwd_task(void *ctx, int task, int thread)
{
    ct__attn_job *J = ctx;
    const ct__attn *a = J->a;
    const ct__attn_tiles *t = J->t;
    int s = task / a->NH, h = task % a->NH, HD = a->HD, ld = a->ld;
    int n0 = a->seq_start[s], T = a->seq_start[s + 1] - n0, N = a->seq_start[a->n_seq];
    int bf = a->bf16 != 0;
    (void)thread;
    if (T <= 0)
        return;
    float *w = task_scratch(J);
    if (!w)
        return;
    size_t off = (size_t)n0 * ld + (size_t)h * HD;
    const float *ins[] = {J->k + off, J->v + off, J->q + off, J->dctx + off, J->ctx_in + off};
    for (int i = 0; i < 5; i++)
        prefetch_head(a, ins[i], T);
    if (ct__attn_use_dot(a, t)) {
        ct__attn_dot_backward(J, w, s, h);
        grad_outputs(J, s, h, T, off);
        return;
    }
    layout L = plan(a, T, 1);
    size_t Tp = up16((size_t)T);
    const float *q = J->q + off, *k = J->k + off, *v = J->v + off;
    const float *dctx = J->dctx + off, *ctxo = J->ctx_in + off;
    const float *lse = J->lse_in + (size_t)h * N + n0;
    float *dq = J->dq + off, *dk = J->dk + off, *dv = J->dv + off;
    float *kt = w + L.kt, *vt = w + L.vt, *P = w + L.p, *dP = w + L.dp, *D = w + L.d;
    float *Pd = bf || a->dropout > 0 ? w + L.pd : NULL; /* P's dropped copy */

    transpose(a, t, kt, k, T, Tp);
    transpose(a, t, vt, v, T, Tp);
    const float *kb = k;
    int ldk = ld;
    if (bf) {
        copy_rounded(a, w + L.kc, k, T, HD);
        kb = w + L.kc;
        ldk = HD;
    }
    for (int i0 = 0; i0 < T; i0 += TILE) {
        int R = T - i0 < TILE ? T - i0 : TILE, acc = i0 > 0; /* dk, dv sum over tiles */
        const float *qa = q + (size_t)i0 * ld, *da = dctx + (size_t)i0 * ld;
        int ldq = ld, ldd = ld;
        if (bf) {
            copy_rounded(a, w + L.qt, qa, R, HD);
            copy_rounded(a, w + L.dct, da, R, HD);
            qa = w + L.qt;
            ldq = HD;
            da = w + L.dct;
            ldd = HD;
        }
        /* P again, from the scores and the forward's lse, and Pd, kept
         * fp32 until dS has read its mask (rounding flushes denormals to 0) */
        ct__attn_drop drop;
        t->mm(P, (int)Tp, qa, ldq, 1, kt, (int)Tp, R, T, HD, 0);
        t->probs_rows(P, Pd, lse + i0, P, (int)Tp, R, T, a->scale,
                      ct__attn_tile_drop(a, &drop, s, h, T, i0));
        /* dPd = dctx V^T; dV += Pd^T dctx as soon as Pd is final (at
         * T = 384 in fp32 it ran 6% slower after dS's pass, which sweeps
         * three [TILE x T] arrays); D from the unrounded dctx rows (da may
         * be their bf16 copy); dS, scaled, rounding Pd after its mask */
        t->mm(dP, (int)Tp, da, ldd, 1, vt, (int)Tp, R, T, HD, 0);
        if (!bf)
            t->mm(dv, ld, Pd ? Pd : P, 1, (int)Tp, da, ldd, T, HD, R, acc);
        ct__attn_row_terms(a, D, dctx + (size_t)i0 * ld, ctxo + (size_t)i0 * ld, R);
        t->dsoftmax_rows(dP, Pd, P, D, (int)Tp, R, T, a->scale, a->dropout, bf, NULL, 0);
        if (bf)
            t->mm(dv, ld, Pd, 1, (int)Tp, da, ldd, T, HD, R, acc);
        /* dQ = dS K (this tile's rows, complete); dK += dS^T Q */
        t->mm(dq + (size_t)i0 * ld, ld, dP, (int)Tp, 1, kb, ldk, R, HD, T, 0);
        t->mm(dk, ld, dP, 1, (int)Tp, qa, ldq, T, HD, R, acc);
    }
    grad_outputs(J, s, h, T, off);
}

ct_status ct__attn_backward(const ct__attn *a, float *dq, float *dk, float *dv,
                            const float *dctx, const float *q, const float *k, const float *v,
                            const float *ctx, const float *lse)
{
    ct_status st = check(a, "attention backward", dq, dk, dv, dctx, q);
    if (st == CT_OK)
        st = check(a, "attention backward", k, v, ctx, lse, q);
    if (st != CT_OK || a->n_seq == 0)
        return st;
    ct__attn_job J = {a, ct__attn_tiles_for(a->k->isa), NULL, NULL, dq, dk, dv, q, k, v,
             dctx, ctx, lse, 0, 0, NULL};
    size_t width = (size_t)a->NH * a->HD;
    float *const db[3] = {a->db_q, a->db_k, a->db_v};
    if ((db[0] || db[1] || db[2]) &&
        !(J.sums = calloc(3 * (size_t)a->n_seq * width, sizeof *J.sums)))
        return ct__error(CT_ERR_NOMEM, "attention backward: no memory for the bias gradients' "
                                       "column sums (%d sequences)", a->n_seq);
    J.bytes = ct__attn_scratch_bytes(a, max_len(a));
    ct__pool_run(a->pool, bwd_task, &J, a->n_seq * a->NH);
    if (J.failed) {
        free(J.sums);
        return ct__error(CT_ERR_NOMEM, "attention backward: no %zu bytes of per-thread scratch",
                         J.bytes);
    }
    for (int i = 0; i < 3 && J.sums; i++)
        for (size_t c = 0; db[i] && c < width; c++) {
            float total = 0;
            for (int s = 0; s < a->n_seq; s++)
                total += J.sums[((size_t)i * a->n_seq + s) * width + c];
            db[i][c] += total;
        }
    free(J.sums);
    return CT_OK;
}
