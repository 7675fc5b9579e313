/* The applications' shared writers (report/): the JSON writer, the progress
 * line and the table cells, each written to memory and compared with the
 * exact text worked out by hand, since bench, eval and conformance promise
 * their output byte for byte. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "json_writer.h"
#include "progress_line.h"
#include "table.h"
#include "test_util.h"

/* An in-memory stream; fclose it, then read and free `buf`. */
typedef struct sink {
    FILE *f;
    char *buf;
    size_t len;
} sink;

static FILE *sink_open(sink *s)
{
    *s = (sink){0};
    s->f = open_memstream(&s->buf, &s->len);
    cr_assert_not_null(s->f);
    return s->f;
}

static char *sink_close(sink *s)
{
    fclose(s->f);
    return s->buf;
}

static void expect_text(sink *s, const char *want)
{
    char *got = sink_close(s);
    cr_assert_str_eq(got, want);
    free(got);
}

/* ---- JSON writer ---- */

static void json_open(sink *s, lkv_jw *w)
{
    lkv_jw_init(w, sink_open(s));
}

/* The document must be balanced; then all it wrote is compared. */
static void json_expect(sink *s, lkv_jw *w, const char *want)
{
    cr_assert_eq(lkv_jw_finish(w), 0);
    expect_text(s, want);
}

Test(report_json, escapes_nests_and_writes_nan_as_null)
{
    sink s;
    lkv_jw w;
    json_open(&s, &w);
    lkv_jw_begin_object(&w, NULL, 0);
    lkv_jw_string(&w, "a", "x\"y\\z\n");
    lkv_jw_begin_array(&w, "b", 1);
    lkv_jw_int(&w, NULL, 1);
    lkv_jw_number(&w, NULL, 0.5);
    lkv_jw_null(&w, NULL);
    lkv_jw_end_array(&w);
    lkv_jw_number(&w, "c", NAN);
    lkv_jw_bool(&w, "d", 1);
    lkv_jw_end_object(&w);
    json_expect(&s, &w, "{\n  \"a\": \"x\\\"y\\\\z\\n\",\n  \"b\": [1, 0.5, null],\n"
                        "  \"c\": null,\n  \"d\": true\n}\n");
}

Test(report_json, indents_two_spaces_a_level_and_keeps_empty_containers_closed)
{
    sink s;
    lkv_jw w;
    json_open(&s, &w);
    lkv_jw_begin_object(&w, NULL, 0);
    lkv_jw_begin_array(&w, "rows", 0);
    lkv_jw_begin_object(&w, NULL, 0);
    lkv_jw_int(&w, "n", -3);
    lkv_jw_end_object(&w);
    lkv_jw_begin_object(&w, NULL, 0);
    lkv_jw_end_object(&w);
    lkv_jw_end_array(&w);
    lkv_jw_begin_array(&w, "none", 0);
    lkv_jw_end_array(&w);
    lkv_jw_end_object(&w);
    json_expect(&s, &w, "{\n  \"rows\": [\n    {\n      \"n\": -3\n    },\n    {}\n  ],\n"
                        "  \"none\": []\n}\n");
}

Test(report_json, a_one_line_container_keeps_its_children_on_its_line)
{
    sink s;
    lkv_jw w;
    json_open(&s, &w);
    lkv_jw_begin_object(&w, NULL, 1);
    lkv_jw_string(&w, "k", "v");
    lkv_jw_begin_object(&w, "inner", 0); /* asks for lines, inherits one */
    lkv_jw_int(&w, "x", 1);
    lkv_jw_int(&w, "y", 2);
    lkv_jw_end_object(&w);
    lkv_jw_end_object(&w);
    json_expect(&s, &w, "{\"k\": \"v\", \"inner\": {\"x\": 1, \"y\": 2}}\n");
}

Test(report_json, numbers_keep_the_digits_asked_for)
{
    sink s;
    lkv_jw w;
    json_open(&s, &w);
    lkv_jw_begin_array(&w, NULL, 1);
    lkv_jw_number(&w, NULL, 1.0 / 3.0); /* six significant digits by default */
    w.digits = 9;
    lkv_jw_number(&w, NULL, 1.0 / 3.0);
    lkv_jw_number(&w, NULL, 1e-12);
    lkv_jw_fixed(&w, NULL, 2.0 / 3.0, 3);
    lkv_jw_fixed(&w, NULL, INFINITY, 3);
    lkv_jw_number(&w, NULL, -INFINITY);
    lkv_jw_end_array(&w);
    json_expect(&s, &w, "[0.333333, 0.333333333, 1e-12, 0.667, null, null]\n");
}

Test(report_json, integers_are_exact_at_both_ends)
{
    sink s;
    lkv_jw w;
    json_open(&s, &w);
    lkv_jw_begin_array(&w, NULL, 1);
    lkv_jw_int(&w, NULL, INT64_MIN);
    lkv_jw_uint(&w, NULL, UINT64_MAX);
    lkv_jw_bool(&w, NULL, 0);
    lkv_jw_end_array(&w);
    json_expect(&s, &w, "[-9223372036854775808, 18446744073709551615, false]\n");
}

