/* Streamed attention (model/attention.h) against a naive reference that
 * materialises S and P per sequence and head in double: ragged packed
 * batches (lengths 0, 1 and past the tile), ld wider than the heads, fp32
 * and bf16, dropout with the mask regenerated here, every kernel level this
 * machine runs, the outputs' bf16 copies and bias-gradient sums,
 * thread-count invariance, and a finite-difference check. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine/cpu.h"
#include "machine/threadpool.h"
#include "kernels/attn_tile.h"
#include "kernels/kernels.h"
#include "model/attention.h"
#include "suites.h"

#define SENTINEL 12345.0f /* in the columns past NH * HD, which must stay untouched */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float urand(void) /* [-1, 1) */
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (float)(((rng * 0x2545f4914f6cdd1dull) >> 40) * (1.0 / 16777216.0) * 2.0 - 1.0);
}

static float bf(float x) /* the library's fp32 -> bf16 rounding, back to fp32 */
{
    ct__bf16 b;
    float y;
    ct__f32_to_bf16_generic(&b, &x, 1);
    ct__bf16_to_f32_generic(&y, &b, 1);
    return y;
}

/* One problem: a packed batch and its inputs, outputs of a run. */
typedef struct prob {
    int n_seq, NH, HD, ld, N;
    int seq_start[16];
    uint64_t ids[16]; /* each sequence's example id (its dropout key) */
    float *q, *k, *v, *dctx;
    float *ctx, *lse, *dq, *dk, *dv;
} prob;

static float *alloc_filled(size_t n, float amp)
{
    float *x = malloc(n * sizeof *x);
    ck_assert_ptr_nonnull(x);
    for (size_t i = 0; i < n; i++)
        x[i] = amp * urand();
    return x;
}

static void prob_init(prob *p, const int *lens, int n_seq, int NH, int HD, int pad, float amp)
{
    memset(p, 0, sizeof *p);
    p->n_seq = n_seq;
    p->NH = NH;
    p->HD = HD;
    p->ld = NH * HD + pad;
    for (int s = 0; s < n_seq; s++) {
        p->seq_start[s + 1] = p->seq_start[s] + lens[s];
        p->ids[s] = 1000003u * (uint64_t)(s + 1);
    }
    p->N = p->seq_start[n_seq];
    size_t n = (size_t)p->N * p->ld;
    p->q = alloc_filled(n, amp);
    p->k = alloc_filled(n, amp);
    p->v = alloc_filled(n, 1.0f);
    p->dctx = alloc_filled(n, 1.0f);
    float **outs[] = {&p->ctx, &p->dq, &p->dk, &p->dv};
    for (int i = 0; i < 4; i++) {
        *outs[i] = malloc((n ? n : 1) * sizeof(float));
        for (size_t j = 0; j < n; j++)
            (*outs[i])[j] = SENTINEL;
    }
    p->lse = malloc(((size_t)NH * p->N + 1) * sizeof(float));
}

static void prob_free(prob *p)
{
    float *all[] = {p->q, p->k, p->v, p->dctx, p->ctx, p->lse, p->dq, p->dk, p->dv};
    for (int i = 0; i < 9; i++)
        free(all[i]);
}

static ct__attn desc(const prob *p, const ct__kernels *k, ct__pool *pool, int bf16, float drop)
{
    ct__attn a = {.k = k, .pool = pool, .n_seq = p->n_seq, .seq_start = p->seq_start,
                  .NH = p->NH, .HD = p->HD, .ld = p->ld, .scale = 1.0f / sqrtf((float)p->HD),
                  .bf16 = bf16, .dropout = drop, .dropout_key = 0x1234abcdull,
                  .dropout_ids = p->ids};
    return a;
}

static void run(const ct__attn *a, prob *p)
{
    OK(ct__attn_forward(a, p->ctx, p->lse, p->q, p->k, p->v));
    OK(ct__attn_backward(a, p->dq, p->dk, p->dv, p->dctx, p->q, p->k, p->v, p->ctx, p->lse));
}

/* ---- the reference ---------------------------------------------------------- */

typedef struct ref {
    double *ctx, *lse, *dq, *dk, *dv;
} ref;

/* The dropout multiplier of each (i, j) of sequence s, head h: 0 or
 * 1/(1-p), from the kernel run on ones with the key and counter attention.h
 * names. */
static void mask_of(float *m, const ct__attn *a, int s, int h, int T)
{
    uint64_t id = a->dropout_ids ? a->dropout_ids[s] : (uint64_t)s;
    uint64_t key = ct__dropout_seq_key(a->dropout_key, id);
    for (int i = 0; i < T * T; i++)
        m[i] = 1.0f;
    if (a->dropout > 0)
        ct__dropout_forward_generic(m, m, (size_t)T * T, a->dropout, key, (size_t)h * T * T);
}

