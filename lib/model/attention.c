/* Streamed multi-head attention over packed sequences (model/attention.h):
 * one pool task per (sequence, head), tiles of query rows against the
 * sequence's whole key range, per-thread scratch only. */
#include "model/attention.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "kernels/attn_tile.h"

/* Query rows per tile. A tile row spans every key of its sequence, so each
 * row's softmax is exact within the tile and no online (running max)
 * softmax across key tiles is needed: BERT's T <= 512 keeps a [TILE x T]
 * score tile at 128 KB at most. */
enum { TILE = 64 };

/* ct__scratch slot: 0-2 belong to the GEMM packers (kernels/), which these
 * tasks never call, but keeping clear of them costs nothing. */
enum { SLOT = 3 };

static size_t up16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

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

/* The bf16 dot-product path (levels with vdpbf16ps), in 4-byte units.
 * Words hold bf16 pairs along the sum's index (kernels/attn_tile.h):
 * kt, vt [HDp/2][Tp] (B of q k^T and dctx v^T), kv, vv [ceil(T/2)][HD]
 * (B of dS k and Pd v), rows: bf16 rows of k or v while kt, vt are built;
 * qb, db: the tile's q and dctx as bf16 rows [TILE][HDp] (A operands), qv,
 * dv [TILE/2][HD] (B of dS^T q and Pd^T dctx); p, pd, dp as above; pb: a
 * [TILE][Tp] bf16 row tile (A of Pd v, dS k); tv [TILE/2][Tp] words (Pd^T,
 * dS^T as A). */
typedef struct dot_layout {
    size_t kt, vt, kv, vv, rows, qb, db, qv, dv, p, pd, dp, pb, tv, d, total;
} dot_layout;

static int use_dot(const ct__attn *a, const ct__attn_tiles *t)
{
    return a->bf16 && t->mm_bf16 && t->pack_pairs;
}

static dot_layout dot_plan(const ct__attn *a, int T, int backward)
{
    size_t Tp = up16((size_t)T), HD = (size_t)a->HD, HDp = HD + (HD & 1), o = 0;
    size_t T2 = ((size_t)T + 1) / 2;
    int drop = a->dropout > 0;
    dot_layout l;
#define TAKE(field, n) (l.field = o, o += up16(n))
    TAKE(kt, HDp / 2 * Tp);
    TAKE(vt, backward ? HDp / 2 * Tp : 0);
    TAKE(kv, backward ? T2 * HD : 0);
    TAKE(vv, backward ? 0 : T2 * HD);
    TAKE(rows, (size_t)T * HDp / 2);
    TAKE(qb, (size_t)TILE * HDp / 2);
    TAKE(db, backward ? (size_t)TILE * HDp / 2 : 0);
    TAKE(qv, backward ? (size_t)TILE / 2 * HD : 0);
    TAKE(dv, backward ? (size_t)TILE / 2 * HD : 0);
    TAKE(p, (size_t)TILE * Tp);
    TAKE(pd, backward && drop ? (size_t)TILE * Tp : 0);
    TAKE(dp, backward ? (size_t)TILE * Tp : 0);
    TAKE(pb, (size_t)TILE * Tp / 2);
    TAKE(tv, backward ? (size_t)TILE / 2 * Tp : 0);
    TAKE(d, backward ? TILE : 0);
#undef TAKE
    l.total = o;
    return l;
}

size_t ct__attn_scratch_bytes(const ct__attn *a, int T)
{
    if (!a || !a->k || T <= 0 || a->HD <= 0)
        return 0;
    size_t f, b;
    if (use_dot(a, ct__attn_tiles_for(a->k->isa))) {
        f = dot_plan(a, T, 0).total;
        b = dot_plan(a, T, 1).total;
    } else {
        f = plan(a, T, 0).total;
        b = plan(a, T, 1).total;
    }
    return (f > b ? f : b) * sizeof(float);
}

/* ---- helpers ------------------------------------------------------------------ */

/* x rounded to bf16 values in place (the table's conversion, so exactly the
 * rounding the GEMMs' inputs get), through a small stack buffer. */
