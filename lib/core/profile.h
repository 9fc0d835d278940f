/* Internal: the profile of where a step goes, by kernel family. Call sites
 * bracket one whole (possibly pool-parallel) operation on the calling
 * thread; when profiling is off, ct__prof_begin returns 0 and
 * ct__prof_end does nothing, so the cost is one relaxed load. */
#ifndef CT_CORE_PROFILE_H
#define CT_CORE_PROFILE_H

/* In the order the report lists them; names in profile.c. */
typedef enum ct__prof_family {
    CT__PROF_GEMM_FORWARD,      /* x W^T of every Linear (heads too) */
    CT__PROF_GEMM_INPUT_GRAD,   /* dy W */
    CT__PROF_GEMM_WEIGHT_GRAD,  /* dy^T x (K = tokens) */
    CT__PROF_ATTENTION_FORWARD, /* streamed scores, softmax, P V */
    CT__PROF_ATTENTION_BACKWARD,
    CT__PROF_LAYERNORM,
    CT__PROF_ACTIVATION, /* GELU / ReLU / tanh, forward and backward */
    CT__PROF_DROPOUT,
    CT__PROF_BIAS,       /* bias add, bias gradient, residual adds and copies */
    CT__PROF_BF16_ROUND, /* rounding matrix inputs to bf16 */
    CT__PROF_EMBEDDING,
    CT__PROF_LOSS,
    CT__PROF_OPTIMIZER,  /* gradient norm, clipping, AdamW */
    CT__PROF_WEIGHT_PACK, /* the weights' bf16 panels after each update
                           * (AdamW's sweep makes them: its share of it) */
    CT__PROF_ALLREDUCE_WAIT, /* gradient allreduce not hidden by backward */
    CT__PROF_COUNT
} ct__prof_family;

/* A start time (CLOCK_MONOTONIC seconds), or 0 while profiling is off. */
double ct__prof_begin(void);
/* Adds now - t0 (when t0 is not 0), one call, and the operation's useful
 * floating-point operations and memory traffic (bytes) to family f. */
void ct__prof_end(ct__prof_family f, double t0, double flops, double bytes);
/* Whether profiling is on (what ct__prof_begin tests). */
int ct__prof_enabled(void);
/* Adds `seconds` measured some other way (a fused sweep's share), one call. */
void ct__prof_add(ct__prof_family f, double seconds, double flops, double bytes);

#endif
