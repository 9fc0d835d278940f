/* Bandwidth of ct_dist_allreduce, 1 KiB up to max_mib MiB in steps of 4 (and
 * max_mib itself), through the public API only: one process per rank, the
 * job and its backend taken from the environment as ct_dist_create(NULL)
 * does — torchrun's RANK/WORLD_SIZE/... or mpirun's, CPUTRAIN_DIST_BACKEND —
 * so one program measures every backend (bench/allreduce.sh starts it).
 *
 * Per size: a warm-up call, three timed calls from which rank 0 picks the
 * number of repeats (about 0.4 s of them, 5..1000; broadcast so every rank
 * makes the same calls), then the repeats, each after a barrier. A repeat's
 * time is the slowest rank's (gathered with ct_dist_allgather); printed is
 * the median. algbw = bytes / time; busbw = algbw * 2 (n - 1) / n, the
 * bytes each rank must move in and out of an ideal ring allreduce.
 *   allreduce_bench [max_mib=256] [f32|bf16] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cputrain/cputrain.h>

#define MAX_REPS 1000
#define TARGET_S 0.4

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    long max_mib = argc > 1 ? atol(argv[1]) : 256;
    const char *type = argc > 2 ? argv[2] : "f32";
    ct_dtype dtype = strcmp(type, "bf16") == 0 ? CT_DTYPE_BF16 : CT_DTYPE_F32;
    size_t esize = dtype == CT_DTYPE_BF16 ? 2 : 4;
    size_t max_bytes, bytes, i;
    ct_dist *d = NULL;
    int rank, world, failed = 0;
    double *times = NULL, *all = NULL;
    unsigned char *buf = NULL;

    if (argc > 3 || max_mib < 1 || (strcmp(type, "f32") != 0 && strcmp(type, "bf16") != 0)) {
        fprintf(stderr, "usage: %s [max_mib >= 1] [f32|bf16]\n"
                        "  ranks, world and backend from the environment (RANK, WORLD_SIZE,\n"
                        "  ..., MASTER_ADDR, MASTER_PORT, or mpirun; CPUTRAIN_DIST_BACKEND)\n",
                argv[0]);
        return 2;
    }
    max_bytes = (size_t)max_mib << 20;
    if (ct_dist_create(NULL, &d) != CT_OK) {
        fprintf(stderr, "allreduce_bench: %s\n", ct_last_error());
        return 1;
    }
    rank = ct_dist_rank(d);
    world = ct_dist_world_size(d);
    buf = malloc(max_bytes);
    times = malloc(MAX_REPS * sizeof *times);
    all = malloc((size_t)world * MAX_REPS * sizeof *all);
    if (buf == NULL || times == NULL || all == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        ct_dist_free(d);
        return 1;
    }
    /* Small finite values (bf16 or f32 of 0.001 .. 1); repeated in-place sums
     * grow them, which costs nothing on x86 (no denormals). */
    if (dtype == CT_DTYPE_F32) {
        float *f = (float *)buf;
        for (i = 0; i < max_bytes / 4; i++)
            f[i] = (float)(i % 1000 + 1) * 1e-3f;
    } else {
        unsigned short *h = (unsigned short *)buf;
        for (i = 0; i < max_bytes / 2; i++)
            h[i] = (unsigned short)(0x3a83 + i % 512); /* 0.001 .. ~0.5 */
    }
    if (rank == 0) {
        printf("# allreduce (sum, %s) backend %s, launcher %s, %d ranks (%d on this machine);"
               " median of repeats, slowest rank\n",
               type, ct_dist_backend(d), ct_dist_launcher(d), world, ct_dist_local_world_size(d));
        printf("%12s %6s %12s %10s %10s\n", "bytes", "reps", "time_us", "algbw_GB/s",
               "busbw_GB/s");
        fflush(stdout);
    }
    for (bytes = 1024; bytes <= max_bytes; bytes *= 4) {
        size_t n = bytes / esize;
        int reps, r, k;
        double t, med;
        if (ct_dist_allreduce(d, buf, n, dtype, CT_REDUCE_SUM) != CT_OK) /* warm-up */
            goto fail;
        if (ct_dist_barrier(d) != CT_OK)
            goto fail;
        t = now_s();
        for (k = 0; k < 3; k++)
            if (ct_dist_allreduce(d, buf, n, dtype, CT_REDUCE_SUM) != CT_OK)
                goto fail;
        t = (now_s() - t) / 3;
        reps = t > 0 ? (int)(TARGET_S / t) : MAX_REPS;
        reps = reps < 5 ? 5 : reps > MAX_REPS ? MAX_REPS : reps;
        if (ct_dist_broadcast(d, &reps, sizeof reps, 0) != CT_OK)
            goto fail;
        for (k = 0; k < reps; k++) {
            if (ct_dist_barrier(d) != CT_OK)
                goto fail;
            t = now_s();
            if (ct_dist_allreduce(d, buf, n, dtype, CT_REDUCE_SUM) != CT_OK)
                goto fail;
            times[k] = now_s() - t;
        }
        /* Each repeat takes as long as its slowest rank. */
        if (ct_dist_allgather(d, times, (size_t)reps * sizeof *times, all) != CT_OK)
            goto fail;
        for (k = 0; k < reps; k++)
            for (r = 1; r < world; r++)
                if (all[(size_t)r * (size_t)reps + (size_t)k] > all[k])
                    all[k] = all[(size_t)r * (size_t)reps + (size_t)k];
        qsort(all, (size_t)reps, sizeof all[0], cmp_double);
        med = reps % 2 ? all[reps / 2] : 0.5 * (all[reps / 2 - 1] + all[reps / 2]);
        if (rank == 0) {
            double alg = (double)bytes / med * 1e-9;
            printf("%12zu %6d %12.1f %10.3f %10.3f\n", bytes, reps, med * 1e6, alg,
                   alg * 2.0 * (world - 1) / world);
            fflush(stdout);
        }
        /* 1 KiB .. max in steps of 4, then max itself if not on that grid. */
        if (bytes < max_bytes && bytes * 4 > max_bytes)
            bytes = max_bytes / 4;
    }
    goto out;
fail:
    fprintf(stderr, "allreduce_bench: rank %d: %s\n", rank, ct_last_error());
    failed = 1;
out:
    free(buf);
    free(times);
    free(all);
    ct_dist_free(d);
    return failed;
}