Test(report_json, a_null_string_is_null_and_keys_are_escaped)
{
    sink s;
    lkv_jw w;
    json_open(&s, &w);
    lkv_jw_begin_object(&w, NULL, 1);
    lkv_jw_string(&w, "missing", NULL);
    lkv_jw_string(&w, "tab\there", "");
    lkv_jw_end_object(&w);
    json_expect(&s, &w, "{\"missing\": null, \"tab\\there\": \"\"}\n");
}

Test(report_json, reports_an_unclosed_container)
{
    sink s;
    lkv_jw w;
    json_open(&s, &w);
    lkv_jw_begin_object(&w, NULL, 0);
    cr_assert_eq(lkv_jw_finish(&w), -1);
    free(sink_close(&s));
}

Test(report_json, reports_nesting_deeper_than_it_tracks)
{
    sink s;
    lkv_jw w;
    json_open(&s, &w);
    for (int i = 0; i <= LKV_JW_MAX_DEPTH; i++)
        lkv_jw_begin_array(&w, NULL, 1);
    for (int i = 0; i <= LKV_JW_MAX_DEPTH; i++)
        lkv_jw_end_array(&w);
    cr_assert_eq(lkv_jw_finish(&w), -1);
    free(sink_close(&s));
}

/* ---- progress line ---- */

static void progress_open(sink *s, lkv_progress_line *p, int tty, lkv_progress_erase erase)
{
    lkv_progress_line_init(p, sink_open(s), tty, erase);
}

Test(report_progress, pad_blanks_what_a_longer_line_left_and_the_end_clears_it)
{
    sink s;
    lkv_progress_line p;
    progress_open(&s, &p, 1, LKV_PROGRESS_PAD);
    lkv_progress_line_show(&p, "step %d", 10); /* "\rstep 10": 8 columns counted */
    lkv_progress_line_show(&p, "ok");          /* "\rok": 3, so 5 blanks */
    lkv_progress_line_end(&p);                 /* 3 blanks between two "\r" */
    lkv_progress_line_end(&p);                 /* nothing up: nothing written */
    expect_text(&s, "\rstep 10\rok     \r   \r");
}

Test(report_progress, ansi_clears_before_every_draw_and_at_the_end)
{
    sink s;
    lkv_progress_line p;
    progress_open(&s, &p, 1, LKV_PROGRESS_ANSI);
    lkv_progress_line_show(&p, "[%s] %d/%d", "cpu:0", 3, 9);
    lkv_progress_line_show(&p, "x");
    lkv_progress_line_end(&p);
    lkv_progress_line_end(&p);
    expect_text(&s, "\r\033[K[cpu:0] 3/9\r\033[Kx\r\033[K\r\033[K");
}

Test(report_progress, a_log_gets_whole_lines_and_no_redraws)
{
    sink s;
    lkv_progress_line p;
    progress_open(&s, &p, 0, LKV_PROGRESS_PAD);
    lkv_progress_line_show(&p, "redrawn");
    lkv_progress_line_log(&p, "phase %s done", "reference");
    lkv_progress_line_end(&p);
    expect_text(&s, "phase reference done\n");
}

Test(report_progress, a_terminal_gets_no_log_lines)
{
    sink s;
    lkv_progress_line p;
    progress_open(&s, &p, 1, LKV_PROGRESS_PAD);
    lkv_progress_line_log(&p, "not here");
    expect_text(&s, "");
}

Test(report_progress, no_stream_writes_nothing)
{
    lkv_progress_line p;
    lkv_progress_line_init(&p, NULL, 1, LKV_PROGRESS_ANSI);
    lkv_progress_line_show(&p, "nowhere");
    lkv_progress_line_log(&p, "nowhere");
    lkv_progress_line_end(&p);
    cr_assert_eq(p.width, 0);
}

/* ---- tables ---- */

Test(report_table, cells_are_padded_to_their_columns_one_space_apart)
{
    sink s;
    FILE *f = sink_open(&s);
    const lkv_table_column cols[] = {{6, 1}, {5, 0}, {0, 1}};
    const char *cells[] = {"op", "12", "tail"};
    lkv_table_cells(f, cols, 3, cells);
    expect_text(&s, "op        12 tail");
}

Test(report_table, a_cell_wider_than_its_column_is_written_whole)
{
    sink s;
    FILE *f = sink_open(&s);
    const lkv_table_column cols[] = {{3, 1}, {2, 0}};
    const char *cells[] = {"select", "1024"};
    lkv_table_cells(f, cols, 2, cells);
    expect_text(&s, "select 1024");
}

Test(report_table, markdown_rows_write_an_empty_cell_as_one_space)
{
    sink s;
    FILE *f = sink_open(&s);
    const char *cells[] = {"full", "-", "", "0.5"};
    lkv_table_markdown_row(f, 4, cells);
    expect_text(&s, "| full | - | | 0.5 |\n");
}

Test(report_table, the_markdown_rule_marks_right_aligned_columns)
{
    sink s;
    lkv_table_markdown_rule(sink_open(&s), "llrl");
    expect_text(&s, "|---|---|---:|---|\n");
}
