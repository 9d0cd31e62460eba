/* Fuzz target for the regex compiler and matcher. Input: pattern, a NUL byte, then the subject
   (no NUL: the whole input is the pattern and also the subject). Also normalizes the subject.
   Build with libFuzzer:  clang -g -O1 -fsanitize=fuzzer,address,undefined -DMLSTACK_LIBFUZZER -I. tests/fuzz/fuzz_regex.c
   Without it, main() replays the files named on the command line. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *s = (const char *)data;
    const uint8_t *nul = (const uint8_t *)memchr(data, 0, size);
    size_t plen = nul ? (size_t)(nul - data) : size;
    const char *subj = nul ? s + plen + 1 : s;
    size_t n = nul ? size - plen - 1 : size, pos = 0, b, e;
    mlstack__regex *re;
    mlstack_error err;
    int steps = 0;
    char *out;
    size_t on;
    /* a smaller fixed part of the matcher's step budget (MLSTACK_REGEX_STEP_BASE as the library
       reads it), so that a slow pattern ends sooner */
    mlstack__limits.regex_step_base = 200000u;
    if (mlstack__unorm((int)(size % 4), subj, n, &out, &on) == MLSTACK_OK) free(out);
    if (mlstack__regex_compile(s, plen, &re, &err) != MLSTACK_OK) return 0;
    while (pos <= n && steps++ < 1000) {
        int r = mlstack__regex_search(re, subj, n, pos, &b, &e);
        if (r <= 0) break;
        if (b < pos || e < b || e > n) abort();
        if (e > b) {
            pos = e;
        } else {
            uint32_t cp;
            if (b >= n) break;
            pos = b + (size_t)mlstack__utf8_decode((const unsigned char *)subj + b, n - b, &cp);
        }
    }
    mlstack__regex_free(re);
    return 0;
}

#define FZ_NAME "fuzz_regex"
#include "replay.h"
