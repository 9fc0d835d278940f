/* The bf16 path of streamed attention on levels with bf16 dot products
 * (vdpbf16ps): the steps of attention.c's tasks, with every product's
 * operands packed into bf16 pairs along its sum instead of rounded in place. */

#include "model/attention_impl.h"

/* The bf16 dot-product path (levels with vdpbf16ps), in 4-byte units.
 * Words hold bf16 pairs along the sum's index (kernels/attn_tile.h):
 * kt, vt [HDp/2][Tp] (B of q k^T and dctx v^T), kv, vv [ceil(T/2)][HD]
 * (B of dS k and Pd v), rows: bf16 rows of k or v while kt, vt are built;
 * qb, db: the tile's q and dctx as bf16 rows [TILE][HDp] (A operands); qv,
 * dv [ceil(T/2)][HD]: the whole head's q and dctx in pairs along the query
 * (B of dS^T q and Pd^T dctx); p, pd, dp as attention.c's; pb: a [TILE][Tp]
 * bf16 row tile (A of Pd v, dS k); dsp, pdp [ceil(T/2)][Tp]: the whole
 * head's dS and Pd in pairs along the query (A of dS^T q and Pd^T dctx,
 * read transposed). */
typedef struct dot_layout {
    size_t kt, vt, kv, vv, rows, qb, db, qv, dv, p, pd, dp, pb, dsp, pdp, d, total;
} dot_layout;

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
    TAKE(qv, backward ? T2 * HD : 0);
    TAKE(dv, backward ? T2 * HD : 0);
    TAKE(p, (size_t)TILE * Tp);
    TAKE(pd, backward && drop ? (size_t)TILE * Tp : 0);
    TAKE(dp, backward ? (size_t)TILE * Tp : 0);
    TAKE(pb, (size_t)TILE * Tp / 2);
    TAKE(dsp, backward ? T2 * Tp : 0);
    TAKE(pdp, backward ? T2 * Tp : 0);
    TAKE(d, backward ? TILE : 0);
#undef TAKE
    l.total = o;
    return l;
}

size_t ct__attn_dot_words(const ct__attn *a, int T)
{
    size_t f = dot_plan(a, T, 0).total, b = dot_plan(a, T, 1).total;
    return f > b ? f : b;
}

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

/* Asks for `rows` rows of `cols` floats, ld apart, to be brought into L2.
 * Backward reads the head's slices of q, ctx and dctx 256 bytes a row, a
 * row several KB from the next: from memory (forward wrote them long ago)
 * such reads wait on each line, which the hardware's prefetcher does not
 * foresee across so short runs. */
static void prefetch_rows(const float *p, size_t ld, int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c += 16)
            __builtin_prefetch(p + (size_t)r * ld + c, 0, 2);
}

/* The same for rows about to be written, `rows` of `bytes` each, `stride`
 * bytes apart: rows written by a product's tile stores or a rounding pass
 * otherwise wait on each line's fetch for writing. The forward's context
 * rows of a tile and their bf16 copy (an AMX Xeon, 2 threads: the
 * forward 0.91x the time at 384 tokens, 0.97x at 146, in the step at 128
 * 0.87x and 0.88x for the copy; avx512bf16 0.98x and 1.00x), the
 * backward's dk and dv on short sequences (below). */
static void prefetch_for_write(void *p, size_t stride, int rows, size_t bytes)
{
    for (int r = 0; r < rows; r++)
        for (size_t b = 0; b < bytes; b += 64)
            __builtin_prefetch((char *)p + r * stride + b, 1, 2);
}

/* The forward with bf16 dot products: the same steps as fwd_task with
 * operands packed into bf16 pairs instead of rounded in place. */
void ct__attn_dot_forward(const ct__attn_job *J, float *w, int s, int h)
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

    prefetch_rows(k, (size_t)ld, T, HD);
    prefetch_rows(v, (size_t)ld, T, HD);
    prefetch_rows(q, (size_t)ld, T < TILE ? T : TILE, HD);
    rows_bf16(a, (ct__bf16 *)(W + L.rows), 2 * (size_t)H2, k, (size_t)ld, T, HD);
    t->transpose32(kt, (int)Tp, W + L.rows, H2, T, H2); /* pair p of row j at (p, j) */
    t->pack_pairs(vv, HD, v, ld, T, HD);
    for (int i0 = 0; i0 < T; i0 += TILE) {
        int R = T - i0 < TILE ? T - i0 : TILE;
        int next = T - i0 - R < TILE ? T - i0 - R : TILE;
        prefetch_rows(q + (size_t)(i0 + R) * ld, (size_t)ld, next, HD);
        prefetch_for_write(out + (size_t)i0 * ld, (size_t)ld * 4, R, (size_t)HD * 4);
        if (a->ctx_b) /* attention.c rounds the rows into it after the task */
            prefetch_for_write(a->ctx_b + off + (size_t)i0 * ld, (size_t)ld * 2, R,
                               (size_t)HD * 2);
        rows_bf16(a, (ct__bf16 *)qb, 2 * (size_t)H2, q + (size_t)i0 * ld, (size_t)ld, R, HD);
        t->mm_bf16(S, (int)Tp, qb, H2, 1, kt, (int)Tp, R, T, H2, 0);
        ct__attn_drop drop;
        t->softmax_rows(S, lse + i0, S, (int)Tp, R, T, a->scale,
                        ct__attn_tile_drop(a, &drop, s, h, T, i0), 0, pb, (int)Tp);
        t->mm_bf16(out + (size_t)i0 * ld, ld, (const uint32_t *)pb, (int)Tp / 2, 1, vv, HD, R,
                   HD, T2, 0);
    }
}

