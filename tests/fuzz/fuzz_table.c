/* libFuzzer harness: a data file through ct_table_load, as CSV (odd sizes)
 * or JSON (even), and every accessor over every cell: a loaded table is
 * rectangular, each cell's type is its column's (or null, or a list of
 * scalars), and its text is NUL-terminated at its length. */
#include "fuzz_table_walk.h"

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
    fz_walk_table(t, check_value, 0);
    ct_table_free(t);
    return 0;
}