static ref reference(const ct__attn *a, const prob *p)
{
    size_t n = (size_t)p->N * p->ld;
    ref r;
    r.ctx = calloc(n + 1, sizeof(double));
    r.lse = calloc((size_t)p->NH * p->N + 1, sizeof(double));
    r.dq = calloc(n + 1, sizeof(double));
    r.dk = calloc(n + 1, sizeof(double));
    r.dv = calloc(n + 1, sizeof(double));
#define RND(x) (a->bf16 ? (double)bf(x) : (double)(x))
    for (int s = 0; s < p->n_seq; s++) {
        int n0 = p->seq_start[s], T = p->seq_start[s + 1] - n0;
        if (T == 0)
            continue;
        double *P = malloc(sizeof(double) * T * T), *dP = malloc(sizeof(double) * T * T);
        float *M = malloc(sizeof(float) * T * T);
        float *Pd = malloc(sizeof(float) * T * T);
        for (int h = 0; h < p->NH; h++) {
            mask_of(M, a, s, h, T);
#define AT(x, i, d) ((x)[(size_t)(n0 + (i)) * p->ld + (size_t)h * p->HD + (d)])
            for (int i = 0; i < T; i++) {
                double mx = -INFINITY;
                for (int j = 0; j < T; j++) {
                    double sum = 0;
                    for (int d = 0; d < p->HD; d++)
                        sum += RND(AT(p->q, i, d)) * RND(AT(p->k, j, d));
                    P[i * T + j] = a->scale * sum;
                    mx = fmax(mx, P[i * T + j]);
                }
                double z = 0;
                for (int j = 0; j < T; j++)
                    z += exp(P[i * T + j] - mx);
                double lse = mx + log(z);
                r.lse[(size_t)h * p->N + n0 + i] = lse;
                for (int j = 0; j < T; j++) {
                    P[i * T + j] = exp(P[i * T + j] - lse);
                    Pd[i * T + j] = (float)(P[i * T + j] * M[i * T + j]);
                    if (a->bf16)
                        Pd[i * T + j] = bf(Pd[i * T + j]);
                }
                for (int d = 0; d < p->HD; d++) {
                    double sum = 0;
                    for (int j = 0; j < T; j++)
                        sum += Pd[i * T + j] * RND(AT(p->v, j, d));
                    AT(r.ctx, i, d) = sum;
                }
            }
            /* backward */
            for (int i = 0; i < T; i++) {
                double D = 0;
                for (int j = 0; j < T; j++) {
                    double sum = 0;
                    for (int d = 0; d < p->HD; d++)
                        sum += RND(AT(p->dctx, i, d)) * RND(AT(p->v, j, d));
                    dP[i * T + j] = sum * M[i * T + j];
                    D += dP[i * T + j] * P[i * T + j];
                }
                /* With bf16 operands rowsum(dP * P) and rowsum(dctx * ctx)
                 * differ by bf16 roundings, which dS = P (dP - D) amplifies
                 * where it cancels: take the form attention.h names. */
                if (a->bf16) {
                    D = 0;
                    for (int d = 0; d < p->HD; d++)
                        D += (double)AT(p->dctx, i, d) * AT(r.ctx, i, d);
                }
                for (int j = 0; j < T; j++) /* dS with the scale, then rounded */
                    dP[i * T + j] = RND((float)(a->scale * P[i * T + j] * (dP[i * T + j] - D)));
            }
            for (int i = 0; i < T; i++)
                for (int d = 0; d < p->HD; d++) {
                    double sq = 0, sk = 0, sv = 0;
                    for (int j = 0; j < T; j++) {
                        sq += dP[i * T + j] * RND(AT(p->k, j, d));
                        sk += dP[j * T + i] * RND(AT(p->q, j, d));
                        sv += Pd[j * T + i] * RND(AT(p->dctx, j, d));
                    }
                    AT(r.dq, i, d) = sq;
                    AT(r.dk, i, d) = sk;
                    AT(r.dv, i, d) = sv;
                }
#undef AT
        }
        free(P);
        free(dP);
        free(M);
        free(Pd);
    }
#undef RND
    return r;
}

static void ref_free(ref *r)
{
    free(r->ctx);
    free(r->lse);
    free(r->dq);
    free(r->dk);
    free(r->dv);
}

/* max |x - ref| over max |ref| on the heads' columns; the padding columns
 * must still hold the sentinel. */
static double rel_err(const prob *p, const float *x, const double *r, const char *what)
{
    double err = 0, mag = 1e-30;
    for (int n = 0; n < p->N; n++)
        for (int c = 0; c < p->ld; c++) {
            size_t i = (size_t)n * p->ld + c;
            if (c >= p->NH * p->HD) {
                ck_assert_msg(x[i] == SENTINEL, "%s: padding column %d of row %d written",
                              what, c, n);
                continue;
            }
            ck_assert_msg(isfinite(x[i]), "%s[%d][%d] = %g", what, n, c, (double)x[i]);
            err = fmax(err, fabs(x[i] - r[i]));
            mag = fmax(mag, fabs(r[i]));
        }
    return err / mag;
}

