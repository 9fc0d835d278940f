/* log_history to series (see history.h), through the library's reader of
 * trainer_state.json (ct_trainer_state_*, the public API): every value
 * that is drawn is checked for its type, and a problem names the file, the
 * entry and the field. */
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

/* Key k of entry i as a series name: itself, or (malloc'd into *owned) with
 * each NUL as U+FFFD, so the name prints whole and is told apart from its
 * prefix. NULL when out of memory. */
static const char *series_name(const char *key, size_t len, char **owned)
{
    size_t nuls = len - strlen(key), o = 0;
    *owned = NULL;
    if (nuls == 0)
        return key;
    if ((*owned = malloc(len + 2 * nuls + 1)) == NULL)
        return NULL;
    for (size_t k = 0; k < len; k++) {
        if (key[k] != '\0') {
            (*owned)[o++] = key[k];
        } else {
            memcpy(*owned + o, "\xEF\xBF\xBD", 3);
            o += 3;
        }
    }
    (*owned)[o] = '\0';
    return *owned;
}

/* A field that must be a number when present: 1 and *out, 0 when absent,
 * -1 (err set: the library's text, naming the file, entry and key). */
static int number_field(const ct_trainer_state *s, size_t i, const char *key, double *out,
                        char *err, size_t errlen)
{
    ct_status st = ct_trainer_state_log_get(s, i, key, out);
    if (st == CT_ERR_NOT_FOUND)
        return 0;
    if (st != CT_OK)
        return fail(err, errlen, "%s", ct_last_error());
    return 1;
}

/* A value (its ok from number_field) into its series, or its skipped
 * values. */
static int add_point(plot_history *h, const char *name, plot_point p, char *err, size_t errlen)
{
    plot_series *s;
    if ((s = find_or_add(h, name)) == NULL)
        return fail(err, errlen, "out of memory");
    if (isfinite(p.value) ? append(&s->points, &s->count, &s->cap, p)
                          : append(&s->skipped, &s->nskipped, &s->skipped_cap, p))
        return fail(err, errlen, "out of memory");
    return 0;
}

static int read_entry(const ct_trainer_state *s, const char *path, size_t i, plot_history *h,
                      char *err, size_t errlen)
{
    size_t nkeys = ct_trainer_state_log_key_count(s, i);
    plot_point p;
    int has_value = 0, got;
    /* Every entry's epoch counts, the final summary's (the run's end) too. */
    p.epoch = NAN;
    if (number_field(s, i, "epoch", &p.epoch, err, errlen) < 0)
        return -1;
    if (!isnan(p.epoch) && !isfinite(p.epoch))
        return fail(err, errlen, "%s: log_history[%zu].epoch: not a finite number", path, i);
    if (!isnan(p.epoch) && (isnan(h->last_epoch) || p.epoch > h->last_epoch))
        h->last_epoch = p.epoch;

    for (size_t k = 0; k < nkeys && !has_value; k++) {
        size_t len;
        const char *key = ct_trainer_state_log_key(s, i, k, &len);
        has_value = plotted_key(key, len);
    }
    if (!has_value)
        return 0; /* e.g. the final train_runtime / train_loss summary */

    got = number_field(s, i, "step", &p.step, err, errlen);
    if (got < 0)
        return -1;
    if (got == 0)
        return fail(err, errlen,
                    "%s: log_history[%zu].step: missing (every logged value needs one)", path, i);
    if (!isfinite(p.step))
        return fail(err, errlen, "%s: log_history[%zu].step: not a finite number", path, i);

    /* The training values by name, then the eval metrics in entry order
     * (a key written twice is one key, with its last value). */
    for (size_t t = 0; t < COUNT(TRAIN_KEYS); t++) {
        got = number_field(s, i, TRAIN_KEYS[t], &p.value, err, errlen);
        if (got < 0 || (got > 0 && add_point(h, TRAIN_KEYS[t], p, err, errlen) != 0))
            return -1;
    }
    for (size_t k = 0; k < nkeys; k++) {
        size_t len;
        const char *key = ct_trainer_state_log_key(s, i, k, &len), *name;
        char *owned;
        int rc;
        if (strncmp(key, "eval_", 5) != 0 || !plotted_key(key, len))
            continue;
        if (ct_trainer_state_log_value(s, i, k, &p.value) != CT_OK)
            return fail(err, errlen, "%s", ct_last_error());
        if ((name = series_name(key, len, &owned)) == NULL)
            return fail(err, errlen, "out of memory");
        rc = add_point(h, name, p, err, errlen);
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

int plot_history_read(const ct_trainer_state *state, const char *path, plot_history *out,
                      char *err, size_t errlen)
{
    size_t n = ct_trainer_state_log_count(state);
    memset(out, 0, sizeof *out);
    out->first_step = out->last_step = out->last_epoch = NAN;
    if (n == 0)
        return fail(err, errlen, "%s: log_history: empty, nothing to plot (did the run log at "
                                 "all? it logs every logging_steps steps)", path);
    out->entries = n;
    for (size_t i = 0; i < n; i++) {
        if (read_entry(state, path, i, out, err, errlen) != 0) {
            plot_history_free(out);
            return -1;
        }
    }
    order_series(out);
    if (out->count == 0) {
        plot_history_free(out);
        return fail(err, errlen, "%s: log_history: none of its %zu entr%s holds loss, "
                                 "learning_rate, grad_norm or an eval_* metric",
                    path, n, n == 1 ? "y" : "ies");
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
