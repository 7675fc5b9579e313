/* The strict JSON reader behind trace replay, and the string writer of the
 * tools' JSON output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "test_util.h"

static int parses(const char *text)
{
    lkv_json v;
    char err[128];
    int rc = lkv_json_parse(text, strlen(text), &v, err, sizeof err);
    if (rc == 0)
        lkv_json_free(&v);
    return rc == 0;
}

Test(json, accepts_the_trace_shapes)
{
    const char *ok[] = {"{\"prompt\": 4, \"alpha\": 1e-4}", "[[0.5, 0], [1, 2e+3]]", "-0.25",
                        "\"\\u00e9\\u4e2d\\ud83d\\ude00\"", " true ", "null", "{}", "[]"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        cr_assert(parses(ok[i]), "rejected valid JSON: %s", ok[i]);
}

Test(json, rejects_malformed_input)
{
    const char *bad[] = {"", "{", "[1,]", "{\"a\" 1}", "01", "1.", "1e", "1.e5", "\"abc",
                         "\"\\x\"", "\"\\u12\"", "\"\\u0000\"", "\"\\ud83d\"", "\"\\ude00\"",
                         "[1] 2", "{\"a\": 1,}", "tru", "\"a\tb\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert(!parses(bad[i]), "accepted invalid JSON: %s", bad[i]);
}

Test(json, surrogate_pairs_become_four_byte_utf8)
{
    const char *text = "\"\\ud83d\\ude00\"";
    lkv_json v;
    char err[128];
    cr_assert_eq(lkv_json_parse(text, strlen(text), &v, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(v.text, "\xf0\x9f\x98\x80");
    lkv_json_free(&v);
}

Test(json, deep_nesting_is_refused_not_overflowed)
{
    static char deep[200001];
    memset(deep, '[', 100000);
    memset(deep + 100000, ']', 100000);
    cr_assert(!parses(deep));
}

Test(json, numbers_keep_their_source_text)
{
    const char *text = "{\"alpha\": 1e-4}";
    lkv_json v;
    char err[128];
    cr_assert_eq(lkv_json_parse(text, strlen(text), &v, err, sizeof err), 0, "%s", err);
    const lkv_json *a = lkv_json_get(&v, "alpha");
    cr_assert_not_null(a);
    cr_assert_str_eq(a->text, "1e-4");
    cr_assert_float_eq(a->number, 1e-4, 1e-12);
    lkv_json_free(&v);
}

/* A token's piece can end inside a UTF-8 character: each ill-formed part
 * becomes one U+FFFD (Unicode's "maximal subpart" rule), well-formed text
 * passes through, and the result parses. */
Test(json, written_strings_replace_ill_formed_utf8)
{
    const char *in = "a\xe2\x82"          /* a euro sign cut after two bytes: one U+FFFD */
                     "b\xc3\xa9"          /* e-acute, well formed */
                     "\xff"               /* never a UTF-8 byte */
                     "\xed\xa0\x80"       /* an encoded surrogate: three */
                     "\xe0\x80"           /* an overlong start: two */
                     "\xf0\x9f\x98\x80"   /* an emoji, well formed */
                     "\"\n\xc3";          /* escapes, then a lead byte at the end */
    const char *want = "\"a\\ufffdb\xc3\xa9\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd"
                       "\xf0\x9f\x98\x80\\\"\\n\\ufffd\"";
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lkv_json_write_string(f, in);
    fclose(f);
    cr_assert_str_eq(buf, want);
    lkv_json v;
    char err[128];
    cr_assert_eq(lkv_json_parse(buf, len, &v, err, sizeof err), 0, "%s", err);
#define FFFD "\xef\xbf\xbd"
    cr_assert_str_eq(v.text, "a" FFFD "b\xc3\xa9" FFFD FFFD FFFD FFFD FFFD FFFD
                             "\xf0\x9f\x98\x80\"\n" FFFD);
#undef FFFD
    lkv_json_free(&v);
    free(buf);
}