static void compare(const prob *p, const ref *r, double tol, const char *level)
{
    const char *names[] = {"ctx", "dq", "dk", "dv"};
    const float *got[] = {p->ctx, p->dq, p->dk, p->dv};
    const double *want[] = {r->ctx, r->dq, r->dk, r->dv};
    for (int i = 0; i < 4; i++) {
        double e = rel_err(p, got[i], want[i], names[i]);
        if (getenv("ATTN_DEBUG")) /* the margins, when changing a tolerance */
            fprintf(stderr, "%s %s %g\n", level, names[i], e);
        ck_assert_msg(e <= tol, "%s at %s: relative error %g > %g", names[i], level, e, tol);
    }
    double le = 0;
    for (size_t i = 0; i < (size_t)p->NH * p->N; i++)
        le = fmax(le, fabs(p->lse[i] - r->lse[i]) / fmax(1.0, fabs(r->lse[i])));
    ck_assert_msg(le <= tol, "lse at %s: error %g > %g", level, le, tol);
}

/* Lengths: a 0 and a 1, one past two tiles of 64 and one past two whose
 * last tile has an odd number of rows (its last pair along the query ends
 * in a zero), others not a multiple of 16 (the vector width) either. */
static const int LENS[] = {37, 1, 0, 150, 5, 64, 131};
#define NLENS ((int)(sizeof LENS / sizeof LENS[0]))

/* Forward asked for ctx's bf16 copy too: ctx's bits rounded, the padding
 * columns past the heads untouched. */
static void check_ctx_b(const ct__attn *a, prob *p, const char *level)
{
    size_t n = (size_t)p->N * p->ld;
    ct__bf16 *cb = malloc((n ? n : 1) * sizeof *cb), want;
    ct__attn with = *a;
    for (size_t i = 0; i < n; i++)
        cb[i] = 0x7777;
    with.ctx_b = cb;
    OK(ct__attn_forward(&with, p->ctx, p->lse, p->q, p->k, p->v));
    for (size_t i = 0; i < n; i++) {
        int head = (int)(i % (size_t)p->ld) < p->NH * p->HD;
        if (head)
            ct__f32_to_bf16_generic(&want, &p->ctx[i], 1);
        ck_assert_msg(cb[i] == (head ? want : 0x7777), "ctx_b at %s, element %zu", level, i);
    }
    free(cb);
}

/* Backward asked for dq, dk and dv's bf16 copies and column sums too: the
 * copies are the fp32 outputs' bits rounded, the padding columns untouched;
 * the sums are added to what the arrays held, each equal to the column's
 * sum over all rows (in double) within fp32 summation error. */
static void check_grad_outputs(const ct__attn *a, prob *p, const char *level)
{
    size_t n = (size_t)p->N * p->ld, width = (size_t)p->NH * p->HD;
    ct__attn with = *a;
    ct__bf16 *out_b[3];
    float *db[3], *before[3];
    for (int i = 0; i < 3; i++) {
        out_b[i] = malloc((n ? n : 1) * sizeof *out_b[i]);
        db[i] = alloc_filled(width, 1.0f);
        before[i] = malloc(width * sizeof *before[i]);
        ck_assert(out_b[i] && before[i]);
        memcpy(before[i], db[i], width * sizeof *before[i]);
        for (size_t j = 0; j < n; j++)
            out_b[i][j] = 0x7777;
    }
    with.dq_b = out_b[0];
    with.dk_b = out_b[1];
    with.dv_b = out_b[2];
    with.db_q = db[0];
    with.db_k = db[1];
    with.db_v = db[2];
    OK(ct__attn_backward(&with, p->dq, p->dk, p->dv, p->dctx, p->q, p->k, p->v, p->ctx, p->lse));
    const float *grads[3] = {p->dq, p->dk, p->dv};
    for (int i = 0; i < 3; i++) {
        for (size_t j = 0; j < n; j++) {
            int head = j % (size_t)p->ld < width;
            ct__bf16 want = 0x7777;
            if (head)
                ct__f32_to_bf16_generic(&want, &grads[i][j], 1);
            ck_assert_msg(out_b[i][j] == want, "d%c_b at %s, element %zu", "qkv"[i], level, j);
        }
        for (size_t c = 0; c < width; c++) {
            double sum = before[i][c], mag = fabs(before[i][c]);
            for (int r = 0; r < p->N; r++) {
                sum += grads[i][(size_t)r * p->ld + c];
                mag += fabs(grads[i][(size_t)r * p->ld + c]);
            }
            ck_assert_msg(fabs(db[i][c] - sum) <= 1e-6 * (p->N + 1) * mag + 1e-30,
                          "db_%c[%zu] at %s: %.9g, want %.9g", "qkv"[i], c, level, db[i][c],
                          sum);
        }
        free(out_b[i]);
        free(db[i]);
        free(before[i]);
    }
}

static void check_levels_hd(int HD, int bf16, float drop, double tol, float amp)
{
    for (int isa = 0; isa < CT__ISA_COUNT; isa++) {
        const ct__kernels *k = ct__kernels_for((ct__isa)isa);
        if (!k)
            continue;
        prob p;
        prob_init(&p, LENS, NLENS, 3, HD, 5, amp);
        ct__attn a = desc(&p, k, NULL, bf16, drop);
        run(&a, &p);
        check_ctx_b(&a, &p, k->name);
        check_grad_outputs(&a, &p, k->name);
        ref r = reference(&a, &p);
        compare(&p, &r, tol, k->name);
        ref_free(&r);
        prob_free(&p);
    }
}

