/* Fills the kernel tables once: each level starts as a copy of the one
 * below and overrides what it has faster, so no entry is ever NULL. Also the
 * ops.h entry points, which call this process's table. */
#include <pthread.h>
#include <string.h>

#include "core/error.h"
#include "kernels/kernels.h"

static ct__kernels tables[CT__ISA_COUNT];
static ct__isa max_isa;
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;
static pthread_once_t warn_once = PTHREAD_ONCE_INIT;

static void build_tables(void)
{
    ct__kernels *t = &tables[CT__ISA_GENERIC];
    t->f32_to_bf16 = ct__f32_to_bf16_generic;
    t->bf16_to_f32 = ct__bf16_to_f32_generic;
    t->round_bf16 = ct__round_bf16_generic;
    t->gemm_bf16 = ct__gemm_bf16_generic;
    t->gemm_f32 = ct__gemm_f32_generic;
    t->packb_bytes = ct__packb_bytes_generic;
    t->packb = ct__packb_generic;
    t->gemm_bf16_packed = ct__gemm_bf16_packed_generic;
    t->packb_transposable = 1;
    t->packw_rows = ct__packw_rows_generic;
    t->layernorm_forward = ct__layernorm_forward_generic;
    t->layernorm_backward_input = ct__layernorm_backward_input_generic;
    t->layernorm_backward_params = ct__layernorm_backward_params_generic;
    t->gelu_forward = ct__gelu_forward_generic;
    t->gelu_backward = ct__gelu_backward_generic;
    t->gelu_tanh_forward = ct__gelu_tanh_forward_generic;
    t->gelu_tanh_backward = ct__gelu_tanh_backward_generic;
    t->gelu_forward_grad = ct__gelu_forward_grad_generic;
    t->gelu_tanh_forward_grad = ct__gelu_tanh_forward_grad_generic;
    t->act_grad_backward = ct__act_grad_backward_generic;
    t->relu_forward = ct__relu_forward_generic;
    t->relu_backward = ct__relu_backward_generic;
    t->tanh_forward = ct__tanh_forward_generic;
    t->tanh_backward = ct__tanh_backward_generic;
    t->bias_add = ct__bias_add_generic;
    t->bias_backward = ct__bias_backward_generic;
    t->add_inplace = ct__add_inplace_generic;
    t->dropout_forward = ct__dropout_forward_generic;
    t->dropout_backward = ct__dropout_backward_generic;
    t->dropout_backward_kept = ct__dropout_backward_kept_generic;
    t->cross_entropy_forward = ct__cross_entropy_forward_generic;
    t->cross_entropy_backward = ct__cross_entropy_backward_generic;
    t->adamw_update = ct__adamw_update_generic;
    t->sum_squares = ct__sum_squares_generic;

#if defined(__x86_64__)
    /* AVX2 + FMA: our own FMA GEMM (bf16 widened as it is packed), the
     * conversions and every element-wise kernel vectorised. */
    t = &tables[CT__ISA_AVX2];
    *t = tables[CT__ISA_GENERIC];
    t->f32_to_bf16 = ct__f32_to_bf16_avx2;
    t->bf16_to_f32 = ct__bf16_to_f32_avx2;
    t->round_bf16 = ct__round_bf16_avx2;
    t->layernorm_forward = ct__layernorm_forward_avx2;
    t->layernorm_backward_input = ct__layernorm_backward_input_avx2;
    t->layernorm_backward_params = ct__layernorm_backward_params_avx2;
    t->gelu_forward = ct__gelu_forward_avx2;
    t->gelu_backward = ct__gelu_backward_avx2;
    t->gelu_tanh_forward = ct__gelu_tanh_forward_avx2;
    t->gelu_tanh_backward = ct__gelu_tanh_backward_avx2;
    t->gelu_forward_grad = ct__gelu_forward_grad_avx2;
    t->gelu_tanh_forward_grad = ct__gelu_tanh_forward_grad_avx2;
    t->act_grad_backward = ct__act_grad_backward_avx2;
    t->relu_forward = ct__relu_forward_avx2;
    t->relu_backward = ct__relu_backward_avx2;
    t->tanh_forward = ct__tanh_forward_avx2;
    t->tanh_backward = ct__tanh_backward_avx2;
    t->bias_add = ct__bias_add_avx2;
    t->bias_backward = ct__bias_backward_avx2;
    t->add_inplace = ct__add_inplace_avx2;
    t->dropout_forward = ct__dropout_forward_avx2;
    t->dropout_backward = ct__dropout_backward_avx2;
    t->dropout_backward_kept = ct__dropout_backward_kept_avx2;
    t->cross_entropy_forward = ct__cross_entropy_forward_avx2;
    t->cross_entropy_backward = ct__cross_entropy_backward_avx2;
    t->adamw_update = ct__adamw_update_avx2;
    t->sum_squares = ct__sum_squares_avx2;
    t->gemm_bf16 = ct__gemm_bf16_avx2;
    t->gemm_f32 = ct__gemm_f32_avx2;
    t->packb_bytes = ct__packb_bytes_avx2;
    t->packb = ct__packb_avx2;
    t->gemm_bf16_packed = ct__gemm_bf16_packed_avx2;
    t->packb_transposable = 0;
    t->packw_rows = ct__packw_rows_avx2;

    t = &tables[CT__ISA_AVX512];
    *t = tables[CT__ISA_AVX2];
    t->f32_to_bf16 = ct__f32_to_bf16_avx512;
    t->bf16_to_f32 = ct__bf16_to_f32_avx512;
    t->round_bf16 = ct__round_bf16_avx512;
    t->layernorm_forward = ct__layernorm_forward_avx512;
    t->layernorm_backward_input = ct__layernorm_backward_input_avx512;
    t->layernorm_backward_params = ct__layernorm_backward_params_avx512;
    t->gelu_forward = ct__gelu_forward_avx512;
    t->gelu_backward = ct__gelu_backward_avx512;
    t->gelu_tanh_forward = ct__gelu_tanh_forward_avx512;
    t->gelu_tanh_backward = ct__gelu_tanh_backward_avx512;
    t->gelu_forward_grad = ct__gelu_forward_grad_avx512;
    t->gelu_tanh_forward_grad = ct__gelu_tanh_forward_grad_avx512;
    t->act_grad_backward = ct__act_grad_backward_avx512;
    t->relu_forward = ct__relu_forward_avx512;
    t->relu_backward = ct__relu_backward_avx512;
    t->tanh_forward = ct__tanh_forward_avx512;
    t->tanh_backward = ct__tanh_backward_avx512;
    t->bias_add = ct__bias_add_avx512;
    t->bias_backward = ct__bias_backward_avx512;
    t->add_inplace = ct__add_inplace_avx512;
    t->dropout_forward = ct__dropout_forward_avx512;
    t->dropout_backward = ct__dropout_backward_avx512;
    t->dropout_backward_kept = ct__dropout_backward_kept_avx512;
    t->cross_entropy_forward = ct__cross_entropy_forward_avx512;
    t->cross_entropy_backward = ct__cross_entropy_backward_avx512;
    t->adamw_update = ct__adamw_update_avx512;
    t->sum_squares = ct__sum_squares_avx512;
    /* products: our own FMA GEMM, bf16 widened as it is packed */
    t->gemm_bf16 = ct__gemm_bf16_avx512;
    t->gemm_f32 = ct__gemm_f32_avx512;
    t->packb_bytes = ct__packb_bytes_avx512;
    t->packb = ct__packb_avx512;
    t->gemm_bf16_packed = ct__gemm_bf16_packed_avx512;
    t->packw_rows = ct__packw_rows_avx512;

    t = &tables[CT__ISA_AVX512BF16];
    *t = tables[CT__ISA_AVX512];
    t->f32_to_bf16 = ct__f32_to_bf16_avx512bf16;
    t->gemm_bf16 = ct__gemm_bf16_avx512bf16;
    t->packb_bytes = ct__packb_bytes_avx512bf16;
    t->packb = ct__packb_avx512bf16;
    t->gemm_bf16_packed = ct__gemm_bf16_packed_avx512bf16;
    t->packb_transposable = 0;
    t->packb_shares = 1;
    t->packw_rows = ct__packw_rows_vnni;

    t = &tables[CT__ISA_AMX];
    *t = tables[CT__ISA_AVX512BF16];
    t->gemm_bf16 = ct__gemm_bf16_amx;
    t->packb_bytes = ct__packb_bytes_amx;
    t->packb = ct__packb_amx;
    t->gemm_bf16_packed = ct__gemm_bf16_packed_amx;
    max_isa = ct__cpu_max_isa(ct__cpu_features_get());
#else
    max_isa = CT__ISA_GENERIC;
#endif
    for (int i = 0; i < CT__ISA_COUNT; i++) {
        tables[i].isa = (ct__isa)i;
        tables[i].name = ct__isa_name((ct__isa)i);
    }
}

