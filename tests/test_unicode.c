/* Unicode section (5): categories against Python's unicodedata, normalization against what
   Hugging Face tokenizers gives for every input of the UCD's NormalizationTest.txt, lowercase
   against tokenizers' Lowercase normalizer, and UTF-8 decoding edge cases. The fixtures come from
   tools/make_unicode_fixtures.py. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "tests/testlib.h"

#define FIX "tests/fixtures/unicode/"

static int cat_index(const char *name) {
    static const char *const names[] = {"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl",
                                        "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc",
                                        "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"};
    int i;
    for (i = 0; i < 30; i++)
        if (!strncmp(name, names[i], 2)) return i;
    return -1;
}

/* Python 3.11 knows Unicode 14.0 and our tables 15.0: code points Python calls unassigned may be
   assigned here (counted); every other code point must agree. */
static void test_categories(void) {
    char *text = tl_read(FIX "categories.txt", NULL), *p, *line;
    uint32_t cp = 0, next;
    int cat = -1, newer = 0, bad = 0;
    if (!text) {
        SKIP("missing " FIX "categories.txt");
        return;
    }
    p = strchr(text, '\n') + 1;
    while (cp < 0x110000) {
        line = p;
        if (*line) {
            next = (uint32_t)strtoul(line, &p, 16);
            cat = cat_index(p + 1);
            p = strchr(p, '\n') + 1;
        }
        next = *p ? (uint32_t)strtoul(p, NULL, 16) : 0x110000;
        for (; cp < next; cp++) {
            int mine = mlstack__ucat(cp);
            if (mine == cat) continue;
            if (cat == MLSTACK__UC_Cn) {
                newer++;
                continue;
            }
            if (bad++ < 5) printf("  U+%04X: category %d, Python %d\n", cp, mine, cat);
        }
    }
    CHECKF(bad == 0, "%d code points differ from Python's categories", bad);
    CHECKF(newer > 4000 && newer < 5000, "%d code points assigned after Unicode 14.0 (15.0 added 4489)", newer);
    free(text);
    CHECK(mlstack__ucat(0x110000) == MLSTACK__UC_Cn);
    CHECK(mlstack__uis_whitespace(0x85) && mlstack__uis_whitespace(0x3000) && !mlstack__uis_whitespace(0x200B) &&
          !mlstack__uis_whitespace(0x1C));
    CHECK(mlstack__uis_mark(0x301) && mlstack__uis_mark(0x20DD) && !mlstack__uis_mark('a'));
}

static int one_form(int form, const char *src, size_t n, const char *want, size_t wn) {
    char *out;
    size_t on;
    int ok;
    if (mlstack__unorm(form, src, n, &out, &on) != MLSTACK_OK) return 0;
    ok = on == wn && !memcmp(out, want, wn) && out[on] == 0;
    free(out);
    return ok;
}

