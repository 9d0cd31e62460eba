/* The JSON parser (>>json) against RFC 8259: every escape, \u escapes and surrogate pairs
   checked byte by byte, invalid UTF-8 and control characters, number forms and their int64
   range, the nesting limit, trailing garbage, and JSONTestSuite-style y_ (must accept) and
   n_ (must reject) cases written inline. Every rejection must say where: "line" and "column". */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"

#include <locale.h>

/* Parses text[0..n); on success the caller frees doc. */
static mlstack_result parse_n(mlstack__json_doc *doc, const char *text, size_t n, mlstack_error *err) {
    memset(err, 0, sizeof *err);
    return mlstack__json_parse(doc, text, n, "t.json", err);
}

/* Must parse; returns the root (doc to be freed by the caller) or NULL after a failed check. */
static const mlstack__json *ok_n(int line, mlstack__json_doc *doc, const char *text, size_t n) {
    mlstack_error err;
    mlstack_result r = parse_n(doc, text, n, &err);
    CHECKF(r == MLSTACK_OK, "line %d: expected %.60s to parse, got %d: %s", line, text, r, err.message);
    return r == MLSTACK_OK ? doc->root : NULL;
}
#define OK(doc, text) ok_n(__LINE__, doc, text, strlen(text))

/* Must fail with MLSTACK_ERR_FORMAT, a message holding `want` (if not NULL), "line" and "column",
   and leave nothing allocated. */
static void bad_n(int line, const char *text, size_t n, const char *want) {
    mlstack__json_doc doc;
    mlstack_error err;
    mlstack_result r = parse_n(&doc, text, n, &err);
    CHECKF(r == MLSTACK_ERR_FORMAT, "line %d: expected %.60s to be rejected, got %d", line, text, r);
    if (r == MLSTACK_OK) {
        mlstack__json_free(&doc);
        return;
    }
    CHECKF(err.code == r, "line %d: err.code %d != result %d", line, err.code, r);
    CHECKF(strstr(err.message, "line") && strstr(err.message, "column"), "line %d: no position in \"%s\"", line,
           err.message);
    CHECKF(strncmp(err.message, "t.json:", 7) == 0, "line %d: message does not name the source: \"%s\"", line,
           err.message);
    if (want) CHECKF(strstr(err.message, want) != NULL, "line %d: \"%s\" lacks \"%s\"", line, err.message, want);
    CHECKF(doc.root == NULL && doc.arena.head == NULL, "line %d: failed parse kept memory", line);
}
#define BAD(text, want) bad_n(__LINE__, text, strlen(text), want)
#define BADN(text, n, want) bad_n(__LINE__, text, n, want)

/* The string at the root of `text` decodes to exactly the bytes want[0..wn). */
static void str_is(int line, const char *text, const char *want, size_t wn) {
    mlstack__json_doc doc;
    const mlstack__json *v = ok_n(line, &doc, text, strlen(text));
    if (!v) return;
    CHECKF(v->type == MLSTACK__JSON_STRING, "line %d: not a string", line);
    CHECKF(v->len == wn && memcmp(v->str, want, wn) == 0, "line %d: %s decoded to %zu bytes, want %zu", line, text,
           v->len, wn);
    CHECKF(v->str[v->len] == 0, "line %d: not NUL-terminated", line);
    mlstack__json_free(&doc);
}
#define STR_IS(text, want) str_is(__LINE__, text, want, sizeof(want) - 1)