static void check_levels(int bf16, float drop, double tol, float amp)
{
    check_levels_hd(24, bf16, drop, tol, amp);
}

START_TEST(fp32_matches_reference)
{
    check_levels(0, 0.0f, 1e-5, 2.0f);
}
END_TEST

START_TEST(bf16_matches_reference)
{
    check_levels(1, 0.0f, 2e-3, 2.0f);
}
END_TEST

START_TEST(dropout_matches_reference)
{
    check_levels(0, 0.25f, 1e-5, 2.0f);
    check_levels(1, 0.1f, 2e-3, 2.0f);
}
END_TEST

/* An odd head size: bf16 pairs along it end in a zero (dot-product levels). */
START_TEST(odd_head_size)
{
    check_levels_hd(7, 0, 0.1f, 1e-5, 2.0f);
    check_levels_hd(7, 1, 0.1f, 2e-3, 2.0f);
}
END_TEST

/* bert-base's head size, one full sequence, sharp scores. */
START_TEST(head_size_64_sharp_scores)
{
    static const int lens[] = {130, 3};
    const ct__kernels *k = ct__kernels_get();
    prob p;
    prob_init(&p, lens, 2, 2, 64, 0, 4.0f);
    ct__attn a = desc(&p, k, NULL, 0, 0.0f);
    run(&a, &p);
    ref r = reference(&a, &p);
    compare(&p, &r, 1e-5, k->name);
    ref_free(&r);
    prob_free(&p);
}
END_TEST

/* One task owns one (sequence, head), so any pool gives the same bits. */
START_TEST(thread_count_invariant)
{
    const ct__kernels *k = ct__kernels_get();
    for (int mode = 0; mode < 2; mode++) {
        prob p1, p2;
        uint64_t seed = rng;
        prob_init(&p1, LENS, NLENS, 4, 16, 3, 2.0f);
        rng = seed;
        prob_init(&p2, LENS, NLENS, 4, 16, 3, 2.0f);
        ct__pool *one, *two;
        OK(ct__pool_create(1, &one));
        OK(ct__pool_create(2, &two));
        ct__attn a1 = desc(&p1, k, one, mode, 0.2f), a2 = desc(&p2, k, two, mode, 0.2f);
        float db1[64] = {0}, db2[64] = {0}; /* the key bias gradient's sums too */
        a1.db_k = db1;
        a2.db_k = db2;
        run(&a1, &p1);
        run(&a2, &p2);
        ck_assert(memcmp(db1, db2, sizeof db1) == 0);
        size_t n = (size_t)p1.N * p1.ld;
        ck_assert(memcmp(p1.ctx, p2.ctx, n * sizeof(float)) == 0);
        ck_assert(memcmp(p1.lse, p2.lse, (size_t)p1.NH * p1.N * sizeof(float)) == 0);
        ck_assert(memcmp(p1.dq, p2.dq, n * sizeof(float)) == 0);
        ck_assert(memcmp(p1.dk, p2.dk, n * sizeof(float)) == 0);
        ck_assert(memcmp(p1.dv, p2.dv, n * sizeof(float)) == 0);
        ct__pool_free(one);
        ct__pool_free(two);
        prob_free(&p1);
        prob_free(&p2);
    }
}
END_TEST

/* A sequence's masks follow its id, not its place: the batch reversed,
 * each sequence keeping its id, gives each sequence the same bits; without
 * ids (keyed by row) the masks move with the rows. */
static void reversed(prob *to, const prob *from)
{
    int lens[16];
    for (int s = 0; s < from->n_seq; s++)
        lens[s] = from->seq_start[from->n_seq - s] - from->seq_start[from->n_seq - s - 1];
    prob_init(to, lens, from->n_seq, from->NH, from->HD, from->ld - from->NH * from->HD, 1.0f);
    for (int s = 0; s < from->n_seq; s++) {
        int r = from->n_seq - 1 - s;
        size_t at = (size_t)from->seq_start[r] * from->ld, n = (size_t)lens[s] * from->ld;
        size_t to_at = (size_t)to->seq_start[s] * to->ld;
        to->ids[s] = from->ids[r];
        memcpy(to->q + to_at, from->q + at, n * sizeof(float));
        memcpy(to->k + to_at, from->k + at, n * sizeof(float));
        memcpy(to->v + to_at, from->v + at, n * sizeof(float));
        memcpy(to->dctx + to_at, from->dctx + at, n * sizeof(float));
    }
}

static int same_rows(const prob *a, const prob *b)
{
    int same = 1;
    for (int s = 0; s < a->n_seq; s++) {
        int r = a->n_seq - 1 - s;
        size_t n = (size_t)(b->seq_start[s + 1] - b->seq_start[s]) * a->ld;
        const float *outs_a[] = {a->ctx, a->dq, a->dk, a->dv}, *outs_b[] = {b->ctx, b->dq, b->dk,
                                                                            b->dv};
        for (int i = 0; i < 4; i++)
            same &= memcmp(outs_a[i] + (size_t)a->seq_start[r] * a->ld,
                           outs_b[i] + (size_t)b->seq_start[s] * b->ld, n * sizeof(float)) == 0;
    }
    return same;
}

