/* Fuzz target for the safetensors header validator (>>safetensors).
   libFuzzer:  clang -fsanitize=fuzzer,address,undefined -DMLSTACK_LIBFUZZER -I. tests/fuzz/fuzz_safetensors.c
   Replay:     cc -I. tests/fuzz/fuzz_safetensors.c -lpthread -lm && ./a.out FILE_OR_DIR...
   For every accepted image, each tensor's view is checked to lie inside the input and its first
   and last bytes are read, so an offset check that lets a range escape shows up under ASan. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fz_check(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "fuzz_safetensors: invariant broken: %s\n", what);
        abort();
    }
}

static volatile unsigned char fz_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mlstack__st st;
    mlstack_error err;
    mlstack_result r;
    int i, k;
    memset(&err, 0, sizeof err);
    r = mlstack__st_open_memory(&st, data, (uint64_t)size, &err);
    if (r != MLSTACK_OK) {
        fz_check(st.files == NULL && st.tensors == NULL && st.n_tensors == 0, "failed open left state");
        fz_check(err.code == r && err.message[0] != 0, "failure without a message");
        return 0;
    }
    for (i = 0; i < st.n_tensors; i++) {
        const mlstack__st_tensor *t = &st.tensors[i];
        mlstack_tensor v;
        uint64_t numel = 1;
        fz_check(mlstack__st_find(&st, t->name) == t, "find does not return the tensor");
        if (i > 0) fz_check(strcmp(st.tensors[i - 1].name, t->name) < 0, "names not sorted and unique");
        fz_check(t->n_dims >= 0 && t->n_dims <= MLSTACK_MAX_DIMS, "n_dims out of range");
        fz_check((unsigned)t->dtype < MLSTACK_DTYPE_COUNT_, "dtype out of range");
        for (k = 0; k < t->n_dims; k++) {
            fz_check(t->shape[k] >= 0, "negative dimension");
            numel *= (uint64_t)t->shape[k];
        }
        fz_check(t->begin <= t->end, "reversed range");
        fz_check(numel * (uint64_t)mlstack__dtype_sizes[t->dtype] == t->end - t->begin, "byte size disagrees");
        mlstack__st_view(&st, t, &v);
        fz_check((const unsigned char *)v.data >= data && v.n_bytes <= size &&
                     (size_t)((const unsigned char *)v.data - data) <= size - (size_t)v.n_bytes,
                 "view outside the input");
        if (v.n_bytes) {
            fz_sink = ((const unsigned char *)v.data)[0];
            fz_sink = ((const unsigned char *)v.data)[v.n_bytes - 1];
        }
        /* With elements, every stride is positive; without (a zero dimension), a stride whose
           product of dimensions overflows is 0 (mlstack__st_view) and none is negative. */
        for (k = 0; k < v.n_dims; k++)
            fz_check(numel ? v.strides[k] > 0 : v.strides[k] >= 0, numel ? "non-positive stride" : "negative stride");
    }
    mlstack__st_close(&st);
    return 0;
}

#define FZ_NAME "fuzz_safetensors"
#include "replay.h"
