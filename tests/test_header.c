/* The header's table of contents matches its numbered section banners, in order, the
   declarations part is pure ASCII, its one #line directive keeps the line numbers, no nested
   conditional has an #else (check_conditionals), no text refers
   to a section by its number, and no function is longer than the limit below. */
#include "mlstack.h"
#include "testlib.h"
#if !defined(_WIN32)
#include <dirent.h>
#endif

/* Every "#line N" in the header names the number its next line has anyway (the one at the top
   exists only to make GCC skip -Wmisleading-indentation: MLSTACK_KEEP_MISLEADING_INDENTATION), so
   diagnostics, debuggers and __LINE__ still see the file's own line numbers. */
static void check_line_directives(const char *h) {
    long line = 1;
    int seen = 0;
    const char *p;
    for (p = h; *p; p++) {
        if ((p == h || p[-1] == '\n') && strncmp(p, "#line ", 6) == 0) {
            long n = strtol(p + 6, NULL, 10);
            seen++;
            CHECKF(n == line + 1, "mlstack.h:%ld: \"#line %ld\" should name the next line, %ld", line, n, line + 1);
        }
        if (*p == '\n') line++;
    }
    CHECKF(seen == 1, "mlstack.h has %d #line directives, expected the one at the top", seen);
}

/* Copies the identifier at p (letters, digits, _) into out; returns its length. */
static size_t ident(const char *p, char *out, size_t cap) {
    size_t n = 0;
    while (
        (p[n] == '_' || (p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= '0' && p[n] <= '9')) &&
        n + 1 < cap) {
        out[n] = p[n];
        n++;
    }
    out[n] = 0;
    return n;
}

/* API AT A GLANCE names every public function, and only those: each "MLSTACK_API ... name("
   declaration has "name(" in the block, and each "mlstack_...(" in the block is declared. */
