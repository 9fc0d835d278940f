/* pytorch_model.bin: the ZIP archive (zip.c), its pickle (torch_pickle.c)
 * and the storages its tensors view, as a ct__st_file of contiguous
 * tensors. */
#include "core/torch_bin.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/torch_pickle.h"
#include "core/zip.h"

/* Everything the tensors point into, released with the ct__st_file. */
typedef struct owner {
    void *map;
    size_t map_len;
    ct__zip zip;
    ct__torch_dict dict;
    void **copies; /* gathered strided views */
    size_t n_copies;
} owner;

static void release(void *keep)
{
    owner *o = keep;
    if (!o)
        return;
    for (size_t i = 0; i < o->n_copies; i++)
        free(o->copies[i]);
    free(o->copies);
    ct__torch_dict_free(&o->dict);
    ct__zip_free(&o->zip);
    if (o->map)
        munmap(o->map, o->map_len);
    free(o);
}

/* The archive's folder: the member "<prefix>data.pkl", one folder deep, as
 * torch.save names it after the file ("archive/" or the file's stem). */
static ct_status find_pickle(const ct__zip *z, const char *what, const ct__zip_member **pkl,
                             size_t *prefix)
{
    *pkl = NULL;
    for (size_t i = 0; i < z->n; i++) {
        const char *name = z->members[i].name, *slash = strchr(name, '/');
        if (!slash || strcmp(slash, "/data.pkl") != 0)
            continue;
        if (*pkl)
            return ct__error(CT_ERR_FORMAT, "%s: two pickles (%s, %s)", what, (*pkl)->name, name);
        *pkl = &z->members[i];
        *prefix = (size_t)(slash - name) + 1;
    }
    if (!*pkl)
        return ct__error(CT_ERR_FORMAT, "%s: no <archive>/data.pkl: not a file torch.save wrote",
                         what);
    return CT_OK;
}

static size_t element_size(ct__st_dtype dtype)
{
    return dtype == CT_ST_F32 ? 4 : 2;
}

/* Whether the view is row-major without gaps (dims of size 1 aside). */
static int contiguous(const ct__torch_tensor *t)
{
    size_t want = 1;
    for (size_t d = t->ndim; d-- > 0;) {
        if (t->shape[d] != 1 && t->stride[d] != want)
            return 0;
        want *= t->shape[d];
    }
    return 1;
}

/* Element by element in row-major order: the view's storage offsets. */
static void gather(unsigned char *out, const unsigned char *storage, const ct__torch_tensor *t,
                   size_t numel, size_t es)
{
    size_t idx[CT__TORCH_MAX_DIMS] = {0};
    for (size_t k = 0; k < numel; k++) {
        size_t at = t->offset;
        for (size_t d = 0; d < t->ndim; d++)
            at += idx[d] * t->stride[d];
        memcpy(out + k * es, storage + at * es, es);
        for (size_t d = t->ndim; d-- > 0;) {
            if (++idx[d] < t->shape[d])
                break;
            idx[d] = 0;
        }
    }
}

/* One state dict entry as a contiguous ct__st_tensor; its storage is the
 * member <folder>data/<key>, `folder` being data.pkl's (prefix bytes). */
static ct_status tensor_of(owner *o, const char *what, const char *folder, size_t prefix,
                           const ct__torch_tensor *t, ct__st_tensor *out)
{
    char member[512];
    const ct__zip_member *s;
    size_t es = element_size(t->dtype), numel = 1;
    void *copy;
    if (prefix + strlen(t->storage) + sizeof "data/" > sizeof member)
        return ct__error(CT_ERR_FORMAT, "%s: tensor '%s': a storage key of %zu bytes", what,
                         t->name, strlen(t->storage));
    snprintf(member, sizeof member, "%.*sdata/%s", (int)prefix, folder, t->storage);
    if (!(s = ct__zip_find(&o->zip, member)))
        return ct__error(CT_ERR_FORMAT, "%s: tensor '%s': its storage %s is not in the archive",
                         what, t->name, member);
    if (t->storage_numel > SIZE_MAX / es || s->size != t->storage_numel * es)
        return ct__error(CT_ERR_FORMAT, "%s: tensor '%s': storage %s has %zu bytes, not %zu "
                                        "elements of %s", what, t->name, member, s->size,
                         t->storage_numel, ct__st_dtype_name(t->dtype));
    for (size_t d = 0; d < t->ndim; d++)
        numel *= t->shape[d]; /* within the storage (checked by the pickle reader), or 0 */
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->dtype = t->dtype;
    out->ndim = t->ndim;
    out->shape = t->shape;
    out->nbytes = numel * es;
    if (numel == 0 || contiguous(t)) {
        out->data = s->data + t->offset * es;
        return CT_OK;
    }
    if (!(copy = malloc(out->nbytes)))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory for tensor '%s'", what, t->name);
    o->copies[o->n_copies++] = copy;
    gather(copy, s->data, t, numel, es);
    out->data = copy;
    return CT_OK;
}

