// The CUDA companion built by nvcc, with the CPU implementation in the same translation unit,
// and a trivial kernel so nvcc really compiles device code. Run: reports the missing backend.
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#define MLSTACK_CUDA_IMPLEMENTATION
#include "mlstack_cuda.h"
#include <stdio.h>
#include <string.h>

__global__ void mlstack_cuda_probe(float *x) { x[threadIdx.x] *= 2.0f; }

int main(void) {
    mlstack_error err;
    mlstack_engine *e = NULL;
    int n = -1;
    if (mlstack_cuda_device_count(&n, &err) != MLSTACK_ERR_NO_BACKEND || n != 0) return 1;
    if (mlstack_engine_init_cuda(NULL, NULL, NULL, &e, &err) != MLSTACK_ERR_NO_BACKEND || e) return 1;
    if (!strstr(err.message, "no CUDA backend yet")) return 1;
    printf("cuda stub ok: %s\n", err.message);
    return 0;
}
