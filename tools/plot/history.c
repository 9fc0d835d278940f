/* log_history to series (see history.h). Every field that is read is
 * checked for its type, and a problem names the entry and the field.
 *
 * The tree comes from the library's own JSON reader (lib/core/json.h), not
 * a second one: cputrain-plot is the one tool that uses an internal module,
 * linked from the static archive libcputrain.a with -Ilib (the shared
 * library keeps its ct__ symbols hidden; the Makefile rule says the same). */
#include "history.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The training curves, always first and in this order. */
static const char *const TRAIN_KEYS[] = {"loss", "learning_rate", "grad_norm"};

/* eval_* entries that time the evaluation rather than measure the model
 * (Trainer's speed_metrics and preparation timings): not drawn. */
static const char *const EVAL_TIMINGS[] = {"eval_runtime", "eval_samples_per_second",
                                           "eval_steps_per_second", "eval_model_preparation_time",
                                           "eval_jit_compilation_time"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The phrase for a found type in messages: "a number", "an array", "null". */
static const char *found(ct__json_type type)
{
    switch (type) {
    case CT_JSON_NULL: return "null";
    case CT_JSON_FALSE:
    case CT_JSON_TRUE: return "a boolean";
    case CT_JSON_NUMBER: return "a number";
    case CT_JSON_STRING: return "a string";
    case CT_JSON_ARRAY: return "an array";
    case CT_JSON_OBJECT: return "an object";
    }
    return "a value";
}

/* key[0..len) may hold a NUL (from \u0000): such a key is never a training
 * key or a timing, and is an eval metric when it starts with "eval_". */
static int plotted_key(const char *key, size_t len)
{
    if (strlen(key) != len)
        return len > 5 && memcmp(key, "eval_", 5) == 0;
    for (size_t i = 0; i < COUNT(TRAIN_KEYS); i++)
        if (strcmp(key, TRAIN_KEYS[i]) == 0)
            return 1;
    if (strncmp(key, "eval_", 5) != 0 || key[5] == '\0')
        return 0;
    for (size_t i = 0; i < COUNT(EVAL_TIMINGS); i++)
        if (strcmp(key, EVAL_TIMINGS[i]) == 0)
            return 0;
    return 1;
}

static plot_series *find_or_add(plot_history *h, const char *name)
{
    for (size_t i = 0; i < h->count; i++)
        if (strcmp(h->series[i].name, name) == 0)
            return &h->series[i];
    if (h->count == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 8;
        plot_series *grown = realloc(h->series, cap * sizeof *grown);
        if (grown == NULL)
            return NULL;
        h->series = grown;
        h->cap = cap;
    }
    memset(&h->series[h->count], 0, sizeof h->series[0]);
    if ((h->series[h->count].name = strdup(name)) == NULL)
        return NULL;
    return &h->series[h->count++];
}

static int append(plot_point **points, size_t *count, size_t *cap, plot_point p)
{
    if (*count == *cap) {
        size_t cap2 = *cap ? *cap * 2 : 16;
        plot_point *grown = realloc(*points, cap2 * sizeof *grown);
        if (grown == NULL)
            return -1;
        *points = grown;
        *cap = cap2;
    }
    (*points)[(*count)++] = p;
    return 0;
}

/* A member that must be a number when present (v, NULL when absent): 1 and
 * *out, 0 when absent, -1 (err set) otherwise. */
static int number_value(const ct__json *v, size_t i, const char *key, double *out, char *err,
                        size_t errlen)
{
    if (v == NULL)
        return 0;
    if (v->type != CT_JSON_NUMBER)
        return fail(err, errlen, "log_history[%zu].%s: expected a number, found %s", i, key,
                    found(v->type));
    *out = v->num;
    return 1;
}

static int number_field(const ct__json *entry, size_t i, const char *key, double *out,
                        char *err, size_t errlen)
{
    return number_value(ct__json_get(entry, key), i, key, out, err, errlen);
}

/* Whether members[k] is the last of its key (the one that counts when a key
 * is repeated, as with ct__json_get and Python's json); byte-wise, so a key
 * holding a NUL is compared whole. */
static int last_of_its_key(const ct__json *obj, size_t k)
{
    const ct__json_member *m = &obj->members[k];
    for (size_t j = obj->n; --j > k;)
        if (obj->members[j].key_len == m->key_len &&
            memcmp(obj->members[j].key, m->key, m->key_len) == 0)
            return 0;
    return 1;
}

/* The series name of a key: itself, or (malloc'd into *owned) with each NUL
 * as U+FFFD, so the name prints whole and is told apart from its prefix. */
static const char *series_name(const ct__json_member *m, char **owned)
{
    size_t nuls = m->key_len - strlen(m->key), o = 0;
    *owned = NULL;
    if (nuls == 0)
        return m->key;
    if ((*owned = malloc(m->key_len + 2 * nuls + 1)) == NULL)
        return NULL;
    for (size_t k = 0; k < m->key_len; k++) {
        if (m->key[k] != '\0') {
            (*owned)[o++] = m->key[k];
        } else {
            memcpy(*owned + o, "\xEF\xBF\xBD", 3);
            o += 3;
        }
    }
    (*owned)[o] = '\0';
    return *owned;
}

/* The value v of `key` (NULL when absent) into its series (or its skipped
 * values). */
static int add_value(plot_history *h, const ct__json *v, size_t i, const char *key,
                     plot_point p, char *err, size_t errlen)
{
    plot_series *s;
    int got = number_value(v, i, key, &p.value, err, errlen);
    if (got <= 0)
        return got;
    if ((s = find_or_add(h, key)) == NULL)
        return fail(err, errlen, "out of memory");
    if (isfinite(p.value) ? append(&s->points, &s->count, &s->cap, p)
                          : append(&s->skipped, &s->nskipped, &s->skipped_cap, p))
        return fail(err, errlen, "out of memory");
    return 0;
}

static int read_entry(const ct__json *entry, size_t i, plot_history *h, char *err,
                      size_t errlen)
{
    plot_point p;
    int has_value = 0, got;
    if (entry->type != CT_JSON_OBJECT)
        return fail(err, errlen, "log_history[%zu]: expected an object, found %s", i,
                    found(entry->type));
    /* Every entry's epoch counts, the final summary's (the run's end) too. */
    p.epoch = NAN;
    if (number_field(entry, i, "epoch", &p.epoch, err, errlen) < 0)
        return -1;
    if (!isnan(p.epoch) && !isfinite(p.epoch))
        return fail(err, errlen, "log_history[%zu].epoch: not a finite number", i);
    if (!isnan(p.epoch) && (isnan(h->last_epoch) || p.epoch > h->last_epoch))
        h->last_epoch = p.epoch;

    for (size_t k = 0; k < entry->n && !has_value; k++)
        has_value = plotted_key(entry->members[k].key, entry->members[k].key_len);
    if (!has_value)
        return 0; /* e.g. the final train_runtime / train_loss summary */

    got = number_field(entry, i, "step", &p.step, err, errlen);
    if (got < 0)
        return -1;
    if (got == 0)
        return fail(err, errlen, "log_history[%zu].step: missing (every logged value needs one)",
                    i);
    if (!isfinite(p.step))
        return fail(err, errlen, "log_history[%zu].step: not a finite number", i);

    /* The training values by name, then the eval metrics in entry order;
     * a key written twice counts once, with its last value. */
    for (size_t t = 0; t < COUNT(TRAIN_KEYS); t++)
        if (add_value(h, ct__json_get(entry, TRAIN_KEYS[t]), i, TRAIN_KEYS[t], p, err,
                      errlen) != 0)
            return -1;
    for (size_t k = 0; k < entry->n; k++) {
        const ct__json_member *m = &entry->members[k];
        const char *name;
        char *owned;
        int rc;
        if (strncmp(m->key, "eval_", 5) != 0 || !plotted_key(m->key, m->key_len) ||
            !last_of_its_key(entry, k))
            continue;
        if ((name = series_name(m, &owned)) == NULL)
            return fail(err, errlen, "out of memory");
        rc = add_value(h, &m->value, i, name, p, err, errlen);
        free(owned);
        if (rc != 0)
            return -1;
    }
    if (isnan(h->first_step) || p.step < h->first_step)
        h->first_step = p.step;
    if (isnan(h->last_step) || p.step > h->last_step)
        h->last_step = p.step;
    return 0;
}

/* The training curves first in TRAIN_KEYS' order (an evaluation at step 0
 * would otherwise come first), then the eval metrics as they appeared. */
static size_t rank_of(const plot_series *s, size_t index)
{
    for (size_t i = 0; i < COUNT(TRAIN_KEYS); i++)
        if (strcmp(s->name, TRAIN_KEYS[i]) == 0)
            return i;
    return COUNT(TRAIN_KEYS) + index;
}

static void order_series(plot_history *h)
{
    /* Insertion sort on (rank, first appearance): stable, and a handful. */
    size_t *rank = malloc((h->count ? h->count : 1) * sizeof *rank);
    if (rank == NULL)
        return; /* the order is cosmetic */
    for (size_t i = 0; i < h->count; i++)
        rank[i] = rank_of(&h->series[i], i);
    for (size_t i = 1; i < h->count; i++) {
        plot_series s = h->series[i];
        size_t r = rank[i], j = i;
        for (; j > 0 && rank[j - 1] > r; j--) {
            h->series[j] = h->series[j - 1];
            rank[j] = rank[j - 1];
        }
        h->series[j] = s;
        rank[j] = r;
    }
    free(rank);
}

int plot_history_read(const ct__json *state, plot_history *out, char *err, size_t errlen)
{
    const ct__json *log;
    memset(out, 0, sizeof *out);
    out->first_step = out->last_step = out->last_epoch = NAN;
    if (state->type != CT_JSON_OBJECT)
        return fail(err, errlen, "expected a JSON object at the top, found %s",
                    found(state->type));
    if ((log = ct__json_get(state, "log_history")) == NULL)
        return fail(err, errlen, "log_history: missing (is this a trainer_state.json?)");
    if (log->type != CT_JSON_ARRAY)
        return fail(err, errlen, "log_history: expected an array, found %s", found(log->type));
    if (log->n == 0)
        return fail(err, errlen, "log_history: empty, nothing to plot (did the run log at all? "
                                 "it logs every logging_steps steps)");
    out->entries = log->n;
    for (size_t i = 0; i < log->n; i++) {
        if (read_entry(&log->items[i], i, out, err, errlen) != 0) {
            plot_history_free(out);
            return -1;
        }
    }
    order_series(out);
    if (out->count == 0) {
        size_t n = log->n;
        plot_history_free(out);
        return fail(err, errlen, "log_history: none of its %zu entr%s holds loss, learning_rate, "
                                 "grad_norm or an eval_* metric",
                    n, n == 1 ? "y" : "ies");
    }
    return 0;
}

void plot_history_free(plot_history *h)
{
    for (size_t i = 0; i < h->count; i++) {
        free(h->series[i].name);
        free(h->series[i].points);
        free(h->series[i].skipped);
    }
    free(h->series);
    memset(h, 0, sizeof *h);
    h->first_step = h->last_step = h->last_epoch = NAN;
}

size_t plot_history_skipped(const plot_history *h)
{
    size_t n = 0;
    for (size_t i = 0; i < h->count; i++)
        n += h->series[i].nskipped;
    return n;
}
