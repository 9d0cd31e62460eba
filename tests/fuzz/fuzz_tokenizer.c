/* Fuzz target: tokenizer loader + encode + decode + streaming decode.
   Input layout: tokenizer.json text, a NUL byte, then text to encode (when present).
   libFuzzer: clang -fsanitize=fuzzer,address -DMLSTACK_LIBFUZZER -I. tests/fuzz/fuzz_tokenizer.c
   Replay:    cc -fsanitize=address,undefined -I. tests/fuzz/fuzz_tokenizer.c && ./a.out FILE... */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *s = (const char *)data;
    const char *nul = (const char *)memchr(s, 0, size);
    size_t jl = nul ? (size_t)(nul - s) : size;
    const char *text = nul ? nul + 1 : "hello world";
    size_t tl = nul ? size - jl - 1 : 11, n = 0, m = 0, i;
    mlstack_tokenizer *t = NULL;
    mlstack_error err;
    int32_t ids[4096];
    char out[16384];
    if (mlstack_tokenizer_load(s, jl, NULL, 0, &t, &err) != MLSTACK_OK) return 0;
    if (mlstack_tokenizer_encode(t, text, tl, MLSTACK_ENCODE_ADD_SPECIAL, ids, 4096, &n) == MLSTACK_OK) {
        mlstack_detok *d = NULL;
        mlstack_tokenizer_decode(t, ids, n, 0, out, sizeof out, &m);
        mlstack_tokenizer_decode(t, ids, n, MLSTACK_DECODE_SKIP_SPECIAL, out, sizeof out, &m);
        if (mlstack_detok_init(t, 0, &d) == MLSTACK_OK) {
            const char *p;
            size_t l;
            for (i = 0; i < n; i++) mlstack_detok_push(d, ids[i], &p, &l);
            mlstack_detok_flush(d, &p, &l);
            mlstack_detok_free(d);
        }
    }
    mlstack_tokenizer_encode(t, text, tl, MLSTACK_ENCODE_SPECIAL_AS_TEXT, ids, 4096, &n);
    mlstack_tokenizer_close(t);
    return 0;
}

#define FZ_NAME "fuzz_tokenizer"
#include "replay.h"