/* The backward with bf16 dot products (bwd_task's steps, packed operands).
 * dK and dV are sums over every query: the tiles keep their dS and Pd in
 * pairs along the query, and after the last tile dK = dS^T q and dV = Pd^T
 * dctx are each one product over the whole sequence (summed tile by tile,
 * their C was loaded and stored again for every tile: an AMX Xeon, one
 * thread, 0.83x the backward's time on SQuAD-like lengths, attn_bench;
 * vdpbf16ps's kernel unchanged within noise). */
void ct__attn_dot_backward(const ct__attn_job *J, float *w, int s, int h)
{
    const ct__attn *a = J->a;
    const ct__attn_tiles *t = J->t;
    int HD = a->HD, ld = a->ld, H2 = (HD + 1) / 2;
    int n0 = a->seq_start[s], T = a->seq_start[s + 1] - n0, N = a->seq_start[a->n_seq];
    int T2 = (T + 1) / 2;
    dot_layout L = dot_plan(a, T, 1);
    size_t Tp = up16((size_t)T), off = (size_t)n0 * ld + (size_t)h * HD;
    const float *q = J->q + off, *k = J->k + off, *v = J->v + off;
    const float *dctx = J->dctx + off, *ctxo = J->ctx_in + off;
    const float *lse = J->lse_in + (size_t)h * N + n0;
    float *dq = J->dq + off, *dk = J->dk + off, *dv = J->dv + off;
    float *P = w + L.p, *dP = w + L.dp, *D = w + L.d, *Pd = a->dropout > 0 ? w + L.pd : NULL;
    uint32_t *W = (uint32_t *)w, *kt = W + L.kt, *vt = W + L.vt, *kv = W + L.kv;
    uint32_t *qb = W + L.qb, *db = W + L.db, *qv = W + L.qv, *dcv = W + L.dv;
    uint32_t *dsp = W + L.dsp, *pdp = W + L.pdp;
    ct__bf16 *pb = (ct__bf16 *)(W + L.pb);

    prefetch_rows(k, (size_t)ld, T, HD);
    prefetch_rows(v, (size_t)ld, T, HD);
    prefetch_rows(q, (size_t)ld, T, HD);
    prefetch_rows(dctx, (size_t)ld, T, HD);
    rows_bf16(a, (ct__bf16 *)(W + L.rows), 2 * (size_t)H2, k, (size_t)ld, T, HD);
    t->transpose32(kt, (int)Tp, W + L.rows, H2, T, H2); /* pair p of row j at (p, j) */
    rows_bf16(a, (ct__bf16 *)(W + L.rows), 2 * (size_t)H2, v, (size_t)ld, T, HD);
    t->transpose32(vt, (int)Tp, W + L.rows, H2, T, H2);
    t->pack_pairs(kv, HD, k, ld, T, HD);
    t->pack_pairs(qv, HD, q, ld, T, HD);
    t->pack_pairs(dcv, HD, dctx, ld, T, HD);
    for (int i0 = 0; i0 < T; i0 += TILE) {
        int R = T - i0 < TILE ? T - i0 : TILE;
        const float *da = dctx + (size_t)i0 * ld;
        size_t at = (size_t)i0 / 2 * Tp; /* TILE is even: the tile's first pair */
        /* ctx's rows for the row terms below; on a short sequence as many
         * rows of dk and dv, spread over the tiles so as not to crowd the
         * reads (an AMX Xeon, 2 threads: 0.95x the backward's time at 146
         * tokens, 0.98x at 256, but 1.06x at 384) */
        prefetch_rows(ctxo + (size_t)i0 * ld, (size_t)ld, R, HD);
        if (T <= 4 * TILE) {
            prefetch_for_write(dk + (size_t)i0 * ld, (size_t)ld * 4, R, (size_t)HD * 4);
            prefetch_for_write(dv + (size_t)i0 * ld, (size_t)ld * 4, R, (size_t)HD * 4);
        }
        rows_bf16(a, (ct__bf16 *)qb, 2 * (size_t)H2, q + (size_t)i0 * ld, (size_t)ld, R, HD);
        rows_bf16(a, (ct__bf16 *)db, 2 * (size_t)H2, da, (size_t)ld, R, HD);
        /* P again, from the scores and the forward's lse, and Pd */
        ct__attn_drop drop;
        t->mm_bf16(P, (int)Tp, qb, H2, 1, kt, (int)Tp, R, T, H2, 0);
        t->probs_rows(P, Pd, lse + i0, P, (int)Tp, R, T, a->scale,
                      ct__attn_tile_drop(a, &drop, s, h, T, i0));
        /* dPd = dctx V^T */
        t->mm_bf16(dP, (int)Tp, db, H2, 1, vt, (int)Tp, R, T, H2, 0);
        t->pack_pairs(pdp + at, (int)Tp, Pd ? Pd : P, (int)Tp, R, T);
        /* dS, scaled, also as bf16 rows (pb: Tp > T when T is odd) */
        ct__attn_row_terms(a, D, da, ctxo + (size_t)i0 * ld, R);
        t->dsoftmax_rows(dP, Pd, P, D, (int)Tp, R, T, a->scale, a->dropout, 0, pb, (int)Tp);
        /* dQ = dS K */
        t->mm_bf16(dq + (size_t)i0 * ld, ld, (const uint32_t *)pb, (int)Tp / 2, 1, kv, HD, R,
                   HD, T2, 0);
        t->pack_pairs(dsp + at, (int)Tp, dP, (int)Tp, R, T);
    }
    /* dV = Pd^T dctx, dK = dS^T q */
    t->mm_bf16(dv, ld, pdp, 1, (int)Tp, dcv, HD, T, HD, T2, 0);
    t->mm_bf16(dk, ld, dsp, 1, (int)Tp, qv, HD, T, HD, T2, 0);
}
