/* Encode throughput of the mlstack tokenizer on one thread.
   Usage: bench_tokenizer DIR TEXT_FILE   (make the text with tools/bench_tokenizer_hf.py)
   Prints bytes, ids and MB/s (best of 3 whole-text encodes), like the HF script. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole file in a malloc'd buffer; NULL when it cannot be read. */
static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    long n;
    char *p = NULL;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (p = (char *)malloc((size_t)n + 1))) {
        *len = fread(p, 1, (size_t)n, f);
        p[*len] = 0;
    }
    fclose(f);
    return p;
}

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
    if (!(text = read_all(argv[2], &len))) {
        fprintf(stderr, "cannot read %s\n", argv[2]);
        mlstack_tokenizer_close(tok);
        return 1;
    }
    cap = len + 16;
    ids = (int32_t *)malloc(cap * sizeof *ids);
    for (rep = 0; rep < 3; rep++) {
        double t0 = mlstack_clock_seconds(), dt;
        if (mlstack_tokenizer_encode(tok, text, len, 0, ids, cap, &n) != MLSTACK_OK) {
            fprintf(stderr, "encode failed: %s\n", mlstack_tokenizer_error(tok));
            return 1;
        }
        dt = mlstack_clock_seconds() - t0;
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
