/* Parquet data files as the datasets library reads them (pyarrow): one
 * column per leaf of the schema, a struct's fields flattened to
 * "struct.field", LISTs of primitives as LIST cells; row groups one after
 * another. The footer and schema are parquet_meta.c's, the pages
 * parquet_pages.c's. */
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "data/parquet.h"

/* How much a file may make the table hold, per byte of the file: cells
 * and list items, and bytes of text. Honest files stay far below (a
 * constant column's page may hold 20,000 values in a few dozen bytes); a
 * hostile RLE run would claim billions. */
#define CELLS_PER_BYTE 1024
#define TEXT_PER_BYTE 1024
#define SLACK_CELLS ((size_t)1 << 16)
#define SLACK_TEXT ((size_t)1 << 24)

static size_t allowance(size_t len, size_t per_byte, size_t slack)
{
    return len > (SIZE_MAX - slack) / per_byte ? SIZE_MAX : len * per_byte + slack;
}

static ct_status add_columns(ct_table *t, const ct__pq_file *f)
{
    for (size_t k = 0; k < f->n_leaves; k++) {
        const char *name = f->leaves[k].name;
        long col = ct__table_column(t, name, strlen(name));
        if (col < 0)
            return ct__error(CT_ERR_NOMEM, "%s: out of memory", f->path);
        if ((size_t)col != k)
            return ct__error(CT_ERR_FORMAT, "%s: two columns are named '%s' (a struct's field "
                             "flattened onto another column's name)", f->path, name);
    }
    return CT_OK;
}

static ct_status read_group(ct_table *t, const ct__pq_file *f, size_t g, ct__pq_budget *budget)
{
    size_t rows = (size_t)f->groups[g].num_rows, base = t->rows, cols = f->n_leaves;
    ct_status st;
    /* every row costs a cell in every column, even a null one */
    if (rows > budget->cells / (cols ? cols : 1))
        return ct__error(CT_ERR_FORMAT, "%s: row group %zu claims %zu rows, more than a file "
                         "of %zu bytes can hold", f->path, g, rows, f->len);
    budget->cells -= rows * (cols ? cols : 1);
    for (size_t r = 0; r < rows; r++)
        if (!ct__table_add_row(t))
            return ct__error(CT_ERR_NOMEM, "%s: out of memory", f->path);
    for (size_t k = 0; k < cols; k++)
        if ((st = ct__pq_read_chunk(f, k, g, &t->cells[k][base], rows, budget)) != CT_OK)
            return st;
    return CT_OK;
}

ct_status ct__table_read_parquet(ct_table *t, const char *path, const char *bytes, size_t len)
{
    ct__pq_file f;
    ct__pq_budget budget = {allowance(len, CELLS_PER_BYTE, SLACK_CELLS),
                            allowance(len, TEXT_PER_BYTE, SLACK_TEXT)};
    ct_status st = ct__pq_open(&f, path, (const uint8_t *)bytes, len);
    if (st == CT_OK)
        st = add_columns(t, &f);
    for (size_t g = 0; st == CT_OK && g < f.n_groups; g++)
        st = read_group(t, &f, g, &budget);
    ct__pq_close(&f);
    return st;
}
