/* SQuAD examples from a table of `datasets`' flat records — columns id,
 * title, context, question and the answers struct flattened to
 * answers.text / answers.answer_start, as the Hub's Parquet files and the
 * datasets cache's Arrow files hold SQuAD — written as the JSON lines
 * `datasets` would write and read by the JSON-lines reader, so one set of
 * rules checks every form. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "data/squad.h"

static const char *const COLUMNS[] = {"id", "context", "question", "answers.text",
                                      "answers.answer_start"};

/* A cell as JSON: strings quoted, numbers and booleans as read, lists as
 * arrays, null as null. */
static void write_cell(ct__strbuf *sb, const ct_table *t, size_t row, size_t col)
{
    const char *text;
    size_t len, n = ct_table_list_size(t, row, col);
    ct_value_type type = ct_table_cell(t, row, col, &text, &len);
    if (type == CT_VALUE_LIST) {
        ct__sb_puts(sb, "[");
        for (size_t i = 0; i < n; i++) {
            ct_value_type item = ct_table_list_item(t, row, col, i, &text, &len);
            ct__sb_puts(sb, i ? ", " : "");
            if (item == CT_VALUE_STRING)
                ct__json_write_string(sb, text, len);
            else
                ct__sb_append(sb, text ? text : "null", text ? len : 4);
        }
        ct__sb_puts(sb, "]");
    } else if (type == CT_VALUE_STRING)
        ct__json_write_string(sb, text, len);
    else
        ct__sb_append(sb, text ? text : "null", text ? len : 4);
}

ct_status ct_squad_from_table(const ct_table *t, const char *what, ct_squad **out)
{
    size_t col[5], title = 0, len;
    int has_title;
    ct__strbuf sb = {0};
    char *text;
    ct_status st;
    CT__CHECK_ARG(out);
    *out = NULL;
    CT__CHECK_ARG(t);
    if (!what)
        what = "table";
    for (size_t k = 0; k < 5; k++)
        if (ct_table_column_index(t, COLUMNS[k], &col[k]) != CT_OK)
            return ct__error(CT_ERR_FORMAT, "%s: no column '%s' (SQuAD's are id, title, "
                                            "context, question, answers.text, "
                                            "answers.answer_start)", what, COLUMNS[k]);
    has_title = ct_table_column_index(t, "title", &title) == CT_OK;
    for (size_t r = 0; r < ct_table_rows(t); r++) {
        ct__sb_puts(&sb, "{\"id\": ");
        write_cell(&sb, t, r, col[0]);
        ct__sb_puts(&sb, ", \"title\": ");
        if (has_title)
            write_cell(&sb, t, r, title);
        else
            ct__sb_puts(&sb, "\"\"");
        ct__sb_puts(&sb, ", \"context\": ");
        write_cell(&sb, t, r, col[1]);
        ct__sb_puts(&sb, ", \"question\": ");
        write_cell(&sb, t, r, col[2]);
        ct__sb_puts(&sb, ", \"answers\": {\"text\": ");
        write_cell(&sb, t, r, col[3]);
        ct__sb_puts(&sb, ", \"answer_start\": ");
        write_cell(&sb, t, r, col[4]);
        ct__sb_puts(&sb, "}}\n");
    }
    len = sb.len;
    if ((st = ct__sb_finish(&sb, what, &text)) != CT_OK)
        return st;
    /* line N of the text is row N - 1 of the table */
    st = ct__squad_parse(what, text, len, 1, out);
    free(text);
    return st;
}