static void test_escapes(void) {
    STR_IS("\"\"", "");
    STR_IS("\"plain\"", "plain");
    STR_IS("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t");
    STR_IS("\"a\\u0041b\"", "aAb");
    STR_IS("\"\\u0000\"", "\0"); /* an escaped NUL is data, and the length says so */
    STR_IS("\"\\u007f\"", "\x7f");
    STR_IS("\"\\u0080\"", "\xc2\x80");
    STR_IS("\"\\u00e9\"", "\xc3\xa9");
    STR_IS("\"\\u00E9\"", "\xc3\xa9");
    STR_IS("\"\\u07ff\"", "\xdf\xbf");
    STR_IS("\"\\u0800\"", "\xe0\xa0\x80");
    STR_IS("\"\\u4e2d\"", "\xe4\xb8\xad");
    STR_IS("\"\\uffff\"", "\xef\xbf\xbf");
    STR_IS("\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80");          /* U+1F600 */
    STR_IS("\"\\uD834\\uDD1E\"", "\xf0\x9d\x84\x9e");          /* U+1D11E, upper-case hex */
    STR_IS("\"\\ud800\\udc00\"", "\xf0\x90\x80\x80");          /* U+10000, first */
    STR_IS("\"\\udbff\\udfff\"", "\xf4\x8f\xbf\xbf");          /* U+10FFFF, last */
    STR_IS("\"x\\ud83d\\ude00y\\n\"", "x\xf0\x9f\x98\x80y\n");
    /* raw UTF-8 passes through unchanged, all lengths */
    STR_IS("\"\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\x7f\"", "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\x7f");
    STR_IS("\"\xf4\x8f\xbf\xbf\"", "\xf4\x8f\xbf\xbf");
    STR_IS("\"\xef\xbb\xbf\"", "\xef\xbb\xbf"); /* a BOM inside a string is just a character */

    /* surrogates that do not pair */
    BAD("\"\\ud800\"", "surrogate");
    BAD("\"\\ud800x\"", "surrogate");
    BAD("\"\\ud800\\u0041\"", "surrogate");
    BAD("\"\\ud800\\ud800\"", "surrogate");
    BAD("\"\\udc00\"", "surrogate");
    BAD("\"\\udfff\\ud800\"", "surrogate");
    BAD("\"\\ud800\\n\"", "surrogate");
    BAD("\"\\ud800\\", NULL);
    /* malformed escapes */
    BAD("\"\\u12\"", "\\u");
    BAD("\"\\u12g4\"", "\\u");
    BAD("\"\\u\"", "\\u");
    BAD("\"\\U0041\"", "escape");
    BAD("\"\\x41\"", "escape");
    BAD("\"\\a\"", "escape");
    BAD("\"\\'\"", "escape");
    BAD("\"\\0\"", "escape");
    BAD("\"\\", NULL);
    BAD("\"abc", "unterminated");
    BAD("\"abc\\\"", "unterminated");
}

static void test_utf8_and_controls(void) {
    char c;
    char buf[8];
    BAD("\"\xc0\xaf\"", "UTF-8");              /* overlong '/' */
    BAD("\"\xc1\xbf\"", "UTF-8");              /* overlong */
    BAD("\"\xe0\x80\xaf\"", "UTF-8");          /* overlong 3-byte */
    BAD("\"\xf0\x80\x80\xaf\"", "UTF-8");      /* overlong 4-byte */
    BAD("\"\xed\xa0\x80\"", "UTF-8");          /* encoded surrogate U+D800 */
    BAD("\"\xed\xbf\xbf\"", "UTF-8");          /* encoded surrogate U+DFFF */
    BAD("\"\xf4\x90\x80\x80\"", "UTF-8");      /* above U+10FFFF */
    BAD("\"\xf5\x80\x80\x80\"", "UTF-8");
    BAD("\"\xf8\x88\x80\x80\x80\"", "UTF-8");  /* 5-byte form */
    BAD("\"\xff\"", "UTF-8");
    BAD("\"\xfe\"", "UTF-8");
    BAD("\"\x80\"", "UTF-8");                  /* lone continuation byte */
    BAD("\"a\xbf\"", "UTF-8");
    BAD("\"\xe4\xb8\"", "UTF-8");              /* truncated at the closing quote */
    BAD("\"\xe4\"", "UTF-8");
    BAD("\"\xc3\"", "UTF-8");
    BAD("\"\xf0\x9f\x98\"", "UTF-8");
    BAD("\"\xc3\x28\"", "UTF-8");              /* second byte not a continuation */
    BAD("{\"\xff\":1}", "UTF-8");              /* in a key too */
    /* every control character must be escaped; DEL need not be */
    for (c = 1; c < 0x20; c++) {
        buf[0] = '"';
        buf[1] = 'a';
        buf[2] = c;
        buf[3] = '"';
        BADN(buf, 4, "control character");
    }
    BADN("\"a\0b\"", 5, "control character");
    STR_IS("\"\x7f\"", "\x7f");
}

