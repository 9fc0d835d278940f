/* Tables of one dataset read from several files (a split's Parquet or
 * Arrow shards) joined into one, in file order. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "data/table.h"

ct_status ct__table_append(ct_table *dst, ct_table *src, const char *what)
{
    size_t first = dst->rows;
    long *to = calloc(src->cols ? src->cols : 1, sizeof *to);
    ct_value_type *types;
    if (!to)
        return ct__error(CT_ERR_NOMEM, "out of memory joining tables");
    for (size_t k = 0; k < src->cols; k++)
        if ((to[k] = ct__table_column(dst, src->names[k], strlen(src->names[k]))) < 0)
            goto nomem;
    for (size_t r = 0; r < src->rows; r++) {
        if (!ct__table_add_row(dst))
            goto nomem;
        for (size_t k = 0; k < src->cols; k++) {
            /* moved, not copied: the text and items change owner */
            dst->cells[to[k]][first + r] = src->cells[k][r];
            memset(&src->cells[k][r], 0, sizeof src->cells[k][r]);
        }
    }
    free(to);
    src->rows = 0;
    if (!(types = realloc(dst->types, (dst->cols ? dst->cols : 1) * sizeof *types)))
        return ct__error(CT_ERR_NOMEM, "out of memory joining tables");
    dst->types = types;
    ct__table_finish(dst);
    return ct__table_check_kinds(dst, what);
nomem:
    free(to);
    return ct__error(CT_ERR_NOMEM, "out of memory joining tables");
}
