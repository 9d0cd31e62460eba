/* Regex engine (>>regex) against Oniguruma as used by Hugging Face tokenizers: every real
   Split pattern in tests/fixtures/regex/splits.json (recorded by tools/make_regex_fixtures.py)
   must give exactly the recorded matches; bad patterns must fail with a clear message; hostile
   patterns must stop at the step budget. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "tests/testlib.h"

#ifndef FIXTURE_DIR
#define FIXTURE_DIR "tests/fixtures/regex/"
#endif

/* All non-empty matches, the way a Split pre-tokenizer walks the text (after an empty match the
   next search starts one code point later). Returns the count, or -1 on an engine error. */
static int all_matches(const mlstack__regex *re, const char *s, size_t n, size_t *spans, int cap) {
    size_t pos = 0, b, e;
    int k = 0;
    while (pos <= n) {
        int r = mlstack__regex_search(re, s, n, pos, &b, &e);
        if (r < 0) return -1;
        if (r == 0) break;
        if (e > b) {
            if (k + 2 <= cap) {
                spans[k] = b;
                spans[k + 1] = e;
            }
            k += 2;
            pos = e;
        } else {
            uint32_t cp;
            if (b >= n) break;
            pos = b + (size_t)mlstack__utf8_decode((const unsigned char *)s + b, n - b, &cp);
        }
    }
    return k;
}

static void test_fixture(void) {
    size_t len;
    char *text = tl_read(FIXTURE_DIR "splits.json", &len);
    mlstack__json_doc doc;
    mlstack_error err;
    const mlstack__json *strings, *pats, *p;
    size_t spans[4096];
    if (!text) {
        SKIP("missing " FIXTURE_DIR "splits.json (run from the repository root)");
        return;
    }
    CHECK(mlstack__json_parse(&doc, text, len, "splits.json", &err) == MLSTACK_OK);
    strings = mlstack__json_get(doc.root, "strings");
    pats = mlstack__json_get(doc.root, "patterns");
    CHECK(strings && pats && pats->len > 10);
    for (p = pats ? pats->child : NULL; p; p = p->next) {
        const mlstack__json *name = mlstack__json_get(p, "name"), *pat = mlstack__json_get(p, "pattern");
        const mlstack__json *m = mlstack__json_get(p, "matches"), *exp, *str;
        mlstack__regex *re = NULL;
        int bad = 0;
        mlstack_result rc = mlstack__regex_compile(pat->str, pat->len, &re, &err);
        CHECKF(rc == MLSTACK_OK, "%s: compile failed: %s", name->str, rc ? err.message : "");
        if (rc != MLSTACK_OK) continue;
        for (exp = m->child, str = strings->child; exp && str; exp = exp->next, str = str->next) {
            int k = all_matches(re, str->str, str->len, spans, 4096), i;
            const mlstack__json *v;
            int ok = k == (int)exp->len;
            for (v = exp->child, i = 0; ok && v && i < k; v = v->next, i++) ok = (size_t)v->i == spans[i];
            if (!ok && bad++ < 3) {
                printf("  %s on \"%s\": got", name->str, str->str);
                for (i = 0; i < k && i < 40; i += 2) printf(" [%zu,%zu)", spans[i], spans[i + 1]);
                printf("; want");
                for (v = exp->child, i = 0; v && i < 40; v = v->next, i++)
                    printf("%s%lld", i % 2 ? "," : " ", (long long)v->i);
                printf("\n");
            }
            CHECKF(ok, "%s: split differs from onig", name->str);
        }
        mlstack__regex_free(re);
    }
    mlstack__json_free(&doc);
    free(text);
}

static int first_match(const char *pat, const char *s, size_t *b, size_t *e) {
    mlstack__regex *re;
    mlstack_error err;
    int r;
    if (mlstack__regex_compile(pat, strlen(pat), &re, &err) != MLSTACK_OK) return -100;
    r = mlstack__regex_search(re, s, strlen(s), 0, b, e);
    mlstack__regex_free(re);
    return r;
}