static void round_bf16(const ct__kernels *k, float *x, size_t n)
{
    ct__bf16 tmp[256];
    for (size_t o = 0; o < n; o += 256) {
        size_t m = n - o < 256 ? n - o : 256;
        k->f32_to_bf16(tmp, x + o, m);
        k->bf16_to_f32(x + o, tmp, m);
    }
}

/* dst[rows][cols] (dense) = src rows lds apart, rounded when bf16. */
static void copy_rows(const ct__attn *a, float *dst, const float *src, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        memcpy(dst + (size_t)r * cols, src + (size_t)r * a->ld, (size_t)cols * sizeof *dst);
    if (a->bf16)
        round_bf16(a->k, dst, (size_t)rows * cols);
}

/* dst[HD][Tp] = src^T for T rows of HD columns, rounded when bf16. */
static void transpose(const ct__attn *a, float *dst, const float *src, int T, size_t Tp)
{
    for (int j = 0; j < T; j++)
        for (int d = 0; d < a->HD; d++)
            dst[(size_t)d * Tp + j] = src[(size_t)j * a->ld + d];
    if (a->bf16)
        for (int d = 0; d < a->HD; d++)
            round_bf16(a->k, dst + (size_t)d * Tp, (size_t)T);
}

/* Dropout counter of element (s, h, i, j): the sequences before s take
 * NH * len^2 counters each, then row-major [h][i][j] (documented in
 * attention.h). */
