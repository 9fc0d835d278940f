/* The sharded optimizer (ZeRO stage 1, optim_shard): each rank of N owns a
 * contiguous 1/N of the flat parameter buffer, keeps AdamW's moments for it
 * alone and updates only it; the norm for clipping adds every rank's chunk
 * sums in the unsharded order, and the updated parameters go from their
 * owners to all. Also the moments' memory, and the optimizer state on disk
 * in either layout (one file, or one per shard) at any world size. */
#include "optim/optim.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/bigalloc.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/hash.h"
#include "core/safetensors.h"

#define SHARD_FORMAT "cputrain-adamw-shard"
#define SHARD_NAME CT__SHARD_FILE

/* ---- memory ------------------------------------------------------------------------------ */

ct_status ct__optim_map_moments(ct_optim *o, size_t n)
{
    size_t bytes = (n ? n : 1) * sizeof(float);
    /* Fresh anonymous pages are zero and cost no memory until written:
     * a sharded run drops the full-size moments of ct_optim_create before
     * touching them, so its peak RSS never holds them. Page-aligned, which
     * the kernels' 64-byte alignment needs. */
    void *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *b = a == MAP_FAILED ? MAP_FAILED
                              : mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) {
        if (a != MAP_FAILED)
            munmap(a, bytes);
        return ct__error(CT_ERR_NOMEM, "out of memory for AdamW state of %zu floats", n);
    }
    ct__advise_huge(a, bytes);
    ct__advise_huge(b, bytes);
    o->exp_avg = a;
    o->exp_avg_sq = b;
    o->moments_bytes = bytes;
    return CT_OK;
}

/* The moments start as untouched anonymous pages and AdamW reads them
 * before it writes them: each page would be mapped first as the shared
 * zero page, then replaced at the write, and that replacement flushes the
 * page from every CPU's TLB, an interrupt to each other thread of the
 * process per 4 KiB. On a 2-vCPU VM that was seconds of the first step of
 * bert-base (perf: a third of it in the IPIs). Asked for writable up
 * front, each page faults once. */
void ct__optim_touch_moments(ct_optim *o, size_t off, size_t n)
{
    ct__advise_populate_write(o->exp_avg + (off - o->shard_lo), n * sizeof(float));
    ct__advise_populate_write(o->exp_avg_sq + (off - o->shard_lo), n * sizeof(float));
}

void ct__optim_unmap_moments(ct_optim *o)
{
    if (o->exp_avg)
        munmap(o->exp_avg, o->moments_bytes);
    if (o->exp_avg_sq)
        munmap(o->exp_avg_sq, o->moments_bytes);
    o->exp_avg = o->exp_avg_sq = NULL;
}

/* ---- the shards ------------------------------------------------------------------------- */

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

ct_status ct__optim_shard_bounds(const ct_model *m, int world, size_t *bounds)
{
    ct__optim_chunk *chunks;
    size_t n = ct__optim_chunks(m, &chunks), *starts, k = 0;
    if (n == (size_t)-1 || !(starts = malloc((n ? n : 1) * sizeof *starts))) {
        if (n != (size_t)-1)
            free(chunks);
        return ct__error(CT_ERR_NOMEM, "out of memory drawing the optimizer shards");
    }
    for (size_t i = 0; i < n; i++)
        starts[i] = m->tensors[chunks[i].tensor].offset + chunks[i].begin;
    qsort(starts, n, sizeof *starts, cmp_size);
    /* Boundary r: the first chunk start at or past r/world of the buffer.
     * Chunks never straddle a boundary (so each chunk's norm term has one
     * owner, and the norm is the unsharded one), chunk starts are 64-byte
     * aligned, and the shards differ by less than one chunk (256 KiB). */
    bounds[0] = 0;
    for (int r = 1; r < world; r++) {
        size_t target = (size_t)((double)m->n_floats * r / world);
        while (k < n && starts[k] < target)
            k++;
        bounds[r] = k < n ? starts[k] : m->n_floats;
    }
    bounds[world] = m->n_floats;
    free(starts);
    free(chunks);
    return CT_OK;
}

