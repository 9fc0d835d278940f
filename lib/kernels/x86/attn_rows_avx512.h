/* Internal: the attention row passes that write bf16 (attn_tile.h's
 * softmax_rows and dsoftmax_rows at 16 lanes, attn_avx2.c's twins), a body
 * attn_avx512.c compiles once per target. No include guard, on purpose:
 * the includer defines, each time,
 *   ROWS_TARGET   the functions' target attribute
 *   ROWS_NAME(f)  f's name for this copy (f##_avx512, ...)
 *   ROWS_BF16(x)  the 16 floats of x as bf16 (__m256i), rounded to nearest
 *                 even as vcvtneps2bf16 rounds
 * and this file undefines them at its end. The helpers it calls (splat,
 * lanes, row_lanes, row_drop, drop_start, drop16, round16) are the
 * includer's, of the avx512 level's target, which every ROWS_TARGET
 * contains. */

/* this copy's names for the functions below */
#define store_bf16 ROWS_NAME(store_bf16)
#define normalise ROWS_NAME(normalise)
#define softmax_rows ROWS_NAME(softmax_rows)
#define dsoftmax_row ROWS_NAME(dsoftmax_row)
#define dsoftmax_rows ROWS_NAME(dsoftmax_rows)

/* Lanes m of x as bf16 at b. */
ROWS_TARGET static INLINE void store_bf16(ct__bf16 *b, __mmask16 m, __m512 x)
{
    _mm256_mask_storeu_epi16(b, m, ROWS_BF16(x));
}

/* Softmax's last pass over a row: e (in p) times inv, through dropout,
 * then back into p (rounded) or into b as bf16. The flags are constants at
 * every call, so each combination is a loop of its own with no tests in
 * it. */
ROWS_TARGET static INLINE void normalise(float *p, ct__bf16 *b, int T, __m512 inv, row_drop d,
                                         const int drop, const int round, const int to_b)
{
    for (int j = d.j0; j < T; j += 16) {
        __mmask16 m = row_lanes(j, T);
        __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, p + j), inv);
        if (drop)
            x = drop16(&d, x);
        if (to_b)
            store_bf16(b + j, m, x);
        else
            _mm512_mask_storeu_ps(p + j, m, round ? round16(x) : x);
    }
    if (to_b && (T & 1))
        b[T] = 0;
}

ROWS_TARGET static void softmax_rows(float *P, float *lse, const float *S, int ld, int R, int T,
                                     float scale, const ct__attn_drop *drop, int round,
                                     ct__bf16 *b, int ldb)
{
    __m512 vs = splat(scale);
    for (int r = 0; r < R; r++) {
        const float *s = S + (size_t)r * ld;
        float *p = P + (size_t)r * ld;
        ct__bf16 *br = b ? b + (size_t)r * ldb : NULL;
        __m512 vmx = splat(-INFINITY);
        for (int j = 0; j < T; j += 16) {
            __mmask16 m = lanes(T - j);
            __m512 x = _mm512_mul_ps(vs, _mm512_maskz_loadu_ps(m, s + j));
            vmx = _mm512_mask_max_ps(vmx, m, vmx, x);
        }
        __m512 mx = splat(_mm512_reduce_max_ps(vmx)), sum = _mm512_setzero_ps();
        for (int j = 0; j < T; j += 16) {
            __mmask16 m = lanes(T - j);
            __m512 x = _mm512_fmsub_ps(vs, _mm512_maskz_loadu_ps(m, s + j), mx);
            __m512 e = _mm512_maskz_mov_ps(m, ct__exp16_avx512(x));
            _mm512_mask_storeu_ps(p + j, m, e);
            sum = _mm512_add_ps(sum, e);
        }
        float total = _mm512_reduce_add_ps(sum);
        lse[r] = _mm512_cvtss_f32(mx) + logf(total);
        __m512 inv = splat(1.0f / total);
        row_drop d = drop_start(drop, r);
        if (br)
            drop ? normalise(p, br, T, inv, d, 1, 0, 1) : normalise(p, br, T, inv, d, 0, 0, 1);
        else if (drop)
            round ? normalise(p, NULL, T, inv, d, 1, 1, 0) : normalise(p, NULL, T, inv, d, 1, 0, 0);
        else
            round ? normalise(p, NULL, T, inv, d, 0, 1, 0) : normalise(p, NULL, T, inv, d, 0, 0, 0);
    }
}

/* One row of dsoftmax_rows; the flags are constants at every call, as
 * normalise's. */
ROWS_TARGET static INLINE void dsoftmax_row(float *d, float *pd, const float *p, ct__bf16 *b,
                                            int T, __m512 scale, __m512 dscale, __m512 D,
                                            const int drop, const int round, const int to_b)
{
    for (int j = 0; j < T; j += 16) {
        __mmask16 m = lanes(T - j);
        __m512 g = _mm512_maskz_loadu_ps(m, d + j);
        if (drop) {
            __m512 kept = _mm512_maskz_loadu_ps(m, pd + j);
            /* unordered: a NaN kept value is not 0, so it keeps */
            __mmask16 keep = _mm512_cmp_ps_mask(kept, _mm512_setzero_ps(), _CMP_NEQ_UQ);
            g = _mm512_maskz_mul_ps(keep, g, dscale);
            if (round)
                _mm512_mask_storeu_ps(pd + j, m, round16(kept));
        } else if (round && pd) {
            _mm512_mask_storeu_ps(pd + j, m, round16(_mm512_maskz_loadu_ps(m, pd + j)));
        }
        __m512 y = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, p + j), _mm512_sub_ps(g, D));
        __m512 x = _mm512_mul_ps(scale, y);
        if (round)
            x = round16(x);
        _mm512_mask_storeu_ps(d + j, m, x);
        if (to_b)
            store_bf16(b + j, m, x);
    }
    if (to_b && (T & 1))
        b[T] = 0;
}

ROWS_TARGET static void dsoftmax_rows(float *dP, float *Pd, const float *P, const float *D,
                                      int ld, int R, int T, float scale, float pdrop, int round,
                                      ct__bf16 *b, int ldb)
{
    __m512 vs = splat(scale), ds = splat(pdrop > 0 ? 1.0f / (1.0f - pdrop) : 1.0f);
    int drop = pdrop > 0;
    for (int r = 0; r < R; r++) {
        float *d = dP + (size_t)r * ld, *pd = Pd ? Pd + (size_t)r * ld : NULL;
        const float *p = P + (size_t)r * ld;
        ct__bf16 *br = b ? b + (size_t)r * ldb : NULL;
        __m512 dr = splat(D[r]);
        if (br)
            drop ? dsoftmax_row(d, pd, p, br, T, vs, ds, dr, 1, 0, 1)
                 : dsoftmax_row(d, pd, p, br, T, vs, ds, dr, 0, 0, 1);
        else if (round)
            drop ? dsoftmax_row(d, pd, p, NULL, T, vs, ds, dr, 1, 1, 0)
                 : dsoftmax_row(d, pd, p, NULL, T, vs, ds, dr, 0, 1, 0);
        else
            drop ? dsoftmax_row(d, pd, p, NULL, T, vs, ds, dr, 1, 0, 0)
                 : dsoftmax_row(d, pd, p, NULL, T, vs, ds, dr, 0, 0, 0);
    }
}

#undef store_bf16
#undef normalise
#undef softmax_rows
#undef dsoftmax_row
#undef dsoftmax_rows
#undef ROWS_TARGET
#undef ROWS_NAME
#undef ROWS_BF16