START_TEST(dropout_masks_follow_the_example)
{
    for (int isa = 0; isa < CT__ISA_COUNT; isa++) {
        const ct__kernels *k = ct__kernels_for((ct__isa)isa);
        if (!k)
            continue;
        for (int bf16 = 0; bf16 < 2; bf16++) {
            prob p1, p2;
            prob_init(&p1, LENS, NLENS, 3, 24, 5, 2.0f);
            reversed(&p2, &p1);
            ct__attn a1 = desc(&p1, k, NULL, bf16, 0.3f), a2 = desc(&p2, k, NULL, bf16, 0.3f);
            run(&a1, &p1);
            run(&a2, &p2);
            ck_assert_msg(same_rows(&p1, &p2), "%s bf16 %d: masks moved with the rows",
                          k->name, bf16);
            a1.dropout_ids = a2.dropout_ids = NULL; /* keyed by row: the masks change */
            run(&a1, &p1);
            run(&a2, &p2);
            ck_assert_msg(!same_rows(&p1, &p2), "%s: row-keyed masks did not move", k->name);
            prob_free(&p1);
            prob_free(&p2);
        }
    }
}
END_TEST

/* loss = sum(ctx * dctx): its gradient is what backward returns for dctx. */
static double loss(const ct__attn *a, prob *p)
{
    OK(ct__attn_forward(a, p->ctx, p->lse, p->q, p->k, p->v));
    double l = 0;
    for (int n = 0; n < p->N; n++)
        for (int c = 0; c < p->NH * p->HD; c++)
            l += (double)p->ctx[(size_t)n * p->ld + c] * p->dctx[(size_t)n * p->ld + c];
    return l;
}

START_TEST(finite_differences)
{
    static const int lens[] = {3, 0, 4, 1};
    for (int isa = 0; isa < CT__ISA_COUNT; isa++) {
        const ct__kernels *k = ct__kernels_for((ct__isa)isa);
        if (!k)
            continue;
        prob p;
        prob_init(&p, lens, 4, 2, 4, 1, 1.5f);
        ct__attn a = desc(&p, k, NULL, 0, 0.0f);
        run(&a, &p);
        size_t n = (size_t)p.N * p.ld;
        float *grads[] = {p.dq, p.dk, p.dv}, *ins[] = {p.q, p.k, p.v};
        float *g[3];
        for (int t = 0; t < 3; t++) {
            g[t] = malloc(n * sizeof(float));
            memcpy(g[t], grads[t], n * sizeof(float));
        }
        for (int t = 0; t < 3; t++)
            for (size_t i = 0; i < n; i++) {
                if ((int)(i % p.ld) >= p.NH * p.HD)
                    continue;
                float x = ins[t][i], e = 1e-2f;
                ins[t][i] = x + e;
                double lp = loss(&a, &p);
                ins[t][i] = x - e;
                double lm = loss(&a, &p);
                ins[t][i] = x;
                double fd = (lp - lm) / (2.0 * (double)e);
                ck_assert_msg(fabs(fd - g[t][i]) <= 2e-3 * fmax(1.0, fabs(fd)),
                              "%s: d%c[%zu] = %g, finite difference %g", k->name, "qkv"[t], i,
                              (double)g[t][i], fd);
            }
        for (int t = 0; t < 3; t++)
            free(g[t]);
        prob_free(&p);
    }
}
END_TEST

/* Every level's transpose32 moves the generic's words, any bits (NaN
 * payloads, bf16 pairs), over ragged edges, and writes nothing else. */
START_TEST(transpose32_moves_bits_on_every_level)
{
    enum { MAXD = 37, LDS = MAXD + 3, LDD = MAXD + 5 };
    const uint32_t untouched = 0x7fa5a5a5;
    static uint32_t src[MAXD * LDS], want[MAXD * LDD], got[MAXD * LDD];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof src / sizeof src[0]; i++) {
        x = x * 1664525u + 1013904223u; /* any 32 bits: NaNs, denormals, bf16 pairs */
        src[i] = x;
    }
    for (int isa = CT__ISA_GENERIC + 1; isa < CT__ISA_COUNT; isa++) {
        if (!ct__kernels_for((ct__isa)isa))
            continue;
        const ct__attn_tiles *t = ct__attn_tiles_for((ct__isa)isa);
        for (int rows = 1; rows <= MAXD; rows += 3)
            for (int cols = 1; cols <= MAXD; cols += 4) {
                for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
                    want[i] = got[i] = untouched;
                ct__attn_transpose32_generic(want, LDD, src, LDS, rows, cols);
                t->transpose32(got, LDD, src, LDS, rows, cols);
                for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
                    ck_assert_msg(got[i] == want[i], "%s transpose32 %dx%d: word %zu is %08x, "
                                  "want %08x", t->name, rows, cols, i, got[i], want[i]);
            }
    }
}
END_TEST

