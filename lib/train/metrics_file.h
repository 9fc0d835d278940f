/* Internal: Trainer.save_metrics — <split>_results.json and the merged
 * all_results.json of output_dir. */
#ifndef CT_TRAIN_METRICS_FILE_H
#define CT_TRAIN_METRICS_FILE_H

#include <stddef.h>

#include <cputrain/cputrain.h>

#include "core/error.h"

/* One metric: its name, value, and whether the JSON holds it as an
 * integer ("train_samples": 88). */
typedef struct ct__metric {
    const char *name;
    double value;
    int is_int;
} ct__metric;

/* Write dir/<split>_results.json (json.dump(metrics, indent=4,
 * sort_keys=True)) and merge the metrics into dir/all_results.json, whose
 * other entries stay as they were (save_metrics(combined=True)). An
 * all_results.json that is not a JSON object is an error naming it, and is
 * left alone. */
ct_status ct__save_metrics(const char *dir, const char *split, const ct__metric *m,
                           size_t n) CT__MUST_USE;

#endif