ct_status ct__optim_shard(ct_optim *o, ct_dist *dist)
{
    int world = ct_dist_world_size(dist), rank = ct_dist_rank(dist);
    float *old_m, *old_v;
    size_t old_lo = o->shard_lo, old_bytes = o->moments_bytes, *bounds;
    ct_status st;
    if (world == 1 || o->dist == dist)
        return CT_OK;
    if (o->dist)
        return ct__error(CT_ERR_STATE, "the optimizer is already sharded over another group");
    if (!(bounds = malloc(((size_t)world + 1) * sizeof *bounds)))
        return ct__error(CT_ERR_NOMEM, "out of memory drawing the optimizer shards");
    if ((st = ct__optim_shard_bounds(o->model, world, bounds)) != CT_OK) {
        free(bounds);
        return st;
    }
    old_m = o->exp_avg;
    old_v = o->exp_avg_sq;
    o->exp_avg = o->exp_avg_sq = NULL;
    if ((st = ct__optim_map_moments(o, bounds[rank + 1] - bounds[rank])) != CT_OK) {
        o->exp_avg = old_m;
        o->exp_avg_sq = old_v;
        o->moments_bytes = old_bytes;
        free(bounds);
        return st;
    }
    /* Keep what the moments held (a state loaded before sharding). */
    memcpy(o->exp_avg, old_m + (bounds[rank] - old_lo),
           (bounds[rank + 1] - bounds[rank]) * sizeof(float));
    memcpy(o->exp_avg_sq, old_v + (bounds[rank] - old_lo),
           (bounds[rank + 1] - bounds[rank]) * sizeof(float));
    munmap(old_m, old_bytes);
    munmap(old_v, old_bytes);
    o->bounds = bounds;
    o->dist = dist;
    o->shard_rank = rank;
    o->shard_world = world;
    o->shard_lo = bounds[rank];
    o->shard_hi = bounds[rank + 1];
    return CT_OK;
}

ct_status ct__optim_shard_norm(ct_optim *o, const double *partial, size_t n, int *owner,
                               double *total)
{
    double *all = malloc((size_t)o->shard_world * (n ? n : 1) * sizeof *all);
    ct_status st;
    (void)owner;
    if (!all)
        return ct__error(CT_ERR_NOMEM, "out of memory for the gradient norm");
    st = ct_dist_allgather(o->dist, partial, n * sizeof *partial, all);
    *total = 0;
    /* Chunk by chunk in the unsharded order; of its world terms only the
     * owner's is not 0.0, and adding an exact zero changes nothing: the
     * unsharded sum, bit for bit, at any world size. */
    for (size_t i = 0; st == CT_OK && i < n; i++) {
        double c = 0;
        for (int r = 0; r < o->shard_world; r++)
            c += all[(size_t)r * n + i];
        *total += c;
    }
    free(all);
    return st;
}

uint64_t ct__optim_layout_hash(const ct_model *m)
{
    uint64_t h = CT__FNV_OFFSET;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const ct__tensor *t = &m->tensors[i];
        h = ct__fnv1a(h, t->name, strlen(t->name) + 1);
        h = ct__fnv1a(h, t->dim, sizeof t->dim);
        h = ct__fnv1a(h, &t->offset, sizeof t->offset);
    }
    return ct__fnv1a(h, &m->n_floats, sizeof m->n_floats);
}

/* ---- on disk ---------------------------------------------------------------------------- */

