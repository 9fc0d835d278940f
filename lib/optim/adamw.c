/* ct_optim: AdamW as torch.optim.AdamW computes it (decoupled decay, bias
 * correction, eps outside the square root), fused with gradient clipping,
 * the bf16 weight refresh and zeroing the gradients; its state on disk. */
#include "optim/optim.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/profile.h"
#include "core/safetensors.h"
#include "dist/collectives.h"

ct_status ct__optim_create(ct_model *model, const ct__optim_settings *set, ct_optim **out)
{
    ct_optim *o;
    *out = NULL;
    o = calloc(1, sizeof *o);
    if (!o)
        return ct__error(CT_ERR_NOMEM, "out of memory creating the optimizer");
    o->model = model;
    o->lr = set->lr;
    o->beta1 = set->beta1;
    o->beta2 = set->beta2;
    o->eps = set->eps;
    o->weight_decay = set->weight_decay;
    o->max_grad_norm = set->max_grad_norm;
    o->warmup_steps = set->warmup_steps;
    o->warmup_ratio = set->warmup_ratio;
    if (!ct__schedule_parse(set->lr_scheduler_type, &o->schedule)) {
        ct_optim_free(o);
        return ct__error(CT_ERR_UNSUPPORTED, "lr_scheduler_type '%s' is not supported",
                         set->lr_scheduler_type);
    }
    o->shard_hi = model->n_floats;
    if (ct__optim_map_moments(o, model->n_floats) != CT_OK ||
        !(o->decays = malloc(model->n_tensors))) {
        ct_optim_free(o);
        return ct__error(CT_ERR_NOMEM, "out of memory for AdamW state of %zu parameters",
                         model->n_params);
    }
    for (size_t i = 0; i < model->n_tensors; i++)
        o->decays[i] = (unsigned char)model->tensors[i].decays;
    *out = o;
    return CT_OK;
}

void ct_optim_free(ct_optim *o)
{
    if (!o)
        return;
    ct__optim_unmap_moments(o);
    free(o->decays);
    free(o->bounds);
    free(o);
}

ct_status ct_optim_set_total_steps(ct_optim *o, int64_t total_steps)
{
    CT__CHECK_ARG(o);
    if (total_steps < 1)
        return ct__error(CT_ERR_INVALID_ARG, "total steps must be >= 1 (got %lld)",
                         (long long)total_steps);
    o->total_steps = total_steps;
    return CT_OK;
}

ct_status ct_optim_set_decay(ct_optim *o, size_t tensor_index, int decays)
{
    CT__CHECK_ARG(o);
    if (tensor_index >= o->model->n_tensors)
        return ct__error(CT_ERR_INVALID_ARG, "tensor index %zu: the model has %zu tensors",
                         tensor_index, o->model->n_tensors);
    o->decays[tensor_index] = decays != 0;
    return CT_OK;
}

int64_t ct__optim_warmup(const ct_optim *o)
{
    if (o->warmup_steps > 0)
        return o->warmup_steps;
    return (int64_t)ceil((double)o->total_steps * o->warmup_ratio);
}

double ct_optim_lr_at(const ct_optim *o, int64_t step)
{
    if (!o)
        return 0.0;
    return o->lr * ct__schedule_factor(o->schedule, step, ct__optim_warmup(o),
                                       o->total_steps > 0 ? o->total_steps : 1, o->lr);
}

double ct_optim_get_lr(const ct_optim *o)
{
    return o ? ct_optim_lr_at(o, o->step) : 0.0;
}

ct_status ct_optim_memory_bytes(const ct_optim *o, const char *category, size_t *bytes)
{
    CT__CHECK_ARG(o);
    CT__CHECK_ARG(category);
    CT__CHECK_ARG(bytes);
    *bytes = 0;
    if (strcmp(category, "optimizer_moments") != 0)
        return ct__error(CT_ERR_NOT_FOUND, "ct_optim_memory_bytes: no memory category '%s' "
                                           "(optimizer_moments)", category);
    /* exp_avg and exp_avg_sq, each as long as the model's flat buffer, or
     * as this rank's shard of it */
    *bytes = 2 * (o->shard_hi - o->shard_lo) * sizeof(float);
    return CT_OK;
}

int64_t ct_optim_get_step(const ct_optim *o)
{
    return o ? o->step : 0;
}

/* ---- the fused pass ------------------------------------------------------- */

