/* libFuzzer harness: an Arrow IPC stream or file through ct_table_load
 * ("t.arrow"), and every accessor over every cell: a loaded table is
 * rectangular, each cell's type is its column's (or null, or a list of
 * scalars), its text NUL-terminated at its length and what its type says:
 * a string valid UTF-8, a boolean "true" or "false", an integer decimal
 * digits that fit int64, a float a number (or nan, inf, -inf). */
#include <errno.h>

#include "fuzz_table_walk.h"

#include "core/utf8.h"

static int is_int_text(const char *text, size_t len)
{
    char *end;
    errno = 0;
    (void)strtoll(text, &end, 10);
    return len > 0 && errno == 0 && end == text + len;
}

static int is_float_text(const char *text, size_t len)
{
    char *end;
    (void)strtod(text, &end);
    return len > 0 && end == text + len;
}

static void check_value(ct_value_type type, const char *text, size_t len, const char *where)
{
    FZ_CHECK(type >= CT_VALUE_NULL && type <= CT_VALUE_LIST, "%s: type %d", where, (int)type);
    if (type == CT_VALUE_NULL || type == CT_VALUE_LIST) {
        FZ_CHECK(!text && len == 0, "%s: text on a null or a list", where);
        return;
    }
    FZ_CHECK(text && text[len] == '\0', "%s: text not terminated at its length", where);
    switch (type) {
    case CT_VALUE_STRING:
        FZ_CHECK(ct__utf8_valid_prefix(text, len, NULL) == len, "%s: a string not UTF-8", where);
        break;
    case CT_VALUE_BOOL:
        FZ_CHECK(!strcmp(text, "true") || !strcmp(text, "false"), "%s: boolean '%s'", where, text);
        break;
    case CT_VALUE_INT:
        FZ_CHECK(is_int_text(text, len), "%s: integer '%s'", where, text);
        break;
    default:
        FZ_CHECK(is_float_text(text, len), "%s: float '%s'", where, text);
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_write("t.arrow", data, size);
    ct_table *t = NULL;
    if (ct_table_load(path, &t) != CT_OK) {
        FZ_CHECK(strncmp(ct_last_error(), path, strlen(path)) == 0,
                 "a refusal that does not name the file");
        return 0;
    }
    fz_walk_table(t, check_value, 1);
    ct_table_free(t);
    return 0;
}