/* Reads buf into o (which owns buf when it is o->map) and wraps it. */
static ct_status read_archive(owner *o, const unsigned char *buf, size_t len, const char *what,
                              ct__st_file **out)
{
    const ct__zip_member *pkl, *order;
    ct__st_tensor *tensors = NULL;
    char member[512];
    size_t prefix = 0;
    ct_status st;
    if (len >= 2 && buf[0] == 0x80 && buf[1] <= 5) {
        release(o);
        return ct__error(CT_ERR_FORMAT, "%s: the legacy torch.save format (PyTorch before 1.6) "
                                        "is not read; save it again with a newer PyTorch, or "
                                        "with safe_serialization=True", what);
    }
    if ((st = ct__zip_read(buf, len, what, &o->zip)) != CT_OK ||
        (st = find_pickle(&o->zip, what, &pkl, &prefix)) != CT_OK) {
        release(o);
        return st;
    }
    snprintf(member, sizeof member, "%.*sbyteorder", (int)(prefix < 400 ? prefix : 400),
             pkl->name);
    if ((order = ct__zip_find(&o->zip, member)) &&
        !(order->size == 6 && memcmp(order->data, "little", 6) == 0)) {
        release(o);
        return ct__error(CT_ERR_FORMAT, "%s: %s is not \"little\": a big-endian archive", what,
                         member);
    }
    if ((st = ct__torch_unpickle(pkl->data, pkl->size, what, &o->dict)) != CT_OK) {
        release(o);
        return st;
    }
    tensors = calloc(o->dict.n ? o->dict.n : 1, sizeof *tensors);
    o->copies = calloc(o->dict.n ? o->dict.n : 1, sizeof *o->copies);
    if (!tensors || !o->copies) {
        free(tensors);
        release(o);
        return ct__error(CT_ERR_NOMEM, "%s: out of memory for %zu tensors", what, o->dict.n);
    }
    for (size_t i = 0; i < o->dict.n; i++)
        if ((st = tensor_of(o, what, pkl->name, prefix, &o->dict.tensors[i], &tensors[i])) !=
            CT_OK) {
            free(tensors);
            release(o);
            return st;
        }
    st = ct__st_wrap(what, tensors, o->dict.n, release, o, out);
    free(tensors);
    return st;
}

ct_status ct__torch_open_buffer(const void *buf, size_t len, const char *what,
                                ct__st_file **out)
{
    owner *o;
    if (!out || (!buf && len) || !what)
        return ct__error(CT_ERR_INVALID_ARG, "%s: a NULL argument", __func__);
    *out = NULL;
    if (!(o = calloc(1, sizeof *o)))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", what);
    return read_archive(o, buf ? buf : "", len, what, out);
}

ct_status ct__torch_open(const char *path, ct__st_file **out)
{
    struct stat sb;
    owner *o;
    int fd, err;
    if (!out || !path)
        return ct__error(CT_ERR_INVALID_ARG, "%s: a NULL argument", __func__);
    *out = NULL;
    if ((fd = ct__open_regular(path, &sb)) < 0)
        return CT_ERR_IO;
    if (!(o = calloc(1, sizeof *o))) {
        close(fd);
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", path);
    }
    if ((uintmax_t)sb.st_size > SIZE_MAX || sb.st_size == 0) {
        close(fd);
        return read_archive(o, (const unsigned char *)"", 0, path, out);
    }
    o->map_len = (size_t)sb.st_size;
    o->map = mmap(NULL, o->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
    err = errno;
    close(fd);
    if (o->map == MAP_FAILED) {
        o->map = NULL;
        release(o);
        return ct__error(CT_ERR_IO, "%s: cannot map: %s", path, strerror(err));
    }
    return read_archive(o, o->map, o->map_len, path, out);
}
