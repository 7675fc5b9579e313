/* Padding by printf's field width, so a cell wider than its column pushes
 * the row right rather than losing characters. */
#include "table.h"

void lkv_table_cells(FILE *f, const lkv_table_column *cols, int n, const char *const *cells)
{
    for (int i = 0; i < n; i++)
        fprintf(f, cols[i].left ? "%s%-*s" : "%s%*s", i ? " " : "", cols[i].width, cells[i]);
}

void lkv_table_markdown_row(FILE *f, int n, const char *const *cells)
{
    fputc('|', f);
    for (int i = 0; i < n; i++) {
        if (cells[i][0])
            fprintf(f, " %s |", cells[i]);
        else
            fputs(" |", f);
    }
    fputc('\n', f);
}

void lkv_table_markdown_rule(FILE *f, const char *align)
{
    fputc('|', f);
    for (const char *a = align; *a; a++)
        fputs(*a == 'r' ? "---:|" : "---|", f);
    fputc('\n', f);
}