const ct__kernels *ct__kernels_for(ct__isa isa)
{
    pthread_once(&tables_once, build_tables);
    if ((int)isa < 0 || isa > max_isa)
        return NULL;
    return &tables[isa];
}

static void warn(void)
{
    const char *w = ct__cpu_isa_warning();
    if (w[0])
        ct__log(CT_LOG_WARNING, "%s", w);
    if (ct__cpu_isa_note()[0])
        ct__log(CT_LOG_INFO, "%s", ct__cpu_isa_note());
    /* What bf16 means without AVX512-BF16 is said by ct_model_set_precision,
     * once, and only when bf16 is chosen: fp32-only runs hear nothing. */
}

const ct__kernels *ct__kernels_get(void)
{
    pthread_once(&warn_once, warn);
    return ct__kernels_for(ct__cpu_isa());
}

/* ---- ops.h entry points: this process's variant ------------------------------ */

void ct__gelu_forward(float *out, const float *inp, size_t n)
{
    ct__kernels_get()->gelu_forward(out, inp, n);
}

void ct__gelu_backward(float *dinp, const float *dout, const float *inp, size_t n)
{
    ct__kernels_get()->gelu_backward(dinp, dout, inp, n);
}

void ct__gelu_tanh_forward(float *out, const float *inp, size_t n)
{
    ct__kernels_get()->gelu_tanh_forward(out, inp, n);
}

