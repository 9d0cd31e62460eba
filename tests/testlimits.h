/* Compile-time limits and an allocator hook for the tests that check them (SELF_CONTAINED in
   the Makefile: test_badinput, test_json, test_hardening, and the replay of fuzz_regex). A
   user sets these macros before the implementation; here tests/testlimits.c does, once per
   flavour, into $(B)/FLAVOUR/limits.o, and those tests include this file first and link
   against that object, so the limits their code checks are the ones compiled into it (a test
   built alone compiles the implementation under the same limits). The limits are small, so
   each can be reached by a test; the others stay at their defaults. */
#ifndef MLSTACK_TESTLIMITS_H
#define MLSTACK_TESTLIMITS_H
/* no libc header before mlstack.h: the implementation asks for POSIX (_GNU_SOURCE) first */
#include <stddef.h>

#define MLSTACK_MAX_HEADER_BYTES ((uint64_t)1 << 16) /* test_badinput: the header limit */
#define MLSTACK_MAX_JSON_BYTES ((size_t)4 << 20)     /* test_json: the document size limit */
/* test_hardening: a smaller fixed part of the regex budget, so that the per-byte part decides
   the quadratic case (fuzz_regex's replay runs under it too; its libFuzzer build sets its own) */
#define MLSTACK_REGEX_STEP_BASE 1000000u

/* every realloc of the library goes through tl_realloc: while tl_fail_reallocs > 0, each call
   fails (and counts it down), so a failed growth can be forced (test_hardening) */
extern int tl_fail_reallocs;
void *tl_realloc(void *p, size_t n);
#define MLSTACK_MALLOC(n) malloc(n)
#define MLSTACK_REALLOC(p, n) tl_realloc(p, n)
#define MLSTACK_FREE(p) free(p)
/* defined where the implementation is compiled: tests/testlimits.c, or a test built alone
   (`cc -std=c99 -I. tests/test_json.c -lpthread -lm`); <stdlib.h> must wait for mlstack.h */
#if !defined(MLSTACK__IMPORT_INTERNALS)
void *realloc(void *p, size_t n);
int tl_fail_reallocs;
void *tl_realloc(void *p, size_t n) {
    if (tl_fail_reallocs > 0) {
        tl_fail_reallocs--;
        return NULL;
    }
    return realloc(p, n);
}
#endif
#endif