static size_t seq_counter_base(const ct__attn *a, int s)
{
    size_t base = 0;
    for (int t = 0; t < s; t++) {
        size_t len = (size_t)(a->seq_start[t + 1] - a->seq_start[t]);
        base += (size_t)a->NH * len * len;
    }
    return base;
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

typedef struct job {
    const ct__attn *a;
    const ct__attn_tiles *t;
    float *ctx, *lse, *dq, *dk, *dv;
    const float *q, *k, *v, *dctx, *ctx_in, *lse_in;
    size_t bytes;
    int failed; /* a task found no scratch; read after ct__pool_run */
} job;

/* dst: `rows` bf16 rows of `cols` (+1 zero when odd: the pair it ends
 * must not carry garbage into a dot product), from fp32 rows lds apart;
 * dst rows w elements apart (even, >= cols + 1 when cols is odd). */
static void rows_bf16(const ct__attn *a, ct__bf16 *dst, size_t w, const float *src, size_t lds,
                      int rows, int cols)
{
    for (int r = 0; r < rows; r++) {
        a->k->f32_to_bf16(dst + r * w, src + r * lds, (size_t)cols);
        if (cols & 1)
            dst[r * w + cols] = 0;
    }
}

/* dst word (p, j) [HDp/2][Tp] = pair p of bf16 row j (rows HDp/2 words). */
static void pairs_transposed(uint32_t *dst, const uint32_t *rows, int T, int HD, size_t Tp)
{
    int H2 = (HD + 1) / 2;
    for (int j = 0; j < T; j++)
        for (int p = 0; p < H2; p++)
            dst[(size_t)p * Tp + j] = rows[(size_t)j * H2 + p];
}

/* ---- forward ------------------------------------------------------------------ */

/* The forward with bf16 dot products: the same steps as fwd_task with
 * operands packed into bf16 pairs instead of rounded in place. */
static void fwd_dot_task(const job *J, float *w, int s, int h)
{
    const ct__attn *a = J->a;
    const ct__attn_tiles *t = J->t;
    int HD = a->HD, ld = a->ld, H2 = (HD + 1) / 2;
    int n0 = a->seq_start[s], T = a->seq_start[s + 1] - n0, N = a->seq_start[a->n_seq];
    int T2 = (T + 1) / 2;
    dot_layout L = dot_plan(a, T, 0);
    size_t Tp = up16((size_t)T), off = (size_t)n0 * ld + (size_t)h * HD;
    const float *q = J->q + off, *k = J->k + off, *v = J->v + off;
    float *S = w + L.p, *out = J->ctx + off, *lse = J->lse + (size_t)h * N + n0;
    uint32_t *W = (uint32_t *)w, *kt = W + L.kt, *vv = W + L.vv, *qb = W + L.qb;
    ct__bf16 *pb = (ct__bf16 *)(W + L.pb);
    size_t base = a->dropout > 0 ? seq_counter_base(a, s) : 0;

    rows_bf16(a, (ct__bf16 *)(W + L.rows), 2 * (size_t)H2, k, (size_t)ld, T, HD);
    pairs_transposed(kt, W + L.rows, T, HD, Tp);
    t->pack_pairs(vv, HD, v, ld, T, HD);
    for (int i0 = 0; i0 < T; i0 += TILE) {
        int R = T - i0 < TILE ? T - i0 : TILE;
        rows_bf16(a, (ct__bf16 *)qb, 2 * (size_t)H2, q + (size_t)i0 * ld, (size_t)ld, R, HD);
        t->mm_bf16(S, (int)Tp, qb, H2, 1, kt, (int)Tp, R, T, H2, 0);
        t->softmax_rows(S, lse + i0, S, (int)Tp, R, T, a->scale);
        if (a->dropout > 0)
            for (int r = 0; r < R; r++)
                a->k->dropout_forward(S + (size_t)r * Tp, S + (size_t)r * Tp, (size_t)T,
                                      a->dropout, a->dropout_key,
                                      base + ((size_t)h * T + i0 + r) * T);
        rows_bf16(a, pb, Tp, S, Tp, R, T); /* Tp > T when T is odd */
        t->mm_bf16(out + (size_t)i0 * ld, ld, (const uint32_t *)pb, (int)Tp / 2, 1, vv, HD, R,
                   HD, T2, 0);
    }
}

static void fwd_task(void *ctx, int task, int thread)
{
    job *J = ctx;
    const ct__attn *a = J->a;
    const ct__attn_tiles *t = J->t;
    int s = task / a->NH, h = task % a->NH, HD = a->HD, ld = a->ld;
    int n0 = a->seq_start[s], T = a->seq_start[s + 1] - n0, N = a->seq_start[a->n_seq];
    (void)thread;
    if (T <= 0)
        return;
    float *w = ct__scratch(SLOT, J->bytes);
    if (!w) {
        __atomic_store_n(&J->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    if (use_dot(a, t)) {
        fwd_dot_task(J, w, s, h);
        return;
    }
    layout L = plan(a, T, 0);
    size_t Tp = up16((size_t)T), off = (size_t)n0 * ld + (size_t)h * HD;
    const float *q = J->q + off, *k = J->k + off, *v = J->v + off;
    float *kt = w + L.kt, *S = w + L.p, *out = J->ctx + off, *lse = J->lse + (size_t)h * N + n0;
    size_t base = a->dropout > 0 ? seq_counter_base(a, s) : 0;

    transpose(a, kt, k, T, Tp);
    const float *vb = v;
    int ldv = ld;
    if (a->bf16) {
        copy_rows(a, w + L.vc, v, T, HD);
        vb = w + L.vc;
        ldv = HD;
    }
    for (int i0 = 0; i0 < T; i0 += TILE) {
        int R = T - i0 < TILE ? T - i0 : TILE;
        const float *qa = q + (size_t)i0 * ld;
        int ldq = ld;
        if (a->bf16) {
            copy_rows(a, w + L.qt, qa, R, HD);
            qa = w + L.qt;
            ldq = HD;
        }
        t->mm(S, (int)Tp, qa, ldq, 1, kt, (int)Tp, R, T, HD, 0);
        t->softmax_rows(S, lse + i0, S, (int)Tp, R, T, a->scale);
        for (int r = 0; r < R; r++) {
            float *row = S + (size_t)r * Tp;
            if (a->dropout > 0)
                a->k->dropout_forward(row, row, (size_t)T, a->dropout, a->dropout_key,
                                      base + ((size_t)h * T + i0 + r) * T);
            if (a->bf16)
                round_bf16(a->k, row, (size_t)T);
        }
        t->mm(out + (size_t)i0 * ld, ld, S, (int)Tp, 1, vb, ldv, R, HD, T, 0);
    }
}

ct_status ct__attn_forward(const ct__attn *a, float *ctx, float *lse, const float *q,
                           const float *k, const float *v)
{
    ct_status st = check(a, "attention forward", ctx, lse, q, k, v);
    if (st != CT_OK || a->n_seq == 0)
        return st;
    job J = {a, ct__attn_tiles_for(a->k->isa), ctx, lse, NULL, NULL, NULL, q, k, v,
             NULL, NULL, NULL, 0, 0};
    J.bytes = ct__attn_scratch_bytes(a, max_len(a));
    ct__pool_run(a->pool, fwd_task, &J, a->n_seq * a->NH);
    if (J.failed)
        return ct__error(CT_ERR_NOMEM, "attention forward: no %zu bytes of per-thread scratch",
                         J.bytes);
    return CT_OK;
}

/* ---- backward ----------------------------------------------------------------- */

/* The backward with bf16 dot products (bwd_task's steps, packed operands). */
static void bwd_dot_task(const job *J, float *w, int s, int h)
{
    const ct__attn *a = J->a;
    const ct__attn_tiles *t = J->t;
    int HD = a->HD, ld = a->ld, H2 = (HD + 1) / 2, drop = a->dropout > 0;
    int n0 = a->seq_start[s], T = a->seq_start[s + 1] - n0, N = a->seq_start[a->n_seq];
    int T2 = (T + 1) / 2;
    dot_layout L = dot_plan(a, T, 1);
    size_t Tp = up16((size_t)T), off = (size_t)n0 * ld + (size_t)h * HD;
    const float *q = J->q + off, *k = J->k + off, *v = J->v + off;
    const float *dctx = J->dctx + off, *ctxo = J->ctx_in + off;
    const float *lse = J->lse_in + (size_t)h * N + n0;
    float *dq = J->dq + off, *dk = J->dk + off, *dv = J->dv + off;
    float *P = w + L.p, *dP = w + L.dp, *D = w + L.d, *Pd = drop ? w + L.pd : P;
    uint32_t *W = (uint32_t *)w, *kt = W + L.kt, *vt = W + L.vt, *kv = W + L.kv;
    uint32_t *qb = W + L.qb, *db = W + L.db, *qv = W + L.qv, *dcv = W + L.dv, *tv = W + L.tv;
    ct__bf16 *pb = (ct__bf16 *)(W + L.pb);
    size_t base = drop ? seq_counter_base(a, s) : 0;

    rows_bf16(a, (ct__bf16 *)(W + L.rows), 2 * (size_t)H2, k, (size_t)ld, T, HD);
    pairs_transposed(kt, W + L.rows, T, HD, Tp);
    rows_bf16(a, (ct__bf16 *)(W + L.rows), 2 * (size_t)H2, v, (size_t)ld, T, HD);
    pairs_transposed(vt, W + L.rows, T, HD, Tp);
    t->pack_pairs(kv, HD, k, ld, T, HD);
    for (int j = 0; j < T; j++) { /* dk, dv accumulate over the tiles */
        memset(dk + (size_t)j * ld, 0, (size_t)HD * sizeof *dk);
        memset(dv + (size_t)j * ld, 0, (size_t)HD * sizeof *dv);
    }
    for (int i0 = 0; i0 < T; i0 += TILE) {
        int R = T - i0 < TILE ? T - i0 : TILE, R2 = (R + 1) / 2;
        const float *qa = q + (size_t)i0 * ld, *da = dctx + (size_t)i0 * ld;
        rows_bf16(a, (ct__bf16 *)qb, 2 * (size_t)H2, qa, (size_t)ld, R, HD);
        rows_bf16(a, (ct__bf16 *)db, 2 * (size_t)H2, da, (size_t)ld, R, HD);
        t->pack_pairs(qv, HD, qa, ld, R, HD);
        t->pack_pairs(dcv, HD, da, ld, R, HD);
        /* P again, from the scores and the forward's lse */
        t->mm_bf16(P, (int)Tp, qb, H2, 1, kt, (int)Tp, R, T, H2, 0);
        t->probs_rows(P, lse + i0, P, (int)Tp, R, T, a->scale);
        if (drop)
            for (int r = 0; r < R; r++)
                a->k->dropout_forward(Pd + (size_t)r * Tp, P + (size_t)r * Tp, (size_t)T,
                                      a->dropout, a->dropout_key,
                                      base + ((size_t)h * T + i0 + r) * T);
        /* dPd = dctx V^T; dV += Pd^T dctx */
        t->mm_bf16(dP, (int)Tp, db, H2, 1, vt, (int)Tp, R, T, H2, 0);
        t->pack_pairs(tv, (int)Tp, Pd, (int)Tp, R, T);
        t->mm_bf16(dv, ld, tv, 1, (int)Tp, dcv, HD, T, HD, R2, 1);
        for (int r = 0; r < R; r++) {
            const float *x = da + (size_t)r * ld, *y = ctxo + (size_t)(i0 + r) * ld;
            float sum = 0;
            for (int d = 0; d < HD; d++)
                sum += x[d] * y[d];
            D[r] = sum;
            if (drop)
                a->k->dropout_backward(dP + (size_t)r * Tp, dP + (size_t)r * Tp, (size_t)T,
                                       a->dropout, a->dropout_key,
                                       base + ((size_t)h * T + i0 + r) * T);
        }
        t->dsoftmax_rows(dP, P, D, (int)Tp, R, T);
        /* dQ = scale dS K; dK += dS^T Q */
        float *dqt = dq + (size_t)i0 * ld;
        rows_bf16(a, pb, Tp, dP, Tp, R, T);
        t->mm_bf16(dqt, ld, (const uint32_t *)pb, (int)Tp / 2, 1, kv, HD, R, HD, T2, 0);
        for (int r = 0; r < R; r++)
            for (int d = 0; d < HD; d++)
                dqt[(size_t)r * ld + d] *= a->scale;
        t->pack_pairs(tv, (int)Tp, dP, (int)Tp, R, T);
        t->mm_bf16(dk, ld, tv, 1, (int)Tp, qv, HD, T, HD, R2, 1);
    }
    for (int j = 0; j < T; j++)
        for (int d = 0; d < HD; d++)
            dk[(size_t)j * ld + d] *= a->scale;
}

static void bwd_task(void *ctx, int task, int thread)
{
    job *J = ctx;
    const ct__attn *a = J->a;
    const ct__attn_tiles *t = J->t;
    int s = task / a->NH, h = task % a->NH, HD = a->HD, ld = a->ld;
    int n0 = a->seq_start[s], T = a->seq_start[s + 1] - n0, N = a->seq_start[a->n_seq];
    int bf = a->bf16 != 0, drop = a->dropout > 0;
    (void)thread;
    if (T <= 0)
        return;
    float *w = ct__scratch(SLOT, J->bytes);
    if (!w) {
        __atomic_store_n(&J->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    if (use_dot(a, t)) {
        bwd_dot_task(J, w, s, h);
        return;
    }
    layout L = plan(a, T, 1);
    size_t Tp = up16((size_t)T), off = (size_t)n0 * ld + (size_t)h * HD;
    const float *q = J->q + off, *k = J->k + off, *v = J->v + off;
    const float *dctx = J->dctx + off, *ctxo = J->ctx_in + off;
    const float *lse = J->lse_in + (size_t)h * N + n0;
    float *dq = J->dq + off, *dk = J->dk + off, *dv = J->dv + off;
    float *kt = w + L.kt, *vt = w + L.vt, *P = w + L.p, *dP = w + L.dp, *D = w + L.d;
    float *Pd = bf || drop ? w + L.pd : P;
    size_t base = drop ? seq_counter_base(a, s) : 0;

    transpose(a, kt, k, T, Tp);
    transpose(a, vt, v, T, Tp);
    const float *kb = k;
    int ldk = ld;
    if (bf) {
        copy_rows(a, w + L.kc, k, T, HD);
        kb = w + L.kc;
        ldk = HD;
    }
    for (int j = 0; j < T; j++) { /* dk, dv accumulate over the tiles */
        memset(dk + (size_t)j * ld, 0, (size_t)HD * sizeof *dk);
        memset(dv + (size_t)j * ld, 0, (size_t)HD * sizeof *dv);
    }
    for (int i0 = 0; i0 < T; i0 += TILE) {
        int R = T - i0 < TILE ? T - i0 : TILE;
        const float *qa = q + (size_t)i0 * ld, *da = dctx + (size_t)i0 * ld;
        int ldq = ld, ldd = ld;
        if (bf) {
            copy_rows(a, w + L.qt, qa, R, HD);
            copy_rows(a, w + L.dct, da, R, HD);
            qa = w + L.qt;
            ldq = HD;
            da = w + L.dct;
            ldd = HD;
        }
        /* P again, from the scores and the forward's lse */
        t->mm(P, (int)Tp, qa, ldq, 1, kt, (int)Tp, R, T, HD, 0);
        t->probs_rows(P, lse + i0, P, (int)Tp, R, T, a->scale);
        for (int r = 0; r < R; r++) {
            float *pr = P + (size_t)r * Tp, *pdr = Pd + (size_t)r * Tp;
            if (drop)
                a->k->dropout_forward(pdr, pr, (size_t)T, a->dropout, a->dropout_key,
                                      base + ((size_t)h * T + i0 + r) * T);
            else if (bf)
                memcpy(pdr, pr, (size_t)T * sizeof *pdr);
            if (bf)
                round_bf16(a->k, pdr, (size_t)T);
        }
        /* dPd = dctx V^T; dV += Pd^T dctx */
        t->mm(dP, (int)Tp, da, ldd, 1, vt, (int)Tp, R, T, HD, 0);
        t->mm(dv, ld, Pd, 1, (int)Tp, da, ldd, T, HD, R, 1);
        /* D = rowsum(dctx * ctx), which equals rowsum(dP * P) with or
         * without dropout and needs no pass over the T columns */
        for (int r = 0; r < R; r++) {
            const float *x = J->dctx + off + (size_t)(i0 + r) * ld;
            const float *y = ctxo + (size_t)(i0 + r) * ld;
            float sum = 0;
            for (int d = 0; d < HD; d++)
                sum += x[d] * y[d];
            D[r] = sum;
            if (drop)
                a->k->dropout_backward(dP + (size_t)r * Tp, dP + (size_t)r * Tp, (size_t)T,
                                       a->dropout, a->dropout_key,
                                       base + ((size_t)h * T + i0 + r) * T);
        }
        t->dsoftmax_rows(dP, P, D, (int)Tp, R, T);
        if (bf)
            for (int r = 0; r < R; r++)
                round_bf16(a->k, dP + (size_t)r * Tp, (size_t)T);
        /* dQ = scale dS K (this tile's rows, complete); dK += dS^T Q */
        float *dqt = dq + (size_t)i0 * ld;
        t->mm(dqt, ld, dP, (int)Tp, 1, kb, ldk, R, HD, T, 0);
        for (int r = 0; r < R; r++)
            for (int d = 0; d < HD; d++)
                dqt[(size_t)r * ld + d] *= a->scale;
        t->mm(dk, ld, dP, 1, (int)Tp, qa, ldq, T, HD, R, 1);
    }
    for (int j = 0; j < T; j++)
        for (int d = 0; d < HD; d++)
            dk[(size_t)j * ld + d] *= a->scale;
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
    job J = {a, ct__attn_tiles_for(a->k->isa), NULL, NULL, dq, dk, dv, q, k, v,
             dctx, ctx, lse, 0, 0};
    J.bytes = ct__attn_scratch_bytes(a, max_len(a));
    ct__pool_run(a->pool, bwd_task, &J, a->n_seq * a->NH);
    if (J.failed)
        return ct__error(CT_ERR_NOMEM, "attention backward: no %zu bytes of per-thread scratch",
                         J.bytes);
    return CT_OK;
}
