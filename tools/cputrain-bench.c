/* cputrain-bench: times forward+backward training steps of a model on
 * synthetic batches and prints step time, throughput, achieved GFLOP/s and
 * peak memory. A benchmark, not a test: it prints figures and judges nothing.
 * Uses only the public API. */
#include <cputrain/cputrain.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

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

/* A whole decimal int in [lo, hi], or -1 (lo >= 0). */
static int parse_int(const char *v, int lo, int hi)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    return end == v || *end || errno || x < lo || x > hi ? -1 : (int)x;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: cputrain-bench [--model NAME|config.json] [--task qa|cls|mlm|ner]\n"
            "                      [--batch B] [--seq T] [--precision fp32|bf16]\n"
            "                      [--steps N] [--warmup W] [--threads N] [--eval] [--optimizer]\n"
            "                      [--gradient_checkpointing] [--profile [--gemm-peak GFLOPS]]\n"
            "defaults: bert-base-uncased qa, batch 8, seq 128, bf16, 10 steps, 2 warm-up\n"
            "--optimizer: each step also clips and applies AdamW (a whole training step)\n"
            "--gradient_checkpointing: backward recomputes each layer from its input\n"
            "--profile: where the timed steps went, by kernel family, against this\n"
            "           machine's GEMM and memory peaks (ct_kernel_peak)\n"
            "--gemm-peak: a GEMM figure measured elsewhere (the best of bench/compare_gemm.sh,\n"
            "             PyTorch's included): the whole step is read against it too when it\n"
            "             is above this run's probe\n");
}

/* Matrix-product FLOPs of one forward pass: 2 per multiply-add of every
 * Linear (the tied decoder included) and of the two attention products,
 * as the library computes them: the head, and the last layer past
 * attention, on the rows the head reads (each sequence's first token for
 * classification; for a masked LM or a token classifier head_rows, all
 * tokens in evaluation and the labelled ones in training: the library's
 * forward.c). */
static double forward_flops(const ct_model *m, int B, int T, int head_rows)
{
    int64_t C, L, FF, V, NL;
    ct_model_config_int(m, "hidden_size", &C);
    ct_model_config_int(m, "num_hidden_layers", &L);
    ct_model_config_int(m, "intermediate_size", &FF);
    ct_model_config_int(m, "vocab_size", &V);
    ct_model_config_int(m, "num_labels", &NL);
    double BT = (double)B * T, read = BT;
    double layer = BT * (4.0 * C * C + 2.0 * C * FF) + 2.0 * B * (double)T * T * C;
    double head;
    switch (ct_model_get_task(m)) {
    case CT_TASK_QUESTION_ANSWERING: head = BT * 2.0 * C; break;
    case CT_TASK_SEQUENCE_CLASSIFICATION:
        head = B * ((double)C * C + (double)C * NL);
        read = B;
        break;
    case CT_TASK_TOKEN_CLASSIFICATION:
        head = head_rows * (double)C * NL;
        read = head_rows;
        break;
    case CT_TASK_MASKED_LM:
        head = head_rows * ((double)C * C + (double)C * V);
        read = head_rows;
        break;
    default: head = 0; break;
    }
    double unread = L > 0 ? (BT - read) * ((double)C * C + 2.0 * C * FF) : 0;
    return 2.0 * (L * layer - unread + head);
}

/* The library's own account of what it holds, by category. */
static void print_memory(const ct_model *m, const ct_optim *opt)
{
    size_t bytes, total = 0;
    printf("memory accounted for:\n");
    for (size_t i = 0; ct_model_memory_category(i); i++) {
        const char *name = ct_model_memory_category(i);
        if (ct_model_memory_bytes(m, name, &bytes) != CT_OK)
            continue;
        printf("  %-18s %10.1f MiB\n", name, bytes / 1048576.0);
        total += bytes;
        if (i == 1) { /* after the gradients */
            if (opt && ct_optim_memory_bytes(opt, "optimizer_moments", &bytes) == CT_OK) {
                printf("  %-18s %10.1f MiB\n", "optimizer_moments", bytes / 1048576.0);
                total += bytes;
            } else {
                printf("  %-18s %10s     (no --optimizer)\n", "optimizer_moments", "-");
            }
        }
    }
    printf("  %-18s %10.1f MiB\n", "total", total / 1048576.0);
}

