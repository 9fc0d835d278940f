/* libFuzzer harness: the safetensors reader on a buffer, and the writer as a
 * round trip: whatever the reader accepts, ct__st_save writes, and reading
 * that back gives the same tensors and metadata; saving the copy again gives
 * the same bytes (the writer's order is canonical). */
#include "fuzz_common.h"

#include "core/fileio.h"
#include "core/safetensors.h"

/* Every byte the reader promises, touched through ASan; f32 views of the
 * float tensors small enough to convert. */
static void walk(const ct__st_file *f)
{
    static float out[4096];
    size_t i, k, n = ct__st_count(f), n_meta;
    const ct__st_meta *meta = ct__st_metadata(f, &n_meta);
    volatile unsigned char sink = 0;
    for (i = 0; i < n; i++) {
        const ct__st_tensor *t = ct__st_tensor_at(f, i);
        size_t count = 1;
        FZ_CHECK(ct__st_find(f, t->name) == t || strlen(t->name) != t->name_len,
                 "tensor %zu not found by its name", i);
        for (k = 0; k < t->nbytes; k++)
            sink ^= ((const unsigned char *)t->data)[k];
        for (k = 0; k < t->ndim; k++)
            count *= t->shape[k];
        if (count <= sizeof out / sizeof out[0])
            (void)ct__st_tensor_to_f32(t, "input", out, count);
    }
    for (i = 0; i < n_meta; i++)
        FZ_CHECK(strlen(meta[i].key) <= meta[i].key_len, "metadata key %zu", i);
    (void)sink;
}

/* Save what f holds to `path`, as given to the writer. */
static int save(const ct__st_file *f, const char *path)
{
    size_t i, n = ct__st_count(f), n_meta;
    const ct__st_meta *meta = ct__st_metadata(f, &n_meta);
    static const ct__st_meta none;
    ct__st_tensor *ts = calloc(n ? n : 1, sizeof *ts);
    int st;
    FZ_CHECK(ts != NULL, "no memory");
    for (i = 0; i < n; i++) {
        ts[i] = *ct__st_tensor_at(f, i);
        ts[i].offset = 0;
    }
    /* An empty "__metadata__" must stay present and empty. */
    st = ct__st_save(path, ts, n, ct__st_has_metadata(f) ? (meta ? meta : &none) : NULL, n_meta);
    free(ts);
    return st;
}

static void same_content(const ct__st_file *a, const ct__st_file *b)
{
    size_t i, k, na = ct__st_count(a), nm_a, nm_b;
    const ct__st_meta *ma = ct__st_metadata(a, &nm_a), *mb = ct__st_metadata(b, &nm_b);
    FZ_CHECK(na == ct__st_count(b), "%zu tensors became %zu", na, ct__st_count(b));
    for (i = 0; i < na; i++) {
        const ct__st_tensor *x = ct__st_tensor_at(a, i), *y = NULL;
        /* By name, comparing the whole name: names may hold a NUL. */
        for (k = 0; k < na && !y; k++) {
            const ct__st_tensor *c = ct__st_tensor_at(b, k);
            if (c->name_len == x->name_len && memcmp(c->name, x->name, x->name_len) == 0)
                y = c;
        }
        FZ_CHECK(y != NULL, "tensor \"%s\" lost", x->name);
        FZ_CHECK(x->dtype == y->dtype && x->ndim == y->ndim && x->nbytes == y->nbytes,
                 "tensor \"%s\" changed type or size", x->name);
        for (k = 0; k < x->ndim; k++)
            FZ_CHECK(x->shape[k] == y->shape[k], "tensor \"%s\" axis %zu", x->name, k);
        FZ_CHECK(x->nbytes == 0 || memcmp(x->data, y->data, x->nbytes) == 0,
                 "tensor \"%s\" data changed", x->name);
    }
    FZ_CHECK(ct__st_has_metadata(a) == ct__st_has_metadata(b), "__metadata__ presence");
    FZ_CHECK(nm_a == nm_b, "%zu metadata entries became %zu", nm_a, nm_b);
    for (i = 0; i < nm_a; i++)
        FZ_CHECK(ma[i].key_len == mb[i].key_len && ma[i].value_len == mb[i].value_len &&
                     memcmp(ma[i].key, mb[i].key, ma[i].key_len) == 0 &&
                     memcmp(ma[i].value, mb[i].value, ma[i].value_len) == 0,
                 "metadata entry %zu changed", i);
}

static char *slurp(const char *path, size_t *len)
{
    char *data = NULL;
    FZ_CHECK(ct__read_file(path, (size_t)1 << 30, &data, len) == CT_OK, "cannot read %s", path);
    return data;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ct__st_file *f = NULL, *g = NULL, *h = NULL;
    char *first, *second;
    size_t first_len, second_len;
    char one[512], two[512];
    int st = ct__st_open_buffer(data, size, "input", &f);
    if (st != CT_OK) {
        FZ_CHECK(st == CT_ERR_FORMAT && f == NULL, "open failed with %d", st);
        return 0;
    }
    walk(f);
    snprintf(one, sizeof one, "%s", fz_path("one.safetensors"));
    snprintf(two, sizeof two, "%s", fz_path("two.safetensors"));
    FZ_CHECK(save(f, one) == CT_OK, "a file the reader took cannot be saved");
    FZ_CHECK(ct__st_open(one, &g) == CT_OK, "what the writer wrote does not read back");
    same_content(f, g);
    FZ_CHECK(save(g, two) == CT_OK, "the saved copy cannot be saved");
    FZ_CHECK(ct__st_open(two, &h) == CT_OK, "the second copy does not read back");
    same_content(g, h);
    first = slurp(one, &first_len);
    second = slurp(two, &second_len);
    FZ_CHECK(first_len == second_len && memcmp(first, second, first_len) == 0,
             "saving the copy gave other bytes");
    free(first);
    free(second);
    ct__st_close(h);
    ct__st_close(g);
    ct__st_close(f);
    return 0;
}
