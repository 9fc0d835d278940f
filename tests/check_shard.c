/* The sharded optimizer's collectives (lib/dist/collectives.h) in forked
 * ranks: reduce-scatter leaves in each rank's piece exactly the bits an
 * allreduce of the same buffer gives there on shm (on tcp, whose ring adds
 * in its own order, the sum within rounding),
 * with uneven and empty pieces and buffers of several shm staging chunks;
 * gathering the pieces back gives every rank the allreduced buffer. Also
 * the shard boundaries the optimizer draws. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cputrain/cputrain.h>

#include "dist/collectives.h"
#include "model/model.h"
#include "optim/optim.h"
#include "ranks.h"
#include "suites.h"

static char job[64];
static int job_seq;

static ct_status join(const char *backend, int rank, int world, ct_dist **out)
{
    ct_dist_options *o = NULL;
    char v[64];
    ct_status st = ct_dist_options_create(&o);
    const char *keys[] = {"backend", "rank", "world_size", "master_addr", "master_port",
                          "job", "timeout"};
    for (int i = 0; st == CT_OK && i < 7; i++) {
        switch (i) {
        case 0: snprintf(v, sizeof v, "%s", backend); break;
        case 1: snprintf(v, sizeof v, "%d", rank); break;
        case 2: snprintf(v, sizeof v, "%d", world); break;
        case 3: snprintf(v, sizeof v, "127.0.0.1"); break;
        case 4: snprintf(v, sizeof v, "%d", port); break;
        case 5: snprintf(v, sizeof v, "%s", job); break;
        default: snprintf(v, sizeof v, "10"); break;
        }
        st = ct_dist_options_set(o, keys[i], v);
    }
    if (st == CT_OK)
        st = ct_dist_create(o, out);
    ct_dist_options_free(o);
    return st;
}

typedef struct {
    const char *backend;
    size_t n;
} scatter_case;

/* Pieces: rank 0 a tenth, rank 1 nothing (world > 2), the rest evenly. */
static void pieces(size_t n, int world, size_t *counts)
{
    size_t left = n;
    for (int r = 0; r < world; r++) {
        size_t c = r == 0 ? n / 10 : (r == 1 && world > 2) ? 0 : left / (size_t)(world - r);
        if (r == world - 1)
            c = left;
        counts[r] = c;
        left -= c;
    }
}

static int scatter_rank(int rank, int world, void *arg)
{
    const scatter_case *k = arg;
    ct_dist *d = NULL;
    size_t n = k->n, counts[8], bytes[8], lo = 0;
    float *ref = malloc(n * sizeof *ref), *buf = malloc(n * sizeof *buf);
    int bad = 0, tcp = !strcmp(k->backend, "tcp");
    if (!ref || !buf || join(k->backend, rank, world, &d) != CT_OK) {
        note(rank, "setup: %s", ct_last_error());
        return 1;
    }
    pieces(n, world, counts);
    for (int r = 0; r < rank; r++)
        lo += counts[r];
    for (int avg = 0; avg < 2 && !bad; avg++) {
        for (size_t j = 0; j < n; j++)
            ref[j] = buf[j] = value(rank, j);
        if (ct_dist_allreduce(d, ref, n, CT_DTYPE_F32, avg ? CT_REDUCE_AVG : CT_REDUCE_SUM) !=
                CT_OK ||
            ct__dist_reduce_scatter_f32(d, buf, n, avg, counts) != CT_OK) {
            note(rank, "collective: %s", ct_last_error());
            bad = 1;
            break;
        }
        /* tcp's ring adds in its own order: within rounding of the sum */
        for (size_t j = lo; tcp && j < lo + counts[rank]; j++)
            if (fabsf(buf[j] - ref[j]) > 1e-5f * (1.0f + fabsf(ref[j])))
                bad = 1;
        if (bad || (!tcp && memcmp(buf + lo, ref + lo, counts[rank] * sizeof *buf) != 0)) {
            note(rank, "%s %s: own piece [%zu, +%zu) differs from the allreduce", k->backend,
                 avg ? "mean" : "sum", lo, counts[rank]);
            bad = 1;
        }
        for (int r = 0; r < world; r++)
            bytes[r] = counts[r] * sizeof(float);
        if (!bad && ct__dist_allgather_pieces(d, buf, bytes) != CT_OK) {
            note(rank, "%s: allgather of the pieces: %s", k->backend, ct_last_error());
            bad = 1;
        }
        for (size_t j = 0; !bad && j < n; j++)
            if (tcp ? fabsf(buf[j] - ref[j]) > 1e-5f * (1.0f + fabsf(ref[j]))
                    : memcmp(&buf[j], &ref[j], sizeof *buf) != 0) {
                note(rank, "%s: gathered element %zu is %g, the allreduce's %g", k->backend, j,
                     buf[j], ref[j]);
                bad = 1;
            }
    }
    /* Pieces that do not add up to n are refused, naming both. */
    if (!bad) {
        counts[0]++;
        if (ct__dist_reduce_scatter_f32(d, buf, n, 0, counts) != CT_ERR_INVALID_ARG ||
            !strstr(ct_last_error(), "add up to")) {
            note(rank, "bad counts not refused: %s", ct_last_error());
            bad = 1;
        }
    }
    ct_dist_free(d);
    free(ref);
    free(buf);
    return bad;
}

