/* safetensors files: mmap reader with the reference implementation's checks
 * (huggingface/safetensors, tensor.rs), atomic writer in the Python library's
 * byte layout, and bf16/f16/f32 conversions. */
#include "core/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/strbuf.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this reader hands out the bytes as they are"
#endif

/* The reference refuses headers above this (MAX_HEADER_SIZE), reading and
 * writing. */
#define MAX_HEADER 100000000u

static const struct {
    const char *name;
    unsigned bits;
} dtypes[CT_ST_DTYPE_COUNT] = {
    [CT_ST_BOOL] = {"BOOL", 8},
    [CT_ST_F4] = {"F4", 4},
    [CT_ST_F6_E2M3] = {"F6_E2M3", 6},
    [CT_ST_F6_E3M2] = {"F6_E3M2", 6},
    [CT_ST_U8] = {"U8", 8},
    [CT_ST_I8] = {"I8", 8},
    [CT_ST_F8_E5M2] = {"F8_E5M2", 8},
    [CT_ST_F8_E4M3] = {"F8_E4M3", 8},
    [CT_ST_F8_E8M0] = {"F8_E8M0", 8},
    [CT_ST_F8_E4M3FNUZ] = {"F8_E4M3FNUZ", 8},
    [CT_ST_F8_E5M2FNUZ] = {"F8_E5M2FNUZ", 8},
    [CT_ST_I16] = {"I16", 16},
    [CT_ST_U16] = {"U16", 16},
    [CT_ST_F16] = {"F16", 16},
    [CT_ST_BF16] = {"BF16", 16},
    [CT_ST_I32] = {"I32", 32},
    [CT_ST_U32] = {"U32", 32},
    [CT_ST_F32] = {"F32", 32},
    [CT_ST_C64] = {"C64", 64},
    [CT_ST_F64] = {"F64", 64},
    [CT_ST_I64] = {"I64", 64},
    [CT_ST_U64] = {"U64", 64},
};

const char *ct__st_dtype_name(ct__st_dtype dtype)
{
    return (unsigned)dtype < CT_ST_DTYPE_COUNT ? dtypes[dtype].name : NULL;
}

unsigned ct__st_dtype_bits(ct__st_dtype dtype)
{
    return (unsigned)dtype < CT_ST_DTYPE_COUNT ? dtypes[dtype].bits : 0;
}

int ct__st_dtype_from_name(const char *name, size_t len, ct__st_dtype *out)
{
    int i;
    for (i = 0; i < CT_ST_DTYPE_COUNT; i++) {
        if (strlen(dtypes[i].name) == len && memcmp(dtypes[i].name, name, len) == 0) {
            *out = (ct__st_dtype)i;
            return 1;
        }
    }
    return 0;
}

/* Bytes of dtype x shape as the reference computes them (elements, then
 * bits, each multiplication checked; bits must fill whole bytes).
 * 0 on success, else 1 for overflow or 2 for a sub-byte remainder. */
static int tensor_bytes(ct__st_dtype dtype, const size_t *shape, size_t ndim, size_t *bytes,
                        size_t *bits_out)
{
    size_t elems = 1, bits, i;
    for (i = 0; i < ndim; i++)
        if (__builtin_mul_overflow(elems, shape[i], &elems))
            return 1;
    if (__builtin_mul_overflow(elems, (size_t)ct__st_dtype_bits(dtype), &bits))
        return 1;
    *bits_out = bits;
    if (bits % 8)
        return 2;
    *bytes = bits / 8;
    return 0;
}

/* "F32 [768]" / "BF16 [2, 3]" / "I64 []" for error text; long shapes are
 * cut short. */
static const char *describe(char *buf, size_t size, ct__st_dtype dtype, const size_t *shape,
                            size_t ndim)
{
    size_t i, used;
    const char *name = ct__st_dtype_name(dtype);
    used = (size_t)snprintf(buf, size, "%s [", name ? name : "?");
    for (i = 0; i < ndim && used < size; i++) {
        if (used + 30 >= size) {
            used += (size_t)snprintf(buf + used, size - used, "...");
            break;
        }
        used += (size_t)snprintf(buf + used, size - used, "%s%zu", i ? ", " : "", shape[i]);
    }
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

/* ---- reading ---------------------------------------------------------------- */

typedef struct entry {
    ct__st_tensor t; /* first: ct__st_tensor pointers are entry pointers */
    size_t end;      /* data_offsets[1] as written */
    size_t index;    /* position in the header, to sort ties stably */
} entry;

struct ct__st_file {
    char *what;
    void (*release)(void *keep); /* ct__st_wrap's owner of names and data */
    void *keep;
    void *map; /* NULL for ct__st_open_buffer */
    size_t map_len;
    ct__json_doc *header;
    entry *entries;    /* file order */
    entry **by_name;   /* sorted by name */
    size_t *dims;      /* every shape, back to back */
    size_t n;
    ct__st_meta *meta;
    size_t n_meta;
    int has_meta;
};

static int name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen;
}