/* text must parse as one number with these properties. */
static void num_is(int line, const char *text, int is_int, int64_t i, double num) {
    mlstack__json_doc doc;
    const mlstack__json *v = ok_n(line, &doc, text, strlen(text));
    if (!v) return;
    CHECKF(v->type == MLSTACK__JSON_NUMBER, "line %d: %s not a number", line, text);
    CHECKF(v->is_int == is_int, "line %d: %s is_int %d, want %d", line, text, v->is_int, is_int);
    if (is_int) CHECKF(v->i == i, "line %d: %s i = %lld", line, text, (long long)v->i);
    CHECKF(v->num == num || fabs(v->num - num) <= fabs(num) * 1e-15, "line %d: %s num = %.17g, want %.17g", line, text,
           v->num, num);
    CHECKF(v->len == strlen(text) && memcmp(v->str, text, v->len) == 0, "line %d: literal not kept", line);
    mlstack__json_free(&doc);
}
#define NUM_IS(text, is_int, i, num) num_is(__LINE__, text, is_int, i, num)

static void test_numbers(void) {
    mlstack__json_doc doc;
    const mlstack__json *v;
    char big[200];
    NUM_IS("0", 1, 0, 0.0);
    NUM_IS("7", 1, 7, 7.0);
    NUM_IS("123", 1, 123, 123.0);
    NUM_IS("-456", 1, -456, -456.0);
    NUM_IS("1.5", 0, 0, 1.5);
    NUM_IS("-1.25e2", 0, 0, -125.0);
    NUM_IS("1E3", 0, 0, 1000.0);
    NUM_IS("1e+2", 0, 0, 100.0);
    NUM_IS("25e-2", 0, 0, 0.25);
    NUM_IS("0.0", 0, 0, 0.0);
    NUM_IS("1.0", 0, 0, 1.0); /* a fraction makes it not an int, even when whole */
    NUM_IS("0e0", 0, 0, 0.0);
    NUM_IS("1e400", 0, 0, HUGE_VAL); /* out of double range: accepted, becomes infinity */
    NUM_IS("9223372036854775807", 1, INT64_MAX, 9223372036854775807.0);
    NUM_IS("-9223372036854775808", 1, INT64_MIN, -9223372036854775808.0);
    NUM_IS("9223372036854775808", 0, 0, 9223372036854775808.0);   /* one past int64 */
    NUM_IS("-9223372036854775809", 0, 0, -9223372036854775809.0);
    NUM_IS("18446744073709551616", 0, 0, 18446744073709551616.0);
    NUM_IS("123456789012345678901234567890", 0, 0, 1.2345678901234568e29);
    /* a literal longer than the parser's stack buffer */
    memset(big, '1', 100);
    big[100] = 0;
    NUM_IS(big, 0, 0, 1.1111111111111111e99);
    memcpy(big, "0.", 2);
    memset(big + 2, '5', 120);
    big[122] = 0;
    NUM_IS(big, 0, 0, 0.5555555555555556);
    /* -0: an int equal to 0 whose double keeps the sign */
    v = OK(&doc, "-0");
    if (v) {
        CHECK(v->is_int && v->i == 0 && v->num == 0.0 && signbit(v->num));
        mlstack__json_free(&doc);
    }
    v = OK(&doc, "-0.0e-0");
    if (v) {
        CHECK(!v->is_int && signbit(v->num));
        mlstack__json_free(&doc);
    }
    /* leading zeros, lone signs, missing digits, non-JSON forms */
    BAD("01", NULL);
    BAD("00", NULL);
    BAD("-01", NULL);
    BAD("[012]", NULL);
    BAD("1.", "after '.'");
    BAD("-1.", "after '.'");
    BAD("1.e3", "after '.'");
    BAD("[1.]", "after '.'");
    BAD(".5", NULL);
    BAD("-.5", "digit");
    BAD("-", "digit");
    BAD("-a", "digit");
    BAD("- 1", "digit");
    BAD("+1", NULL);
    BAD("1e", "exponent");
    BAD("1e+", "exponent");
    BAD("1E-", "exponent");
    BAD("1ea", "exponent");
    BAD("0x10", NULL);
    BAD("1_000", NULL);
    BAD("Infinity", NULL);
    BAD("-Infinity", "digit");
    BAD("NaN", NULL);
    BAD("[1e1.5]", NULL);
}