/* The row passes of every level: softmax against a double-precision
 * softmax with kernels/ops.h's dropout; its rounded and bf16 forms the
 * fp32 form's bits rounded (bf16 rows ending in a zero at an odd T); the
 * backward's P against exp(scale s - lse) and its dropped copy the
 * generic dropout of it, bit for bit; the softmax backward the same
 * float operations as written in attn_tile.h, and its rounded and bf16
 * forms the same bits rounded, Pd rounded after its mask is read. Odd
 * dropout counters, odd and even T, rows ld apart. */
START_TEST(row_passes_every_level)
{
    enum { R = 5, LD = 40, BLD = 42 };
    static const int Ts[] = {1, 16, 37};
    const float scale = 0.37f, pdrop = 0.3f;
    for (int isa = 0; isa < CT__ISA_COUNT; isa++) {
        if (!ct__kernels_for((ct__isa)isa))
            continue;
        const ct__attn_tiles *t = ct__attn_tiles_for((ct__isa)isa);
        for (size_t ti = 0; ti < sizeof Ts / sizeof *Ts; ti++)
            for (int dropped = 0; dropped < 2; dropped++) {
                int T = Ts[ti];
                ct__attn_drop d = {pdrop, 0xfeedull, 3, (size_t)T};
                const ct__attn_drop *dp = dropped ? &d : NULL;
                float S[R * LD], P[R * LD], Pr[R * LD], Pb[R * LD], lse[3][R];
                float Q[R * LD], Qd[R * LD], dP[3][R * LD], Pd[2][R * LD], D[R];
                ct__bf16 B[R * BLD], dB[R * BLD];
                for (int i = 0; i < R * LD; i++)
                    S[i] = 6 * urand();
                for (int i = 0; i < R * BLD; i++)
                    B[i] = dB[i] = 0x7777;
                t->softmax_rows(P, lse[0], S, LD, R, T, scale, dp, 0, NULL, 0);
                t->softmax_rows(Pr, lse[1], S, LD, R, T, scale, dp, 1, NULL, 0);
                t->softmax_rows(Pb, lse[2], S, LD, R, T, scale, dp, 0, B, BLD);
                for (int r = 0; r < R; r++) {
                    double mx = -INFINITY, sum = 0;
                    for (int j = 0; j < T; j++)
                        mx = fmax(mx, (double)scale * S[r * LD + j]);
                    for (int j = 0; j < T; j++)
                        sum += exp((double)scale * S[r * LD + j] - mx);
                    ck_assert_msg(fabs(lse[0][r] - (mx + log(sum))) <= 1e-6 * fmax(1, fabs(mx)),
                                  "%s softmax T %d: lse[%d] %.9g", t->name, T, r, lse[0][r]);
                    ck_assert(lse[1][r] == lse[0][r] && lse[2][r] == lse[0][r]);
                    for (int j = 0; j < T; j++) {
                        size_t c = d.first + (size_t)r * d.row_step + (size_t)j;
                        double want = exp((double)scale * S[r * LD + j] - mx) / sum;
                        if (dropped)
                            want = ct__dropout_draw(d.key, c) < ct__dropout_threshold(pdrop)
                                       ? 0 : want / (1 - pdrop);
                        float got = P[r * LD + j];
                        ct__bf16 want_b;
                        ct__f32_to_bf16_generic(&want_b, &got, 1);
                        ck_assert_msg(fabs(got - want) <= 2e-6 * want + 1e-30,
                                      "%s softmax T %d%s: P[%d][%d] = %.9g, want %.9g", t->name,
                                      T, dropped ? " dropout" : "", r, j, got, want);
                        ck_assert_msg(Pr[r * LD + j] == bf(got) && B[r * BLD + j] == want_b,
                                      "%s softmax T %d: rounded forms of P[%d][%d]", t->name, T,
                                      r, j);
                    }
                    ck_assert(B[r * BLD + T] == (T & 1 ? 0 : 0x7777));
                }
                /* backward */
                t->probs_rows(Q, Qd, lse[0], S, LD, R, T, scale, dp);
                for (int r = 0; r < R; r++) {
                    float want_d[LD];
                    ct__dropout_forward_generic(want_d, Q + r * LD, (size_t)T, pdrop, d.key,
                                                d.first + (size_t)r * d.row_step);
                    for (int j = 0; j < T; j++) {
                        double want = exp((double)scale * S[r * LD + j] - lse[0][r]);
                        float q = Q[r * LD + j];
                        ck_assert_msg(fabs(q - want) <= 2e-6 * want + 1e-30,
                                      "%s probs T %d: P[%d][%d] = %.9g, want %.9g", t->name, T,
                                      r, j, q, want);
                        ck_assert_msg(Qd[r * LD + j] == (dropped ? want_d[j] : q),
                                      "%s probs T %d: Pd[%d][%d]", t->name, T, r, j);
                    }
                    D[r] = urand();
                }
                float G[R * LD];
                for (int i = 0; i < R * LD; i++)
                    dP[0][i] = dP[1][i] = dP[2][i] = G[i] = urand();
                memcpy(Pd[0], Qd, sizeof Qd);
                memcpy(Pd[1], Qd, sizeof Qd);
                float pd_used = dropped ? pdrop : 0, ds = 1.0f / (1.0f - pdrop);
                t->dsoftmax_rows(dP[0], Pd[0], Q, D, LD, R, T, scale, pd_used, 0, NULL, 0);
                t->dsoftmax_rows(dP[1], Pd[1], Q, D, LD, R, T, scale, pd_used, 1, NULL, 0);
                t->dsoftmax_rows(dP[2], NULL, Q, D, LD, R, T, scale, 0, 0, dB, BLD);
                for (int r = 0; r < R; r++) {
                    for (int j = 0; j < T; j++) {
                        size_t i = (size_t)r * LD + j;
                        float g = dropped ? (Qd[i] != 0 ? G[i] * ds : 0.0f) : G[i];
                        float want = scale * (Q[i] * (g - D[r]));
                        float plain = scale * (Q[i] * (G[i] - D[r]));
                        ct__bf16 want_b;
                        ct__f32_to_bf16_generic(&want_b, &plain, 1);
                        ck_assert_msg(dP[0][i] == want && Pd[0][i] == Qd[i],
                                      "%s dsoftmax T %d%s: dS[%d][%d] = %.9g, want %.9g",
                                      t->name, T, dropped ? " dropout" : "", r, j, dP[0][i],
                                      want);
                        ck_assert_msg(dP[1][i] == bf(want) && Pd[1][i] == bf(Qd[i]),
                                      "%s dsoftmax T %d: rounded dS[%d][%d] or Pd", t->name, T,
                                      r, j);
                        ck_assert_msg(dP[2][i] == plain && dB[r * BLD + j] == want_b,
                                      "%s dsoftmax T %d: bf16 dS[%d][%d]", t->name, T, r, j);
                    }
                    ck_assert(dB[r * BLD + T] == (T & 1 ? 0 : 0x7777));
                }
            }
    }
}
END_TEST