#define CHUNK CT__OPTIM_CHUNK
typedef ct__optim_chunk chunk;

typedef struct step_job {
    ct_optim *o;
    const chunk *chunks;
    size_t n_chunks;
    double *partial;
    int *owner; /* sharded: per chunk, 1 for this rank's (NULL: all) */
    ct__adamw_hyper hyper; /* the update's; decay applies to decaying tensors */
} step_job;

size_t ct__optim_chunks(const ct_model *m, chunk **out)
{
    size_t n = 0, k = 0;
    chunk *c;
    for (size_t i = 0; i < m->n_tensors; i++)
        n += (m->tensors[i].numel + CHUNK - 1) / CHUNK;
    c = malloc((n ? n : 1) * sizeof *c);
    if (!c)
        return (size_t)-1;
    for (size_t i = 0; i < m->n_tensors; i++)
        for (size_t b = 0; b < m->tensors[i].numel; b += CHUNK) {
            c[k].tensor = i;
            c[k].begin = b;
            c[k].end = b + CHUNK < m->tensors[i].numel ? b + CHUNK : m->tensors[i].numel;
            k++;
        }
    *out = c;
    return n;
}

static void norm_task(void *ctx, int task, int thread)
{
    step_job *j = ctx;
    const ct_model *m = j->o->model;
    const chunk *c = &j->chunks[task];
    const ct__tensor *t = &m->tensors[c->tensor];
    (void)thread;
    j->partial[task] = t->frozen || (j->owner && !j->owner[task])
                           ? 0.0
                           : m->k->sum_squares(m->grads + t->offset + c->begin, c->end - c->begin);
}

/* AdamW on one chunk; 0 when it left the parameters as they were. */
static int update_chunk(const step_job *j, const chunk *c, int owned)
{
    ct_optim *o = j->o;
    ct_model *m = o->model;
    const ct__tensor *t = &m->tensors[c->tensor];
    size_t off = t->offset + c->begin, n = c->end - c->begin;
    float *p = m->params + off, *g = m->grads + off;
    ct__adamw_hyper h = j->hyper;
    if (t->frozen || !owned) { /* another rank's: it updates them */
        memset(g, 0, n * sizeof *g);
        return 0;
    }
    if (!o->decays[c->tensor])
        h.decay = 1.0f;
    /* torch.optim.AdamW, operation by operation in fp32:
     *   g *= clip; p *= 1 - lr * wd; m = b1 m + (1 - b1) g;
     *   v = b2 v + (1 - b2) g g; p += -step_size * m / (sqrt(v) / bc2 + eps) */
    if (o->step == 0) /* the moments' first touch (a resumed run loaded them) */
        ct__optim_touch_moments(o, off, n);
    m->k->adamw_update(p, g, o->exp_avg + (off - o->shard_lo), o->exp_avg_sq + (off - o->shard_lo),
                       n, &h);
    return 1;
}

static void update_task(void *ctx, int task, int thread)
{
    step_job *j = ctx;
    (void)thread;
    update_chunk(j, &j->chunks[task], !j->owner || j->owner[task]);
}

/* ---- AdamW with the bf16 repack in the same sweep ------------------------- */

/* A packed weight is updated in pieces of whole rows (a multiple of
 * CT__PACKW_ROWS, about a chunk's floats), and each piece repacked while
 * it is still in cache: the weights' bf16 packs are never read back from
 * memory as a pass of their own. Other tensors go by chunks. */
typedef struct piece {
    chunk c;
    long pack; /* the weight's pack entry, or -1 */
    int r0, r1;
} piece;

typedef struct repack_job {
    step_job *j;
    piece *pieces;
    _Atomic int failed;
    /* profiling: per thread, seconds updating and repacking (a line each) */
    double (*seconds)[8];
} repack_job;

static void repack_task(void *ctx, int task, int thread)
{
    repack_job *r = ctx;
    const piece *pc = &r->pieces[task];
    double t0 = r->seconds ? ct__now_s() : 0, t1 = t0;
    int updated = update_chunk(r->j, &pc->c, 1);
    if (r->seconds) {
        t1 = ct__now_s();
        r->seconds[thread][0] += t1 - t0;
    }
    if (updated && pc->pack >= 0 &&
        ct__model_wpack_rows(r->j->o->model, pc->pack, pc->r0, pc->r1) != CT_OK)
        r->failed = 1;
    if (r->seconds && updated && pc->pack >= 0)
        r->seconds[thread][1] += ct__now_s() - t1;
}