/* A program that calls setlocale() for its own output must not change what a config says:
   "1.5" is 1.5 even where the decimal separator is a comma. */
static void test_numbers_locale(void) {
    static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8",  "de_DE",
                                        "fr_FR.UTF-8", "ru_RU.UTF-8", "nl_NL.UTF-8"};
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (setlocale(LC_NUMERIC, names[i])) break;
    if (i == sizeof names / sizeof names[0]) {
        SKIP("numbers under a decimal-comma locale not tested: none of de_DE.UTF-8, fr_FR.UTF-8, ... is installed "
             "(.ci/run generates de_DE.UTF-8: localedef -i de_DE -f UTF-8 de_DE.UTF-8)");
        return;
    }
    if (strcmp(localeconv()->decimal_point, ",") != 0) {
        SKIP("locale %s has decimal point \"%s\"", names[i], localeconv()->decimal_point);
    } else {
        NUM_IS("1.5", 0, 0, 1.5);
        NUM_IS("-0.25e1", 0, 0, -2.5);
        NUM_IS("10000.0", 0, 0, 10000.0);
    }
    setlocale(LC_NUMERIC, "C");
}

/* n nested arrays, or objects {"k": ...} when obj. */
static char *nest(int n, int obj, size_t *len) {
    size_t per = obj ? 5 : 1, i, k = 0;
    char *s = (char *)malloc((size_t)n * (per + 1) + 4);
    for (i = 0; i < (size_t)n; i++) {
        if (obj) {
            memcpy(s + k, "{\"k\":", 5);
            k += 5;
        } else {
            s[k++] = '[';
        }
    }
    if (obj) {
        memcpy(s + k, "1", 1);
        k++;
    }
    for (i = 0; i < (size_t)n; i++) s[k++] = obj ? '}' : ']';
    s[k] = 0;
    *len = k;
    return s;
}

static void test_depth(void) {
    mlstack__json_doc doc;
    const mlstack__json *v;
    size_t len;
    int obj, d;
    char *s;
    CHECK(MLSTACK_MAX_JSON_DEPTH == 128);
    for (obj = 0; obj < 2; obj++) {
        s = nest(MLSTACK_MAX_JSON_DEPTH, obj, &len);
        v = ok_n(__LINE__, &doc, s, len);
        if (v) {
            for (d = 1; v->child; d++) v = v->child;
            CHECKF(d == MLSTACK_MAX_JSON_DEPTH + obj, "walked %d levels", d);
            mlstack__json_free(&doc);
        }
        free(s);
        s = nest(MLSTACK_MAX_JSON_DEPTH + 1, obj, &len);
        bad_n(__LINE__, s, len, "nesting");
        free(s);
    }
    /* far beyond the limit must fail the same way, not exhaust the stack */
    s = nest(100000, 0, &len);
    bad_n(__LINE__, s, len, "nesting");
    free(s);
    /* depth is nesting, not count: many siblings at depth 1 are fine */
    s = (char *)malloc(2 * 1000 + 3);
    s[0] = '[';
    for (d = 0; d < 1000; d++) memcpy(s + 1 + 2 * d, d ? ",0" : " 0", 2);
    s[2001] = ']';
    s[2002] = 0;
    v = OK(&doc, s);
    if (v) {
        CHECK(v->len == 1000);
        mlstack__json_free(&doc);
    }
    free(s);
}