void ct__gelu_tanh_backward(float *dinp, const float *dout, const float *inp, size_t n)
{
    ct__kernels_get()->gelu_tanh_backward(dinp, dout, inp, n);
}

void ct__relu_forward(float *out, const float *inp, size_t n)
{
    ct__kernels_get()->relu_forward(out, inp, n);
}

void ct__relu_backward(float *dinp, const float *dout, const float *inp, size_t n)
{
    ct__kernels_get()->relu_backward(dinp, dout, inp, n);
}

void ct__tanh_forward(float *out, const float *inp, size_t n)
{
    ct__kernels_get()->tanh_forward(out, inp, n);
}

void ct__tanh_backward(float *dinp, const float *dout, const float *out, size_t n)
{
    ct__kernels_get()->tanh_backward(dinp, dout, out, n);
}

void ct__add_inplace(float *out, const float *inp, size_t n)
{
    ct__kernels_get()->add_inplace(out, inp, n);
}

void ct__dropout_forward(float *out, const float *inp, size_t n, float p, uint64_t key,
                         size_t first)
{
    ct__kernels_get()->dropout_forward(out, inp, n, p, key, first);
}

double ct__cross_entropy_forward(const float *logits, int ld, const int32_t *target, int N,
                                 int V, int32_t ignore, int *count)
{
    return ct__kernels_get()->cross_entropy_forward(logits, ld, target, N, V, ignore, count);
}

void ct__cross_entropy_backward(float *dlogits, int ldd, const float *logits, int ld,
                                const int32_t *target, int N, int V, int32_t ignore,
                                float scale)
{
    ct__kernels_get()->cross_entropy_backward(dlogits, ldd, logits, ld, target, N, V, ignore,
                                              scale);
}