/* The pieces of every tensor; the count, or (size_t)-1 out of memory. */
static size_t list_pieces(const ct_model *m, piece **out)
{
    size_t n = 0, cap = 0;
    piece *list = NULL;
    for (int fill = 0; fill < 2; fill++) {
        for (size_t i = 0; i < m->n_tensors; i++) {
            const ct__tensor *t = &m->tensors[i];
            long pack = t->ndim == 2 ? ct__model_wpack_find(m, t->offset) : -1;
            size_t in = pack >= 0 ? (size_t)t->dim[1] : 1;
            size_t rows = pack >= 0 ? CHUNK / in / CT__PACKW_ROWS * CT__PACKW_ROWS : CHUNK;
            size_t total = pack >= 0 ? (size_t)t->dim[0] : t->numel;
            if (rows == 0)
                rows = CT__PACKW_ROWS;
            for (size_t r = 0; r < total; r += rows, n++) {
                size_t r1 = r + rows < total ? r + rows : total;
                if (fill)
                    list[n] = (piece){{i, r * in, r1 * in}, pack, (int)r, (int)r1};
            }
        }
        if (!fill) {
            cap = n;
            n = 0;
            if (!(list = malloc((cap ? cap : 1) * sizeof *list)))
                return (size_t)-1;
        }
    }
    *out = list;
    return n;
}

/* 0, or -1 when out of memory (nothing updated). When profiling, the
 * repack's share of the sweep's wall time (as the threads' time went) into
 * *pack_seconds. */
static int update_and_repack(step_job *j, double *pack_seconds)
{
    ct_model *m = j->o->model;
    repack_job r = {j, NULL, 0, NULL};
    size_t n = list_pieces(m, &r.pieces);
    int T = ct__pool_nthreads(m->pool);
    if (n == (size_t)-1)
        return -1;
    double t0 = ct__prof_enabled() ? ct__now_s() : 0;
    if (t0)
        r.seconds = calloc((size_t)T, sizeof *r.seconds);
    ct__pool_run(m->pool, repack_task, &r, (int)n);
    if (r.seconds) {
        double update = 0, pack = 0;
        for (int t = 0; t < T; t++) {
            update += r.seconds[t][0];
            pack += r.seconds[t][1];
        }
        if (update + pack > 0)
            *pack_seconds = (ct__now_s() - t0) * pack / (update + pack);
        free(r.seconds);
    }
    free(r.pieces);
    /* a piece without scratch left its rows as they were: the next
     * forward repacks everything */
    if (r.failed)
        m->bf16_stale = 1;
    return 0;
}

static void zero_task(void *ctx, int task, int thread)
{
    step_job *j = ctx;
    ct_model *m = j->o->model;
    const chunk *c = &j->chunks[task];
    const ct__tensor *t = &m->tensors[c->tensor];
    (void)thread;
    memset(m->grads + t->offset + c->begin, 0, (c->end - c->begin) * sizeof(float));
}

/* Global L2 norm into *norm; chunks returned for reuse. */
static ct_status grad_norm(const ct_optim *o, step_job *j, chunk **chunks, double *norm)
{
    ct_model *m = o->model;
    size_t n = ct__optim_chunks(m, chunks);
    double total = 0;
    if (n == (size_t)-1 || !(j->partial = malloc((n ? n : 1) * sizeof *j->partial))) {
        free(n == (size_t)-1 ? NULL : *chunks);
        return ct__error(CT_ERR_NOMEM, "out of memory in the optimizer step");
    }
    j->o = (ct_optim *)o;
    j->chunks = *chunks;
    j->n_chunks = n;
    if (o->dist && !(j->owner = malloc((n ? n : 1) * sizeof *j->owner))) {
        free(*chunks);
        free(j->partial);
        j->partial = NULL;
        return ct__error(CT_ERR_NOMEM, "out of memory in the optimizer step");
    }
    if (o->dist) {
        /* a chunk is the shard's whose start is */
        for (size_t i = 0; i < n; i++) {
            size_t at = m->tensors[(*chunks)[i].tensor].offset + (*chunks)[i].begin;
            j->owner[i] = at >= o->shard_lo && at < o->shard_hi;
        }
    }
    ct__pool_run(m->pool, norm_task, j, (int)n);
    if (o->dist) {
        ct_status st = ct__optim_shard_norm((ct_optim *)o, j->partial, n, j->owner, &total);
        if (st != CT_OK)
            return st;
    } else {
        for (size_t i = 0; i < n; i++)
            total += j->partial[i];
    }
    *norm = sqrt(total);
    return CT_OK;
}

