/* ct_trainer_state_*: a run's trainer_state.json read back, as untrusted
 * input, for the programs that look at a run (cputrain-plot) rather than
 * resume it (the Trainer reads its own checkpoints in checkpoint.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cputrain/cputrain.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/json.h"

/* Far above a real file (millions of log entries), far below memory. */
#define MAX_STATE_BYTES ((size_t)1 << 30)

/* One log entry as a dict: key k is members[first[k]].key, its value
 * members[last[k]].value. */
typedef struct entry_keys {
    size_t n;
    size_t *first, *last;
} entry_keys;

struct ct_trainer_state {
    char *path;
    ct__json_doc *doc;
    const ct__json *root, *log;
    entry_keys *entries; /* log->n of them */
};

/* key[0..len) for a message, each NUL written as \u0000. */
static void key_text(char *out, size_t size, const char *key, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 7 < size; i++) {
        if (key[i] != '\0') {
            out[o++] = key[i];
        } else {
            memcpy(out + o, "\\u0000", 6);
            o += 6;
        }
    }
    out[o] = '\0';
}

static int same_key(const ct__json_member *a, const ct__json_member *b)
{
    return a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0;
}

/* Member indices by (key, position): a repeated key's uses become neighbours
 * in O(n log n), whatever a hostile file repeats. */
static int by_key_then_index(const void *pa, const void *pb, void *ctx)
{
    const ct__json *obj = ctx;
    size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
    const ct__json_member *ma = &obj->members[a], *mb = &obj->members[b];
    size_t n = ma->key_len < mb->key_len ? ma->key_len : mb->key_len;
    int c = memcmp(ma->key, mb->key, n);
    if (c == 0 && ma->key_len != mb->key_len)
        c = ma->key_len < mb->key_len ? -1 : 1;
    return c != 0 ? c : a < b ? -1 : a > b;
}

static int by_first(const void *pa, const void *pb, void *ctx)
{
    const size_t *first = ctx;
    size_t a = first[*(const size_t *)pa], b = first[*(const size_t *)pb];
    return a < b ? -1 : a > b;
}

/* The dict view of one object: distinct keys in first-appearance order. */
static ct_status index_entry(const ct__json *obj, entry_keys *e)
{
    size_t n = obj->n, groups = 0, *order, *first, *last, *rank;
    if (n == 0)
        return CT_OK;
    order = malloc(n * sizeof *order);
    first = malloc(n * sizeof *first);
    last = malloc(n * sizeof *last);
    rank = malloc(n * sizeof *rank);
    if (!order || !first || !last || !rank) {
        free(order), free(first), free(last), free(rank);
        return ct__error(CT_ERR_NOMEM, "out of memory indexing trainer_state.json");
    }
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    qsort_r(order, n, sizeof *order, by_key_then_index, (void *)obj);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || !same_key(&obj->members[order[i]], &obj->members[order[i - 1]]))
            first[groups++] = order[i];
        last[groups - 1] = order[i];
    }
    /* back into the order the keys first appear */
    for (size_t g = 0; g < groups; g++)
        rank[g] = g;
    qsort_r(rank, groups, sizeof *rank, by_first, first);
    e->n = groups;
    e->first = order; /* reused: groups <= n */
    e->last = malloc(groups * sizeof *e->last);
    if (!e->last) {
        free(order), free(first), free(last), free(rank);
        e->first = NULL;
        e->n = 0;
        return ct__error(CT_ERR_NOMEM, "out of memory indexing trainer_state.json");
    }
    for (size_t g = 0; g < groups; g++) {
        e->first[g] = first[rank[g]];
        e->last[g] = last[rank[g]];
    }
    free(first), free(last), free(rank);
    return CT_OK;
}

void ct_trainer_state_free(ct_trainer_state *s)
{
    if (!s)
        return;
    if (s->entries)
        for (size_t i = 0; i < s->log->n; i++) {
            free(s->entries[i].first);
            free(s->entries[i].last);
        }
    free(s->entries);
    ct__json_free(s->doc);
    free(s->path);
    free(s);
}

static ct_status check_shape(ct_trainer_state *s)
{
    const ct__json *log;
    if (s->root->type != CT_JSON_OBJECT)
        return ct__error(CT_ERR_FORMAT, "%s: expected a JSON object at the top, found %s",
                         s->path, ct__json_type_phrase(s->root->type));
    if (!(log = ct__json_get(s->root, "log_history")))
        return ct__error(CT_ERR_FORMAT, "%s: log_history: missing (is this a "
                                        "trainer_state.json?)", s->path);
    if (log->type != CT_JSON_ARRAY)
        return ct__error(CT_ERR_FORMAT, "%s: log_history: expected an array, found %s",
                         s->path, ct__json_type_phrase(log->type));
    for (size_t i = 0; i < log->n; i++)
        if (log->items[i].type != CT_JSON_OBJECT)
            return ct__error(CT_ERR_FORMAT, "%s: log_history[%zu]: expected an object, found %s",
                             s->path, i, ct__json_type_phrase(log->items[i].type));
    s->log = log;
    return CT_OK;
}

