/* Aligned text tables for people: a header row (optional), one line per row, columns padded to
 * their widest cell. Cells are copied, control characters replaced, long ones cut with "…". */
#ifndef CTL_TABLE_H
#define CTL_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Most columns a table has. */
#define TABLE_COLUMNS_MAX 16

/* One column. Borrowed by table_new for the table's life (use static tables). */
struct table_column {
    const char *header; /* upper-case title, or NULL for a table without a header row */
    unsigned max_width; /* longest cell shown, in characters, ellipsis included; 0: no limit */
    bool right;         /* right-aligned (numbers) */
};

struct table;

/* Makes an empty table of count columns (1 to TABLE_COLUMNS_MAX; all with a header or none).
 * Caller owns the result (table_destroy); NULL when out of memory. */
struct table *table_new(const struct table_column *columns, size_t count);

/* Frees the table; sets *tp to NULL; accepts NULL. */
void table_destroy(struct table **tp);

/* Appends a row of exactly the table's column count of cells (borrowed, copied); a NULL or
 * empty cell shows as "-". Returns 0, or -1 when out of memory. */
int table_add(struct table *table, const char *const *cells);

/* How many rows were added. */
size_t table_rows(const struct table *table);

/* Writes the header row (when the columns have headers) and every row to out. Columns are
 * separated by two spaces; lines carry no trailing blanks. */
void table_print(const struct table *table, FILE *out);

#endif
