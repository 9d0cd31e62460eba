// The CUDA companion built by nvcc (for sm_80 and sm_90 in `make compile-tests`), with the CPU
// implementation in the same translation unit, as a user builds it. Run: without a GPU the
// entry points must say so (MLSTACK_ERR_NO_BACKEND, n = 0); with one, the device count is
// positive and an engine on the smallest fixture model starts and evaluates a row.
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#define MLSTACK_CUDA_IMPLEMENTATION
#include "mlstack_cuda.h"
#include <stdio.h>
#include <string.h>

int main(void) {
    mlstack_error err;
    mlstack_engine *e = NULL;
    mlstack_model *m = NULL;
    mlstack_model_desc md;
    mlstack_batch_row row = {0, 0, 1, 1};
    int n = -1;
    mlstack_result r = mlstack_cuda_device_count(&n, &err);
    memset(&md, 0, sizeof md);
    md.path = "tests/fixtures/models/llama";
    if (mlstack_model_open(&md, &m, &err) != MLSTACK_OK) return printf("open: %s\n", err.message), 1;
    if (r != MLSTACK_OK) {
        if (r != MLSTACK_ERR_NO_BACKEND || n != 0) return 1;
        if (mlstack_cuda_engine_init(m, NULL, NULL, &e, &err) != MLSTACK_ERR_NO_BACKEND || e) return 1;
        printf("cuda companion built; no GPU here: %s\n", err.message);
        mlstack_model_close(m);
        return 0;
    }
    if (n <= 0 || mlstack_cuda_engine_init(m, NULL, NULL, &e, &err) != MLSTACK_OK)
        return printf("%s\n", err.message), 1;
    if (mlstack_engine_seq_new(e, &row.seq) || mlstack_engine_eval(e, &row, 1) || !mlstack_engine_logits(e, 0))
        return printf("%s\n", mlstack_engine_error(e)), 1;
    printf("cuda companion built and run on %d device(s), %llu device bytes\n", n,
           (unsigned long long)mlstack_cuda_engine_device_bytes(e));
    mlstack_engine_free(e);
    mlstack_model_close(m);
    return 0;
}
