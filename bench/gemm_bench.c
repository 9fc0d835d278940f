/* GEMM throughput of every kernel variant this machine runs, per shape and
 * layout: median GFLOP/s over repeats, one line each, for compare_gemm.sh.
 *
 *   gemm_bench [-t threads] [-r repeats] [-s MxNxK]... [-v variant]... [-g]
 *              [-p]
 *
 * Layouts as torch.matmul sees them, C[M,N] = op(A)[M,K] op(B)[K,N]:
 *   NN  A [M,K],  B [K,N]
 *   NT  A [M,K],  B stored [N,K]  (x W^T, a Linear forward)
 *   TN  A stored [K,M], B [K,N]   (dy^T x, a weight gradient)
 *   NTp NT with B packed beforehand (-p; bf16 only): a Linear forward on a
 *       weight the optimizer step packed, as training runs it
 * Variants: bf16 of every level, fp32 of the best, and OpenBLAS's sgemm
 * ("openblas", on its own threads: OPENBLAS_NUM_THREADS).
 * Output: "gemm <layout> <M> <N> <K> <variant> <dtype> <GFLOP/s> <ms>". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_args.h"
#include "machine/cpu.h"
#include "machine/threadpool.h"
#include "core/bigalloc.h"
#include "kernels/kernels.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One product of a variant: level k's bf16, or fp32 through k or BLAS. */
typedef struct run {
    const ct__kernels *k;
    int is_f32, is_blas;
    float *C;
    const float *af, *bf;
    const ct__bf16 *a, *b;
    const ct__packed_b *packed; /* NTp: B's pack */
    ct__gemm_desc d;
    ct__pool *pool;
} run;

static ct_status run_once(const run *x)
{
    const ct__gemm_desc *d = &x->d;
    if (x->is_blas)
        return ct__gemm_f32_blas(x->C, x->af, x->bf, d, x->pool);
    if (x->packed)
        return x->k->gemm_bf16_packed(x->C, x->a, x->packed, d->M, d->lda, d->ldc, 0, 1.0f,
                                      x->pool);
    if (x->is_f32)
        return ct__gemm_f32(x->k, x->C, x->af, x->bf, d->M, d->N, d->K, d->lda, d->ldb,
                            d->ldc, d->flags, 1.0f, x->pool);
    return ct__gemm_bf16(x->k, x->C, x->a, x->b, d->M, d->N, d->K, d->lda, d->ldb, d->ldc,
                         d->flags, 1.0f, x->pool);
}

static const char *layout_name[] = {"NN", "NT", "TN", "NTp"};
static const int layout_flags[] = {0, CT__GEMM_TRANS_B, CT__GEMM_TRANS_A, CT__GEMM_TRANS_B};

/* Whether -v `name` can print a row here: OpenBLAS, or a level this CPU
 * has kernels for. */
static int variant_runs(const char *name)
{
    for (int v = 0; v < CT__ISA_COUNT; v++) {
        const ct__kernels *k = ct__kernels_for((ct__isa)v);
        if (k && !strcmp(k->name, name))
            return 1;
    }
    return !strcmp(name, "openblas");
}