/* One row per kernel family (ct_profile_*), per step of the timed ones:
 * time, share of the step, the family's rate and that rate against the
 * machine's peak (the GEMM's for matrix work, the stream's for memory
 * passes); then what no family accounts for, and the step's useful rate. */
static void print_profile(int steps, double total, double useful, double peak_gflops,
                          double peak_gbs, double given_gflops)
{
    double step = total / steps, covered = 0;
    printf("profile (per step of %d, peaks: GEMM %.1f GFLOP/s, memory %.1f GB/s):\n", steps,
           peak_gflops, peak_gbs);
    printf("  %-20s %10s %7s %14s %8s\n", "family", "ms", "share", "rate", "of peak");
    for (size_t i = 0; i < ct_profile_count(); i++) {
        double sec, flops, bytes;
        int64_t calls;
        char rate[32] = "", of[16] = "";
        ct_profile_get(i, &sec, &calls, &flops, &bytes);
        if (!calls)
            continue;
        covered += sec;
        if (flops > 0 && sec > 0) {
            snprintf(rate, sizeof rate, "%.1f GFLOP/s", flops / sec * 1e-9);
            if (peak_gflops > 0)
                snprintf(of, sizeof of, "%.0f%%", 100.0 * flops / sec * 1e-9 / peak_gflops);
        } else if (bytes > 0 && sec > 0) {
            snprintf(rate, sizeof rate, "%.1f GB/s", bytes / sec * 1e-9);
            if (peak_gbs > 0)
                snprintf(of, sizeof of, "%.0f%%", 100.0 * bytes / sec * 1e-9 / peak_gbs);
        }
        printf("  %-20s %10.1f %6.1f%% %14s %8s\n", ct_profile_name(i), 1e3 * sec / steps,
               100.0 * sec / total, rate, of);
    }
    printf("  %-20s %10.1f %6.1f%%\n", "(other)", 1e3 * (total - covered) / steps,
           100.0 * (total - covered) / total);
    printf("whole step: %.1f GFLOP/s of useful matrix work, %.0f%% of the GEMM peak\n",
           useful / step * 1e-9, peak_gflops > 0 ? 100.0 * useful / step * 1e-9 / peak_gflops
                                                  : 0.0);
    /* the measure: against the best GEMM figure the machine gives,
     * this run's probe or one measured elsewhere, whichever is higher */
    if (given_gflops > peak_gflops)
        printf("whole step: %.0f%% of the best GEMM figure given (--gemm-peak %.1f GFLOP/s)\n",
               100.0 * useful / step * 1e-9 / given_gflops, given_gflops);
}

