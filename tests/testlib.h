/* Tiny test helper: one line per failure with file:line, last line "N passed, N failed, N skipped".
   Include after mlstack.h. Each check counts once. */
#ifndef MLSTACK_TESTLIB_H
#define MLSTACK_TESTLIB_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tl_passed, tl_failed, tl_skipped;
/* A row of the two-string tables the tests walk: an input and what goes with it (the message
   expected, a tokenizer name, ...). */
typedef struct tl_pair {
    const char *in, *want;
} tl_pair;

#define CHECK(cond) CHECKF(cond, "%s", #cond)
#define CHECKF(cond, ...)                                \
    do {                                                 \
        if (cond) {                                      \
            tl_passed++;                                 \
        } else {                                         \
            tl_failed++;                                 \
            printf("%s:%d: FAIL: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                         \
            printf("\n");                                \
        }                                                \
    } while (0)
/* A check that could not run: counted as skipped, never as passed. */
#define SKIP(...)                                    \
    do {                                             \
        tl_skipped++;                                \
        printf("%s:%d: SKIP: ", __FILE__, __LINE__); \
        printf(__VA_ARGS__);                         \
        printf("\n");                                \
    } while (0)

static int tl_finish(void) {
    printf("%d passed, %d failed, %d skipped\n", tl_passed, tl_failed, tl_skipped);
    return tl_failed ? 1 : 0;
}

/* Reads a whole file; NULL if missing. Caller frees. */
/* Whether the build compiled the kernels of cap: a word of mlstack__isa_report's "compiled:" list
   (before its '|'). */
static __attribute__((unused)) int tl_isa_compiled(const char *report, const char *cap) {
    size_t n = strlen(cap);
    const char *p = report, *end = strchr(report, '|');
    for (; (p = strstr(p, cap)) != NULL && (!end || p < end); p += n)
        if (p > report && p[-1] == ' ' && (p[n] == ' ' || p[n] == 0)) return 1;
    return 0;
}

static __attribute__((unused)) char *tl_read(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = (char *)malloc((size_t)n + 1);
    if (buf && n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) buf[n] = 0;
    if (len) *len = (size_t)n;
    fclose(f);
    return buf;
}
#endif
