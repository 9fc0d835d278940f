/* Internal: the ct_table handle, built by the CSV, JSON, Parquet and Arrow
 * readers. Cells are kept column by column, so that a JSON key first seen
 * in a later record adds a column without moving the others. */
#ifndef CT_DATA_TABLE_H
#define CT_DATA_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include <cputrain/cputrain.h>

/* Names (bytes without NUL) to size_t values in a hash table keyed per map
 * (table_names.c), so that a file's names cannot be chosen to collide:
 * finding a column, or one of a header's names, costs the same with
 * 20000 columns as with 2. A zeroed map is empty and ready. */
typedef struct ct__name_slot ct__name_slot;
typedef struct ct__name_map {
    ct__name_slot *slots; /* [cap], cap a power of two; NULL until the first put */
    size_t cap, used;
    uint64_t key;
} ct__name_map;

/* The value of name[0..len), NULL when the map does not hold it. */
size_t *ct__name_map_find(const ct__name_map *m, const char *name, size_t len);
/* The value of name[0..len), added as 0 (the map keeps a copy of the name)
 * when new; NULL when out of memory. The pointer lasts until the next put. */
size_t *ct__name_map_put(ct__name_map *m, const char *name, size_t len);
void ct__name_map_free(ct__name_map *m);

typedef struct ct__cell {
    ct_value_type type;
    char *text;              /* owned, NUL-terminated; NULL for null and lists */
    size_t len;
    struct ct__cell *items;  /* LIST: n items (scalars) */
    size_t n;
} ct__cell;

struct ct_table {
    size_t rows, cols, cap;  /* cap: rows each column has room for */
    size_t col_cap;          /* columns names and cells have room for */
    char **names;            /* [cols] */
    ct_value_type *types;    /* [cols], set by ct__table_finish */
    ct_value_type empty_type; /* of a column holding only nulls (CSV: FLOAT, as NaN) */
    ct__cell **cells;        /* [cols][cap] */
    ct__name_map index;      /* name -> column */
};

/* The column named name[0..len) (no NUL byte in it: the caller refuses
 * such a name), added (null in every row so far) when new; -1 when out of
 * memory. */
long ct__table_column(ct_table *t, const char *name, size_t len);
/* Room for one more row (null in every column); 0 when out of memory. */
int ct__table_add_row(ct_table *t);
/* A scalar's text copied into *c (type as given). 0 when out of memory. */
int ct__table_set_text(ct__cell *c, ct_value_type type, const char *text, size_t len);
/* Free what a cell holds and make it null. */
void ct__table_clear(ct__cell *c);
/* Every column's type from its values (see ct_table_column_type). */
void ct__table_finish(ct_table *t);
/* CT_ERR_FORMAT naming `what`, the column and two records when a column
 * holds values of two kinds (strings, lists, booleans, numbers: integers
 * and floats are one kind), which no column type describes; the same for
 * the items of its lists. */
ct_status ct__table_check_kinds(const ct_table *t, const char *what);
/* src's rows moved under dst's, columns matched by name (a column only one
 * of them has is null in the other's rows), types found again; src keeps
 * no rows. CT_ERR_NOMEM (dst then holds a prefix of the rows), or
 * CT_ERR_FORMAT naming `what` when a column then mixes kinds
 * (ct__table_check_kinds: shards that disagree). */
ct_status ct__table_append(ct_table *dst, ct_table *src, const char *what);

ct_status ct__table_read_csv(ct_table *t, const char *path, const char *text, size_t len);
ct_status ct__table_read_json(ct_table *t, const char *path, const char *text, size_t len);
ct_status ct__table_read_parquet(ct_table *t, const char *path, const char *bytes, size_t len);
ct_status ct__table_read_arrow(ct_table *t, const char *path, const char *bytes, size_t len);

#endif