/* mm_bf16 of every level that has one against a double-precision sum of
 * the same bf16 pairs: A in rows (acs 1) and transposed (the backward's),
 * ragged M, N and K2 around the 16- and 32-wide tiles AMX works in,
 * overwrite and accumulate, and C's columns past N untouched. */
START_TEST(mm_bf16_every_level)
{
    static const int Ms[] = {1, 15, 17, 33, 64, 70}, Ns[] = {1, 16, 17, 31, 48, 146};
    static const int K2s[] = {1, 15, 16, 33, 73};
    enum { PAD = 3 };
    for (int isa = CT__ISA_AVX512BF16; isa < CT__ISA_COUNT; isa++) {
        if (!ct__kernels_for((ct__isa)isa))
            continue;
        const ct__attn_tiles *t = ct__attn_tiles_for((ct__isa)isa);
        for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
            for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++)
                for (size_t ki = 0; ki < sizeof K2s / sizeof *K2s; ki++)
                    for (int form = 0; form < 4; form++) {
                        int M = Ms[mi], N = Ns[ni], K2 = K2s[ki], trans = form & 1;
                        int acc = form >> 1, ldc = N + PAD, ldb = N + PAD;
                        int ars = trans ? 1 : K2 + PAD, acs = trans ? M + PAD : 1;
                        size_t na = trans ? (size_t)K2 * acs : (size_t)M * ars;
                        uint32_t *A = malloc(na * 4), *B = malloc((size_t)K2 * ldb * 4);
                        float *C = malloc((size_t)M * ldc * 4);
                        ct__bf16 *ah = (ct__bf16 *)A, *bh = (ct__bf16 *)B;
                        for (size_t i = 0; i < 2 * na; i++) {
                            float x = urand();
                            ct__f32_to_bf16_generic(&ah[i], &x, 1);
                        }
                        for (size_t i = 0; i < 2 * (size_t)K2 * ldb; i++) {
                            float x = urand();
                            ct__f32_to_bf16_generic(&bh[i], &x, 1);
                        }
                        for (size_t i = 0; i < (size_t)M * ldc; i++)
                            C[i] = (int)(i % ldc) < N ? urand() : SENTINEL;
                        float *C0 = malloc((size_t)M * ldc * 4);
                        memcpy(C0, C, (size_t)M * ldc * 4);
                        t->mm_bf16(C, ldc, A, ars, acs, B, ldb, M, N, K2, acc);
                        for (int i = 0; i < M; i++)
                            for (int n = 0; n < ldc; n++) {
                                float got = C[(size_t)i * ldc + n];
                                if (n >= N) {
                                    ck_assert_msg(got == SENTINEL, "%s mm_bf16 %dx%dx%d: C[%d][%d] "
                                                  "past N written", t->name, M, N, K2, i, n);
                                    continue;
                                }
                                double want = acc ? C0[(size_t)i * ldc + n] : 0, mag = fabs(want);
                                for (int p = 0; p < K2; p++)
                                    for (int h = 0; h < 2; h++) {
                                        size_t aw = (size_t)i * ars + (size_t)p * acs;
                                        float a, b;
                                        ct__bf16_to_f32_generic(&a, &ah[2 * aw + h], 1);
                                        ct__bf16_to_f32_generic(
                                            &b, &bh[2 * ((size_t)p * ldb + n) + h], 1);
                                        want += (double)a * b;
                                        mag += fabs((double)a * b);
                                    }
                                ck_assert_msg(fabs(got - want) <= 1e-6 * (2 * K2 + 1) * mag + 1e-30,
                                              "%s mm_bf16 %dx%dx%d %s%s: C[%d][%d] = %.9g, want "
                                              "%.9g", t->name, M, N, K2, trans ? "A^T" : "A",
                                              acc ? " +=" : "", i, n, got, want);
                            }
                        free(A), free(B), free(C), free(C0);
                    }
    }
}
END_TEST

