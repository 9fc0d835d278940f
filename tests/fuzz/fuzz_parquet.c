/* libFuzzer harness: a Parquet file through ct_table_load (footer, schema,
 * pages, codecs), and every accessor over every cell of what loads: a
 * rectangular table, each cell of its column's type (or null, or a list of
 * scalars), each text NUL-terminated at its length and, for strings,
 * UTF-8 as the reader promises. */
#include "fuzz_common.h"

static int is_utf8(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        size_t n = *p < 0x80 ? 1 : *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : *p >= 0xc2 ? 2 : 0;
        if (!n || (size_t)(end - p) < n)
            return 0;
        for (size_t i = 1; i < n; i++)
            if ((p[i] & 0xc0) != 0x80)
                return 0;
        p += n;
    }
    return 1;
}

static void check_value(ct_value_type type, const char *text, size_t len, const char *where)
{
    FZ_CHECK(type >= CT_VALUE_NULL && type <= CT_VALUE_LIST, "%s: type %d", where, (int)type);
    if (type == CT_VALUE_NULL || type == CT_VALUE_LIST) {
        FZ_CHECK(!text && len == 0, "%s: text on a null or a list", where);
        return;
    }
    FZ_CHECK(text && text[len] == '\0', "%s: text not terminated at its length", where);
    if (type == CT_VALUE_STRING)
        FZ_CHECK(is_utf8(text, len), "%s: a string that is not UTF-8", where);
    else
        FZ_CHECK(strlen(text) == len && len > 0, "%s: a number or boolean of %zu bytes", where,
                 len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_write("t.parquet", data, size);
    ct_table *t = NULL;
    if (ct_table_load(path, &t) != CT_OK) {
        FZ_CHECK(strncmp(ct_last_error(), path, strlen(path)) == 0,
                 "an error that does not name the file");
        return 0;
    }
    for (size_t k = 0; k < ct_table_columns(t); k++) {
        ct_value_type col = ct_table_column_type(t, k);
        size_t found = 0;
        FZ_CHECK(ct_table_column_index(t, ct_table_column_name(t, k), &found) == CT_OK &&
                     found == k, "column %zu not found by its name", k);
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
