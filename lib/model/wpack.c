/* The Linear weights packed for this level's bf16 GEMM: converted and laid
 * out once per parameter change (optimizer step, load, params_changed),
 * in both orientations the model multiplies by, instead of at every call. */
#include "model/model.h"

#include <stdlib.h>
#include <string.h>

#include "core/bigalloc.h"
#include "core/error.h"
#include "core/profile.h"
#include "machine/topology.h"
#include "kernels/parallel.h"

typedef struct wentry {
    size_t w_off;    /* the weight [out, in] in the flat buffers */
    int out, in;
    ct__packed_b fwd; /* op(B) = W^T [in, out]: y = x W^T */
    ct__packed_b bwd; /* op(B) = W [out, in]: dx = dy W */
} wentry;

typedef struct ct__wpack {
    wentry *e;
    size_t n;
    size_t max_numel; /* the largest weight: the bf16 staging buffer */
    int valid;        /* packs follow the parameters */
} ct__wpack;

static const ct__tensor *tensor_at(const ct_model *m, size_t off)
{
    for (size_t i = 0; i < m->n_tensors; i++)
        if (m->tensors[i].offset == off && m->tensors[i].ndim == 2)
            return &m->tensors[i];
    return NULL;
}

/* Every weight linear_fwd / linear_bwd multiplies by: the layers' six, the
 * head's dense matrices, and for MLM the decoder tied to wte. */
static size_t list_weights(const ct_model *m, size_t *offs)
{
    size_t n = 0;
    for (int l = 0; l < m->cfg.num_layers; l++) {
        const ct__layer_w *w = &m->w.layers[l];
        size_t six[6] = {w->wq, w->wk, w->wv, w->wo, w->w1, w->w2};
        for (int i = 0; i < 6; i++)
            if (offs)
                offs[n++] = six[i];
            else
                n++;
    }
    size_t head[3] = {m->w.pre_w, m->w.out_w,
                      m->task == CT_TASK_MASKED_LM ? m->w.wte : CT__NO_TENSOR};
    for (int i = 0; i < 3; i++) {
        if (head[i] == CT__NO_TENSOR)
            continue;
        if (offs)
            offs[n] = head[i];
        n++;
    }
    return n;
}

void ct__model_wpack_free(ct_model *m)
{
    if (m->wpack)
        free(m->wpack->e);
    free(m->wpack);
    free(m->wpack_mem);
    m->wpack = NULL;
    m->wpack_mem = NULL;
    m->wpack_bytes = 0;
}

ct_status ct__model_wpack_prepare(ct_model *m)
{
    const ct__kernels *k = m->k;
    ct__wpack *wp;
    size_t *offs, n, bytes = 0;
    char *mem;
    if (m->wpack)
        return CT_OK;
    n = list_weights(m, NULL);
    wp = calloc(1, sizeof *wp);
    offs = malloc(n * sizeof *offs);
    if (wp)
        wp->e = calloc(n, sizeof *wp->e);
    if (!wp || !offs || !wp->e) {
        if (wp)
            free(wp->e);
        free(wp);
        free(offs);
        return ct__error(CT_ERR_NOMEM, "out of memory for the packed-weight table");
    }
    list_weights(m, offs);
    wp->n = n;
    for (size_t i = 0; i < n; i++) {
        const ct__tensor *t = tensor_at(m, offs[i]);
        if (!t) {
            size_t bad = offs[i];
            free(offs);
            free(wp->e);
            free(wp);
            return ct__error(CT_ERR_INTERNAL, "packed weights: no 2-D tensor at offset %zu",
                             bad);
        }
        wp->e[i].w_off = offs[i];
        wp->e[i].out = (int)t->dim[0];
        wp->e[i].in = (int)t->dim[1];
        if (t->numel > wp->max_numel)
            wp->max_numel = t->numel;
        bytes += k->packb_bytes(wp->e[i].in, wp->e[i].out);
        if (!k->packb_transposable)
            bytes += k->packb_bytes(wp->e[i].out, wp->e[i].in);
    }
    free(offs);
    if (!(mem = ct__alloc_large(bytes))) {
        free(wp->e);
        free(wp);
        return ct__error(CT_ERR_NOMEM, "out of memory for the packed bf16 weights (%.1f MiB)",
                         bytes / 1048576.0);
    }
    /* before the first touch, so the pages come from the model's node */
    if (m->placed)
        ct__node_bind_os_index(m->numa_node, mem, bytes);
    /* carve: each pack a multiple of 64 bytes, so each stays aligned */
    for (size_t i = 0, at = 0; i < n; i++) {
        wentry *e = &wp->e[i];
        e->fwd.data = mem + at;
        at += k->packb_bytes(e->in, e->out);
        if (!k->packb_transposable) {
            e->bwd.data = mem + at;
            at += k->packb_bytes(e->out, e->in);
        }
    }
    m->wpack = wp;
    m->wpack_mem = mem;
    m->wpack_bytes = bytes;
    return CT_OK;
}

