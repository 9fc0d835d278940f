/* libFuzzer harness: a Parquet file through ct_table_load (footer, schema,
 * pages, codecs), and every accessor over every cell of what loads: a
 * rectangular table, each cell of its column's type (or null, or a list of
 * scalars), each text NUL-terminated at its length and, for strings,
 * UTF-8 as the reader promises. */
#include "fuzz_table_walk.h"

#include "core/utf8.h"

static void check_value(ct_value_type type, const char *text, size_t len, const char *where)
{
    FZ_CHECK(type >= CT_VALUE_NULL && type <= CT_VALUE_LIST, "%s: type %d", where, (int)type);
    if (type == CT_VALUE_NULL || type == CT_VALUE_LIST) {
        FZ_CHECK(!text && len == 0, "%s: text on a null or a list", where);
        return;
    }
    FZ_CHECK(text && text[len] == '\0', "%s: text not terminated at its length", where);
    if (type == CT_VALUE_STRING)
        FZ_CHECK(ct__utf8_valid_prefix(text, len, NULL) == len, "%s: a string that is not UTF-8",
                 where);
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
    fz_walk_table(t, check_value, 1);
    ct_table_free(t);
    return 0;
}