static void test_normalization(void) {
    static const int forms[4] = {MLSTACK__NFC, MLSTACK__NFD, MLSTACK__NFKC, MLSTACK__NFKD};
    static const char *const names[4] = {"NFC", "NFD", "NFKC", "NFKD"};
    size_t len;
    char *text = tl_read(FIX "normalization.txt", &len), *p, *end;
    unsigned char *part1 = (unsigned char *)calloc(0x110000, 1);
    int in_part1 = 0, lines = 0, bad = 0, f;
    uint32_t cp;
    if (!text) {
        SKIP("missing " FIX "normalization.txt");
        free(part1);
        return;
    }
    for (p = text; p < text + len; p = end + 1) {
        const char *field[5];
        size_t flen[5];
        int k = 0;
        char *q = p;
        end = strchr(p, '\n');
        if (!end) break;
        if (*p == '#') continue;
        if (*p == '@') {
            in_part1 = !strncmp(p, "@Part1", 6);
            continue;
        }
        while (k < 5) {
            char *t = q;
            while (t < end && *t != '\t') t++;
            if (*q == 1) {
                int j = q[1] - '0';
                field[k] = field[j];
                flen[k] = flen[j];
            } else {
                field[k] = q;
                flen[k] = (size_t)(t - q);
            }
            k++;
            q = t + 1;
        }
        lines++;
        if (in_part1) {
            mlstack__utf8_decode((const unsigned char *)field[0], flen[0], &cp);
            part1[cp] = 1;
        }
        for (f = 0; f < 4; f++) {
            if (one_form(forms[f], field[0], flen[0], field[f + 1], flen[f + 1])) continue;
            if (bad++ < 5) printf("  %s of line %d (\"%.*s\") differs\n", names[f], lines, (int)flen[0], field[0]);
        }
    }
    CHECKF(lines > 18000, "only %d normalization lines", lines);
    CHECKF(bad == 0, "%d normalization results differ from tokenizers", bad);
    /* every code point not in part 1 is unchanged by every form */
    bad = 0;
    for (cp = 0; cp < 0x110000; cp++) {
        unsigned char buf[4];
        size_t n;
        if (part1[cp] || (cp >= 0xD800 && cp < 0xE000)) continue;
        n = mlstack__utf8_put(buf, cp);
        for (f = 0; f < 4; f++)
            if (!one_form(forms[f], (const char *)buf, n, (const char *)buf, n) && bad++ < 5)
                printf("  U+%04X changes under %s\n", cp, names[f]);
    }
    CHECKF(bad == 0, "%d code points outside part 1 are not invariant", bad);
    free(part1);
    free(text);
    {   /* ASCII fast path, empty input, invalid bytes, long runs of marks (linear sort) */
        char *out;
        size_t on, i;
        char *marks = (char *)malloc(2 + 2 * 5000);
        CHECK(one_form(MLSTACK__NFKC, "plain ascii", 11, "plain ascii", 11));
        CHECK(mlstack__unorm(MLSTACK__NFC, "", 0, &out, &on) == MLSTACK_OK && on == 0);
        free(out);
        CHECK(one_form(MLSTACK__NFC, "a\xff", 2, "a\xef\xbf\xbd", 4));
        CHECK(mlstack__unorm(7, "a", 1, &out, &on) == MLSTACK_ERR_INVALID_ARG && out == NULL);
        marks[0] = 'a';
        for (i = 0; i < 5000; i++) { /* alternating U+0316 (class 220) and U+0301 (class 230) */
            marks[1 + 2 * i] = (char)0xCC;
            marks[2 + 2 * i] = (char)(i % 2 ? 0x81 : 0x96);
        }
        CHECK(mlstack__unorm(MLSTACK__NFD, marks, 1 + 2 * 5000, &out, &on) == MLSTACK_OK && on == 1 + 2 * 5000 &&
              (unsigned char)out[2] == 0x96 && (unsigned char)out[on - 1] == 0x81);
        free(out);
        free(marks);
    }
}

static void test_case(void) {
    char *text = tl_read(FIX "lower.txt", NULL), *p;
    int bad = 0, lines = 0;
    uint32_t out[3];
    if (!text) {
        SKIP("missing " FIX "lower.txt");
        return;
    }
    for (p = text; *p; p++) {
        uint32_t cp = (uint32_t)strtoul(p, &p, 16), want[3];
        size_t k = 0, n;
        while (*p == ' ') want[k++ < 3 ? k - 1 : 2] = (uint32_t)strtoul(p + 1, &p, 16);
        n = mlstack__ulower_full(cp, out);
        lines++;
        if ((n != k || memcmp(out, want, k * sizeof(uint32_t))) && bad++ < 5) printf("  lower(U+%04X) differs\n", cp);
    }
    /* Rust's tables may be newer than ours: allow a few characters of Unicode 15/16 */
    if (bad) printf("  note: %d lowercase mappings differ (Unicode version)\n", bad);
    CHECKF(bad <= 40, "%d of %d lowercase mappings differ from tokenizers", bad, lines);
    free(text);
    CHECK(mlstack__ulower('A') == 'a' && mlstack__uupper(0xE9) == 0xC9 && mlstack__ulower(0x130) == 0x69);
    CHECK(mlstack__ulower_full(0x130, out) == 2 && out[0] == 'i' && out[1] == 0x307);
    CHECK(mlstack__ufold(0x212A) == 'k' && mlstack__ufold(0x17F) == 's' && mlstack__ufold(0x3A3) == 0x3C3);
}

static void test_utf8(void) {
    uint32_t cp;
    CHECK(mlstack__utf8_decode((const unsigned char *)"\xe2\x82\xac", 3, &cp) == 3 && cp == 0x20AC);
    CHECK(mlstack__utf8_decode((const unsigned char *)"\xf0\x9f\x98\x80", 4, &cp) == 4 && cp == 0x1F600);
    CHECK(mlstack__utf8_decode((const unsigned char *)"\xe2\x82\xac", 2, &cp) == 1 && cp == 0xFFFD);
    CHECK(mlstack__utf8_decode((const unsigned char *)"\xc0\xaf", 2, &cp) == 1 && cp == 0xFFFD);
    CHECK(mlstack__utf8_decode((const unsigned char *)"\xed\xa0\x80", 3, &cp) == 1 && cp == 0xFFFD);
    CHECK(mlstack__utf8_decode((const unsigned char *)"\xf4\x90\x80\x80", 4, &cp) == 1 && cp == 0xFFFD);
    CHECK(mlstack__utf8_decode((const unsigned char *)"\x80", 1, &cp) == 1 && cp == 0xFFFD);
}

int main(void) {
    test_utf8();
    test_categories();
    test_case();
    test_normalization();
    return tl_finish();
}