int main(int argc, char **argv)
{
    int threads = 2, repeats = 21, include_generic = 0, packed = 0, nshapes = 0, nvar = 0;
    int shapes[32][3];
    const char *only[8];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            threads = bench_int(argv[0], "-t", argv[++i], 1, 1024);
        } else if (!strcmp(argv[i], "-r") && i + 1 < argc) {
            repeats = bench_int(argv[0], "-r", argv[++i], 1, 100000);
        } else if (!strcmp(argv[i], "-s") && i + 1 < argc && nshapes < 32) {
            bench_shape(argv[0], argv[++i], shapes[nshapes++]);
        } else if (!strcmp(argv[i], "-v") && i + 1 < argc && nvar < 8) {
            only[nvar] = argv[++i];
            include_generic |= !strcmp(argv[i], "generic"); /* asked for by name */
            if (!variant_runs(only[nvar++])) {
                fprintf(stderr, "%s: -v %s is not a variant this CPU runs (openblas, or a "
                        "level at or below %s)\n", argv[0], argv[i],
                        ct__isa_name(ct__cpu_max_isa(ct__cpu_features_get())));
                return 2;
            }
        } else if (!strcmp(argv[i], "-g")) {
            include_generic = 1;
        } else if (!strcmp(argv[i], "-p")) {
            packed = 1;
        } else {
            fprintf(stderr, "usage: %s [-t threads] [-r repeats] [-s MxNxK]... "
                    "[-v variant]... [-g] [-p]\n", argv[0]);
            return 2;
        }
    }
    if (nshapes == 0) {
        static const int def[3][3] = {{1024, 768, 768}, {1024, 3072, 768}, {1024, 768, 3072}};
        memcpy(shapes, def, sizeof def);
        nshapes = 3;
    }

    ct__pool *pool;
    if (ct__pool_create(threads, &pool) != CT_OK) {
        fprintf(stderr, "gemm_bench: %s\n", ct_last_error());
        return 1;
    }
    printf("# cpu level %s, %d threads, median of %d\n", ct__isa_name(ct__cpu_isa()),
           threads, repeats);

    double *times = malloc(repeats * sizeof *times);
    for (int s = 0; s < nshapes; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
        /* Carved from one allocation of the library's, as its layers' arrays
         * are from the activations' block: on huge pages where the kernel
         * gives them on request. On 4 KiB pages each 16-row tile stored
         * into a C of 3072 columns touches 16 pages: NT 1024 x 3072 x 768
         * ran 0.77-0.88x its speed on huge pages (AMX Xeon, 4 alternated
         * runs). torch_matmul.py runs PyTorch both ways and keeps its
         * better. */
        size_t at[5], bytes[5] = {na * 2, nb * 2, nc * 4, na * 4, nb * 4}, total = 0;
        for (int i = 0; i < 5; i++) {
            at[i] = total;
            total += (bytes[i] + 63) / 64 * 64;
        }
        char *block = ct__alloc_large(total);
        if (!block) {
            fprintf(stderr, "gemm_bench: out of memory for %dx%dx%d\n", M, N, K);
            return 1;
        }
        ct__bf16 *a = (ct__bf16 *)(block + at[0]), *b = (ct__bf16 *)(block + at[1]);
        float *C = (float *)(block + at[2]), *af = (float *)(block + at[3]);
        float *bf = (float *)(block + at[4]);
        for (size_t i = 0; i < na; i++)
            af[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
        for (size_t i = 0; i < nb; i++)
            bf[i] = (float)((i * 40503u) % 1000) / 500.0f - 1.0f;
        ct__f32_to_bf16_generic(a, af, na);
        ct__f32_to_bf16_generic(b, bf, nb);
        double flops = 2.0 * M * N * K;

        for (int l = 0; l < 3 + packed; l++) {
            int flags = layout_flags[l];
            int lda = (flags & CT__GEMM_TRANS_A) ? M : K;
            int ldb = (flags & CT__GEMM_TRANS_B) ? K : N;
            /* bf16 of every level, then fp32 of the best, then OpenBLAS's sgemm */
            for (int v = 0; v <= CT__ISA_COUNT + 1; v++) {
                int is_f32 = v >= CT__ISA_COUNT, is_blas = v == CT__ISA_COUNT + 1;
                const ct__kernels *k = is_f32 ? ct__kernels_get() : ct__kernels_for((ct__isa)v);
                const char *name = is_blas ? "openblas" : k ? k->name : "";
                if (!k || (v == CT__ISA_GENERIC && !include_generic) || (l == 3 && is_f32))
                    continue;
                if (nvar) {
                    int want = 0;
                    for (int i = 0; i < nvar; i++)
                        want |= !strcmp(only[i], name);
                    if (!want)
                        continue;
                }
                ct__packed_b pack;
                void *mem = NULL;
                if (l == 3) {
                    mem = ct__alloc_large(k->packb_bytes(K, N));
                    if (!mem || k->packb(&pack, mem, b, K, N, ldb, flags, pool) != CT_OK) {
                        fprintf(stderr, "gemm_bench: packing B: %s\n",
                                mem ? ct_last_error() : "out of memory");
                        return 1;
                    }
                }
                run x = {k, is_f32, is_blas, C, af, bf, a, b, l == 3 ? &pack : NULL,
                         {M, N, K, lda, ldb, N, flags, 1.0f, {1, 1}, {0, 0}, {0, 0}, {0, 0}},
                         pool};
                /* Warm-up: two runs and at least 0.2 s. A pool's threads
                 * may start on one core and be spread by the scheduler only
                 * later: measured at once, the first shape of a process ran
                 * at half speed now and then (Zen 4, 2 threads). */
                double warm_until = now() + 0.2;
                for (int r = -2; r < repeats; r++) {
                    double t0 = now();
                    ct_status st = run_once(&x);
                    double t = now() - t0;
                    if (st != CT_OK) {
                        fprintf(stderr, "gemm_bench: %s\n", ct_last_error());
                        return 1;
                    }
                    if (r == -1 && t0 < warm_until)
                        r = -2; /* warm up once more */
                    else if (r >= 0)
                        times[r] = t;
                }
                qsort(times, repeats, sizeof *times, cmp_double);
                double med = times[repeats / 2];
                printf("gemm %s %d %d %d %s %s %.1f %.3f\n", layout_name[l], M, N, K,
                       name, is_f32 ? "fp32" : "bf16", flops / med * 1e-9, med * 1e3);
                fflush(stdout);
                free(mem);
            }
        }
        free(block);
    }
    free(times);
    ct__pool_free(pool);
    return 0;
}