static void check_glance(const char *h) {
    const char *g = strstr(h, "API AT A GLANCE"), *g_end = g ? strstr(g, "*/") : NULL,
               *decl = strstr(h, "#ifndef MLSTACK_H");
    const char *p, *decl_end;
    char name[96], pat[100];
    int n_decl = 0;
    CHECKF(g && g_end && decl, "no API AT A GLANCE block in the front matter");
    if (!g || !g_end || !decl) return;
    decl_end = strstr(decl, "#endif /* MLSTACK_H */");
    CHECK(decl_end != NULL);
    for (p = decl; (p = strstr(p, "\nMLSTACK_API ")) != NULL && p < decl_end; p++) {
        const char *paren = strchr(p + 1, '('), *q = paren;
        int in_block;
        if (!paren) break;
        while (q > p && (q[-1] == '_' || (q[-1] >= 'a' && q[-1] <= 'z') || (q[-1] >= '0' && q[-1] <= '9'))) q--;
        ident(q, name, sizeof name);
        if (strncmp(name, "mlstack_", 8) != 0) continue;
        n_decl++;
        snprintf(pat, sizeof pat, " %s(", name);
        in_block = (q = strstr(g, pat)) != NULL && q < g_end;
        snprintf(pat, sizeof pat, "*%s(", name);
        in_block |= (q = strstr(g, pat)) != NULL && q < g_end;
        CHECKF(in_block, "%s is declared but not listed in API AT A GLANCE", name);
    }
    CHECKF(n_decl > 50, "only %d public functions found", n_decl);
    for (p = g; (p = strstr(p, "mlstack_")) != NULL && p < g_end; p += 8) {
        size_t n = ident(p, name, sizeof name);
        if (p[n] != '(' || (p > h && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z')))) continue;
        snprintf(pat, sizeof pat, " %s(", name);
        {
            const char *d = strstr(decl, pat);
            int found = 0;
            /* a declaration: the name follows a line starting with MLSTACK_API */
            while (d && !found) {
                const char *bol = d;
                while (bol > decl && bol[-1] != '\n') bol--;
                found = strncmp(bol, "MLSTACK_API ", 12) == 0;
                d = strstr(d + 1, pat);
            }
            if (!found) {
                snprintf(pat, sizeof pat, "*%s(", name);
                for (d = strstr(decl, pat); d && !found; d = strstr(d + 1, pat)) {
                    const char *bol = d;
                    while (bol > decl && bol[-1] != '\n') bol--;
                    found = strncmp(bol, "MLSTACK_API ", 12) == 0;
                }
            }
            CHECKF(found, "API AT A GLANCE lists %s, which is not declared", name);
        }
    }
}

/* Every ">>anchor" the header mentions names a section. */
static void check_anchors(const char *h, char toc[][96], int n_toc) {
    const char *p;
    char anchor[40];
    int k, bad = 0;
    for (p = h; (p = strstr(p, ">>")) != NULL; p += 2) {
        int known = 0;
        if (ident(p + 2, anchor, sizeof anchor) == 0 || strcmp(anchor, "anchor") == 0 || strcmp(anchor, "name") == 0)
            continue;
        for (k = 0; k < n_toc && !known; k++) {
            const char *a = strstr(toc[k], ">>");
            known = a && strcmp(a + 2, anchor) == 0;
        }
        if (!known && bad++ < 10) CHECKF(0, "\">>%s\" at offset %ld names no section", anchor, (long)(p - h));
    }
    CHECKF(bad == 0, "%d references to unknown anchors", bad);
}

/* Sections are referred to by their >>anchor, never by number: "section", "sections" (any case)
   or the section sign, then a digit after optional white space, goes stale when sections move.
   Returns how many such references text (a file called name) holds, each reported. */
static int section_numbers(const char *name, const char *text) {
    const char *p, *q;
    int bad = 0;
    for (p = text; *p; p++) {
        static const char word[] = "section";
        size_t k;
        q = NULL;
        if ((unsigned char)p[0] == 0xC2 && (unsigned char)p[1] == 0xA7) q = p + 2; /* UTF-8 section sign */
        for (k = 0; !q && k < sizeof word - 1 && (p[k] | 0x20) == word[k]; k++) {}
        if (!q && k == sizeof word - 1 && (p == text || !((p[-1] | 0x20) >= 'a' && (p[-1] | 0x20) <= 'z')))
            q = p + k + ((p[k] | 0x20) == 's');
        if (!q) continue;
        while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
        if (*q >= '0' && *q <= '9') {
            const char *l;
            int line = 1;
            for (l = text; l < p; l++) line += *l == '\n';
            if (bad++ < 10) CHECKF(0, "%s:%d: a section referred to by number (use its >>anchor)", name, line);
        }
    }
    return bad;
}

/* section_numbers over a file, or over every .c, .h, .cu, .py, .sh and .md file in a folder
   (where the platform lists folders); missing files are skipped (the companion headers and
   folders of a trimmed copy). Returns the references found. */
static int section_numbers_in(const char *path, int folder) {
    size_t len;
    char *text;
    int bad = 0;
#if !defined(_WIN32)
    if (folder) {
        DIR *d = opendir(path);
        struct dirent *de;
        char file[512];
        while (d && (de = readdir(d)) != NULL) {
            const char *dot = strrchr(de->d_name, '.');
            if (!dot || (strcmp(dot, ".c") && strcmp(dot, ".h") && strcmp(dot, ".cu") && strcmp(dot, ".py") &&
                         strcmp(dot, ".sh") && strcmp(dot, ".md")))
                continue;
            snprintf(file, sizeof file, "%s/%s", path, de->d_name);
            bad += section_numbers_in(file, 0);
        }
        if (d) closedir(d);
        return bad;
    }
#else
    if (folder) return 0;
#endif
    if ((text = tl_read(path, &len)) == NULL) return 0;
    bad = section_numbers(path, text);
    free(text);
    return bad;
}

/* A part build (>>parts) depends on two things the compiler cannot check: every section after
   the declarations names its part right under its banner, and no plain file-scope static object
   holds state (each part would get its own copy; mutable objects are MLSTACK__VAR). */
static void check_parts(const char *impl) {
    const char *p, *n = strstr(impl, "#define MLSTACK__N_PARTS ");
    int n_sections = 0, n_parts = n ? atoi(n + strlen("#define MLSTACK__N_PARTS ")) : 0;
    CHECKF(n_parts >= 2, "no \"#define MLSTACK__N_PARTS N\" in the implementation");
    for (p = impl; (p = strstr(p, "\n/* ==== ")) != NULL; p++) {
        const char *nl = strchr(p + 1, '\n');
        int part = 0, num = 0;
        if (sscanf(p + 1, "/* ==== %d.", &num) != 1 || !nl) continue;
        n_sections++;
        CHECKF(sscanf(nl, "\n#undef MLSTACK__PART\n#define MLSTACK__PART %d", &part) == 1 && part >= 1 &&
                   part <= n_parts,
               "section %d: no \"#define MLSTACK__PART k\" (1..%d) under its banner", num, n_parts);
    }
    CHECKF(n_sections > 20, "only %d section banners after the implementation starts", n_sections);
    for (p = impl; (p = strstr(p, "\nstatic ")) != NULL; p++) {
        const char *decl = p + 1, *c = strstr(decl, "const ");
        size_t stop = strcspn(decl, "(=;[\n");
        if (decl[stop] == '(' || decl[stop] == '\n') continue; /* a function, or its first line */
        CHECKF(c && c < decl + stop, "file-scope static object that is not const (a part build would copy it): %.*s",
               (int)strcspn(decl, "\n"), decl);
    }
}

/* Functions stay short enough to read whole: none over MLSTACK_TEST_MAX_FN_LINES lines, counted
   as tools/fn_lengths.py counts them (the definition's first line at column 0 to the closing
   brace at column 0). */
#define MLSTACK_TEST_MAX_FN_LINES 150

/* The length of line s (up to '\n' or the end), with a trailing comment and blanks left off. */
static size_t code_len(const char *s) {
    size_t n = strcspn(s, "\n"), i;
    for (i = 0; i + 1 < n; i++)
        if (s[i] == '/' && (s[i + 1] == '*' || s[i + 1] == '/')) {
            n = i;
            break;
        }
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    return n;
}

static const char *next_line(const char *s) {
    const char *e = strchr(s, '\n');
    return e ? e + 1 : s + strlen(s);
}

static void check_fn_lengths(const char *h) {
    const char *line = h;
    int n_fn = 0, line_no = 1;
    while (*line) {
        const char *sig_end = line, *q, *paren, *name_end, *name;
        int is_fn, sig_lines = 0, lines;
        size_t n;
        char fname[128];
        if (!((*line >= 'a' && *line <= 'z') || (*line >= 'A' && *line <= 'Z') || *line == '_') ||
            strncmp(line, "typedef", 7) == 0 || strncmp(line, "extern \"C\"", 10) == 0) {
            line = next_line(line), line_no++;
            continue;
        }
        /* the signature: continuation lines are indented; it ends at '{' or ';' */
        for (;;) {
            const char *nl = next_line(sig_end);
            n = code_len(sig_end);
            if ((n && (sig_end[n - 1] == '{' || sig_end[n - 1] == ';')) || sig_lines >= 12 || !*nl) break;
            if (*nl == '{') {
                sig_end = nl, sig_lines++;
                n = code_len(sig_end);
                break;
            }
            if (*nl != ' ' && *nl != '\t') break;
            sig_end = nl, sig_lines++;
        }
        paren = strchr(line, '(');
        q = strchr(line, '=');
        is_fn = n && sig_end[n - 1] == '{' && paren && paren < sig_end + n && !(q && q < paren);
        if (is_fn) {
            name_end = paren;
            while (name_end > line && name_end[-1] == ' ') name_end--;
            name = name_end;
            while (name > line && (name[-1] == '_' || (name[-1] >= 'a' && name[-1] <= 'z') ||
                                   (name[-1] >= 'A' && name[-1] <= 'Z') || (name[-1] >= '0' && name[-1] <= '9')))
                name--;
            snprintf(fname, sizeof fname, "%.*s", (int)(name_end - name), name);
            is_fn = strcmp(fname, "if") != 0 && strcmp(fname, "for") != 0 && strcmp(fname, "while") != 0 &&
                    strcmp(fname, "switch") != 0 && strcmp(fname, "return") != 0 && strcmp(fname, "sizeof") != 0 &&
                    strcmp(fname, "defined") != 0;
        }
        if (!is_fn) {
            for (; line != next_line(sig_end); line = next_line(line)) line_no++;
            continue;
        }
        /* the body: to the next line that starts with '}' */
        for (q = next_line(sig_end), lines = sig_lines + 2; *q && *q != '}'; q = next_line(q)) lines++;
        n_fn++;
        CHECKF(lines <= MLSTACK_TEST_MAX_FN_LINES,
               "mlstack.h:%d: %s is %d lines (over %d): split it along its comments", line_no, fname, lines,
               MLSTACK_TEST_MAX_FN_LINES);
        for (; line != next_line(q); line = next_line(line)) line_no++;
    }
    CHECKF(n_fn > 500, "only %d function definitions found", n_fn);
}

/* clang-format lays the file out once per combination of preprocessor branches: for each nesting
   depth of #if it takes the most branches (#if, #elif, #else) that any conditional at that depth
   has, and runs over the whole file as many times as the product of those counts. The header's
   chains of 3 at the top level and one nested #else once made that 18 passes, 29 s of the CPU of
   `make format-check` where 3 passes take 6. So a conditional nested in another has no #else or
   #elif (PARTS rule 10): a nested choice becomes a macro defined outside, or joins its parent's
   condition. Directives inside comments are not counted (the header has none at line starts). */
static void check_conditionals(const char *h) {
    long line = 1, where[64];
    int depth = 0, branches[64], most[64], product = 1, k;
    const char *p;
    memset(most, 0, sizeof most);
    for (p = h; *p; p++) {
        const char *d = p;
        if (*p == '\n') line++;
        if (!(p == h || p[-1] == '\n')) continue;
        while (*d == ' ') d++;
        if (*d != '#') continue;
        d++;
        while (*d == ' ') d++;
        if (strncmp(d, "if", 2) == 0 && depth < 64) {
            where[depth] = line;
            branches[depth++] = 1;
        } else if ((strncmp(d, "elif", 4) == 0 || strncmp(d, "else", 4) == 0) && depth > 0) {
            branches[depth - 1]++;
        } else if (strncmp(d, "endif", 5) == 0 && depth > 0) {
            depth--;
            if (branches[depth] > most[depth]) most[depth] = branches[depth];
            CHECKF(depth < 2 || branches[depth] == 1,
                   "mlstack.h:%ld: a conditional nested %d deep has %d branches (clang-format passes; see "
                   "check_conditionals)",
                   where[depth], depth, branches[depth]);
        }
    }
    CHECKF(depth == 0, "mlstack.h: %d conditionals left open", depth);
    for (k = 0; k < 64; k++)
        if (most[k]) product *= most[k];
    CHECKF(product <= 3, "mlstack.h: clang-format would take %d passes over the file (3 expected)", product);
}

int main(void) {
    size_t len, i;
    char *h = tl_read("mlstack.h", &len), *p, *toc_end, *impl;
    char toc[64][96], ban[64][96];
    int n_toc = 0, n_ban = 0, k;
    if (!h) {
        CHECKF(0, "cannot read mlstack.h (run from the repository root)");
        return tl_finish();
    }
    p = strstr(h, "TABLE OF CONTENTS");
    toc_end = p ? strstr(p, "BUILD OPTIONS") : NULL;
    CHECK(p && toc_end);
    /* TOC lines look like "     10. MODEL   text   >>model" */
    while (p && toc_end && (p = strchr(p, '\n')) && p < toc_end) {
        int num;
        char name[32], anchor[32];
        char line[256];
        size_t l = strcspn(p + 1, "\n");
        if (l >= sizeof line) l = sizeof line - 1;
        memcpy(line, p + 1, l);
        line[l] = 0;
        p++;
        if (sscanf(line, " %d. %31s", &num, name) == 2) {
            char *a = strstr(line, ">>");
            if (a && sscanf(a + 2, "%31s", anchor) == 1 && n_toc < 64)
                snprintf(toc[n_toc++], 96, "%d. %s >>%s", num, name, anchor);
        }
    }
    /* banners: the comment banner followed by the anchor comment */
    for (p = h; (p = strstr(p, "/* ==== ")) != NULL; p++) {
        int num;
        char name[32], anchor[32];
        char *a;
        if (sscanf(p, "/* ==== %d. %31s ==== */", &num, name) != 2) continue;
        a = strstr(p, ">>");
        if (a && sscanf(a + 2, "%31[a-z0-9_]", anchor) == 1 && n_ban < 64)
            snprintf(ban[n_ban++], 96, "%d. %s >>%s", num, name, anchor);
    }
    CHECKF(n_toc == n_ban && n_toc > 5, "table of contents has %d entries, banners %d", n_toc, n_ban);
    for (k = 0; k < n_toc && k < n_ban; k++) {
        CHECKF(strcmp(toc[k], ban[k]) == 0, "entry %d: contents says \"%s\", banner says \"%s\"", k, toc[k], ban[k]);
        CHECKF(atoi(toc[k]) == k + 1, "entry \"%s\" out of sequence", toc[k]);
    }
    check_glance(h);
    check_line_directives(h);
    check_conditionals(h);
    check_anchors(h, toc, n_toc);
    {
        static const char *const files[] = {"mlstack.h", "mlstack_cuda.h", "mlstack_mpi.h", "README.md"};
        static const char *const folders[] = {"cli", "tools", "tests", "tests/fuzz", "tests/compile", "examples"};
        int bad = 0;
        for (k = 0; k < (int)(sizeof files / sizeof files[0]); k++) bad += section_numbers_in(files[k], 0);
        for (k = 0; k < (int)(sizeof folders / sizeof folders[0]); k++) bad += section_numbers_in(folders[k], 1);
        CHECKF(bad == 0, "%d references to sections by number", bad);
    }
    impl = strstr(h, "#if defined(MLSTACK_IMPLEMENTATION) && !defined(MLSTACK_IMPLEMENTATION_INCLUDED)");
    CHECK(impl != NULL);
    for (i = 0; impl && h + i < impl; i++)
        if ((unsigned char)h[i] >= 0x80) break;
    CHECKF(impl && h + i == impl, "non-ASCII byte in the declarations at offset %zu", i);
    if (impl) check_parts(impl);
    check_fn_lengths(h);
    free(h);
    return tl_finish();
}