static int by_name_cmp(const void *pa, const void *pb)
{
    const entry *a = *(entry *const *)pa, *b = *(entry *const *)pb;
    return name_cmp(a->t.name, a->t.name_len, b->t.name, b->t.name_len);
}

/* The reference sorts by (begin, end) before checking; ties (zero-size
 * tensors sharing an offset) keep header order so errors are repeatable. */
static int by_offset_cmp(const void *pa, const void *pb)
{
    const entry *a = pa, *b = pb;
    if (a->t.offset != b->t.offset)
        return a->t.offset < b->t.offset ? -1 : 1;
    if (a->end != b->end)
        return a->end < b->end ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* A value that should have been a size_t: its literal when a number. */
static const char *value_text(const ct__json *v)
{
    return v->type == CT_JSON_NUMBER ? v->str : ct__json_type_phrase(v->type);
}

static int get_size(const ct__json *v, size_t *out)
{
    uint64_t u;
    if (!ct__json_uint64(v, &u) || u > SIZE_MAX)
        return 0;
    *out = (size_t)u;
    return 1;
}

static int check_metadata(ct__st_file *f, const ct__json *v)
{
    const char *dup;
    size_t i;
    /* serde reads the field as Option<HashMap<String, String>>: null is
     * the same as leaving it out. */
    if (v->type == CT_JSON_NULL)
        return CT_OK;
    if (v->type != CT_JSON_OBJECT)
        return ct__error(CT_ERR_FORMAT, "%s: '__metadata__' must be an object of strings, found %s",
                         f->what, ct__json_type_phrase(v->type));
    for (i = 0; i < v->n; i++)
        if (v->members[i].value.type != CT_JSON_STRING)
            return ct__error(CT_ERR_FORMAT, "%s: __metadata__ '%s': values must be strings, found %s",
                             f->what, v->members[i].key, ct__json_type_phrase(v->members[i].value.type));
    if ((dup = ct__json_duplicate_key(v)) != NULL)
        return ct__error(CT_ERR_FORMAT, "%s: __metadata__ key '%s' appears twice", f->what, dup);
    f->has_meta = 1;
    return CT_OK;
}

/* Type checks of one tensor entry; fills e (shape into *dims). */
static int check_entry(ct__st_file *f, const ct__json_member *m, entry *e, size_t **dims)
{
    const ct__json *v = &m->value, *dtype = NULL, *shape = NULL, *offs = NULL;
    const char *name = m->key;
    size_t i;

    if (v->type != CT_JSON_OBJECT)
        return ct__error(CT_ERR_FORMAT,
                         "%s: tensor '%s': expected an object with dtype, shape and "
                         "data_offsets, found %s",
                         f->what, name, ct__json_type_phrase(v->type));
    /* Other members are ignored, as the reference's serde reader does. */
    for (i = 0; i < v->n; i++) {
        const ct__json_member *fm = &v->members[i];
        const ct__json **slot = strcmp(fm->key, "dtype") == 0          ? &dtype
                                : strcmp(fm->key, "shape") == 0        ? &shape
                                : strcmp(fm->key, "data_offsets") == 0 ? &offs
                                                                       : NULL;
        if (!slot || fm->key_len != strlen(fm->key))
            continue;
        if (*slot)
            return ct__error(CT_ERR_FORMAT, "%s: tensor '%s': '%s' appears twice", f->what, name,
                             fm->key);
        *slot = &fm->value;
    }
    if (!dtype || !shape || !offs)
        return ct__error(CT_ERR_FORMAT, "%s: tensor '%s': missing '%s'", f->what, name,
                         !dtype ? "dtype" : !shape ? "shape" : "data_offsets");

    if (dtype->type != CT_JSON_STRING)
        return ct__error(CT_ERR_FORMAT, "%s: tensor '%s': 'dtype' must be a string, found %s",
                         f->what, name, ct__json_type_phrase(dtype->type));
    if (!ct__st_dtype_from_name(dtype->str, dtype->len, &e->t.dtype))
        return ct__error(CT_ERR_FORMAT, "%s: tensor '%s': unknown dtype '%s'", f->what, name,
                         dtype->str);

    if (shape->type != CT_JSON_ARRAY)
        return ct__error(CT_ERR_FORMAT,
                         "%s: tensor '%s': 'shape' must be an array of non-negative integers, "
                         "found %s",
                         f->what, name, ct__json_type_phrase(shape->type));
    e->t.ndim = shape->n;
    e->t.shape = *dims;
    for (i = 0; i < shape->n; i++) {
        if (!get_size(&shape->items[i], &(*dims)[i]))
            return ct__error(CT_ERR_FORMAT,
                             "%s: tensor '%s': shape[%zu] is %s, not a non-negative integer",
                             f->what, name, i, value_text(&shape->items[i]));
    }
    *dims += shape->n;

    if (offs->type != CT_JSON_ARRAY || offs->n != 2)
        return ct__error(CT_ERR_FORMAT,
                         "%s: tensor '%s': 'data_offsets' must be [begin, end], found %s%s",
                         f->what, name, offs->type == CT_JSON_ARRAY ? "an array of " : "",
                         offs->type != CT_JSON_ARRAY ? ct__json_type_phrase(offs->type)
                         : offs->n == 0              ? "0 items"
                         : offs->n == 1              ? "1 item"
                                                     : "more than 2 items");
    for (i = 0; i < 2; i++)
        if (!get_size(&offs->items[i], i ? &e->end : &e->t.offset))
            return ct__error(CT_ERR_FORMAT,
                             "%s: tensor '%s': data_offsets[%zu] is %s, not a non-negative integer",
                             f->what, name, i, value_text(&offs->items[i]));
    e->t.name = name;
    e->t.name_len = m->key_len;
    return CT_OK;
}

/* The reference's Metadata::validate: in offset order each tensor starts
 * where the previous one ended (the first at 0) and holds exactly
 * shape x dtype bytes. Returns the end of the last tensor in *covered. */
static int check_offsets(ct__st_file *f, size_t *covered)
{
    char d[160];
    size_t start = 0, i, need = 0, bits = 0;
    for (i = 0; i < f->n; i++) {
        entry *e = &f->entries[i];
        size_t s = e->t.offset, end = e->end;
        const char *name = e->t.name;
        int rc;
        if (end < s)
            return ct__error(CT_ERR_FORMAT, "%s: tensor '%s': data_offsets [%zu, %zu] end before they begin",
                             f->what, name, s, end);
        if (s > start && i == 0)
            return ct__error(CT_ERR_FORMAT,
                             "%s: tensor '%s': data_offsets [%zu, %zu] leave bytes 0..%zu of the "
                             "data buffer unused (the first tensor must start at 0)",
                             f->what, name, s, end, s);
        if (s > start)
            return ct__error(CT_ERR_FORMAT,
                             "%s: tensor '%s': data_offsets [%zu, %zu] leave bytes %zu..%zu of the "
                             "data buffer unused (tensor '%s' ends at %zu)",
                             f->what, name, s, end, start, s, f->entries[i - 1].t.name, start);
        if (s < start)
            return ct__error(CT_ERR_FORMAT,
                             "%s: tensor '%s': data_offsets [%zu, %zu] overlap tensor '%s' [%zu, %zu]",
                             f->what, name, s, end, f->entries[i - 1].t.name,
                             f->entries[i - 1].t.offset, f->entries[i - 1].end);
        start = end;
        rc = tensor_bytes(e->t.dtype, e->t.shape, e->t.ndim, &need, &bits);
        describe(d, sizeof d, e->t.dtype, e->t.shape, e->t.ndim);
        if (rc == 1)
            return ct__error(CT_ERR_FORMAT, "%s: tensor '%s': %s has more bytes than a size_t can count",
                             f->what, name, d);
        if (rc == 2)
            return ct__error(CT_ERR_FORMAT, "%s: tensor '%s': %s is %zu bits, not a whole number of bytes",
                             f->what, name, d, bits);
        if (end - s != need)
            return ct__error(CT_ERR_FORMAT,
                             "%s: tensor '%s': data_offsets [%zu, %zu] give %zu bytes but %s needs %zu",
                             f->what, name, s, end, end - s, d, need);
        e->t.nbytes = need;
    }
    *covered = start;
    return CT_OK;
}

static int parse_file(ct__st_file *f, const unsigned char *base, size_t len)
{
    const ct__json *root;
    const unsigned char *hdr;
    uint64_t n64 = 0;
    size_t hlen, i, ndims = 0, nt = 0, covered = 0, data_len;
    size_t *dims;
    char *hwhat;
    int rc, k, seen_meta = 0;

    if (len < 8)
        return ct__error(CT_ERR_FORMAT, "%s: file is %zu bytes, too small for the 8-byte header length",
                         f->what, len);
    for (k = 7; k >= 0; k--)
        n64 = n64 << 8 | base[k];
    if (n64 > MAX_HEADER)
        return ct__error(CT_ERR_FORMAT, "%s: header length %llu is over the %u-byte limit",
                         f->what, (unsigned long long)n64, MAX_HEADER);
    hlen = (size_t)n64;
    if (hlen > len - 8)
        return ct__error(CT_ERR_FORMAT,
                         "%s: header length %zu runs past the end of the file (%zu bytes)",
                         f->what, hlen, len);
    hdr = base + 8;
    /* Our JSON parser skips a byte order mark; serde_json does not. */
    if (hlen >= 3 && memcmp(hdr, "\xEF\xBB\xBF", 3) == 0)
        return ct__error(CT_ERR_FORMAT, "%s: header starts with a byte order mark", f->what);

    hwhat = malloc(strlen(f->what) + sizeof ": header");
    if (!hwhat)
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", f->what);
    sprintf(hwhat, "%s: header", f->what);
    rc = ct__json_parse((const char *)hdr, hlen, hwhat, &f->header);
    free(hwhat);
    if (rc != CT_OK)
        return rc;
    root = ct__json_root(f->header);
    if (root->type != CT_JSON_OBJECT)
        return ct__error(CT_ERR_FORMAT, "%s: header is a JSON %s, not an object", f->what,
                         ct__json_type_name(root->type));
    /* The format's README wants '{' first, but the reference accepts
     * leading JSON whitespace on purpose (writers may pad to align the
     * data), and so does ct__json_parse. */

    /* Count first, so each table is allocated once. */
    for (i = 0; i < root->n; i++) {
        const ct__json_member *m = &root->members[i];
        if (strcmp(m->key, "__metadata__") == 0 && m->key_len == 12) {
            if (seen_meta++)
                return ct__error(CT_ERR_FORMAT, "%s: '__metadata__' appears twice", f->what);
            if ((rc = check_metadata(f, &m->value)) != CT_OK)
                return rc;
            if (m->value.type == CT_JSON_NULL)
                continue;
            f->n_meta = m->value.n;
            continue;
        }
        nt++;
        if (m->value.type == CT_JSON_OBJECT) {
            const ct__json *s = ct__json_get(&m->value, "shape");
            if (s && s->type == CT_JSON_ARRAY)
                ndims += s->n;
        }
    }
    /* Each table is bounded by the header size, itself at most 1e8 bytes. */
    f->entries = calloc(nt ? nt : 1, sizeof *f->entries);
    f->by_name = calloc(nt ? nt : 1, sizeof *f->by_name);
    f->dims = calloc(ndims ? ndims : 1, sizeof *f->dims);
    f->meta = calloc(f->n_meta ? f->n_meta : 1, sizeof *f->meta);
    if (!f->entries || !f->by_name || !f->dims || !f->meta)
        return ct__error(CT_ERR_NOMEM, "%s: out of memory for %zu tensors", f->what, nt);

    dims = f->dims;
    for (i = 0; i < root->n; i++) {
        const ct__json_member *m = &root->members[i];
        if (strcmp(m->key, "__metadata__") == 0 && m->key_len == 12) {
            size_t j;
            for (j = 0; j < f->n_meta; j++) {
                f->meta[j].key = m->value.members[j].key;
                f->meta[j].key_len = m->value.members[j].key_len;
                f->meta[j].value = m->value.members[j].value.str;
                f->meta[j].value_len = m->value.members[j].value.len;
            }
            continue;
        }
        /* dims was sized from the same "shape" members check_entry copies
         * (a repeated "shape" fails before anything is copied). */
        if ((rc = check_entry(f, m, &f->entries[f->n], &dims)) != CT_OK)
            return rc;
        f->entries[f->n].index = f->n;
        f->by_name[f->n] = &f->entries[f->n];
        f->n++;
    }

    qsort(f->by_name, f->n, sizeof *f->by_name, by_name_cmp);
    for (i = 1; i < f->n; i++)
        if (by_name_cmp(&f->by_name[i - 1], &f->by_name[i]) == 0)
            return ct__error(CT_ERR_FORMAT, "%s: tensor '%s' appears twice in the header", f->what,
                             f->by_name[i]->t.name);

    /* Into file order; by_name's pointers are rebuilt afterwards. */
    qsort(f->entries, f->n, sizeof *f->entries, by_offset_cmp);
    if ((rc = check_offsets(f, &covered)) != CT_OK)
        return rc;
    data_len = len - 8 - hlen;
    if (covered < data_len)
        return ct__error(CT_ERR_FORMAT,
                         "%s: the tensors cover %zu bytes of data but %zu follow the header "
                         "(bytes %zu..%zu belong to no tensor)",
                         f->what, covered, data_len, covered, data_len);
    if (covered > data_len)
        return ct__error(CT_ERR_FORMAT,
                         "%s: the tensors need %zu bytes of data but only %zu follow the header "
                         "(the file is truncated)",
                         f->what, covered, data_len);
    for (i = 0; i < f->n; i++) {
        f->entries[i].t.data = base + 8 + hlen + f->entries[i].t.offset;
        f->by_name[i] = &f->entries[i];
    }
    qsort(f->by_name, f->n, sizeof *f->by_name, by_name_cmp);
    return CT_OK;
}

static ct__st_file *file_new(const char *what)
{
    ct__st_file *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->what = strdup(what);
    if (!f->what) {
        free(f);
        return NULL;
    }
    return f;
}

void ct__st_close(ct__st_file *f)
{
    if (!f)
        return;
    if (f->map)
        munmap(f->map, f->map_len);
    ct__json_free(f->header);
    free(f->entries);
    free(f->by_name);
    free(f->dims);
    free(f->meta);
    free(f->what);
    if (f->release)
        f->release(f->keep);
    free(f);
}

int ct__st_open_buffer(const void *buf, size_t len, const char *what, ct__st_file **out)
{
    ct__st_file *f;
    int rc;
    if (!out)
        return ct__error(CT_ERR_INVALID_ARG, "%s: argument 'out' is NULL", __func__);
    *out = NULL;
    if (!buf && len)
        return ct__error(CT_ERR_INVALID_ARG, "%s: argument 'buf' is NULL", __func__);
    if (!what)
        what = "safetensors buffer";
    if (!(f = file_new(what)))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", what);
    rc = parse_file(f, buf ? buf : "", len);
    if (rc != CT_OK) {
        ct__st_close(f);
        return rc;
    }
    *out = f;
    return CT_OK;
}

int ct__st_wrap(const char *what, const ct__st_tensor *tensors, size_t n,
                void (*release)(void *keep), void *keep, ct__st_file **out)
{
    ct__st_file *f;
    size_t ndims = 0, *dims;
    if (!out || (n && !tensors) || !what) {
        if (release)
            release(keep);
        return ct__error(CT_ERR_INVALID_ARG, "%s: a NULL argument", __func__);
    }
    *out = NULL;
    if (!(f = file_new(what))) {
        if (release)
            release(keep);
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", what);
    }
    f->release = release;
    f->keep = keep;
    for (size_t i = 0; i < n; i++)
        ndims += tensors[i].ndim;
    f->entries = calloc(n ? n : 1, sizeof *f->entries);
    f->by_name = calloc(n ? n : 1, sizeof *f->by_name);
    f->dims = dims = calloc(ndims ? ndims : 1, sizeof *f->dims);
    f->meta = calloc(1, sizeof *f->meta);
    if (!f->entries || !f->by_name || !f->dims || !f->meta) {
        ct__st_close(f);
        return ct__error(CT_ERR_NOMEM, "%s: out of memory for %zu tensors", what, n);
    }
    for (size_t i = 0; i < n; i++) {
        entry *e = &f->entries[i];
        e->t = tensors[i];
        e->t.name_len = strlen(tensors[i].name);
        memcpy(dims, tensors[i].shape, tensors[i].ndim * sizeof *dims);
        e->t.shape = dims;
        dims += tensors[i].ndim;
        e->index = i;
        f->by_name[i] = e;
    }
    f->n = n;
    qsort(f->by_name, n, sizeof *f->by_name, by_name_cmp);
    for (size_t i = 1; i < n; i++)
        if (by_name_cmp(&f->by_name[i - 1], &f->by_name[i]) == 0) {
            int rc = ct__error(CT_ERR_FORMAT, "%s: tensor '%s' appears twice", what,
                               f->by_name[i]->t.name);
            ct__st_close(f);
            return rc;
        }
    *out = f;
    return CT_OK;
}

int ct__st_open(const char *path, ct__st_file **out)
{
    struct stat st;
    ct__st_file *f;
    void *map;
    int fd, rc;

    if (!out)
        return ct__error(CT_ERR_INVALID_ARG, "%s: argument 'out' is NULL", __func__);
    *out = NULL;
    if (!path)
        return ct__error(CT_ERR_INVALID_ARG, "%s: argument 'path' is NULL", __func__);
    if ((fd = ct__open_regular(path, &st)) < 0)
        return CT_ERR_IO;
    if ((uintmax_t)st.st_size > SIZE_MAX) {
        close(fd);
        return ct__error(CT_ERR_IO, "%s: %lld bytes is too large to map", path,
                         (long long)st.st_size);
    }
    if (!(f = file_new(path))) {
        close(fd);
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", path);
    }
    if (st.st_size < 8) {
        /* Too short to map usefully; parse_file words the error. */
        close(fd);
        rc = parse_file(f, (const unsigned char *)"", (size_t)st.st_size);
        ct__st_close(f);
        return rc;
    }
    /* Read-only and private: the model never writes through the mapping,
     * and nothing we do can change the file. (Another process truncating it
     * while mapped would still fault, as with any mmap reader.) */
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    rc = errno;
    close(fd);
    if (map == MAP_FAILED) {
        ct__st_close(f);
        return ct__error(CT_ERR_IO, "%s: cannot map: %s", path, strerror(rc));
    }
    f->map = map;
    f->map_len = (size_t)st.st_size;
    rc = parse_file(f, map, f->map_len);
    if (rc != CT_OK) {
        ct__st_close(f);
        return rc;
    }
    *out = f;
    return CT_OK;
}

size_t ct__st_count(const ct__st_file *f)
{
    return f ? f->n : 0;
}

const ct__st_tensor *ct__st_tensor_at(const ct__st_file *f, size_t i)
{
    return f && i < f->n ? &f->entries[i].t : NULL;
}

const ct__st_tensor *ct__st_find(const ct__st_file *f, const char *name)
{
    size_t lo = 0, hi, len;
    if (!f || !name)
        return NULL;
    len = strlen(name);
    hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const entry *e = f->by_name[mid];
        int c = name_cmp(e->t.name, e->t.name_len, name, len);
        if (c == 0)
            return &e->t;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const ct__st_meta *ct__st_metadata(const ct__st_file *f, size_t *n)
{
    if (n)
        *n = f ? f->n_meta : 0;
    return f && f->n_meta ? f->meta : NULL;
}

int ct__st_has_metadata(const ct__st_file *f)
{
    return f ? f->has_meta : 0;
}

const char *ct__st_metadata_get(const ct__st_file *f, const char *key)
{
    size_t i, len;
    if (!f || !key)
        return NULL;
    len = strlen(key);
    for (i = 0; i < f->n_meta; i++)
        if (f->meta[i].key_len == len && memcmp(f->meta[i].key, key, len) == 0)
            return f->meta[i].value;
    return NULL;
}

/* ---- writing ---------------------------------------------------------------- */

typedef struct wtensor {
    const ct__st_tensor *t;
    const char *name;
    size_t len;
} wtensor;

static int wname_cmp(const void *pa, const void *pb)
{
    const wtensor *a = pa, *b = pb;
    return name_cmp(a->name, a->len, b->name, b->len);
}

/* The reference's prepare(): dtype descending (larger alignment first, so
 * every tensor starts aligned to its element in an 8-aligned buffer), then
 * name, bytewise. */
static int save_order_cmp(const void *pa, const void *pb)
{
    const wtensor *a = pa, *b = pb;
    if (a->t->dtype != b->t->dtype)
        return a->t->dtype > b->t->dtype ? -1 : 1;
    return wname_cmp(pa, pb);
}

typedef struct wmeta {
    const char *key;
    size_t len;
} wmeta;

static int wmeta_cmp(const void *pa, const void *pb)
{
    const wmeta *a = pa, *b = pb;
    return name_cmp(a->key, a->len, b->key, b->len);
}

static CT__MUST_USE int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        /* Linux moves at most ~2 GiB per write(). */
        ssize_t k = write(fd, p, len > ((size_t)1 << 30) ? (size_t)1 << 30 : len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return errno;
        if (k == 0)
            return EIO;
        p += k;
        len -= (size_t)k;
    }
    return 0;
}

/* Checks of the caller's tensors and metadata: each is a bug upstream, so
 * CT_ERR_INVALID_ARG. Fills w[] in save order. */
static int check_save_args(const char *path, const ct__st_tensor *tensors, size_t n,
                           const ct__st_meta *meta, size_t n_meta, wtensor *w)
{
    char d[160];
    size_t i, need, bits;
    int rc = CT_OK;

    for (i = 0; i < n; i++) {
        const ct__st_tensor *t = &tensors[i];
        if (!t->name)
            return ct__error(CT_ERR_INVALID_ARG, "%s: tensor %zu has no name", path, i);
        w[i].t = t;
        w[i].name = t->name;
        w[i].len = t->name_len ? t->name_len : strlen(t->name);
        if (w[i].len == 12 && memcmp(t->name, "__metadata__", 12) == 0)
            return ct__error(CT_ERR_INVALID_ARG,
                             "%s: '__metadata__' cannot name a tensor (the header's metadata "
                             "entry has that key)",
                             path);
        if ((unsigned)t->dtype >= CT_ST_DTYPE_COUNT)
            return ct__error(CT_ERR_INVALID_ARG, "%s: tensor '%s': invalid dtype %d", path,
                             t->name, (int)t->dtype);
        if (t->ndim && !t->shape)
            return ct__error(CT_ERR_INVALID_ARG, "%s: tensor '%s': shape is NULL", path, t->name);
        rc = tensor_bytes(t->dtype, t->shape, t->ndim, &need, &bits);
        describe(d, sizeof d, t->dtype, t->shape, t->ndim);
        if (rc == 1)
            return ct__error(CT_ERR_INVALID_ARG,
                             "%s: tensor '%s': %s has more bytes than a size_t can count", path,
                             t->name, d);
        if (rc == 2)
            return ct__error(CT_ERR_INVALID_ARG,
                             "%s: tensor '%s': %s is %zu bits, not a whole number of bytes", path,
                             t->name, d, bits);
        if (t->nbytes != need)
            return ct__error(CT_ERR_INVALID_ARG, "%s: tensor '%s': nbytes is %zu but %s needs %zu",
                             path, t->name, t->nbytes, d, need);
        if (need && !t->data)
            return ct__error(CT_ERR_INVALID_ARG, "%s: tensor '%s': data is NULL", path, t->name);
    }
    qsort(w, n, sizeof *w, wname_cmp);
    for (i = 1; i < n; i++)
        if (wname_cmp(&w[i - 1], &w[i]) == 0)
            return ct__error(CT_ERR_INVALID_ARG, "%s: tensor '%s' given twice", path, w[i].name);
    qsort(w, n, sizeof *w, save_order_cmp);

    if (n_meta) {
        wmeta *m = malloc(n_meta * sizeof *m);
        if (!m)
            return ct__error(CT_ERR_NOMEM, "%s: out of memory", path);
        for (i = 0; i < n_meta && rc == CT_OK; i++) {
            if (!meta[i].key || !meta[i].value)
                rc = ct__error(CT_ERR_INVALID_ARG, "%s: metadata entry %zu has a NULL key or value",
                               path, i);
            m[i].key = meta[i].key;
            m[i].len = meta[i].key_len ? meta[i].key_len : meta[i].key ? strlen(meta[i].key) : 0;
        }
        if (rc == CT_OK) {
            qsort(m, n_meta, sizeof *m, wmeta_cmp);
            for (i = 1; i < n_meta; i++)
                if (wmeta_cmp(&m[i - 1], &m[i]) == 0) {
                    rc = ct__error(CT_ERR_INVALID_ARG, "%s: metadata key '%s' given twice", path,
                                   m[i].key);
                    break;
                }
        }
        free(m);
    }
    return rc;
}

/* The header exactly as serde_json writes the reference's Metadata: no
 * spaces, "__metadata__" first, tensors in save order, fields in the order
 * dtype, shape, data_offsets; then spaces up to a multiple of 8. */
static int build_header(const char *path, const wtensor *w, size_t n, const ct__st_meta *meta,
                        size_t n_meta, ct__strbuf *sb, size_t *data_len)
{
    size_t i, j, off = 0;
    int rc;

    ct__sb_append(sb, "{", 1);
    if (meta) {
        ct__sb_puts(sb, "\"__metadata__\":{");
        for (i = 0; i < n_meta; i++) {
            const ct__st_meta *m = &meta[i];
            if (i)
                ct__sb_append(sb, ",", 1);
            rc = ct__json_write_string(sb, m->key, m->key_len ? m->key_len : strlen(m->key));
            if (rc == CT_OK) {
                ct__sb_append(sb, ":", 1);
                rc = ct__json_write_string(sb, m->value,
                                           m->value_len ? m->value_len : strlen(m->value));
            }
            if (rc == CT_ERR_INVALID_ARG)
                return ct__error_prefix(rc, "%s: metadata '%s'", path, m->key);
            if (rc != CT_OK)
                return rc;
        }
        ct__sb_append(sb, "}", 1);
    }
    for (i = 0; i < n; i++) {
        const ct__st_tensor *t = w[i].t;
        if (i || meta)
            ct__sb_append(sb, ",", 1);
        rc = ct__json_write_string(sb, w[i].name, w[i].len);
        if (rc == CT_ERR_INVALID_ARG)
            return ct__error_prefix(rc, "%s: tensor name", path);
        if (rc != CT_OK)
            return rc;
        ct__sb_printf(sb, ":{\"dtype\":\"%s\",\"shape\":[", ct__st_dtype_name(t->dtype));
        for (j = 0; j < t->ndim; j++)
            ct__sb_printf(sb, "%s%zu", j ? "," : "", t->shape[j]);
        if (off + t->nbytes < off)
            return ct__error(CT_ERR_INVALID_ARG, "%s: the tensors hold more bytes than a size_t can count", path);
        ct__sb_printf(sb, "],\"data_offsets\":[%zu,%zu]}", off, off + t->nbytes);
        off += t->nbytes;
    }
    ct__sb_append(sb, "}", 1);
    while (sb->len % 8 && !sb->failed)
        ct__sb_append(sb, " ", 1);
    if (sb->failed)
        return ct__error_prefix((ct_status)sb->failed, "%s", path);
    if (sb->len > MAX_HEADER)
        return ct__error(CT_ERR_FORMAT, "%s: the header would be %zu bytes, over the %u-byte limit",
                         path, sb->len, MAX_HEADER);
    *data_len = off;
    return CT_OK;
}

int ct__st_save(const char *path, const ct__st_tensor *tensors, size_t n,
                const ct__st_meta *meta, size_t n_meta)
{
    ct__strbuf sb = {0};
    wtensor *w = NULL;
    unsigned char len8[8];
    size_t i, data_len = 0;
    char *tmp = NULL;
    int fd = -1, rc, err = 0, k;

    if (!path)
        return ct__error(CT_ERR_INVALID_ARG, "%s: argument 'path' is NULL", __func__);
    if (!tensors && n)
        return ct__error(CT_ERR_INVALID_ARG, "%s: argument 'tensors' is NULL", __func__);
    if (!meta && n_meta)
        return ct__error(CT_ERR_INVALID_ARG, "%s: argument 'meta' is NULL", __func__);
    w = calloc(n ? n : 1, sizeof *w);
    if (!w)
        return ct__error(CT_ERR_NOMEM, "%s: out of memory", path);
    rc = check_save_args(path, tensors, n, meta, n_meta, w);
    if (rc == CT_OK)
        rc = build_header(path, w, n, meta, n_meta, &sb, &data_len);
    if (rc == CT_OK)
        rc = ct__open_temp_beside(path, &fd, &tmp);
    if (rc != CT_OK) {
        free(w);
        ct__sb_free(&sb);
        return rc;
    }
    for (k = 0; k < 8; k++)
        len8[k] = (unsigned char)((uint64_t)sb.len >> (8 * k));
    err = write_all(fd, len8, 8);
    if (!err)
        err = write_all(fd, sb.data, sb.len);
    for (i = 0; i < n && !err; i++)
        err = write_all(fd, w[i].t->data, w[i].t->nbytes);
    free(w);
    ct__sb_free(&sb);
    if (err) {
        ct__abandon_file(fd, tmp);
        free(tmp);
        return ct__error(CT_ERR_IO, "%s: write failed: %s", path, strerror(err));
    }
    rc = ct__commit_file(fd, tmp, path);
    free(tmp);
    return rc;
}

/* ---- conversions -------------------------------------------------------------- */

float ct__bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t ct__f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return 0x7FC0; /* PyTorch's NaN: rounding could carry a NaN into inf */
    /* Nearest, ties to even: add just under half, plus the lowest kept bit. */
    u += 0x7FFFu + (u >> 16 & 1u);
    return (uint16_t)(u >> 16);
}

