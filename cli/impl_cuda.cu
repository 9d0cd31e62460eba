// The implementation translation unit of the CUDA CLI (`make cuda`, build/cuda/mlstack): the
// library and its CUDA companion, built by nvcc; the command files are the CPU CLI's, compiled
// with -DMLSTACK_CUDA so that --gpu reaches mlstack_cuda_engine_init.
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#define MLSTACK_CUDA_IMPLEMENTATION
#include "mlstack_cuda.h"