ct_status ct_optim_grad_norm(const ct_optim *o, double *norm)
{
    step_job j;
    chunk *chunks = NULL;
    ct_status st;
    CT__CHECK_ARG(o);
    CT__CHECK_ARG(norm);
    memset(&j, 0, sizeof j);
    st = grad_norm(o, &j, &chunks, norm);
    free(j.partial);
    free(j.owner);
    free(chunks);
    return st;
}

static ct_status optim_step(ct_optim *o, double *grad_norm_out, double *pack_seconds);

ct_status ct_optim_step(ct_optim *o, double *grad_norm_out)
{
    double t0 = ct__prof_begin(), pack_seconds = 0, wall;
    ct_status st;
    CT__CHECK_ARG(o);
    st = optim_step(o, grad_norm_out, &pack_seconds);
    if (!t0)
        return st;
    /* the norm's pass reads the gradients; AdamW reads and writes p, m, v
     * and reads g: 32 bytes a parameter in all. The repack fused into it
     * (its share of the threads' time) reads the bf16 rows it rounds and
     * writes the packs. */
    wall = ct__now_s() - t0;
    ct__prof_add(CT__PROF_OPTIMIZER, wall - pack_seconds, 0,
                 32.0 * (double)(o->shard_hi - o->shard_lo));
    if (pack_seconds > 0)
        ct__prof_add(CT__PROF_WEIGHT_PACK, pack_seconds, 0, (double)o->model->wpack_bytes);
    return st;
}

static ct_status optim_step(ct_optim *o, double *grad_norm_out, double *pack_seconds)
{
    step_job j;
    chunk *chunks = NULL;
    ct_model *m;
    double norm, lr, t;
    ct_status st;
    m = o->model;
    if (o->total_steps < 1)
        return ct__error(CT_ERR_STATE, "ct_optim_step: the schedule needs the total number of "
                                       "steps first (ct_optim_set_total_steps)");
    memset(&j, 0, sizeof j);
    if ((st = grad_norm(o, &j, &chunks, &norm)) != CT_OK) {
        free(j.partial);
        free(j.owner);
        free(chunks);
        return st;
    }
    if (grad_norm_out)
        *grad_norm_out = norm;
    if (!isfinite(norm)) {
        ct__pool_run(m->pool, zero_task, &j, (int)j.n_chunks);
        free(j.partial);
        free(j.owner);
        free(chunks);
        return ct__error(CT_ERR_NUMERIC,
                         "gradient norm is %g at optimizer step %lld: step skipped, nothing "
                         "applied", norm, (long long)o->step);
    }
    lr = ct_optim_get_lr(o);
    t = (double)(o->step + 1);
    j.hyper.clip = 1.0f;
    if (o->max_grad_norm > 0) {
        /* torch.nn.utils.clip_grad_norm_: max_norm / (norm + 1e-6), at most 1 */
        double coef = o->max_grad_norm / (norm + 1e-6);
        if (coef < 1.0)
            j.hyper.clip = (float)coef;
    }
    j.hyper.decay = (float)(1.0 - lr * o->weight_decay);
    j.hyper.beta1 = (float)o->beta1;
    j.hyper.one_minus_beta1 = (float)(1.0 - o->beta1);
    j.hyper.beta2 = (float)o->beta2;
    j.hyper.one_minus_beta2 = (float)(1.0 - o->beta2);
    j.hyper.eps = (float)o->eps;
    j.hyper.step_size = (float)-(lr / (1.0 - pow(o->beta1, t)));
    j.hyper.bc2_sqrt = (float)sqrt(1.0 - pow(o->beta2, t));
    /* Unsharded, the packs are rebuilt in the same sweep; otherwise (or
     * without memory for the list of pieces) by the next forward, once,
     * from the parameters every rank has gathered. */
    if (o->dist || !ct__model_wpack_live(m) || update_and_repack(&j, pack_seconds) != 0) {
        ct__pool_run(m->pool, update_task, &j, (int)j.n_chunks);
        m->bf16_stale = 1;
    }
    /* Sharded: every rank's updated fp32 shard to all (fp32, not bf16: each
     * rank keeps the whole fp32 master copy, which checkpoints save and the
     * next step's unsharded parts of the model read). */
    if (o->dist) {
        size_t *bytes = malloc((size_t)o->shard_world * sizeof *bytes);
        if (!bytes)
            st = ct__error(CT_ERR_NOMEM, "out of memory in the optimizer step");
        for (int r = 0; bytes && r < o->shard_world; r++)
            bytes[r] = (o->bounds[r + 1] - o->bounds[r]) * sizeof(float);
        if (bytes)
            st = ct__dist_allgather_pieces(o->dist, m->params, bytes);
        free(bytes);
    }
    if (st == CT_OK)
        o->step++;
    free(j.partial);
    free(j.owner);
    free(chunks);
    return st;
}