float ct__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = h >> 10 & 0x1Fu, man = h & 0x3FFu, u;
    float f;
    if (exp == 0x1F) {
        u = sign | 0x7F800000u | man << 13; /* inf, or NaN with its payload */
    } else if (exp == 0) {
        /* Zero or subnormal: man x 2^-24, exact in float. */
        f = (float)man * 0x1p-24f;
        return sign ? -f : f;
    } else {
        u = sign | (exp + 112) << 23 | man << 13; /* rebias 15 -> 127 */
    }
    memcpy(&f, &u, sizeof f);
    return f;
}

void ct__bf16_to_f32_n(float *out, const void *in, size_t n)
{
    const unsigned char *p = in;
    size_t i;
    uint16_t h;
    for (i = 0; i < n; i++) {
        memcpy(&h, p + 2 * i, 2);
        out[i] = ct__bf16_to_f32(h);
    }
}

void ct__f16_to_f32_n(float *out, const void *in, size_t n)
{
    const unsigned char *p = in;
    size_t i;
    uint16_t h;
    for (i = 0; i < n; i++) {
        memcpy(&h, p + 2 * i, 2);
        out[i] = ct__f16_to_f32(h);
    }
}

void ct__f32_to_bf16_n(void *out, const float *in, size_t n)
{
    unsigned char *p = out;
    size_t i;
    uint16_t h;
    for (i = 0; i < n; i++) {
        h = ct__f32_to_bf16(in[i]);
        memcpy(p + 2 * i, &h, 2);
    }
}

