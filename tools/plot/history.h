/* The series cputrain-plot draws, taken from trainer_state.json's
 * log_history: training loss, learning_rate and grad_norm, then every eval_*
 * metric (not its timings) in the order they first appear, each against the
 * entry's step. Non-finite values are kept apart, to be reported. */
#ifndef CPUTRAIN_PLOT_HISTORY_H
#define CPUTRAIN_PLOT_HISTORY_H

#include <cputrain/cputrain.h>

#include <stddef.h>

typedef struct plot_point {
    double step, value, epoch; /* epoch NaN when the entry has none */
} plot_point;

typedef struct plot_series {
    char *name;
    plot_point *points; /* finite values, in log order */
    size_t count, cap;
    plot_point *skipped; /* NaN / Infinity values, left out of the curve */
    size_t nskipped, skipped_cap;
} plot_series;

typedef struct plot_history {
    plot_series *series;
    size_t count, cap;
    size_t entries;               /* log_history's length */
    double first_step, last_step; /* over the entries with a plotted value */
    double last_epoch;            /* over all entries; NaN when none has one */
} plot_history;

/* Fill *out from a run's trainer_state.json (read from `path` by
 * ct_trainer_state_load). Returns 0, or -1 with the file, field and problem
 * ("PATH: log_history[3].loss: expected a number, found a string") in err;
 * *out is then empty. An empty log_history, or one with nothing to plot,
 * is an error too. */
int plot_history_read(const ct_trainer_state *state, const char *path, plot_history *out,
                      char *err, size_t errlen);
void plot_history_free(plot_history *h);

/* Values left out of every series (non-finite). */
size_t plot_history_skipped(const plot_history *h);

#endif
