/* The gradient reducer: backward (on the training thread and its pool)
 * reports ranges of final gradients through the model's grad_ready hook;
 * once a range reaches the bucket size it is queued, and a communication
 * thread averages it across ranks while backward continues with the layers
 * below. Buckets cover disjoint parts of the flat gradient buffer, so the
 * two threads never touch the same floats. */
#include "train/ddp.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/profile.h"
#include "core/hash.h"
#include "dist/collectives.h"
#include "model/model.h"

typedef struct bucket {
    size_t first, n;
} bucket;

struct ct__ddp {
    ct_dist *dist;
    ct_model *model;
    size_t cap_floats;
    size_t launched; /* grads[launched ..) have been queued in this pass */
    int buckets;     /* queued in this pass */
    int reported;    /* the bucket count was logged (after the first pass) */

    /* Where the time goes, over the passes after the first (which pays for
     * connection warm-up): seconds the thread spent in allreduce, and
     * seconds finish waited for it after backward had ended — the part
     * that backward did not hide. Logged once, when the reducer is freed. */
    long passes;
    double pass_busy, busy_s, wait_s;

    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake, idle;
    bucket *queue; /* a ring of `cap` entries: one per layer is enough */
    size_t cap, head, count;
    int busy, quit, started;
    /* Sharded optimizer: rank r owns grads[bounds[r] .. bounds[r + 1]), and
     * a bucket is reduce-scattered to its owners instead of allreduced;
     * counts is the comm thread's scratch (world entries). NULL: allreduce. */
    const size_t *bounds;
    size_t *counts;
    ct_status status;   /* the first failure of this pass */
    char message[1024]; /* its ct_last_error text, from the thread */
};

static void *comm_main(void *arg)
{
    ct__ddp *d = arg;
    pthread_mutex_lock(&d->lock);
    for (;;) {
        bucket b;
        ct_status st = CT_OK;
        while (!d->count && !d->quit)
            pthread_cond_wait(&d->wake, &d->lock);
        if (!d->count)
            break;
        b = d->queue[d->head];
        d->head = (d->head + 1) % d->cap;
        d->count--;
        d->busy = 1;
        if (d->status == CT_OK) {
            double t0 = ct__now_s();
            pthread_mutex_unlock(&d->lock);
            if (d->bounds) {
                int world = ct_dist_world_size(d->dist);
                for (int r = 0; r < world; r++) {
                    size_t lo = d->bounds[r] > b.first ? d->bounds[r] : b.first;
                    size_t hi = d->bounds[r + 1] < b.first + b.n ? d->bounds[r + 1]
                                                                : b.first + b.n;
                    d->counts[r] = hi > lo ? hi - lo : 0;
                }
                st = ct__dist_reduce_scatter_f32(d->dist, d->model->grads + b.first, b.n, 1,
                                                 d->counts);
            } else {
                st = ct_dist_allreduce(d->dist, d->model->grads + b.first, b.n, CT_DTYPE_F32,
                                       CT_REDUCE_AVG);
            }
            pthread_mutex_lock(&d->lock);
            d->pass_busy += ct__now_s() - t0;
            if (st != CT_OK && d->status == CT_OK) {
                /* ct_last_error is per thread: keep the text for finish */
                d->status = st;
                snprintf(d->message, sizeof d->message, "%s", ct_last_error());
            }
        }
        d->busy = 0;
        if (!d->count)
            pthread_cond_broadcast(&d->idle);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

static void enqueue(ct__ddp *d, size_t first, size_t n)
{
    pthread_mutex_lock(&d->lock);
    /* cannot overflow: one bucket per hook call at most, cap > calls */
    d->queue[(d->head + d->count) % d->cap] = (bucket){first, n};
    d->count++;
    pthread_cond_signal(&d->wake);
    pthread_mutex_unlock(&d->lock);
}

/* The model's hook: grads[first ..) are final. */
static void on_grads_final(void *user, size_t first)
{
    ct__ddp *d = user;
    if (first < d->launched && (d->launched - first >= d->cap_floats || first == 0)) {
        enqueue(d, first, d->launched - first);
        d->launched = first;
        d->buckets++;
    }
}

ct_status ct__ddp_create(ct_dist *dist, ct_model *model, int bucket_cap_mb, ct__ddp **out)
{
    ct__ddp *d;
    int err;
    *out = NULL;
    if (bucket_cap_mb < 1)
        return ct__error(CT_ERR_INVALID_ARG, "ddp_bucket_cap_mb: %d is below 1", bucket_cap_mb);
    if (!(d = calloc(1, sizeof *d)))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    d->dist = dist;
    d->model = model;
    d->cap_floats = ((size_t)bucket_cap_mb << 20) / sizeof(float);
    d->cap = (size_t)model->cfg.num_layers + 4; /* head, layers, embeddings */
    if (!(d->queue = calloc(d->cap, sizeof *d->queue))) {
        free(d);
        return ct__error(CT_ERR_NOMEM, "out of memory");
    }
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->wake, NULL);
    pthread_cond_init(&d->idle, NULL);
    if ((err = pthread_create(&d->thread, NULL, comm_main, d)) != 0) {
        ct__ddp_free(d);
        return ct__error(CT_ERR_INTERNAL, "cannot start the gradient communication thread: %s",
                         strerror(err));
    }
    d->started = 1;
    *out = d;
    return CT_OK;
}

void ct__ddp_free(ct__ddp *d)
{
    if (!d)
        return;
    if (d->passes > 1 && d->busy_s > 0)
        ct__log(CT_LOG_INFO, "ddp: rank %d: allreduce %.4f s per step, %.4f s of it after "
                             "backward ended (%.0f%% overlapped), mean of %ld steps after the first",
                ct_dist_rank(d->dist), d->busy_s / (double)(d->passes - 1),
                d->wait_s / (double)(d->passes - 1),
                100.0 * (1.0 - (d->wait_s < d->busy_s ? d->wait_s / d->busy_s : 1.0)),
                d->passes - 1);
    if (d->started) {
        pthread_mutex_lock(&d->lock);
        d->quit = 1;
        pthread_cond_signal(&d->wake);
        pthread_mutex_unlock(&d->lock);
        pthread_join(d->thread, NULL);
    }
    if (d->model->grad_ready_user == d)
        d->model->grad_ready = NULL;
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->wake);
    pthread_cond_destroy(&d->idle);
    free(d->queue);
    free(d->counts);
    free(d);
}

