/* libcputrain public API: a table of records (ct_table) from the data files
 * Transformers' example scripts take with --train_file and its siblings, read
 * as the `datasets` library reads them: CSV (a header row, then pandas'
 * rules: quoting, its NA words, one type per column), JSON (JSON lines, or
 * one list of records), Parquet (as pyarrow writes it: the Hub's dataset
 * files) and Arrow IPC (the datasets library's cache). Columns have names
 * and a type; cells are values, or lists of them. The task tools turn rows
 * into examples.
 * Included through <cputrain/cputrain.h>; do not include directly. */
#ifndef CPUTRAIN_TABLE_H
#define CPUTRAIN_TABLE_H

#ifndef CT_INSIDE_CPUTRAIN_H
#error "include <cputrain/cputrain.h> instead of <cputrain/table.h>"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_table ct_table;

typedef enum ct_value_type {
    CT_VALUE_NULL = 0, /* JSON null; in CSV an empty field or an NA word ("NA", "nan", ...) */
    CT_VALUE_BOOL = 1,
    CT_VALUE_INT = 2,   /* fits int64 */
    CT_VALUE_FLOAT = 3,
    CT_VALUE_STRING = 4,
    CT_VALUE_LIST = 5 /* a JSON array of scalars (tokens, tags, labels) */
} ct_value_type;

/* Read `path`: ".csv" as CSV, ".json" / ".jsonl" as JSON lines or one JSON
 * list of objects (a key absent from a record is null there), ".parquet"
 * and ".arrow" (IPC stream, as the datasets cache holds a split, or file
 * format) as pyarrow reads them for `datasets`: a column per leaf, a
 * struct's fields flattened to "struct.field" (SQuAD's answers.text, as
 * Dataset.flatten() names them; a null struct makes them null), a list of
 * scalars as a LIST cell (a null list is null, an empty one a LIST of 0
 * items); booleans ("true"/"false"), integers (unsigned ones printed so; a
 * uint64 past int64 is a FLOAT, as JSON's reader types it), floats (the
 * shortest text that reads back at their precision; "nan", "inf", "-inf")
 * and UTF-8 strings. Parquet: PLAIN and dictionary encodings, pages v1 and
 * v2, uncompressed, Snappy or Zstandard; Arrow: dictionary-encoded values,
 * Zstandard bodies. The file is untrusted: CT_ERR_FORMAT names the file,
 * line and column (CSV: a quote left open, a row with more fields than the
 * header; JSON: malformed text, a record that is not an object, a value
 * nested deeper than a list of scalars), the column whose values mix types
 * JSON's readers refuse to mix (a string and a number), or a Parquet file's
 * column, row group and page / an Arrow file's record batch, column and row
 * where it is damaged or uses what is not read (other codecs and
 * encodings, lists of lists or of structs, maps, binary, dates, times,
 * decimals; big-endian Arrow, LZ4 bodies); CT_ERR_INVALID_ARG another
 * extension; CT_ERR_IO an unreadable file. */
CT_API ct_status ct_table_load(const char *path, ct_table **out);
CT_API void ct_table_free(ct_table *table);
CT_API size_t ct_table_rows(const ct_table *table);
CT_API size_t ct_table_columns(const ct_table *table);
/* Columns in the file's order (CSV: the header's; JSON: as keys first
 * appear; Parquet and Arrow: the schema's); NULL past the end. */
CT_API const char *ct_table_column_name(const ct_table *table, size_t column);
CT_API ct_status ct_table_column_index(const ct_table *table, const char *name, size_t *column);
/* The column's type as the readers infer it from its non-null values: one
 * type, INT and FLOAT together giving FLOAT (so do INT and null in CSV, as
 * pandas' NaN does), NULL when every value is null (FLOAT in CSV, as pandas
 * reads a column of NaN). A CSV column of other
 * mixes is STRING, every value its text; a JSON one is refused at load. */
CT_API ct_value_type ct_table_column_type(const ct_table *table, size_t column);
/* Cell (row, column): its type, and (text, len may be NULL) its text: a
 * string's UTF-8 (it may hold NUL bytes: len counts them), a number or a
 * boolean as the file writes it ("True" in CSV, true in JSON), NULL for
 * null and lists. In a CSV column of type STRING every value is a STRING
 * with the field's text. CT_VALUE_NULL for a cell outside the table. */
CT_API ct_value_type ct_table_cell(const ct_table *table, size_t row, size_t column,
                                   const char **text, size_t *len);
/* The items of a LIST cell (0 for any other), each as ct_table_cell gives
 * a value. */
CT_API size_t ct_table_list_size(const ct_table *table, size_t row, size_t column);
CT_API ct_value_type ct_table_list_item(const ct_table *table, size_t row, size_t column,
                                        size_t index, const char **text, size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* CPUTRAIN_TABLE_H */