static ct_status wpack_refresh(ct_model *m);

ct_status ct__model_wpack_refresh(ct_model *m)
{
    double t0 = ct__prof_begin();
    ct_status st = wpack_refresh(m);
    /* each weight read in fp32 and written as its panels */
    ct__prof_end(CT__PROF_WEIGHT_PACK, t0, 0,
                 m->wpack ? 4.0 * (double)m->n_params + (double)m->wpack_bytes : 0);
    return st;
}

static ct_status wpack_refresh(ct_model *m)
{
    const ct__kernels *k = m->k;
    ct__wpack *wp;
    ct__bf16 *tmp;
    ct_status st;
    if ((st = ct__model_wpack_prepare(m)) != CT_OK)
        return st;
    wp = m->wpack;
    wp->valid = 0;
    /* freed after: kept per thread it would hold the largest weight (wte
     * for MLM) for good */
    tmp = malloc((wp->max_numel ? wp->max_numel : 1) * sizeof *tmp);
    if (!tmp)
        return ct__error(CT_ERR_NOMEM, "out of memory staging a weight for packing (%.1f MiB)",
                         wp->max_numel * 2.0 / 1048576.0);
    for (size_t i = 0; i < wp->n; i++) {
        wentry *e = &wp->e[i];
        /* the same rounding the unpacked bf16 copy had */
        ct__p_to_bf16(m->pool, k, tmp, m->params + e->w_off, (size_t)e->out * e->in);
        if ((st = k->packb(&e->fwd, e->fwd.data, tmp, e->in, e->out, e->in, CT__GEMM_TRANS_B,
                           m->pool)) != CT_OK)
            break;
        if (k->packb_transposable)
            e->bwd = ct__packed_b_transpose(&e->fwd);
        else if ((st = k->packb(&e->bwd, e->bwd.data, tmp, e->out, e->in, e->in, 0,
                                m->pool)) != CT_OK)
            break;
    }
    free(tmp);
    wp->valid = st == CT_OK;
    return st;
}

int ct__model_wpack_live(const ct_model *m)
{
    return m->wpack && m->wpack->valid && !m->bf16_stale && m->k->packw_rows;
}

long ct__model_wpack_find(const ct_model *m, size_t w_off)
{
    for (size_t i = 0; m->wpack && i < m->wpack->n; i++)
        if (m->wpack->e[i].w_off == w_off)
            return (long)i;
    return -1;
}

ct_status ct__model_wpack_rows(ct_model *m, long e, int r0, int r1)
{
    const wentry *w = &m->wpack->e[e];
    size_t n = (size_t)(r1 - r0) * w->in;
    /* scratch slot 0 is the GEMM's, idle while the optimizer runs */
    ct__bf16 *rows = ct__scratch(0, n * sizeof *rows);
    if (!rows)
        return CT_ERR_NOMEM;
    /* the same rounding as the whole weight's refresh */
    m->k->f32_to_bf16(rows, m->params + w->w_off + (size_t)r0 * w->in, n);
    m->k->packw_rows(&w->fwd, m->k->packb_transposable ? NULL : &w->bwd, rows, r0, r1);
    return CT_OK;
}

ct_status ct__model_gemm_w(const ct_model *m, float *C, const ct__bf16 *A, int M, size_t w_off,
                           const float *bias, int backward, int accumulate, ct__pool *pool)
{
    const ct__wpack *wp = m->wpack;
    if (!wp || !wp->valid)
        return ct__error(m->wpack_status != CT_OK ? m->wpack_status : CT_ERR_STATE,
                         "bf16 matrix product: the packed weights are not built (%s)",
                         m->wpack_status != CT_OK ? "packing them failed"
                                                  : "the model is not in bf16 mode");
    for (size_t i = 0; i < wp->n; i++) {
        const wentry *e = &wp->e[i];
        if (e->w_off != w_off)
            continue;
        ct__packed_b b = backward ? e->bwd : e->fwd;
        b.row_bias = bias;
        return m->k->gemm_bf16_packed(C, A, &b, M, b.K, b.N,
                                      accumulate ? CT__GEMM_ACCUMULATE : 0, 1.0f, pool);
    }
    return ct__error(CT_ERR_INTERNAL, "bf16 matrix product: no packed weight at offset %zu",
                     w_off);
}

size_t ct__model_packed_bytes(const ct_model *m)
{
    return m && m->wpack ? m->wpack_bytes : 0;
}
