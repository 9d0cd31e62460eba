/* Fuzz target for the GGUF reader (>>gguf), and for what is built from an accepted file's
   metadata: the hyperparameters and the tokenizer (tokenizer.ggml.*).
   libFuzzer:  clang -fsanitize=fuzzer,address,undefined -DMLSTACK_LIBFUZZER -I. tests/fuzz/fuzz_gguf.c
   Replay:     cc -I. tests/fuzz/fuzz_gguf.c -lpthread -lm && ./a.out FILE_OR_DIR...
   For every accepted image each tensor must lie inside the data section (its first and last
   bytes are read), every string array is walked to its end, and the walk must end inside the
   input. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fz_check(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "fuzz_gguf: invariant broken: %s\n", what);
        abort();
    }
}

static volatile unsigned char fz_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mlstack__gguf g;
    mlstack_error err;
    mlstack_result r;
    uint64_t i, j;
    memset(&err, 0, sizeof err);
    r = mlstack__gguf_parse(&g, data, (uint64_t)size, "<fuzz>", &err);
    if (r != MLSTACK_OK) {
        fz_check(g.kvs == NULL && g.tensors == NULL && g.names == NULL, "failed parse left state");
        fz_check(err.code == r && err.message[0] != 0, "failure without a message");
        return 0;
    }
    fz_check(g.data_off <= size && g.data_size == size - g.data_off, "data section outside the input");
    for (i = 0; i < g.n_kv; i++) {
        const mlstack__gguf_kv *kv = &g.kvs[i];
        fz_check(kv->off <= size && kv->bytes <= size - kv->off, "value outside the input");
        fz_check(strlen(kv->key) == kv->key_len && mlstack__gguf_find(&g, kv->key) == kv, "key lookup");
        if (kv->type == MLSTACK__GGUF_ARRAY && kv->elem_type == MLSTACK__GGUF_STRING) {
            uint64_t pos = kv->off;
            size_t len;
            for (j = 0; j < kv->n; j++) {
                const char *s = mlstack__gguf_next_string(&g, &pos, &len);
                if (len) fz_sink = (unsigned char)s[len - 1];
            }
            fz_check(pos == kv->off + kv->bytes, "string array walk does not end at the value's end");
        }
    }
    for (i = 0; i < g.n_tensors; i++) {
        const mlstack__gguf_tensor *t = &g.tensors[i];
        fz_check(t->offset <= g.data_size && t->bytes <= g.data_size - t->offset, "tensor outside the data section");
        fz_check(t->offset % g.alignment == 0, "misaligned tensor");
        fz_check(mlstack__gguf_tensor_find(&g, t->name) == t, "tensor lookup");
        if (t->bytes) {
            fz_sink = g.data[t->offset];
            fz_sink = g.data[t->offset + t->bytes - 1];
        }
    }
    mlstack__gguf_close(&g);
    return 0;
}

#define FZ_NAME "fuzz_gguf"
#include "replay.h"
