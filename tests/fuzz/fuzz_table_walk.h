/* The walk the table harnesses share (fuzz_table, fuzz_parquet,
 * fuzz_arrow): every accessor over every cell of a loaded table. It must
 * be rectangular, each cell of its column's type (or null, or a list of
 * scalars), each column found by its name — at its own index when names
 * are unique (Parquet, Arrow), else at or before it (a CSV header may
 * repeat one) — and nothing past the ends; each value passes the
 * harness's own check_value. */
#ifndef FUZZ_TABLE_WALK_H
#define FUZZ_TABLE_WALK_H

#include "fuzz_common.h"

typedef void (*fz_value_check)(ct_value_type type, const char *text, size_t len,
                               const char *where);

static inline void fz_walk_table(const ct_table *t, fz_value_check check_value, int unique_names)
{
    for (size_t k = 0; k < ct_table_columns(t); k++) {
        ct_value_type col = ct_table_column_type(t, k);
        size_t found = 0;
        FZ_CHECK(ct_table_column_index(t, ct_table_column_name(t, k), &found) == CT_OK &&
                     (unique_names ? found == k : found <= k),
                 "column %zu not found by its name", k);
        for (size_t r = 0; r < ct_table_rows(t); r++) {
            const char *text;
            size_t len;
            ct_value_type type = ct_table_cell(t, r, k, &text, &len);
            check_value(type, text, len, "cell");
            FZ_CHECK(type == CT_VALUE_NULL || type == col ||
                         (col == CT_VALUE_FLOAT && type == CT_VALUE_INT),
                     "cell (%zu, %zu) is a %d in a column of %d", r, k, (int)type, (int)col);
            for (size_t i = 0; i < ct_table_list_size(t, r, k); i++) {
                type = ct_table_list_item(t, r, k, i, &text, &len);
                check_value(type, text, len, "item");
                FZ_CHECK(type != CT_VALUE_LIST, "a list in a list");
            }
        }
        FZ_CHECK(ct_table_cell(t, ct_table_rows(t), k, NULL, NULL) == CT_VALUE_NULL,
                 "a cell past the last row");
    }
    FZ_CHECK(ct_table_column_name(t, ct_table_columns(t)) == NULL, "a column past the last");
}

#endif