int ct__st_tensor_to_f32(const ct__st_tensor *t, const char *what, float *out, size_t count)
{
    const unsigned char *p;
    char d[160];
    size_t elems = 1, i;
    double v;

    if (!t || (!out && count))
        return ct__error(CT_ERR_INVALID_ARG, "%s: NULL argument", __func__);
    for (i = 0; i < t->ndim; i++)
        if (__builtin_mul_overflow(elems, t->shape[i], &elems))
            elems = SIZE_MAX;
    describe(d, sizeof d, t->dtype, t->shape, t->ndim);
    if (elems != count)
        return ct__error(CT_ERR_FORMAT, "%s%stensor '%s': %s has %zu elements, expected %zu",
                         what ? what : "", what ? ": " : "", t->name, d, elems, count);
    p = t->data;
    switch (t->dtype) {
    case CT_ST_F32:
        if (count)
            memcpy(out, p, count * sizeof(float));
        return CT_OK;
    case CT_ST_BF16:
        ct__bf16_to_f32_n(out, p, count);
        return CT_OK;
    case CT_ST_F16:
        ct__f16_to_f32_n(out, p, count);
        return CT_OK;
    case CT_ST_F64:
        for (i = 0; i < count; i++) {
            memcpy(&v, p + 8 * i, sizeof v);
            out[i] = (float)v;
        }
        return CT_OK;
    default:
        return ct__error(CT_ERR_FORMAT, "%s%stensor '%s': %s is not a floating-point tensor",
                         what ? what : "", what ? ": " : "", t->name, d);
    }
}