ct_status ct__optim_save_dir(const ct_optim *o, const char *dir)
{
    char path[4200], step[32], total[32], rank[16], world[16], lo[32], hi[32], nf[32], lay[32];
    size_t n, shape[1];
    ct__st_tensor list[2];
    ct_status st = o->dist ? ct__path_format(path, sizeof path, "%s/" SHARD_NAME, dir,
                                             o->shard_rank, o->shard_world)
                           : ct__path_format(path, sizeof path, "%s/optimizer.safetensors", dir);
    if (st != CT_OK)
        return st;
    if (!o->dist)
        return ct_optim_save(o, path);
    n = o->shard_hi - o->shard_lo;
    shape[0] = n;
    memset(list, 0, sizeof list);
    list[0].name = "exp_avg";
    list[1].name = "exp_avg_sq";
    for (int k = 0; k < 2; k++) {
        list[k].dtype = CT_ST_F32;
        list[k].ndim = 1;
        list[k].shape = shape;
        list[k].data = k ? o->exp_avg_sq : o->exp_avg;
        list[k].nbytes = n * sizeof(float);
    }
    snprintf(step, sizeof step, "%lld", (long long)o->step);
    snprintf(total, sizeof total, "%lld", (long long)o->total_steps);
    snprintf(rank, sizeof rank, "%d", o->shard_rank);
    snprintf(world, sizeof world, "%d", o->shard_world);
    snprintf(lo, sizeof lo, "%zu", o->shard_lo);
    snprintf(hi, sizeof hi, "%zu", o->shard_hi);
    snprintf(nf, sizeof nf, "%zu", o->model->n_floats);
    snprintf(lay, sizeof lay, "%016" PRIx64, ct__optim_layout_hash(o->model));
    {
        /* The flat range [begin, end) of the model's n_floats, which the
         * layout hash pins down (tensor names, shapes, offsets), so that
         * another world size can take its own range from these files. */
        const ct__st_meta meta[9] = {
            {"format", SHARD_FORMAT, 0, 0}, {"step", step, 0, 0},
            {"total_steps", total, 0, 0},   {"rank", rank, 0, 0},
            {"world_size", world, 0, 0},    {"begin", lo, 0, 0},
            {"end", hi, 0, 0},              {"n_floats", nf, 0, 0},
            {"layout", lay, 0, 0}};
        return ct__st_save(path, list, 2, meta, 9);
    }
}

/* The world size of the shard files in dir (0: none). */
static int shard_world_in(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int world = 0;
    if (!d)
        return 0;
    while ((e = readdir(d))) {
        int r, w;
        char tail[32];
        if (sscanf(e->d_name, "optimizer-shard-%d-of-%d.safetensor%31s", &r, &w, tail) == 3 &&
            r == 0 && w > 0 && w <= CT__WORLD_MAX && !strcmp(tail, "s"))
            world = w;
    }
    closedir(d);
    return world;
}

static int meta_size(const ct__st_file *f, const char *key, size_t *out)
{
    const char *s = ct__st_metadata_get(f, key);
    char *end;
    unsigned long long v;
    if (!s || !*s || *s == '-')
        return 0;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (*end || errno)
        return 0;
    *out = (size_t)v;
    return 1;
}

/* Checks shard file r of `world` against the model and the files before it
 * (*at: where this one must begin; *step, *total: the first file's). */
