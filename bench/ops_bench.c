/* Element-wise kernels (ops.h) of the generic level and this process's
 * (ct__kernels_get(): the machine's best, or CPUTRAIN_ISA) on one thread,
 * at the sizes of a bert-base training step (batch 8 x seq 128): median
 * ns/element and GB/s over repeats, the two levels timed alternately so
 * that a noisy machine slows both alike.
 *
 *   ops_bench [-r repeats] [-k kernel]...
 *
 * Output: "ops <kernel> <elements> <level> <ns/elem> <GB/s> <ms>", then the
 * speed-up of the level over generic. GB/s counts the bytes each kernel
 * must read and write once. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_args.h"
#include "machine/cpu.h"
#include "kernels/kernels.h"

enum { BT = 8 * 128, C = 768, FF = 3072, NH = 12, T = 128, CE_N = 128, CE_V = 30522 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Buffers big enough for every case, filled once. */
typedef struct bufs {
    float *a, *b, *c, *d, *w, *bias, *mean, *rstd;
    int32_t *mask, *target;
} bufs;

typedef struct bench_case {
    const char *name;
    size_t elems;
    double bytes_per_elem;
    void (*run)(const ct__kernels *k, const bufs *b);
} bench_case;

static void ln_fwd(const ct__kernels *k, const bufs *b)
{
    k->layernorm_forward(b->c, b->mean, b->rstd, b->a, b->w, b->bias, BT, C, 1e-12f);
}

static void ln_bwd_in(const ct__kernels *k, const bufs *b)
{
    k->layernorm_backward_input(b->c, b->b, b->a, b->w, b->mean, b->rstd, BT, C);
}

static void ln_bwd_par(const ct__kernels *k, const bufs *b)
{
    k->layernorm_backward_params(b->d, b->d + C, b->b, b->a, b->mean, b->rstd, BT, C, C);
}

static void gelu_f(const ct__kernels *k, const bufs *b)
{
    k->gelu_forward(b->c, b->a, (size_t)BT * FF);
}

static void gelu_b(const ct__kernels *k, const bufs *b)
{
    k->gelu_backward(b->c, b->b, b->a, (size_t)BT * FF);
}

static void gelut_f(const ct__kernels *k, const bufs *b)
{
    k->gelu_tanh_forward(b->c, b->a, (size_t)BT * FF);
}

static void gelut_b(const ct__kernels *k, const bufs *b)
{
    k->gelu_tanh_backward(b->c, b->b, b->a, (size_t)BT * FF);
}

static void relu_f(const ct__kernels *k, const bufs *b)
{
    k->relu_forward(b->c, b->a, (size_t)BT * FF);
}

static void relu_b(const ct__kernels *k, const bufs *b)
{
    k->relu_backward(b->c, b->b, b->a, (size_t)BT * FF);
}

static void tanh_f(const ct__kernels *k, const bufs *b)
{
    k->tanh_forward(b->c, b->a, (size_t)BT * FF);
}

static void tanh_b(const ct__kernels *k, const bufs *b)
{
    k->tanh_backward(b->c, b->b, b->a, (size_t)BT * FF);
}

static void bias_f(const ct__kernels *k, const bufs *b)
{
    k->bias_add(b->c, b->bias, BT, FF);
}

static void bias_b(const ct__kernels *k, const bufs *b)
{
    k->bias_backward(b->d, b->b, BT, FF, FF);
}

static void add_ip(const ct__kernels *k, const bufs *b)
{
    k->add_inplace(b->c, b->a, (size_t)BT * C);
}

static void drop_f(const ct__kernels *k, const bufs *b)
{
    k->dropout_forward(b->c, b->a, (size_t)8 * NH * T * T, 0.1f, 12345, 0);
}

static void ce_f(const ct__kernels *k, const bufs *b)
{
    int count;
    volatile double loss =
        k->cross_entropy_forward(b->a, CE_V, b->target, CE_N, CE_V, -100, &count);
    (void)loss;
}

static void ce_b(const ct__kernels *k, const bufs *b)
{
    k->cross_entropy_backward(b->c, CE_V, b->a, CE_V, b->target, CE_N, CE_V, -100, 1.0f / CE_N);
}

static const bench_case cases[] = {
    {"layernorm_forward", (size_t)BT * C, 8, ln_fwd},
    {"layernorm_backward_input", (size_t)BT * C, 12, ln_bwd_in},
    {"layernorm_backward_params", (size_t)BT * C, 8, ln_bwd_par},
    {"gelu_forward", (size_t)BT * FF, 8, gelu_f},
    {"gelu_backward", (size_t)BT * FF, 12, gelu_b},
    {"gelu_tanh_forward", (size_t)BT * FF, 8, gelut_f},
    {"gelu_tanh_backward", (size_t)BT * FF, 12, gelut_b},
    {"relu_forward", (size_t)BT * FF, 8, relu_f},
    {"relu_backward", (size_t)BT * FF, 12, relu_b},
    {"tanh_forward", (size_t)BT * FF, 8, tanh_f},
    {"tanh_backward", (size_t)BT * FF, 12, tanh_b},
    {"bias_add", (size_t)BT * FF, 8, bias_f},
    {"bias_backward", (size_t)BT * FF, 4, bias_b},
    {"add_inplace", (size_t)BT * C, 12, add_ip},
    {"dropout_forward", (size_t)8 * NH * T * T, 8, drop_f},
    {"cross_entropy_forward", (size_t)CE_N * CE_V, 4, ce_f},
    {"cross_entropy_backward", (size_t)CE_N * CE_V, 8, ce_b},
};

