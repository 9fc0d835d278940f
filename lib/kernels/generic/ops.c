/* Portable reference versions of the element-wise kernels (see ops.h): the
 * oracle the vectorised variants are tested against. */
#include "kernels/ops.h"

#include <math.h>
#include <string.h>

#include "core/hash.h"

void ct__layernorm_forward_generic(float *out, float *mean, float *rstd, const float *inp,
                                   const float *w, const float *b, int N, int C, float eps)
{
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C;
        float *y = out + (size_t)i * C;
        double m = 0, v = 0;
        for (int c = 0; c < C; c++)
            m += x[c];
        m /= C;
        for (int c = 0; c < C; c++)
            v += (x[c] - m) * (x[c] - m);
        v /= C; /* biased variance, as torch.nn.LayerNorm */
        float s = (float)(1.0 / sqrt(v + eps));
        for (int c = 0; c < C; c++)
            y[c] = (float)(x[c] - m) * s * w[c] + b[c];
        mean[i] = (float)m;
        rstd[i] = s;
    }
}

void ct__layernorm_backward_input_generic(float *dinp, const float *dout, const float *inp,
                                          const float *w, const float *mean, const float *rstd,
                                          int N, int C)
{
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * C, *dy = dout + (size_t)i * C;
        float *dx = dinp + (size_t)i * C;
        float m = mean[i], s = rstd[i];
        double sum_g = 0, sum_gx = 0;
        for (int c = 0; c < C; c++) {
            float g = dy[c] * w[c];
            sum_g += g;
            sum_gx += g * ((x[c] - m) * s);
        }
        float mg = (float)(sum_g / C), mgx = (float)(sum_gx / C);
        for (int c = 0; c < C; c++)
            dx[c] = s * (dy[c] * w[c] - mg - (x[c] - m) * s * mgx);
    }
}

void ct__layernorm_backward_params_generic(float *dw, float *db, const float *dout,
                                           const float *inp, const float *mean, const float *rstd,
                                           int N, int width, int ld)
{
    for (int i = 0; i < N; i++) {
        const float *x = inp + (size_t)i * ld, *dy = dout + (size_t)i * ld;
        for (int c = 0; c < width; c++) {
            dw[c] += dy[c] * ((x[c] - mean[i]) * rstd[i]);
            db[c] += dy[c];
        }
    }
}

/* GELU and its derivative Phi(x) + x phi(x) at one x, for the three
 * entry points below (each takes the part it needs, with the same bits). */
static inline void gelu_one(float x, float *out, float *d)
{
    const float inv_sqrt_2pi = 0.3989422804014327f;
    /* 1 + erf(z) as erfc(-z): no cancellation where x is negative */
    float erfc_z = erfcf(-x * (float)M_SQRT1_2);
    float pdf = inv_sqrt_2pi * expf(-(0.5f * x * x));
    *out = 0.5f * x * erfc_z;
    *d = 0.5f * erfc_z + x * pdf;
}

void ct__gelu_forward_generic(float *out, const float *inp, size_t n)
{
    float d;
    for (size_t i = 0; i < n; i++)
        gelu_one(inp[i], &out[i], &d);
}

void ct__gelu_backward_generic(float *dinp, const float *dout, const float *inp, size_t n)
{
    float out, d;
    for (size_t i = 0; i < n; i++) {
        gelu_one(inp[i], &out, &d);
        dinp[i] = dout[i] * d;
    }
}

void ct__gelu_forward_grad_generic(float *out, float *grad, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        gelu_one(x, &out[i], &grad[i]);
    }
}

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_C 0.044715f

/* The tanh form and its derivative, likewise. */
static inline void gelu_tanh_one(float x, float *out, float *d)
{
    float u = GELU_K * (x + GELU_C * x * x * x);
    /* 0.5 (1 + tanh u) as 1 / (1 + e^(-2u)): no cancellation for u < 0 */
    *out = x / (1.0f + expf(-2.0f * GELU_K * (x + GELU_C * x * x * x)));
    float t = tanhf(u);
    float du = GELU_K * (1.0f + 3.0f * GELU_C * x * x);
    *d = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

void ct__gelu_tanh_forward_generic(float *out, const float *inp, size_t n)
{
    float d;
    for (size_t i = 0; i < n; i++)
        gelu_tanh_one(inp[i], &out[i], &d);
}

void ct__gelu_tanh_backward_generic(float *dinp, const float *dout, const float *inp, size_t n)
{
    float out, d;
    for (size_t i = 0; i < n; i++) {
        gelu_tanh_one(inp[i], &out, &d);
        dinp[i] = dout[i] * d;
    }
}

void ct__gelu_tanh_forward_grad_generic(float *out, float *grad, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        gelu_tanh_one(x, &out[i], &grad[i]);
    }
}

void ct__act_grad_backward_generic(float *dinp, const float *dout, const float *grad, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dinp[i] = dout[i] * grad[i];
}

void ct__relu_forward_generic(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = inp[i] > 0 ? inp[i] : 0.0f;
}