/* ---- state on disk ------------------------------------------------------------- */

ct_status ct_optim_save(const ct_optim *o, const char *path)
{
    const ct_model *m;
    ct__st_tensor *list;
    size_t (*shapes)[2], n;
    char (*names)[112];
    char step[32], total[32];
    ct_status st;
    CT__CHECK_ARG(o);
    CT__CHECK_ARG(path);
    if (o->dist)
        return ct__error(CT_ERR_STATE, "%s: this optimizer holds one shard of the state "
                                       "(optim_shard); each rank saves its own", path);
    m = o->model;
    n = m->n_tensors;
    list = calloc(2 * n, sizeof *list);
    shapes = calloc(n, sizeof *shapes);
    names = calloc(2 * n, sizeof *names);
    if (!list || !shapes || !names) {
        free(list);
        free(shapes);
        free(names);
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", path);
    }
    for (size_t i = 0; i < n; i++) {
        const ct__tensor *t = &m->tensors[i];
        shapes[i][0] = (size_t)t->dim[0];
        shapes[i][1] = (size_t)t->dim[1];
        for (int k = 0; k < 2; k++) {
            ct__st_tensor *e = &list[2 * i + k];
            snprintf(names[2 * i + k], sizeof names[0], "%s.%s", k ? "exp_avg_sq" : "exp_avg",
                     t->name);
            e->name = names[2 * i + k];
            e->dtype = CT_ST_F32;
            e->ndim = (size_t)t->ndim;
            e->shape = shapes[i];
            e->data = (k ? o->exp_avg_sq : o->exp_avg) + t->offset;
            e->nbytes = t->numel * sizeof(float);
        }
    }
    snprintf(step, sizeof step, "%lld", (long long)o->step);
    snprintf(total, sizeof total, "%lld", (long long)o->total_steps);
    {
        const ct__st_meta meta[3] = {{"format", "cputrain-adamw", 0, 0},
                                     {"step", step, 0, 0},
                                     {"total_steps", total, 0, 0}};
        st = ct__st_save(path, list, 2 * n, meta, 3);
    }
    free(list);
    free(shapes);
    free(names);
    return st;
}

/* A step count from a file's metadata: digits only, at most CT__STEP_MAX.
 * 1 read, 0 absent or not a number, -1 out of range. */
static int parse_steps(const char *s, int64_t *out)
{
    char *end;
    long long v;
    if (!s || *s < '0' || *s > '9')
        return 0;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (*end)
        return 0;
    if (errno || v > CT__STEP_MAX)
        return -1;
    *out = v;
    return 1;
}

ct_status ct__optim_step_check(const char *path, const char *key, const char *text,
                               int64_t *out)
{
    int r = parse_steps(text, out);
    if (r < 0)
        return ct__error(CT_ERR_FORMAT, "%s: %s %s is out of range (at most %lld)", path, key,
                         text, (long long)CT__STEP_MAX);
    if (r == 0)
        return ct__error(CT_ERR_FORMAT, "%s: %s is %s%s%s, not a count of steps", path, key,
                         text ? "'" : "missing", text ? text : "", text ? "'" : "");
    return CT_OK;
}

ct_status ct__optim_step_expected(const char *path, int64_t step, int64_t expect_step)
{
    if (expect_step >= 0 && step != expect_step)
        return ct__error(CT_ERR_FORMAT, "%s: step %lld, but the checkpoint's trainer_state.json "
                         "has global_step %lld (files of different checkpoints?)", path,
                         (long long)step, (long long)expect_step);
    return CT_OK;
}