static void run_scatter(const char *backend, int world, size_t n)
{
    scatter_case k = {backend, n};
    snprintf(job, sizeof job, "cshard%d-%d", (int)getpid(), job_seq++);
    new_port();
    check_ranks_clean(world, run_group(world, scatter_rank, &k));
}

/* 300001 floats: several shm staging chunks at any of these world sizes,
 * pieces that end mid-chunk and one that is empty. */
START_TEST(shm_scatter_2) { run_scatter("shm", 2, 300001); }
END_TEST
START_TEST(shm_scatter_3) { run_scatter("shm", 3, 300001); }
END_TEST
START_TEST(shm_scatter_4_small) { run_scatter("shm", 4, 37); }
END_TEST
START_TEST(tcp_scatter_2) { run_scatter("tcp", 2, 300001); }
END_TEST
START_TEST(tcp_scatter_3) { run_scatter("tcp", 3, 300001); }
END_TEST

/* The shards of the test model tile its buffer at chunk starts (64-byte
 * aligned), grow with the rank and differ by less than a chunk. */
START_TEST(shard_bounds)
{
    ct_model *m = NULL;
    size_t b[5];
    OK(ct_model_create("bert-mini", CT_TASK_QUESTION_ANSWERING, 1, &m));
    for (int world = 1; world <= 4; world++) {
        OK(ct__optim_shard_bounds(m, world, b));
        ck_assert_uint_eq(b[0], 0);
        ck_assert_uint_eq(b[world], m->n_floats);
        for (int r = 0; r < world; r++) {
            size_t size = b[r + 1] - b[r], even = m->n_floats / (size_t)world;
            ck_assert_msg(b[r] % 16 == 0, "world %d: boundary %zu not 64-byte aligned", world,
                          b[r]);
            ck_assert_msg(size + CT__OPTIM_CHUNK > even && size < even + CT__OPTIM_CHUNK,
                          "world %d: shard %d has %zu floats of %zu", world, r, size,
                          m->n_floats);
        }
    }
    ct_model_free(m);
}
END_TEST

static void setup(void) { map_out_area(); }
static void teardown(void)
{
    unmap_out_area();
    close_port_holder();
}

Suite *shard_suite(void)
{
    Suite *s = suite_create("shard");
    TCase *tc = tcase_create("shard");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, shm_scatter_2);
    tcase_add_test(tc, shm_scatter_3);
    tcase_add_test(tc, shm_scatter_4_small);
    tcase_add_test(tc, tcp_scatter_2);
    tcase_add_test(tc, tcp_scatter_3);
    tcase_add_test(tc, shard_bounds);
    suite_add_tcase(s, tc);
    return s;
}
