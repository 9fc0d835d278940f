/* libFuzzer harness: a data file through ct_table_load, as CSV (odd sizes)
 * or JSON (even), and every accessor over every cell: a loaded table is
 * rectangular, each cell's type is its column's (or null, or a list of
 * scalars), and its text is NUL-terminated at its length. */
#include "fuzz_common.h"

static void check_value(ct_value_type type, const char *text, size_t len, const char *where)
{
    FZ_CHECK(type >= CT_VALUE_NULL && type <= CT_VALUE_LIST, "%s: type %d", where, (int)type);
    if (type == CT_VALUE_NULL || type == CT_VALUE_LIST)
        FZ_CHECK(!text && len == 0, "%s: text on a null or a list", where);
    else
        FZ_CHECK(text && text[len] == '\0', "%s: text not terminated at its length", where);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_write(size % 2 ? "t.csv" : "t.jsonl", data, size);
    ct_table *t = NULL;
    if (ct_table_load(path, &t) != CT_OK)
        return 0; /* refused, with the reason in ct_last_error */
    for (size_t k = 0; k < ct_table_columns(t); k++) {
        ct_value_type col = ct_table_column_type(t, k);
        size_t found = 0;
        FZ_CHECK(ct_table_column_index(t, ct_table_column_name(t, k), &found) == CT_OK &&
                     found <= k, "column %zu not found by its name", k);
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
    ct_table_free(t);
    return 0;
}