static void test_structure(void) {
    mlstack__json_doc doc;
    const mlstack__json *v, *c;
    mlstack_error err;
    mlstack_result r;
    /* empty and whitespace-only inputs */
    BADN("", 0, "end of input");
    BAD(" \t\r\n ", "end of input");
    BAD("\n\n", "line 3, column 1");
    /* trailing garbage */
    BAD("[] x", "trailing");
    BAD("1 2", "trailing");
    BAD("{} }", "trailing");
    BAD("nullx", "trailing");
    BAD("truefalse", "trailing");
    BAD("\"a\"\"b\"", "trailing");
    BADN("[1]\0", 4, "trailing");
    BAD("[1]\f", "trailing"); /* form feed is not JSON whitespace */
    /* the text need not be NUL-terminated: only n bytes are read */
    v = ok_n(__LINE__, &doc, "[1]]]", 3);
    if (v) mlstack__json_free(&doc);
    v = ok_n(__LINE__, &doc, "12345", 2);
    if (v) {
        CHECK(v->is_int && v->i == 12);
        mlstack__json_free(&doc);
    }
    /* whitespace everywhere it is allowed */
    v = OK(&doc, " \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\"\n:\tnull } \r\n");
    if (v) {
        CHECK(v->type == MLSTACK__JSON_OBJECT && v->len == 2);
        c = mlstack__json_get(v, "a");
        CHECK(c && c->type == MLSTACK__JSON_ARRAY && c->len == 2);
        CHECK(mlstack__json_at(c, 1) && mlstack__json_at(c, 1)->i == 2 && mlstack__json_at(c, 2) == NULL);
        CHECK(mlstack__json_is_null(mlstack__json_get(v, "b")) && mlstack__json_get(v, "b") != NULL);
        CHECK(mlstack__json_get(v, "c") == NULL);
        CHECK(mlstack__json_get(c, "a") == NULL); /* not an object */
        CHECK(mlstack__json_get(NULL, "a") == NULL);
        CHECK(v->offset == 4 && c->offset == 12);
        mlstack__json_free(&doc);
    }
    /* keys: escaped, empty, duplicated (first wins), with an escaped NUL (key_len counts it) */
    v = OK(&doc, "{\"\\u0061\\n\":1, \"\":2, \"d\":3, \"d\":4, \"n\\u0000x\":5}");
    if (v) {
        CHECK(v->len == 5);
        c = mlstack__json_get(v, "a\n");
        CHECK(c && c->i == 1 && c->key_len == 2);
        c = mlstack__json_get(v, "");
        CHECK(c && c->i == 2);
        c = mlstack__json_get(v, "d");
        CHECK(c && c->i == 3);
        CHECK(mlstack__json_get(v, "n") == NULL);
        c = mlstack__json_at(v, 4);
        CHECK(c && c->key_len == 3 && memcmp(c->key, "n\0x", 3) == 0);
        mlstack__json_free(&doc);
    }
    /* literals */
    v = OK(&doc, "[true,false,null]");
    if (v) {
        CHECK(mlstack__json_at(v, 0)->type == MLSTACK__JSON_TRUE);
        CHECK(mlstack__json_at(v, 1)->type == MLSTACK__JSON_FALSE);
        CHECK(mlstack__json_at(v, 2)->type == MLSTACK__JSON_NULL);
        mlstack__json_free(&doc);
    }
    BAD("tru", "expected a value");
    BAD("nul", "expected a value");
    BAD("True", "expected a value");
    BAD("NULL", "expected a value");
    BAD("fals", "expected a value");
    /* positions: the error is reported where it is */
    BAD("[1,\n  2,\n  x]", "line 3, column 3");
    BAD("{\"a\":1,\n\"b\" 2}", "line 2, column 5");
    BAD("[\"ok\",\n\"\\ud800\"]", "line 2, column 2");
    /* a NULL name falls back to "JSON" */
    memset(&err, 0, sizeof err);
    r = mlstack__json_parse(&doc, "[", 1, NULL, &err);
    CHECKF(r == MLSTACK_ERR_FORMAT && strncmp(err.message, "JSON:", 5) == 0, "%s", err.message);
    /* no error record is fine */
    r = mlstack__json_parse(&doc, "[", 1, "x", NULL);
    CHECK(r == MLSTACK_ERR_FORMAT && doc.root == NULL);
}