/* The levels above generic have their own tile kernels, and bf16 dot
 * products where the CPU has them: otherwise the tests above would only
 * ever see the fallback. */
START_TEST(levels_use_their_kernels)
{
    ck_assert_ptr_null(ct__attn_tiles_for(CT__ISA_GENERIC)->mm_bf16);
#if defined(__x86_64__)
    ck_assert_str_eq(ct__attn_tiles_for(CT__ISA_AVX2)->name, "attn_avx2");
    ck_assert_ptr_null(ct__attn_tiles_for(CT__ISA_AVX2)->mm_bf16);
    ck_assert_str_eq(ct__attn_tiles_for(CT__ISA_AVX512)->name, "attn_avx512");
    ck_assert_ptr_null(ct__attn_tiles_for(CT__ISA_AVX512)->mm_bf16);
    ck_assert_str_eq(ct__attn_tiles_for(CT__ISA_AVX512BF16)->name, "attn_avx512bf16");
    ck_assert_str_eq(ct__attn_tiles_for(CT__ISA_AMX)->name, "attn_amx");
    for (int isa = CT__ISA_AVX512BF16; isa < CT__ISA_COUNT; isa++) {
        ck_assert_ptr_nonnull(ct__attn_tiles_for((ct__isa)isa)->mm_bf16);
        ck_assert_ptr_nonnull(ct__attn_tiles_for((ct__isa)isa)->pack_pairs);
    }
#endif
}
END_TEST

START_TEST(bad_arguments_and_empty_batch)
{
    static const int lens[] = {3, 2};
    const ct__kernels *k = ct__kernels_get();
    prob p;
    prob_init(&p, lens, 2, 2, 4, 0, 1.0f);
    ct__attn a = desc(&p, k, NULL, 0, 0.0f);
    a.ld = 7;
    ASSERT_ERROR_HAS(ct__attn_forward(&a, p.ctx, p.lse, p.q, p.k, p.v), CT_ERR_INVALID_ARG,
                     "ld 7");
    a = desc(&p, k, NULL, 0, 1.0f);
    ASSERT_ERROR_HAS(ct__attn_forward(&a, p.ctx, p.lse, p.q, p.k, p.v), CT_ERR_INVALID_ARG,
                     "dropout");
    int bad_start[] = {0, 3, 2};
    a = desc(&p, k, NULL, 0, 0.0f);
    a.seq_start = bad_start;
    ASSERT_ERROR_HAS(ct__attn_backward(&a, p.dq, p.dk, p.dv, p.dctx, p.q, p.k, p.v, p.ctx,
                                       p.lse),
                     CT_ERR_INVALID_ARG, "seq_start[2]");
    a = desc(&p, k, NULL, 0, 0.0f);
    ASSERT_ERROR_HAS(ct__attn_forward(&a, p.ctx, NULL, p.q, p.k, p.v), CT_ERR_INVALID_ARG,
                     "NULL");
    a.n_seq = 0; /* nothing to do, nothing read */
    OK(ct__attn_forward(&a, NULL, NULL, NULL, NULL, NULL));
    OK(ct__attn_backward(&a, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
    ck_assert_uint_eq(ct__attn_scratch_bytes(&a, 0), 0);
    ck_assert_uint_gt(ct__attn_scratch_bytes(&a, 512), 0);
    prob_free(&p);
}
END_TEST

Suite *attention_suite(void)
{
    Suite *s = suite_create("attention");
    TCase *tc = tcase_create("streamed");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, fp32_matches_reference);
    tcase_add_test(tc, bf16_matches_reference);
    tcase_add_test(tc, dropout_matches_reference);
    tcase_add_test(tc, odd_head_size);
    tcase_add_test(tc, head_size_64_sharp_scores);
    tcase_add_test(tc, thread_count_invariant);
    tcase_add_test(tc, dropout_masks_follow_the_example);
    tcase_add_test(tc, finite_differences);
    tcase_add_test(tc, transpose32_moves_bits_on_every_level);
    tcase_add_test(tc, mm_bf16_every_level);
    tcase_add_test(tc, row_passes_every_level);
    tcase_add_test(tc, levels_use_their_kernels);
    tcase_add_test(tc, bad_arguments_and_empty_batch);
    suite_add_tcase(s, tc);
    return s;
}
