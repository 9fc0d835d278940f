/* Writing a parsed JSON value back out, indented like json.dumps(indent=2). */
#include "core/json.h"

static void newline(ct__strbuf *sb, int depth)
{
    ct__sb_printf(sb, "\n%*s", 2 * depth, "");
}

int ct__json_write_value(ct__strbuf *sb, const ct__json *v, int depth)
{
    size_t i;
    switch (v->type) {
    case CT_JSON_NULL: return ct__sb_puts(sb, "null");
    case CT_JSON_TRUE: return ct__sb_puts(sb, "true");
    case CT_JSON_FALSE: return ct__sb_puts(sb, "false");
    case CT_JSON_NUMBER: return ct__sb_append(sb, v->str, v->len);
    case CT_JSON_STRING: return ct__json_write_string(sb, v->str, v->len);
    case CT_JSON_ARRAY:
        if (v->n == 0)
            return ct__sb_puts(sb, "[]");
        ct__sb_puts(sb, "[");
        for (i = 0; i < v->n; i++) {
            if (i)
                ct__sb_puts(sb, ",");
            newline(sb, depth + 1);
            ct__json_write_value(sb, &v->items[i], depth + 1);
        }
        newline(sb, depth);
        return ct__sb_puts(sb, "]");
    case CT_JSON_OBJECT:
        if (v->n == 0)
            return ct__sb_puts(sb, "{}");
        ct__sb_puts(sb, "{");
        for (i = 0; i < v->n; i++) {
            if (i)
                ct__sb_puts(sb, ",");
            newline(sb, depth + 1);
            ct__json_write_string(sb, v->members[i].key, v->members[i].key_len);
            ct__sb_puts(sb, ": ");
            ct__json_write_value(sb, &v->members[i].value, depth + 1);
        }
        newline(sb, depth);
        return ct__sb_puts(sb, "}");
    }
    return CT_OK;
}