int main(int argc, char **argv)
{
    const char *model_name = "bert-base-uncased";
    ct_task task = CT_TASK_QUESTION_ANSWERING;
    ct_precision precision = CT_PRECISION_BF16;
    int B = 8, T = 128, steps = 10, warmup = 2, threads = 0, eval = 0, use_optim = 0, checkpointing = 0;
    int profile = 0;
    double peak_gflops = 0, peak_gbs = 0, given_gflops = 0;
    ct_optim *opt = NULL;
    ct_model *m;
    ct_batch *batch;
    ct_status st;
    double *times, flops;
    int64_t V;
    int32_t *ids, *mask, *start, *end, *labels;
    struct rusage ru;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--eval") == 0) {
            eval = 1;
            continue;
        }
        if (strcmp(a, "--optimizer") == 0) {
            use_optim = 1;
            continue;
        }
        if (strcmp(a, "--gradient_checkpointing") == 0) {
            checkpointing = 1;
            continue;
        }
        if (strcmp(a, "--profile") == 0) {
            profile = 1;
            continue;
        }
        if (!v || strncmp(a, "--", 2) != 0) {
            usage();
            return 2;
        }
        i++;
        if (strcmp(a, "--model") == 0)
            model_name = v;
        else if (strcmp(a, "--task") == 0) {
            static const char *const names[] = {"qa", "cls", "mlm", "ner"}; /* ct_task order */
            int k = 0;
            while (k < 4 && strcmp(v, names[k]) != 0)
                k++;
            if (k == 4) {
                fprintf(stderr, "cputrain-bench: --task %s is not qa, cls, mlm or ner\n", v);
                return 2;
            }
            task = (ct_task)k;
        } else if (strcmp(a, "--precision") == 0) {
            if (strcmp(v, "fp32") == 0)
                precision = CT_PRECISION_FP32;
            else if (strcmp(v, "bf16") == 0)
                precision = CT_PRECISION_BF16;
            else {
                fprintf(stderr, "cputrain-bench: --precision %s is not fp32 or bf16\n", v);
                return 2;
            }
        } else if (strcmp(a, "--gemm-peak") == 0) {
            char *end;
            given_gflops = strtod(v, &end);
            if (end == v || *end || !isfinite(given_gflops) || given_gflops <= 0) {
                fprintf(stderr, "cputrain-bench: --gemm-peak %s is not a positive number of "
                                "GFLOP/s\n", v);
                return 2;
            }
        } else {
            /* the integer options: name, range, where (threads: the library's
             * range, 0 for every core; steps and warm-up: their sum an int) */
            const struct {
                const char *name;
                int lo, hi, *at;
            } ints[] = {{"--batch", 1, INT_MAX, &B},
                        {"--seq", 1, INT_MAX, &T},
                        {"--steps", 1, 1000000, &steps},
                        {"--warmup", 0, 1000000, &warmup},
                        {"--threads", 0, 4096, &threads}};
            size_t k = 0;
            while (k < sizeof ints / sizeof ints[0] && strcmp(a, ints[k].name) != 0)
                k++;
            if (k == sizeof ints / sizeof ints[0]) {
                usage();
                return 2;
            }
            if ((*ints[k].at = parse_int(v, ints[k].lo, ints[k].hi)) < 0) {
                fprintf(stderr, "cputrain-bench: %s %s is not a whole number from %d to %d\n",
                        a, v, ints[k].lo, ints[k].hi);
                return 2;
            }
        }
    }
    if ((long long)B * T > INT_MAX / 16) { /* the token loops below count in int */
        fprintf(stderr, "cputrain-bench: --batch %d x --seq %d is more tokens than one batch "
                        "here can hold\n", B, T);
        return 2;
    }
    if (eval && use_optim) {
        fprintf(stderr, "cputrain-bench: --optimizer applies AdamW after backward, which "
                        "--eval (forward only) leaves out\n");
        return 2;
    }
    if (eval && checkpointing)
        fprintf(stderr, "cputrain-bench: warning: --gradient_checkpointing has no effect with "
                        "--eval (no backward to recompute for)\n");
    if (given_gflops > 0 && !profile) {
        fprintf(stderr, "cputrain-bench: --gemm-peak reads a profile: it needs --profile\n");
        return 2;
    }
    ct_log_set_callback(ct_log_to_stderr, NULL);
    if ((st = ct_model_create(model_name, task, 42, &m)) != CT_OK ||
        (st = ct_model_set_precision(m, precision)) != CT_OK ||
        (st = ct_model_set_threads(m, threads)) != CT_OK ||
        (st = ct_model_set_training(m, !eval)) != CT_OK ||
        (st = ct_model_set_gradient_checkpointing(m, checkpointing)) != CT_OK) {
        fprintf(stderr, "cputrain-bench: %s: %s\n", ct_status_name(st), ct_last_error());
        return 1;
    }
    if (use_optim) {
        ct_args *args = NULL;
        if ((st = ct_args_create(&args)) != CT_OK || (st = ct_optim_create(m, args, &opt)) != CT_OK ||
            (st = ct_optim_set_total_steps(opt, warmup + steps)) != CT_OK) {
            fprintf(stderr, "cputrain-bench: %s: %s\n", ct_status_name(st), ct_last_error());
            return 1;
        }
        ct_args_free(args);
    }
    ct_model_config_int(m, "vocab_size", &V);
    ids = malloc((size_t)B * T * sizeof *ids);
    mask = malloc((size_t)B * T * sizeof *mask);
    labels = malloc((size_t)B * T * sizeof *labels);
    start = malloc((size_t)B * sizeof *start);
    end = malloc((size_t)B * sizeof *end);
    times = malloc((size_t)steps * sizeof *times);
    if (!ids || !mask || !labels || !start || !end || !times || ct_batch_create(&batch) != CT_OK) {
        fprintf(stderr, "cputrain-bench: out of memory\n");
        return 1;
    }
    srand(1);
    for (int i = 0; i < B * T; i++) {
        ids[i] = 1 + rand() % (int)(V - 1);
        mask[i] = 1;
        labels[i] = task == CT_TASK_MASKED_LM ? (rand() % 7 == 0 ? ids[i] : -100) : rand() % 2;
        /* run_ner's: no label on [CLS], [SEP] and a word's later pieces (one
         * token in four here) */
        if (task == CT_TASK_TOKEN_CLASSIFICATION &&
            (i % T == 0 || i % T == T - 1 || rand() % 4 == 0))
            labels[i] = -100;
    }
    for (int b = 0; b < B; b++) {
        start[b] = rand() % T;
        end[b] = start[b] + rand() % (T - start[b]);
        labels[b] = task == CT_TASK_SEQUENCE_CLASSIFICATION ? rand() % 2 : labels[b];
    }
    ct_batch_set_inputs(batch, B, T, ids, NULL, mask);
    if (task == CT_TASK_QUESTION_ANSWERING)
        st = ct_batch_set_positions(batch, start, end);
    else
        st = ct_batch_set_labels(batch, labels,
                                 task == CT_TASK_SEQUENCE_CLASSIFICATION ? (size_t)B
                                                                          : (size_t)B * T);
    int labelled = 0;
    for (int i = 0; i < B * T; i++)
        labelled += labels[i] != -100;
    flops = forward_flops(m, B, T, eval || labelled == 0 ? B * T : labelled) * (eval ? 1.0 : 3.0);

    printf("kernels: %s\n", ct_kernel_isa());
    printf("model %s (%s), %zu parameters, batch %d x seq %d, %s, %s, %d threads\n", model_name,
           ct_model_architecture(m), ct_model_num_parameters(m), B, T,
           precision == CT_PRECISION_BF16 ? "bf16" : "fp32",
           eval ? "forward only" : opt ? "forward+backward+AdamW" : "forward+backward",
           ct_model_get_threads(m));
    if (profile && (st = ct_kernel_peak(precision, ct_model_get_threads(m), &peak_gflops,
                                        &peak_gbs)) != CT_OK) {
        fprintf(stderr, "cputrain-bench: %s: %s\n", ct_status_name(st), ct_last_error());
        return 1;
    }
    for (int i = 0; i < warmup + steps && st == CT_OK; i++) {
        float loss;
        double t0;
        if (profile && i == warmup) {
            ct_profile_reset();
            ct_profile_set_enabled(1);
        }
        t0 = now();
        st = eval ? ct_model_forward(m, batch, &loss)
                  : ct_model_forward_backward(m, batch, 1.0f, &loss);
        if (st == CT_OK && opt)
            st = ct_optim_step(opt, NULL);
        if (i >= warmup)
            times[i - warmup] = now() - t0;
    }
    if (st != CT_OK) {
        fprintf(stderr, "cputrain-bench: %s: %s\n", ct_status_name(st), ct_last_error());
        return 1;
    }
    qsort(times, (size_t)steps, sizeof *times, cmp_double);
    {
        double med = times[steps / 2];
        getrusage(RUSAGE_SELF, &ru);
        printf("step time: median %.4f s (min %.4f, max %.4f) over %d steps\n", med, times[0],
               times[steps - 1], steps);
        printf("throughput: %.1f samples/s, %.0f tokens/s\n", B / med, (double)B * T / med);
        printf("matmul work: %.1f GFLOP per step, %.1f GFLOP/s achieved\n", flops / 1e9,
               flops / med / 1e9);
        print_memory(m, opt);
        printf("peak memory (max RSS): %.1f MiB\n", ru.ru_maxrss / 1024.0);
        if (profile) {
            double total = 0;
            ct_profile_set_enabled(0);
            for (int i = 0; i < steps; i++)
                total += times[i];
            print_profile(steps, total, flops, peak_gflops, peak_gbs, given_gflops);
        }
    }
    ct_batch_free(batch);
    ct_optim_free(opt);
    ct_model_free(m);
    free(ids);
    free(mask);
    free(labels);
    free(start);
    free(end);
    free(times);
    return 0;
}