static ct_status check_shard(const ct_optim *o, const ct__st_file *f, const char *path, int r,
                             int world, size_t *at, int64_t *step, int64_t *total)
{
    const ct_model *m = o->model;
    const char *fmt = ct__st_metadata_get(f, "format"), *lay = ct__st_metadata_get(f, "layout");
    char mine[32];
    size_t rank, w, lo, hi, nf;
    int64_t s, t;
    ct_status st;
    if (!fmt || strcmp(fmt, SHARD_FORMAT) != 0 || !meta_size(f, "rank", &rank) ||
        !meta_size(f, "world_size", &w) || !meta_size(f, "begin", &lo) ||
        !meta_size(f, "end", &hi) || !meta_size(f, "n_floats", &nf) || !lay)
        return ct__error(CT_ERR_FORMAT, "%s: not an optimizer shard of this library (metadata "
                                        "format \"" SHARD_FORMAT "\" with rank, world_size, "
                                        "begin, end, n_floats, layout, step and total_steps)",
                         path);
    if ((st = ct__optim_step_check(path, "step", ct__st_metadata_get(f, "step"), &s)) != CT_OK ||
        (st = ct__optim_step_check(path, "total_steps", ct__st_metadata_get(f, "total_steps"),
                                   &t)) != CT_OK)
        return st;
    snprintf(mine, sizeof mine, "%016" PRIx64, ct__optim_layout_hash(m));
    if (nf != m->n_floats || strcmp(lay, mine) != 0)
        return ct__error(CT_ERR_FORMAT, "%s: the state of another model layout (%zu floats, "
                                        "layout %s; %s has %zu, layout %s)", path, nf, lay,
                         ct_model_architecture(m), m->n_floats, mine);
    if (rank != (size_t)r || w != (size_t)world || lo != *at || hi < lo || hi > nf ||
        (r == world - 1 && hi != nf))
        return ct__error(CT_ERR_FORMAT, "%s: shard %zu of %zu covering [%zu, %zu), but the "
                                        "set needs shard %d of %d from %zu%s", path, rank, w,
                         lo, hi, r, world, *at, r == world - 1 ? " to the end" : "");
    if (r > 0 && (s != *step || t != *total))
        return ct__error(CT_ERR_FORMAT, "%s: step %lld, but shard 0 has step %lld (shards of "
                                        "different checkpoints?)", path, (long long)s,
                         (long long)*step);
    *step = s;
    *total = t;
    for (int k = 0; k < 2; k++) {
        const ct__st_tensor *e = ct__st_find(f, k ? "exp_avg_sq" : "exp_avg");
        ct_status st;
        if (!e || e->dtype != CT_ST_F32 || e->ndim != 1 || e->shape[0] != hi - lo)
            return ct__error(CT_ERR_FORMAT, "%s: no F32 tensor '%s' of %zu floats", path,
                             k ? "exp_avg_sq" : "exp_avg", hi - lo);
        if ((st = ct__optim_moments_check(path, k ? "exp_avg_sq" : "exp_avg", e->data, hi - lo,
                                          k)) != CT_OK)
            return st;
    }
    *at = hi;
    return CT_OK;
}

ct_status ct__optim_load_dir(ct_optim *o, const char *dir, int64_t expect_step, int apply)
{
    char path[4200];
    int world;
    ct__st_file **files;
    ct_status st = CT_OK;
    size_t at = 0;
    int64_t step = 0, total = 0;
    if ((st = ct__path_format(path, sizeof path, "%s/optimizer.safetensors", dir)) != CT_OK)
        return st;
    if (access(path, F_OK) == 0 || !(world = shard_world_in(dir)))
        /* its errors name the file when it is missing */
        return ct__optim_load_file(o, path, expect_step, apply);
    if (!(files = calloc((size_t)world, sizeof *files)))
        return ct__error(CT_ERR_NOMEM, "out of memory");
    /* All files checked before anything changes. */
    for (int r = 0; r < world && st == CT_OK; r++) {
        if ((st = ct__path_format(path, sizeof path, "%s/" SHARD_NAME, dir, r, world)) ==
                CT_OK &&
            (st = ct__st_open(path, &files[r])) == CT_OK)
            st = check_shard(o, files[r], path, r, world, &at, &step, &total);
    }
    if (st == CT_OK)
        st = ct__optim_step_expected(path, step, expect_step);
    /* This rank's range from the files that overlap it. */
    for (int r = 0; r < world && st == CT_OK && apply; r++) {
        size_t flo, fhi, lo, hi;
        meta_size(files[r], "begin", &flo);
        meta_size(files[r], "end", &fhi);
        lo = flo > o->shard_lo ? flo : o->shard_lo;
        hi = fhi < o->shard_hi ? fhi : o->shard_hi;
        for (int k = 0; lo < hi && k < 2; k++)
            memcpy((k ? o->exp_avg_sq : o->exp_avg) + (lo - o->shard_lo),
                   (const char *)ct__st_find(files[r], k ? "exp_avg_sq" : "exp_avg")->data +
                       (lo - flo) * sizeof(float),
                   (hi - lo) * sizeof(float));
    }
    if (st == CT_OK && apply) {
        o->step = step;
        if (total > 0)
            o->total_steps = total;
        if (world != (o->dist ? o->shard_world : 1))
            ct__log(CT_LOG_INFO, "optimizer state of %d shards resharded for %d rank%s", world,
                    o->dist ? o->shard_world : 1, o->dist ? "s" : "");
    }
    for (int r = 0; r < world; r++)
        ct__st_close(files[r]);
    free(files);
    return st;
}
