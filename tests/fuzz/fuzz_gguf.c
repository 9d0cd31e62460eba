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
    /* what the model and tokenizer build from the metadata must fail cleanly or succeed */
    {
        mlstack__config c;
        mlstack__buf json = {0, 0, 0}, cfg = {0, 0, 0};
        memset(&err, 0, sizeof err);
        r = mlstack__gguf_config(&c, &g, "<fuzz>", &err);
        fz_check(r == MLSTACK_OK || err.message[0], "config failure without a message");
        if (r == MLSTACK_OK)
            fz_check(c.n_layers > 0 && c.head_dim > 0 && c.n_vocab > 0 && c.n_heads % c.n_kv_heads == 0, "config");
        memset(&err, 0, sizeof err);
        r = mlstack__tok_from_gguf(&g, "<fuzz>", &json, &cfg, &err);
        fz_check(r == MLSTACK_OK || err.message[0], "tokenizer failure without a message");
        if (r == MLSTACK_OK && json.n < 100000) {
            mlstack_tokenizer *t = NULL;
            if (mlstack_tokenizer_load(json.p, json.n, cfg.p, cfg.n, &t, &err) == MLSTACK_OK) {
                int32_t ids[64];
                size_t n_ids;
                mlstack_tokenizer_encode(t, "Hello world 123", 15, MLSTACK_ENCODE_ADD_SPECIAL, ids, 64, &n_ids);
                mlstack_tokenizer_close(t);
            }
        }
        MLSTACK_FREE(json.p);
        MLSTACK_FREE(cfg.p);
    }
    mlstack__gguf_close(&g);
    return 0;
}

#define FZ_NAME "fuzz_gguf"
#include "replay.h"
