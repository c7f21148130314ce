/* Aligned text tables: cells are cleaned and measured when added, printed padded. */
#include "table.h"

#include <stdlib.h>
#include <string.h>

#define ELLIPSIS "\xe2\x80\xa6" /* "…", one column wide */

struct table {
    const struct table_column *columns; /* borrowed */
    size_t ncols;                       /* columns */
    char **cells;                       /* rows * ncols cells, row by row; owned */
    size_t *widths;                     /* each cell's width in characters */
    size_t rows;                        /* rows added */
    size_t cap;                         /* rows the arrays hold */
};

struct table *table_new(const struct table_column *columns, size_t count)
{
    if (count == 0 || count > TABLE_COLUMNS_MAX)
        return NULL;
    struct table *table = calloc(1, sizeof *table);
    if (table == NULL)
        return NULL;
    table->columns = columns;
    table->ncols = count;
    return table;
}

void table_destroy(struct table **tp)
{
    struct table *table = *tp;
    if (table == NULL)
        return;
    for (size_t i = 0; i < table->rows * table->ncols; i++)
        free(table->cells[i]);
    free(table->cells);
    free(table->widths);
    free(table);
    *tp = NULL;
}

/* Characters in a UTF-8 text: the bytes that do not continue a sequence. */
static size_t text_width(const char *s)
{
    size_t n = 0;
    for (; *s != '\0'; s++)
        if (((unsigned char)*s & 0xc0) != 0x80)
            n++;
    return n;
}

/* A copy of text for a terminal: control characters (a newline in a description, an escape
 * sequence in an id) become '?', and text longer than max characters keeps max - 1 of them and
 * ends with an ellipsis. *width gets the result's width. NULL when out of memory. */
static char *cell_text(const char *text, unsigned max, size_t *width)
{
    if (text == NULL || text[0] == '\0')
        text = "-";
    size_t len = strlen(text);
    char *copy = malloc(len + sizeof ELLIPSIS);
    if (copy == NULL)
        return NULL;
    for (size_t i = 0; i <= len; i++) {
        unsigned char c = (unsigned char)text[i];
        copy[i] = (c != '\0' && (c < 0x20 || c == 0x7f)) ? '?' : text[i];
    }
    *width = text_width(copy);
    if (max == 0 || *width <= max)
        return copy;
    /* Keep max - 1 characters: cut before the lead byte of character number max. */
    size_t chars = 0, at = 0;
    for (; copy[at] != '\0'; at++) {
        if (((unsigned char)copy[at] & 0xc0) != 0x80 && chars++ == max - 1)
            break;
    }
    memcpy(copy + at, ELLIPSIS, sizeof ELLIPSIS);
    *width = max;
    return copy;
}

int table_add(struct table *table, const char *const *cells)
{
    if (table->rows == table->cap) {
        size_t cap = table->cap == 0 ? 16 : table->cap * 2;
        char **grown = realloc(table->cells, cap * table->ncols * sizeof *grown);
        if (grown == NULL)
            return -1;
        table->cells = grown;
        size_t *widths = realloc(table->widths, cap * table->ncols * sizeof *widths);
        if (widths == NULL)
            return -1;
        table->widths = widths;
        table->cap = cap;
    }
    size_t base = table->rows * table->ncols;
    for (size_t i = 0; i < table->ncols; i++) {
        table->cells[base + i] =
            cell_text(cells[i], table->columns[i].max_width, &table->widths[base + i]);
        if (table->cells[base + i] == NULL) {
            while (i-- > 0)
                free(table->cells[base + i]);
            return -1;
        }
    }
    table->rows++;
    return 0;
}

size_t table_rows(const struct table *table)
{
    return table->rows;
}

static void pad(FILE *out, size_t n)
{
    for (; n > 0; n--)
        fputc(' ', out);
}

/* Writes one line: cells[i] of width widths[i] in columns of width col[i]. */
static void print_line(const struct table *table, const size_t *col, const char *const *cells,
                       const size_t *widths, FILE *out)
{
    for (size_t i = 0; i < table->ncols; i++) {
        bool last = i + 1 == table->ncols;
        size_t gap = col[i] - widths[i];
        if (i > 0)
            fputs("  ", out);
        if (table->columns[i].right)
            pad(out, gap);
        fputs(cells[i], out);
        if (!table->columns[i].right && !last)
            pad(out, gap);
    }
    fputc('\n', out);
}

void table_print(const struct table *table, FILE *out)
{
    size_t col[TABLE_COLUMNS_MAX] = {0}, header_widths[TABLE_COLUMNS_MAX];
    const char *headers[TABLE_COLUMNS_MAX];
    bool with_header = table->columns[0].header != NULL;
    for (size_t i = 0; i < table->ncols; i++) {
        headers[i] = with_header ? table->columns[i].header : "";
        header_widths[i] = with_header ? text_width(headers[i]) : 0;
        col[i] = header_widths[i];
    }
    for (size_t r = 0; r < table->rows; r++)
        for (size_t i = 0; i < table->ncols; i++)
            if (table->widths[r * table->ncols + i] > col[i])
                col[i] = table->widths[r * table->ncols + i];
    if (with_header)
        print_line(table, col, headers, header_widths, out);
    for (size_t r = 0; r < table->rows; r++)
        print_line(table, col, (const char *const *)&table->cells[r * table->ncols],
                   &table->widths[r * table->ncols], out);
}