static void test_sizes(void) {
    mlstack__json_doc doc;
    const mlstack__json *v;
    mlstack_error err;
    mlstack_result r;
    size_t n, i;
    char *s;
    /* many nodes: more than one arena block */
    n = 200000;
    s = (char *)malloc(2 * n + 2);
    s[0] = '[';
    for (i = 0; i < n; i++) {
        s[1 + 2 * i] = (char)('0' + i % 10);
        s[2 + 2 * i] = i + 1 < n ? ',' : ']';
    }
    s[2 * n + 1] = 0;
    v = OK(&doc, s);
    if (v) {
        CHECK(v->len == n);
        CHECK(mlstack__json_at(v, n - 1) && mlstack__json_at(v, n - 1)->i == (int64_t)((n - 1) % 10));
        mlstack__json_free(&doc);
    }
    free(s);
    /* one string larger than an arena block */
    n = (size_t)3 << 20;
    s = (char *)malloc(n + 3);
    s[0] = '"';
    memset(s + 1, 'z', n);
    s[n + 1] = '"';
    s[n + 2] = 0;
    v = OK(&doc, s);
    if (v) {
        CHECK(v->len == n && v->str[0] == 'z' && v->str[n - 1] == 'z' && v->str[n] == 0);
        mlstack__json_free(&doc);
    }
    free(s);
    /* the byte limit (lowered to 4 MiB in main) */
    n = mlstack__limits.max_json_bytes + 1;
    s = (char *)malloc(n);
    memset(s, ' ', n);
    s[0] = '1';
    memset(&err, 0, sizeof err);
    r = mlstack__json_parse(&doc, s, n, "big.json", &err);
    CHECKF(r == MLSTACK_ERR_LIMIT && strstr(err.message, "big.json") && strstr(err.message, "limit"), "%d %s", r,
           err.message);
    CHECK(doc.root == NULL);
    v = ok_n(__LINE__, &doc, s, n - 1);
    if (v) mlstack__json_free(&doc);
    free(s);
}

/* JSONTestSuite-style cases (after Nicolas Seriot's suite), written out here. */
static const char *const y_cases[] = {
    "[[]   ]",
    "[\"\"]",
    "[]",
    "[\"a\"]",
    "[false]",
    "[null, 1, \"1\", {}]",
    "[null]",
    "[1\n]",
    " [1]",
    "[1,null,null,null,2]",
    "[2] ",
    "[0e+1]",
    "[0e1]",
    "[ 4]",
    "[-0.000000000000000000000000000000000000000000000000000000001]\n",
    "[20e1]",
    "[-0]",
    "[-1]",
    "[-123]",
    "[1E22]",
    "[1E-2]",
    "[1E+2]",
    "[123e45]",
    "[123.456e78]",
    "[1e-2]",
    "[1e+2]",
    "[123]",
    "[123.456789]",
    "[-237462374673276894279832749832423479823246327846]",
    "{\"asd\":\"sdf\", \"dfg\":\"fgh\"}",
    "{\"asd\":\"sdf\"}",
    "{\"a\":\"b\",\"a\":\"c\"}",
    "{}",
    "{\"\":0}",
    "{\"foo\\u0000bar\": 42}",
    "{ \"min\": -1.0e+28, \"max\": 1.0e+28 }",
    "{\"x\":[{\"id\": \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}], \"id\": "
    "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}",
    "{\"a\":[]}",
    "{\"title\":\"\\u041f\\u043e\\u043b\\u0442\\u043e\\u0440\\u0430 "
    "\\u0417\\u0435\\u043c\\u043b\\u0435\\u043a\\u043e\\u043f\\u0430\" }",
    "{\n\"a\": \"b\"\n}",
    "[\"\\u0060\\u012a\\u12AB\"]",
    "[\"\\uD801\\udc37\"]",
    "[\"\\ud83d\\ude39\\ud83d\\udc8d\"]",
    "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]",
    "[\"\\\\u0000\"]",
    "[\"\\\"\"]",
    "[\"a/*b*/c/*d//e\"]",
    "[\"\\\\a\"]",
    "[\"\\\\n\"]",
    "[\"\\u0012\"]",
    "[\"\\uFFFF\"]",
    "[\"asd\"]",
    "[ \"asd\"]",
    "[\"\\uDBFF\\uDFFF\"]",
    "[\"new\\u00A0line\"]",
    "[\"\xf4\x8f\xbf\xbf\"]",
    "[\"\xef\xbf\xbf\"]",
    "[\"\\u0000\"]",
    "[\"\\u002c\"]",
    "[\"\xcf\x80\"]",
    "[\"\xf0\x9b\xbf\xbf\"]",
    "[\"asd \"]",
    "\" \"",
    "[\"\\uD834\\uDd1e\"]",
    "[\"\\u0821\"]",
    "[\"\\u0123\"]",
    "[\"\xe2\x80\xa8\"]",
    "[\"\xe2\x80\xa9\"]",
    "[\"\\u0061\\u30af\\u30EA\\u30b9\"]",
    "[\"new\\u000Aline\"]",
    "[\"\x7f\"]",
    "[\"\\uA66D\"]",
    "[\"\\u005C\"]",
    "[\"\xe2\x8d\x82\xe3\x88\xb4\xe2\x8d\x82\"]",
    "[\"\\uDBFF\\uDFFE\"]",
    "[\"\\uD83F\\uDFFE\"]",
    "[\"\\u200B\"]",
    "[\"\\u2064\"]",
    "[\"\\uFDD0\"]",
    "[\"\\uFFFE\"]",
    "[\"\\u0022\"]",
    "[\"\xe2\x82\xac\xf0\x9d\x84\x9e\"]",
    "[\"a\177a\"]",
    "false",
    "42",
    "-0.1",
    "null",
    "\"asd\"",
    "true",
    "\"\"",
    "[\"a\"]\n",
    "[true]",
    " [] ",
    "{\"a\":\"\\u0000\"}",
};