int main(int argc, char **argv)
{
    int repeats = 11, nonly = 0;
    const char *only[32];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-r") && i + 1 < argc) {
            repeats = bench_int(argv[0], "-r", argv[++i], 1, 100000);
        } else if (!strcmp(argv[i], "-k") && i + 1 < argc && nonly < 32) {
            size_t c = 0;
            only[nonly++] = argv[++i];
            while (c < sizeof cases / sizeof cases[0] && strcmp(cases[c].name, argv[i]) != 0)
                c++;
            if (c == sizeof cases / sizeof cases[0]) {
                fprintf(stderr, "%s: -k %s is not one of its kernels:", argv[0], argv[i]);
                for (c = 0; c < sizeof cases / sizeof cases[0]; c++)
                    fprintf(stderr, " %s", cases[c].name);
                fputc('\n', stderr);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: %s [-r repeats] [-k kernel]...\n", argv[0]);
            return 2;
        }
    }
    const ct__kernels *lv[2] = {ct__kernels_for(CT__ISA_GENERIC), ct__kernels_get()};
    if (lv[1] == lv[0]) {
        fprintf(stderr, "ops_bench: this process runs the generic level: nothing to compare\n");
        return 1;
    }

    size_t big = (size_t)BT * FF > (size_t)CE_N * CE_V ? (size_t)BT * FF : (size_t)CE_N * CE_V;
    bufs b;
    float **fb[] = {&b.a, &b.b, &b.c, &b.d};
    for (int i = 0; i < 4; i++) {
        *fb[i] = malloc(big * sizeof(float));
        if (!*fb[i])
            return 1;
    }
    b.w = malloc(FF * sizeof(float));
    b.bias = malloc(FF * sizeof(float));
    b.mean = malloc(BT * sizeof(float));
    b.rstd = malloc(BT * sizeof(float));
    b.mask = malloc(8 * T * sizeof(int32_t));
    b.target = malloc(CE_N * sizeof(int32_t));
    /* activations around N(0, 1.5^2)-like values; probabilities in [0, 1/64) */
    for (size_t i = 0; i < big; i++) {
        b.a[i] = (float)((i * 2654435761u) % 2000) / 333.0f - 3.0f;
        b.b[i] = (float)((i * 40503u) % 1000) / 500.0f - 1.0f;
        b.c[i] = 0.0f;
        b.d[i] = (float)((i * 69069u) % 1000) / 64000.0f;
    }
    for (int i = 0; i < FF; i++) {
        b.w[i] = 1.0f + (float)(i % 7) / 7.0f;
        b.bias[i] = (float)(i % 5) / 5.0f;
    }
    for (int i = 0; i < BT; i++) {
        b.mean[i] = 0.1f;
        b.rstd[i] = 0.9f;
    }
    for (int i = 0; i < 8 * T; i++) /* the last (i % 8) * 8 keys of each item masked */
        b.mask[i] = i % T < T - (i / T) * 8;
    for (int i = 0; i < CE_N; i++)
        b.target[i] = i % 10 == 9 ? -100 : (i * 7919) % CE_V;

    printf("# cpu level %s, 1 thread, median of %d, generic and %s alternating\n",
           ct__isa_name(ct__cpu_isa()), repeats, lv[1]->name);
    double *times[2] = {malloc(repeats * sizeof(double)), malloc(repeats * sizeof(double))};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const bench_case *bc = &cases[c];
        if (nonly) {
            int want = 0;
            for (int i = 0; i < nonly; i++)
                want |= !strcmp(only[i], bc->name);
            if (!want)
                continue;
        }
        for (int r = -1; r < repeats; r++) /* one warm-up round */
            for (int v = 0; v < 2; v++) {
                double t0 = now();
                bc->run(lv[v], &b);
                double t = now() - t0;
                if (r >= 0)
                    times[v][r] = t;
            }
        double med[2];
        for (int v = 0; v < 2; v++) {
            qsort(times[v], repeats, sizeof(double), cmp_double);
            med[v] = times[v][repeats / 2];
            printf("ops %-26s %8zu %-8s %8.3f ns/elem %7.2f GB/s %9.3f ms\n", bc->name, bc->elems,
                   lv[v]->name, med[v] * 1e9 / bc->elems,
                   bc->bytes_per_elem * bc->elems / med[v] * 1e-9, med[v] * 1e3);
        }
        printf("speedup %-26s %.1fx\n", bc->name, med[0] / med[1]);
        fflush(stdout);
    }
    for (int i = 0; i < 4; i++)
        free(*fb[i]);
    free(b.w);
    free(b.bias);
    free(b.mean);
    free(b.rstd);
    free(b.mask);
    free(b.target);
    free(times[0]);
    free(times[1]);
    return 0;
}