static void test_basics(void) {
    size_t b = 0, e = 0;
    CHECK(first_match("b+", "aabbbc", &b, &e) == 1 && b == 2 && e == 5);
    CHECK(first_match("a|ab", "ab", &b, &e) == 1 && e == 1); /* ordered, not longest */
    CHECK(first_match("x*", "abc", &b, &e) == 1 && b == 0 && e == 0);
    CHECK(first_match("\\p{Lu}\\p{Ll}+", "abc Def", &b, &e) == 1 && b == 4 && e == 7);
    CHECK(first_match("(?i:'S)", "it'S", &b, &e) == 1 && b == 2 && e == 4);
    CHECK(first_match("(?i:k)", "\xe2\x84\xaa", &b, &e) == 1 && e == 3); /* KELVIN SIGN folds to k */
    CHECK(first_match("\\d+", "x\xd9\xa1\xd9\xa2", &b, &e) == 1 && b == 1 && e == 5); /* Arabic-Indic digits */
    CHECK(first_match("\\s+(?!\\S)", "a   b", &b, &e) == 1 && b == 1 && e == 3);
    CHECK(first_match("a++a", "aaaa", &b, &e) == 0);
    CHECK(first_match("^b", "a\nb", &b, &e) == 1 && b == 2);
    CHECK(first_match(".", "\n\r", &b, &e) == 1 && b == 1);
    CHECK(first_match("\\x{1F600}|\\u00e9", "\xc3\xa9", &b, &e) == 1 && e == 2);
    CHECK(first_match("a{,2}b", "aaab", &b, &e) == 1 && b == 1 && e == 4);
    CHECK(first_match("a{x", "a{x", &b, &e) == 1 && e == 3); /* '{' not an interval is literal */
    /* invalid UTF-8 in the subject: stray bytes are single U+FFFD code points, never over-read */
    CHECK(first_match("\\p{So}", "a\xff", &b, &e) == 1 && b == 1 && e == 2);
    CHECK(first_match("[^a]+", "\xe2\x82", &b, &e) == 1 && b == 0 && e == 2);
}

static void test_errors(void) {
    static const tl_pair cases[] = {
        {"abc(?<=x)", "unsupported construct '(?<=' at offset 3"},
        {"(?<!x)", "'(?<!'"},
        {"(a", "missing ')'"},
        {"a)", "unmatched ')' at offset 1"},
        {"*a", "nothing to repeat"},
        {"[a", "missing ']'"},
        {"[z-a]", "out of order"},
        {"\\p{Han}", "unsupported property 'Han'"},
        {"\\p{L", "unterminated"},
        {"\\1", "unsupported construct '\\1'"},
        {"\\q", "unsupported construct '\\q'"},
        {"[[:alpha:]]", "'[:'"},
        {"[a&&b]", "'&&'"},
        {"a{3,1}", "out of order"},
        {"a{1000000}", "too large"},
        {"(?<name>a)", "(?<name>"},
        {"\\", "backslash"},
        {"\\x{110000}", "hexadecimal"},
        {"((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))))))))))"
         "))))))))))))))))))))))))))))",
         "nested too deeply"},
        {"(?:a{1,100}b){1,1000}{1,1000}", "too large"},
        {"\xff", "invalid UTF-8"},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mlstack__regex *re = (mlstack__regex *)&i;
        mlstack_error err;
        mlstack_result rc;
        memset(&err, 0, sizeof err);
        rc = mlstack__regex_compile(cases[i].in, strlen(cases[i].in), &re, &err);
        CHECKF(rc != MLSTACK_OK && re == NULL, "pattern %s should fail", cases[i].in);
        CHECKF(strstr(err.message, cases[i].want) && !strncmp(err.message, "regex: ", 7),
               "pattern %s: message \"%s\" lacks \"%s\"", cases[i].in, err.message, cases[i].want);
    }
}

static void test_budget(void) {
    static char s[20001];
    mlstack__regex *re;
    mlstack_error err;
    size_t b, e;
    int r;
    memset(s, 'a', 20000);
    CHECK(mlstack__regex_compile("(a*)*b", 6, &re, &err) == MLSTACK_OK);
    r = mlstack__regex_search(re, s, 30, 0, &b, &e);
    CHECKF(r < 0, "(a*)*b on 30 a's: %d, want a budget error", r);
    mlstack__regex_free(re);
    CHECK(mlstack__regex_compile("(a|aa)+c", 8, &re, &err) == MLSTACK_OK);
    r = mlstack__regex_search(re, s, 20000, 0, &b, &e);
    CHECKF(r < 0, "(a|aa)+c: %d, want a budget error", r);
    mlstack__regex_free(re);
    /* long but linear work stays within budget */
    CHECK(mlstack__regex_compile("a+$", 3, &re, &err) == MLSTACK_OK);
    r = mlstack__regex_search(re, s, 20000, 0, &b, &e);
    CHECK(r == 1 && b == 0 && e == 20000);
    mlstack__regex_free(re);
}

int main(void) {
    test_basics();
    test_errors();
    test_budget();
    test_fixture();
    return tl_finish();
}
