/* Encode throughput of the mlstack tokenizer on one thread.
   Usage: bench_tokenizer DIR TEXT_FILE   (make the text with tools/bench_tokenizer_hf.py)
   Prints bytes, ids and MB/s (best of 3 whole-text encodes), like the HF script. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"

int main(int argc, char **argv) {
    mlstack_tokenizer *tok = NULL;
    mlstack_error err;
    char *text = NULL;
    size_t len = 0, n = 0, cap;
    int32_t *ids;
    double best = 1e9;
    int rep;
    const char *name;
    if (argc < 3) {
        fprintf(stderr, "usage: %s TOKENIZER_DIR TEXT_FILE\n", argv[0]);
        return 2;
    }
    if (mlstack_tokenizer_open(argv[1], &tok, &err) != MLSTACK_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    if (mlstack__read_file(argv[2], (size_t)1 << 30, &text, &len, &err) != MLSTACK_OK) {
        fprintf(stderr, "%s\n", err.message);
        mlstack_tokenizer_close(tok);
        return 1;
    }
    cap = len + 16;
    ids = (int32_t *)malloc(cap * sizeof *ids);
    for (rep = 0; rep < 3; rep++) {
        double t0 = mlstack__now(), dt;
        if (mlstack_tokenizer_encode(tok, text, len, 0, ids, cap, &n) != MLSTACK_OK) {
            fprintf(stderr, "encode failed: %s\n", mlstack_tokenizer_error(tok));
            return 1;
        }
        dt = mlstack__now() - t0;
        if (dt < best) best = dt;
    }
    name = strrchr(argv[1], '/');
    name = name && name[1] ? name + 1 : argv[1];
    printf("mlstack        %-20s %8zu bytes %8zu ids  %7.2f MB/s\n", name, len, n, (double)len / best / 1e6);
    free(ids);
    free(text);
    mlstack_tokenizer_close(tok);
    return 0;
}