static const char *const n_cases[] = {
    "[1 true]",
    "[a\xe5]",
    "[\"\": 1]",
    "[\"\"],",
    "[,1]",
    "[1,,2]",
    "[\"x\",,]",
    "[\"x\"]]",
    "[\"\",]",
    "[\"x\"",
    "[x",
    "[3[4]]",
    "[\xff]",
    "[1:2]",
    "[,]",
    "[-]",
    "[   , \"\"]",
    "[\"a\",\n4\n,1,",
    "[1,]",
    "[1,,]",
    "[\"\013a\"\\f]",
    "[*]",
    "[\"\"",
    "[1,",
    "[1,\n1\n,1",
    "[{}",
    "[fals]",
    "[nul]",
    "[tru]",
    "[++1234]",
    "[+1]",
    "[+Inf]",
    "[-01]",
    "[-1.0.]",
    "[-2.]",
    "[-NaN]",
    "[.-1]",
    "[.2e-3]",
    "[0.1.2]",
    "[0.3e+]",
    "[0.3e]",
    "[0.e1]",
    "[0E+]",
    "[0E]",
    "[0e+]",
    "[0e]",
    "[1.0e+]",
    "[1.0e-]",
    "[1.0e]",
    "[1 000.0]",
    "[1eE2]",
    "[2.e+3]",
    "[2.e-3]",
    "[2.e3]",
    "[9.e+]",
    "[Inf]",
    "[NaN]",
    "[\xef\xbc\x91]",
    "[1+2]",
    "[0x1]",
    "[0x42]",
    "[Infinity]",
    "[0e+-1]",
    "[-123.123foo]",
    "[123\xe5]",
    "[1e1\xe5]",
    "[0\xe5]",
    "[-Infinity]",
    "[-foo]",
    "[- 1]",
    "[-012]",
    "[-.123]",
    "[-1x]",
    "[1ea]",
    "[1.]",
    "[.123]",
    "[1.2a-3]",
    "[1.8011670033376514H-308]",
    "[012]",
    "[\"x\", truth]",
    "{[: \"x\"}\n",
    "{\"x\", null}",
    "{\"x\"::\"b\"}",
    "{\xf0\x9f\x87\xa8\xf0\x9f\x87\xad}",
    "{\"a\":\"a\" 123}",
    "{key: 'value'}",
    "{\"\xb9\":\"0\",}",
    "{\"a\" b}",
    "{:\"b\"}",
    "{\"a\" \"b\"}",
    "{\"a\":",
    "{\"a\"",
    "{1:1}",
    "{9999E9999:1}",
    "{null:null,null:null}",
    "{\"id\":0,,,,,}",
    "{'a':0}",
    "{\"id\":0,}",
    "{\"a\":\"b\"}/**/",
    "{\"a\":\"b\"}/**//",
    "{\"a\":\"b\"}//",
    "{\"a\":\"b\"}/",
    "{\"a\":\"b\",,\"c\":\"d\"}",
    "{a: \"b\"}",
    "{\"a\":\"a",
    "{ \"foo\" : \"bar\", \"a\" }",
    "{\"a\":\"b\"}#",
    " ",
    "[\"\\uD800\\\"]",
    "[\"\\uD800\\u\"]",
    "[\"\\uD800\\u1\"]",
    "[\"\\uD800\\u1x\"]",
    "[\xc3\xa9]",
    "[\"\\x00\"]",
    "[\"\\\\\\\"]",
    "[\"\\\t\"]",
    "[\"\\\xf0\x9f\x8c\x80\"]",
    "[\"\\\"]",
    "[\"\\u00A\"]",
    "[\"\\uD834\\uDd\"]",
    "[\"\\uD800\\uD800\\x\"]",
    "[\"\\u\xe5\"]",
    "[\"\\a\"]",
    "[\"\\uqqqq\"]",
    "[\"\\\xe5\"]",
    "[\\u0020\"asd\"]",
    "[\\n]",
    "\"",
    "['single quote']",
    "abc",
    "[\"\\",
    "[\"new\nline\"]",
    "[\"\t\"]",
    "\"\\UA66D\"",
    "\"\"x",
    "[\xe2\x81\xa0]",
    "\xef\xbb\xbf",
    "<.>",
    "[<null>]",
    "[1]x",
    "[1]]",
    "[\"asd]",
    "a\xc3\xa5",
    "[True]",
    "1]",
    "{\"x\": true,",
    "[][]",
    "]",
    "\xef\xbb\xbf{}",
    "\xe5",
    "[",
    "\x0c",
    "\xef\xbc\xa1",
    "*",
    "{\"a\":\"b\"}#{}",
    "[\\u000A\"\"]",
    "[1",
    "[ false, nul",
    "[ true, fals",
    "[ false, tru",
    "{\"asd\":\"asd\"",
    "\xc3\xa5",
    "[\xe2\x81\xa0]",
    "{",
    "{]",
    "[\"a\",\n4\n,1,1",
    "{\"a\":\"b\"}\n#",
    "[\"\xed\xa0\x80\"]",
    "[\"\xe0\xff\"]",
    "[\"\x81\"]",
    "[\"\xf4\xbf\xbf\xbf\"]",
    "[\"\xc0\xaf\"]",
    "[\"\xfc\x83\xbf\xbf\xbf\xbf\"]",
    "[\"\xfc\x80\x80\x80\x80\x80\"]",
    "[\"\xe9\"]",
    "[\"\xe6\x97\"]",
    "[\"\\ud800abc\"]",
    "[\"\\udd1e\\ud834\"]",
};

static void test_suite(void) {
    size_t i;
    for (i = 0; i < sizeof y_cases / sizeof y_cases[0]; i++) {
        mlstack__json_doc doc;
        if (ok_n(__LINE__, &doc, y_cases[i], strlen(y_cases[i]))) mlstack__json_free(&doc);
        else
            printf("  (y_ case %zu)\n", i);
    }
    for (i = 0; i < sizeof n_cases / sizeof n_cases[0]; i++) bad_n(__LINE__, n_cases[i], strlen(n_cases[i]), NULL);
}

int main(void) {
    (void)tl_read; /* testlib helper this file does not need */
    /* MLSTACK_MAX_JSON_BYTES as the library reads it, lowered so that the size limit can be reached */
    mlstack__limits.max_json_bytes = (size_t)4 << 20;
    test_escapes();
    test_utf8_and_controls();
    test_numbers();
    test_numbers_locale();
    test_depth();
    test_structure();
    test_sizes();
    test_suite();
    return tl_finish();
}
