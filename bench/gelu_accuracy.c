/* How far each level's GELU is from the exact one: the forward's largest
 * relative error against x Phi(z) in long double (z = x / sqrt2 rounded as
 * the kernels round it), normal results only, and the backward's error as
 * a share of the bound tests/check_ops.c holds it to (1e-6 |g| + 2^-23
 * (1 + |x|) for dout = 1), over every `step`-th float of [-15, 15].
 *
 *   gelu_accuracy [step]   (default 7: about 3e8 floats, ~25 s a level)
 *
 * Output: "gelu <level> <floats> forward <max rel err> at <x> backward
 * <max share of bound> at <x>". */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_args.h"
#include "kernels/kernels.h"

enum { BATCH = 4096 };

typedef struct worst {
    double fwd, fwd_x, bwd, bwd_x;
} worst;

static void score(worst *w, const float *x, const float *y, const float *d, int n)
{
    for (int i = 0; i < n; i++) {
        float z = x[i] * (float)M_SQRT1_2;
        long double cdf = 0.5L * erfcl(-(long double)z);
        long double ref = (long double)x[i] * cdf;
        long double pdf = expl(-(long double)x[i] * x[i] / 2) / sqrtl(2 * acosl(-1.0L));
        long double refd = cdf + (long double)x[i] * pdf;
        double e = fabsl(ref) > 1e-36L ? (double)fabsl((y[i] - ref) / ref) : 0;
        double ed = (double)(fabsl(d[i] - refd) /
                             (1e-6L * fabsl(refd) + ldexpl(1.0L, -23) * (1 + fabsl(x[i]))));
        if (e > w->fwd) {
            w->fwd = e;
            w->fwd_x = x[i];
        }
        if (ed > w->bwd) {
            w->bwd = ed;
            w->bwd_x = x[i];
        }
    }
}

int main(int argc, char **argv)
{
    int step = argc > 1 ? bench_int(argv[0], "step", argv[1], 1, INT_MAX) : 7;
    static float x[BATCH], y[BATCH], d[BATCH], one[BATCH];
    float lim = 15.0f;
    uint32_t hi;
    memcpy(&hi, &lim, sizeof hi);
    for (int i = 0; i < BATCH; i++)
        one[i] = 1.0f;
    for (int isa = 0; isa < CT__ISA_COUNT; isa++) {
        const ct__kernels *k = ct__kernels_for((ct__isa)isa);
        worst w = {0, 0, 0, 0};
        long n = 0;
        if (!k || (isa > 0 && k->gelu_forward == ct__kernels_for((ct__isa)(isa - 1))->gelu_forward))
            continue; /* not on this CPU, or the level below's kernel */
        for (uint32_t sign = 0; sign < 2; sign++) {
            int m = 0;
            for (uint64_t u = 0; u <= hi; u += (uint64_t)step) {
                uint32_t bits = (uint32_t)u | (sign << 31);
                memcpy(&x[m], &bits, sizeof bits);
                if (++m == BATCH || u + (uint64_t)step > hi) {
                    k->gelu_forward(y, x, (size_t)m);
                    k->gelu_backward(d, one, x, (size_t)m);
                    score(&w, x, y, d, m);
                    n += m;
                    m = 0;
                }
            }
        }
        printf("gelu %s %ld forward %.3g at %.9g backward %.3g at %.9g\n", k->name, n, w.fwd,
               w.fwd_x, w.bwd, w.bwd_x);
        fflush(stdout);
    }
    return 0;
}
