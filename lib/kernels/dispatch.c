/* Fills the kernel tables once: each level starts as a copy of the one
 * below and overrides what it has faster, so no entry is ever NULL. */
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
    t->gemm_bf16 = ct__gemm_bf16_generic;
    t->gemm_f32 = ct__gemm_f32_generic;

#if defined(__x86_64__)
    t = &tables[CT__ISA_AVX512];
    *t = tables[CT__ISA_GENERIC];
    t->f32_to_bf16 = ct__f32_to_bf16_avx512;
    t->bf16_to_f32 = ct__bf16_to_f32_avx512;
    t->gemm_bf16 = ct__gemm_bf16_blas;
    t->gemm_f32 = ct__gemm_f32_blas;

    t = &tables[CT__ISA_AVX512BF16];
    *t = tables[CT__ISA_AVX512];
    t->f32_to_bf16 = ct__f32_to_bf16_avx512bf16;
    t->gemm_bf16 = ct__gemm_bf16_avx512bf16;

    t = &tables[CT__ISA_AMX];
    *t = tables[CT__ISA_AVX512BF16];
    t->gemm_bf16 = ct__gemm_bf16_amx;
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
    if (ct__cpu_isa() < CT__ISA_AVX512BF16)
        ct__log(CT_LOG_WARNING,
                "kernels: %s level, no AVX512-BF16 in use: bf16 matrix products "
                "are emulated in fp32 and will be slower than fp32 training",
                ct__isa_name(ct__cpu_isa()));
}

const ct__kernels *ct__kernels_get(void)
{
    pthread_once(&warn_once, warn);
    return ct__kernels_for(ct__cpu_isa());
}