void ct__relu_backward_generic(float *dinp, const float *dout, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dinp[i] = inp[i] > 0 ? dout[i] : 0.0f;
}

void ct__tanh_forward_generic(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = tanhf(inp[i]);
}

void ct__tanh_backward_generic(float *dinp, const float *dout, const float *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dinp[i] = dout[i] * (1.0f - out[i] * out[i]);
}

void ct__bias_add_generic(float *out, const float *b, int N, int C)
{
    for (int i = 0; i < N; i++)
        for (int c = 0; c < C; c++)
            out[(size_t)i * C + c] += b[c];
}

void ct__bias_backward_generic(float *db, const float *dout, int N, int width, int ld)
{
    for (int i = 0; i < N; i++)
        for (int c = 0; c < width; c++)
            db[c] += dout[(size_t)i * ld + c];
}

void ct__add_inplace_generic(float *out, const float *inp, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] += inp[i];
}

/* ---- dropout ------------------------------------------------------------ */

uint64_t ct__dropout_key(uint64_t seed, uint64_t step, uint32_t site)
{
    return ct__mix64(ct__mix64(seed ^ 0x9e3779b97f4a7c15ull) + step * 0x632be59bd9b4e019ull +
                 ((uint64_t)site << 32));
}

uint64_t ct__dropout_seq_key(uint64_t site_key, uint64_t seq)
{
    return ct__mix64(site_key ^ ct__mix64(seq + 0xd1b54a32d192ed03ull));
}

void ct__dropout_forward_generic(float *out, const float *inp, size_t n, float p, uint64_t key,
                                 size_t first)
{
    uint32_t threshold = ct__dropout_threshold(p);
    float scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < n; i++)
        out[i] = ct__dropout_one(inp[i], key, first + i, threshold, scale);
}

void ct__dropout_backward_generic(float *dinp, const float *dout, size_t n, float p, uint64_t key,
                                  size_t first)
{
    ct__dropout_forward_generic(dinp, dout, n, p, key, first); /* same mask, same scale */
}

void ct__dropout_backward_kept_generic(float *dinp, const float *dout, const float *kept,
                                       size_t n, float p)
{
    float scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < n; i++)
        dinp[i] = kept[i] != 0.0f ? dout[i] * scale : 0.0f;
}

/* ---- cross-entropy ------------------------------------------------------ */

double ct__cross_entropy_forward_generic(const float *logits, int ld, const int32_t *target, int N,
                                         int V, int32_t ignore, int *count)
{
    double total = 0;
    *count = 0;
    for (int i = 0; i < N; i++) {
        const float *z = logits + (size_t)i * ld;
        if (!ct__ce_counted(target[i], V, ignore))
            continue;
        float mx = -INFINITY;
        for (int j = 0; j < V; j++)
            mx = z[j] > mx ? z[j] : mx;
        double sum = 0;
        for (int j = 0; j < V; j++)
            sum += exp((double)z[j] - mx);
        total += log(sum) + mx - z[target[i]];
        (*count)++;
    }
    return total;
}

void ct__cross_entropy_backward_generic(float *dlogits, int ldd, const float *logits, int ld,
                                        const int32_t *target, int N, int V, int32_t ignore,
                                        float scale)
{
    for (int i = 0; i < N; i++) {
        const float *z = logits + (size_t)i * ld;
        float *dz = dlogits + (size_t)i * ldd;
        if (!ct__ce_counted(target[i], V, ignore)) {
            memset(dz, 0, (size_t)V * sizeof *dz);
            continue;
        }
        float mx = -INFINITY;
        for (int j = 0; j < V; j++)
            mx = z[j] > mx ? z[j] : mx;
        double sum = 0;
        for (int j = 0; j < V; j++)
            sum += exp((double)z[j] - mx);
        for (int j = 0; j < V; j++)
            dz[j] = scale * (float)(exp((double)z[j] - mx) / sum);
        dz[target[i]] -= scale;
    }
}

/* ---- the optimizer ------------------------------------------------------------------ */

void ct__adamw_update_generic(float *p, float *g, float *m, float *v, size_t n,
                              const ct__adamw_hyper *h)
{
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * h->clip;
        float pi = p[i] * h->decay;
        float mi = m[i] * h->beta1 + h->one_minus_beta1 * gi;
        float vi = v[i] * h->beta2 + h->one_minus_beta2 * gi * gi;
        float denom = sqrtf(vi) / h->bc2_sqrt + h->eps;
        p[i] = pi + h->step_size * (mi / denom);
        m[i] = mi;
        v[i] = vi;
        g[i] = 0.0f;
    }
}

double ct__sum_squares_generic(const float *x, size_t n)
{
    double s[32] = {0}, t[8];
    for (size_t i = 0; i < n; i++)
        s[i % 32] += (double)x[i] * x[i];
    for (int j = 0; j < 8; j++)
        t[j] = (s[j] + s[j + 8]) + (s[j + 16] + s[j + 24]);
    return ((t[0] + t[4]) + (t[2] + t[6])) + ((t[1] + t[5]) + (t[3] + t[7]));
}
