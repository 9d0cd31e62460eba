/* Tiny test helper: one line per failure with file:line, last line "N passed, N failed, N skipped".
   Include after mlstack.h. Each check counts once. */
#ifndef MLSTACK_TESTLIB_H
#define MLSTACK_TESTLIB_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tl_passed, tl_failed, tl_skipped;

/* A thread waiting in the engine's pool or at a rank barrier polls mlstack__spin times
   (MLSTACK__SPIN, 4000) before it sleeps. make test runs more tests at once than there are cores,
   where that polling holds a core the other tests need (it was half the CPU time of test_hybrid):
   the tests poll TL_SPIN times, the same code paths (poll, then sleep) in less CPU. The
   environment's MLSTACK_TEST_SPIN overrides it (e.g. 4000 for the library's own count). A test
   that includes only the declarations (test_embed) keeps the library's. */
#ifndef TL_SPIN
#define TL_SPIN 100
#endif
#if defined(__GNUC__) && defined(MLSTACK_IMPLEMENTATION_INCLUDED)
__attribute__((constructor)) static void tl_spin_less(void) {
    const char *s = getenv("MLSTACK_TEST_SPIN");
    mlstack__spin = s && *s ? atoi(s) : TL_SPIN;
}
#endif

/* TL_SANITIZED: 1 in an AddressSanitizer build (make test's ASan+UBSan flavour, make check), else
   0. Such a build runs a representative subset of a test's exhaustive grids (where the test says
   so); the plain flavour runs them whole. */
#if defined(__SANITIZE_ADDRESS__)
#define TL_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TL_SANITIZED 1
#endif
#endif
#ifndef TL_SANITIZED
#define TL_SANITIZED 0
#endif
/* TL_TSAN: 1 in a ThreadSanitizer build (make test's tsan flavour), else 0. It looks for races,
   which only runs on two or more threads can show: a test may leave its one-thread runs to the
   other flavours there (with a SKIP saying so). */
#if defined(__SANITIZE_THREAD__)
#define TL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TL_TSAN 1
#endif
#endif
#ifndef TL_TSAN
#define TL_TSAN 0
#endif

/* tl_emulated(): 1 when the test runs under an instruction emulator: make test runs the AArch64,
   armv7 and riscv64 builds under qemu-user with MLSTACK_TEST_QEMU=1 (the Makefile's qemu_run and
   port_run), where an instruction costs 10 to 50 times a native one. There a test may leave out
   what the native flavours already check whole and the emulated run would only repeat: the same
   code path again with sizes that take no other branch (a grid thinned as TL_SANITIZED thins it),
   and determinism reruns (threads, batch mates) of code whose every kernel the emulated run still
   compares with its reference. Each test says what it leaves out, in one SKIP line. */
static __attribute__((unused)) int tl_emulated(void) {
    const char *s = getenv("MLSTACK_TEST_QEMU");
    return s && *s && strcmp(s, "0") != 0;
}

/* TL_KEEP(thin, sum): whether a run that thins its grids (thin: a sanitizer build, quick mode, a
   run under qemu, as the test decides) runs the case whose indices add up to sum: the
   representative third whose sum is a multiple of 3, so that every value of each index still
   meets the others' paths. A run that does not thin runs every case. */
#define TL_KEEP(thin, sum) (!(thin) || (sum) % 3 == 0)

/* The hybrid (recurrent-layer) family fixtures under tests/fixtures/families: test_hybrid checks
   each, test_ranks expects each to refuse two ranks. A new hybrid fixture goes here once. */
#define TL_HYBRID_FIXTURES                                                                                             \
    "lfm2", "lfm2_k4", "mamba2", "mamba2_groups", "granite_hybrid", "granite_hybrid_moe", "granite_hybrid_top1",       \
        "nemotron_h", "nemotron_h_moe", "nemotron_h_moe_top1", "nemotron_h_moe_latent", "falcon_h1", "falcon_h1_norm", \
        "falcon_h1_prenorm", "lfm2_moe", "qwen3_5", "qwen3_5_moe", "qwen3_next"

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

/* llama.cpp's tokenizer vectors: NAME.inp holds the cases separated by "\n__ggml_vocab_test__\n",
   NAME.out one line of space-separated token ids per case. tl_vectors_open reads both (0: either
   is missing, nothing is held); tl_vectors_next steps to the next case (0 at the end) and gives
   its text; tl_vectors_match says whether ids[0, n) are that case's line, id for id. */
typedef struct tl_vectors {
    char *inp, *out;
    size_t il, ol, pos, opos;
    const char *line, *line_end; /* the current case's ids */
} tl_vectors;

static __attribute__((unused)) int tl_vectors_open(tl_vectors *v, const char *inp_path, const char *out_path) {
    memset(v, 0, sizeof *v);
    v->inp = tl_read(inp_path, &v->il);
    v->out = tl_read(out_path, &v->ol);
    if (v->inp && v->out) return 1;
    free(v->inp), free(v->out);
    memset(v, 0, sizeof *v);
    return 0;
}

static __attribute__((unused)) int tl_vectors_next(tl_vectors *v, const char **text, size_t *len) {
    static const char sep[] = "\n__ggml_vocab_test__\n";
    const char *e, *le;
    if (!v->inp || v->pos >= v->il || v->opos >= v->ol) return 0;
    e = strstr(v->inp + v->pos, sep);
    le = (const char *)memchr(v->out + v->opos, '\n', v->ol - v->opos);
    *text = v->inp + v->pos;
    *len = e ? (size_t)(e - (v->inp + v->pos)) : v->il - v->pos;
    v->line = v->out + v->opos;
    v->line_end = le ? le : v->out + v->ol;
    v->pos += *len + (e ? sizeof sep - 1 : 0);
    v->opos = (size_t)(v->line_end - v->out) + 1;
    return 1;
}

static __attribute__((unused)) int tl_vectors_match(const tl_vectors *v, const int32_t *ids, long n) {
    const char *q = v->line;
    long j = 0;
    for (;;) {
        char *endp;
        long id;
        while (q < v->line_end && *q == ' ') q++;
        if (q >= v->line_end) return j == n;
        id = strtol(q, &endp, 10);
        if (endp == q || j >= n || ids[j] != id) return 0;
        j++;
        q = endp;
    }
}

static __attribute__((unused)) void tl_vectors_close(tl_vectors *v) {
    free(v->inp), free(v->out);
    memset(v, 0, sizeof *v);
}
#endif