ct_status ct__ddp_set_shards(ct__ddp *d, const size_t *bounds)
{
    if (bounds && !d->counts &&
        !(d->counts = calloc((size_t)ct_dist_world_size(d->dist), sizeof *d->counts)))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    d->bounds = bounds;
    return CT_OK;
}

void ct__ddp_arm(ct__ddp *d)
{
    d->launched = d->model->n_floats;
    d->buckets = 0;
    d->status = CT_OK;
    d->pass_busy = 0;
    d->model->grad_ready_user = d;
    d->model->grad_ready = on_grads_final;
}

ct_status ct__ddp_finish(ct__ddp *d)
{
    ct_status st;
    double t0 = ct__now_s(), p0 = ct__prof_begin();
    pthread_mutex_lock(&d->lock);
    while (d->count || d->busy)
        pthread_cond_wait(&d->idle, &d->lock);
    ct__prof_end(CT__PROF_ALLREDUCE_WAIT, p0, 0, 0);
    st = d->status;
    if (d->passes++ > 0) {
        d->busy_s += d->pass_busy;
        d->wait_s += ct__now_s() - t0;
    }
    pthread_mutex_unlock(&d->lock);
    d->model->grad_ready = NULL;
    if (st != CT_OK)
        return ct__error(st, "%s", d->message);
    if (d->launched != 0) /* backward stopped early: its own error is what matters */
        return ct__error(CT_ERR_STATE, "gradients were not all reduced (backward stopped)");
    if (!d->reported && ct_dist_rank(d->dist) == 0) {
        d->reported = 1;
        ct__log(CT_LOG_DEBUG, "ddp: %zu gradients averaged in %d buckets of up to %zu MiB, "
                              "%s while backward ran", d->model->n_floats, d->buckets,
                d->cap_floats * sizeof(float) >> 20,
                d->bounds ? "reduce-scattered to their shard's owner" : "allreduced");
    }
    return CT_OK;
}

/* ---- parameters ----------------------------------------------------------------------- */

ct_status ct__ddp_same_everywhere(ct__ddp *d, uint64_t mine, const char *what)
{
    int world = ct_dist_world_size(d->dist);
    uint64_t *all = malloc((size_t)world * sizeof *all);
    ct_status st;
    if (!all)
        return ct__error(CT_ERR_NOMEM, "out of memory");
    st = ct_dist_allgather(d->dist, &mine, sizeof mine, all);
    for (int r = 0; st == CT_OK && r < world; r++)
        if (all[r] != all[0])
            st = ct__error(CT_ERR_DIST, "rank %d's %s: not the same as rank 0's", r, what);
    free(all);
    return st;
}

ct_status ct__ddp_sync_params(ct__ddp *d)
{
    ct_model *m = d->model;
    uint64_t layout = CT__FNV_OFFSET, values = CT__FNV_OFFSET;
    ct_status st;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const ct__tensor *t = &m->tensors[i];
        layout = ct__fnv1a(layout, t->name, strlen(t->name) + 1);
        layout = ct__fnv1a(layout, t->dim, sizeof t->dim);
    }
    if ((st = ct__ddp_same_everywhere(d, layout, "model tensors (names and shapes)")) != CT_OK)
        return st;
    if ((st = ct_dist_broadcast(d->dist, m->params, m->n_floats * sizeof(float), 0)) != CT_OK)
        return st;
    ct_model_params_changed(m);
    values = ct__fnv1a(values, m->params, m->n_floats * sizeof(float));
    return ct__ddp_same_everywhere(d, values, "parameters after the broadcast from rank 0");
}