ct_status ct__optim_moments_check(const char *path, const char *name, const void *data,
                                  size_t n, int squares)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        float v;
        memcpy(&v, p + i * sizeof v, sizeof v);
        if (!isfinite(v) || (squares && v < 0))
            return ct__error(CT_ERR_FORMAT, "%s: tensor '%s' holds %g at index %zu (AdamW "
                                            "keeps its moments finite%s)", path, name, v, i,
                             squares ? " and its squares at 0 or above" : "");
    }
    return CT_OK;
}

ct_status ct_optim_load(ct_optim *o, const char *path)
{
    CT__CHECK_ARG(o);
    CT__CHECK_ARG(path);
    return ct__optim_load_file(o, path, -1, 1);
}

ct_status ct__optim_load_file(ct_optim *o, const char *path, int64_t expect_step, int apply)
{
    const ct_model *m = o->model;
    ct__st_file *f;
    ct_status st = CT_OK;
    int64_t step = 0, total = 0;
    const char *fmt;
    if ((st = ct__st_open(path, &f)) != CT_OK)
        return st;
    fmt = ct__st_metadata_get(f, "format");
    if (!fmt || strcmp(fmt, "cputrain-adamw") != 0) {
        ct__st_close(f);
        return ct__error(CT_ERR_FORMAT,
                         "%s: not an optimizer state of this library (metadata format "
                         "\"cputrain-adamw\" with step and total_steps)", path);
    }
    if ((st = ct__optim_step_check(path, "step", ct__st_metadata_get(f, "step"), &step)) !=
            CT_OK ||
        (st = ct__optim_step_check(path, "total_steps", ct__st_metadata_get(f, "total_steps"),
                                   &total)) != CT_OK ||
        (st = ct__optim_step_expected(path, step, expect_step)) != CT_OK) {
        ct__st_close(f);
        return st;
    }
    if (ct__st_count(f) != 2 * m->n_tensors)
        st = ct__error(CT_ERR_FORMAT, "%s: %zu tensors, but %s needs %zu (exp_avg and "
                                      "exp_avg_sq of each parameter)", path, ct__st_count(f),
                       ct_model_architecture(m), 2 * m->n_tensors);
    /* Check everything before changing anything. */
    for (size_t i = 0; i < 2 * m->n_tensors && st == CT_OK; i++) {
        const ct__tensor *t = &m->tensors[i / 2];
        char name[112];
        const ct__st_tensor *e;
        snprintf(name, sizeof name, "%s.%s", i % 2 ? "exp_avg_sq" : "exp_avg", t->name);
        e = ct__st_find(f, name);
        if (!e)
            st = ct__error(CT_ERR_FORMAT, "%s: no tensor '%s' (a checkpoint of another model?)",
                           path, name);
        else if (e->dtype != CT_ST_F32 || e->ndim != (size_t)t->ndim ||
                 e->shape[0] != (size_t)t->dim[0] ||
                 (t->ndim == 2 && e->shape[1] != (size_t)t->dim[1]))
            st = ct__error(CT_ERR_FORMAT, "%s: tensor '%s' has another dtype or shape than the "
                                          "model's", path, name);
        else
            st = ct__optim_moments_check(path, name, e->data, t->numel, i % 2);
    }
    for (size_t i = 0; i < 2 * m->n_tensors && st == CT_OK && apply; i++) {
        const ct__tensor *t = &m->tensors[i / 2];
        /* a sharded optimizer takes the part of each tensor in its shard */
        size_t lo = t->offset > o->shard_lo ? t->offset : o->shard_lo;
        size_t hi = t->offset + t->numel < o->shard_hi ? t->offset + t->numel : o->shard_hi;
        char name[112];
        if (lo >= hi)
            continue;
        snprintf(name, sizeof name, "%s.%s", i % 2 ? "exp_avg_sq" : "exp_avg", t->name);
        memcpy((i % 2 ? o->exp_avg_sq : o->exp_avg) + (lo - o->shard_lo),
               (const char *)ct__st_find(f, name)->data + (lo - t->offset) * sizeof(float),
               (hi - lo) * sizeof(float));
    }
    if (st == CT_OK && apply) {
        o->step = step;
        if (total > 0)
            o->total_steps = total;
    }
    ct__st_close(f);
    return st;
}
