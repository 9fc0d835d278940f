/* The kernel-family profile (ct_profile_*): process-wide sums of time,
 * calls, FLOPs and bytes, kept with relaxed atomics so that any thread may
 * add to them. */
#include "core/profile.h"

#include <stdatomic.h>
#include <string.h>

#include <cputrain/cputrain.h>

#include "core/clock.h"
#include "core/error.h"

typedef struct totals {
    _Atomic double seconds, flops, bytes;
    _Atomic int64_t calls;
} totals;

static atomic_int enabled;
static totals sums[CT__PROF_COUNT];

static const char *const names[CT__PROF_COUNT] = {
    "gemm_forward",  "gemm_input_grad", "gemm_weight_grad", "attention_forward",
    "attention_backward", "layernorm", "activation", "dropout", "bias",
    "bf16_round", "embedding", "loss", "optimizer", "weight_pack", "allreduce_wait",
};

static void add(_Atomic double *to, double v)
{
    double old = atomic_load_explicit(to, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(to, &old, old + v, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

int ct__prof_enabled(void)
{
    return atomic_load_explicit(&enabled, memory_order_relaxed);
}

double ct__prof_begin(void)
{
    return ct__prof_enabled() ? ct__now_s() : 0.0;
}

void ct__prof_end(ct__prof_family f, double t0, double flops, double bytes)
{
    if (t0 != 0.0)
        ct__prof_add(f, ct__now_s() - t0, flops, bytes);
}

void ct__prof_add(ct__prof_family f, double seconds, double flops, double bytes)
{
    totals *s;
    if ((unsigned)f >= CT__PROF_COUNT)
        return;
    s = &sums[f];
    add(&s->seconds, seconds);
    add(&s->flops, flops);
    add(&s->bytes, bytes);
    atomic_fetch_add_explicit(&s->calls, 1, memory_order_relaxed);
}

void ct_profile_set_enabled(int on)
{
    atomic_store(&enabled, on != 0);
}

void ct_profile_reset(void)
{
    for (int f = 0; f < CT__PROF_COUNT; f++) {
        atomic_store(&sums[f].seconds, 0.0);
        atomic_store(&sums[f].flops, 0.0);
        atomic_store(&sums[f].bytes, 0.0);
        atomic_store(&sums[f].calls, 0);
    }
}

size_t ct_profile_count(void)
{
    return CT__PROF_COUNT;
}

const char *ct_profile_name(size_t i)
{
    return i < CT__PROF_COUNT ? names[i] : NULL;
}

ct_status ct_profile_get(size_t i, double *seconds, int64_t *calls, double *flops,
                         double *bytes)
{
    if (i >= CT__PROF_COUNT)
        return ct__error(CT_ERR_INVALID_ARG, "ct_profile_get: family %zu of %d", i,
                         CT__PROF_COUNT);
    if (seconds)
        *seconds = atomic_load(&sums[i].seconds);
    if (calls)
        *calls = atomic_load(&sums[i].calls);
    if (flops)
        *flops = atomic_load(&sums[i].flops);
    if (bytes)
        *bytes = atomic_load(&sums[i].bytes);
    return CT_OK;
}