ct_status ct_trainer_state_load(const char *path, ct_trainer_state **out)
{
    ct_trainer_state *s;
    char *text = NULL;
    size_t len;
    ct_status st;
    CT__CHECK_ARG(path);
    CT__CHECK_ARG(out);
    *out = NULL;
    if (!(s = calloc(1, sizeof *s)))
        return ct__error(CT_ERR_NOMEM, "out of memory reading %s", path);
    if ((st = ct__file_or_folder(path, "trainer_state.json", &s->path, NULL)) != CT_OK ||
        (st = ct__read_file(s->path, MAX_STATE_BYTES, &text, &len)) != CT_OK)
        goto fail;
    st = ct__json_parse_ex(text, len, s->path, CT__JSON_ALLOW_NAN, &s->doc);
    free(text);
    if (st == CT_ERR_FORMAT) {
        char why[1024];
        snprintf(why, sizeof why, "%s", ct_last_error());
        st = ct__error(CT_ERR_FORMAT, "malformed JSON: %s", why);
    }
    if (st != CT_OK)
        goto fail;
    s->root = ct__json_root(s->doc);
    if ((st = check_shape(s)) != CT_OK)
        goto fail;
    if (s->log->n && !(s->entries = calloc(s->log->n, sizeof *s->entries))) {
        st = ct__error(CT_ERR_NOMEM, "out of memory reading %s", s->path);
        goto fail;
    }
    for (size_t i = 0; i < s->log->n; i++)
        if ((st = index_entry(&s->log->items[i], &s->entries[i])) != CT_OK)
            goto fail;
    *out = s;
    return CT_OK;
fail:
    ct_trainer_state_free(s);
    return st;
}

/* v as a number, or the error naming `where` (a field or an entry's key). */
static ct_status number(const ct_trainer_state *s, const ct__json *v, const char *where,
                        double *value)
{
    if (v->type != CT_JSON_NUMBER)
        return ct__error(CT_ERR_FORMAT, "%s: %s: expected a number, found %s", s->path, where,
                         ct__json_type_phrase(v->type));
    if (value)
        *value = v->num;
    return CT_OK;
}

ct_status ct_trainer_state_get_number(const ct_trainer_state *s, const char *key,
                                      double *value)
{
    const ct__json *v;
    CT__CHECK_ARG(s);
    CT__CHECK_ARG(key);
    if (!(v = ct__json_get(s->root, key)) || v->type == CT_JSON_NULL)
        return ct__error(CT_ERR_NOT_FOUND, "%s: %s: %s", s->path, key, v ? "null" : "absent");
    return number(s, v, key, value);
}

size_t ct_trainer_state_log_count(const ct_trainer_state *s)
{
    return s ? s->log->n : 0;
}

size_t ct_trainer_state_log_key_count(const ct_trainer_state *s, size_t entry)
{
    return s && entry < s->log->n ? s->entries[entry].n : 0;
}

const char *ct_trainer_state_log_key(const ct_trainer_state *s, size_t entry, size_t k,
                                     size_t *len)
{
    const ct__json_member *m;
    if (!s || entry >= s->log->n || k >= s->entries[entry].n)
        return NULL;
    m = &s->log->items[entry].members[s->entries[entry].first[k]];
    if (len)
        *len = m->key_len;
    return m->key;
}

ct_status ct_trainer_state_log_value(const ct_trainer_state *s, size_t entry, size_t k,
                                     double *value)
{
    const ct__json *obj;
    const ct__json_member *m;
    char where[320], key[256];
    CT__CHECK_ARG(s);
    if (entry >= s->log->n || k >= s->entries[entry].n)
        return ct__error(CT_ERR_INVALID_ARG, "%s: log_history[%zu] key %zu: past the end "
                                             "(%zu entries)", s->path, entry, k, s->log->n);
    obj = &s->log->items[entry];
    m = &obj->members[s->entries[entry].last[k]];
    key_text(key, sizeof key, m->key, m->key_len);
    snprintf(where, sizeof where, "log_history[%zu].%s", entry, key);
    return number(s, &m->value, where, value);
}

ct_status ct_trainer_state_log_get(const ct_trainer_state *s, size_t entry, const char *key,
                                   double *value)
{
    size_t len;
    CT__CHECK_ARG(s);
    CT__CHECK_ARG(key);
    if (entry >= s->log->n)
        return ct__error(CT_ERR_INVALID_ARG, "%s: log_history[%zu]: past the end (%zu entries)",
                         s->path, entry, s->log->n);
    len = strlen(key);
    for (size_t k = 0; k < s->entries[entry].n; k++) {
        size_t klen;
        const char *name = ct_trainer_state_log_key(s, entry, k, &klen);
        if (klen == len && memcmp(name, key, len) == 0)
            return ct_trainer_state_log_value(s, entry, k, value);
    }
    return ct__error(CT_ERR_NOT_FOUND, "%s: log_history[%zu].%s: absent", s->path, entry, key);
}
