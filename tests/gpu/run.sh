#!/bin/sh
# The CUDA companion's checks on a machine with an NVIDIA GPU (about 3 minutes on an H200):
# builds tests/gpu/test_gpu.cu with nvcc for this GPU's architecture and runs it from the
# repository root: kernels on the device against the CPU references, the fixture models against
# the CPU engine, SmolLM2 (when models/smollm2-135m-instruct is there) and a bandwidth bench.
#   tests/gpu/run.sh              everything
#   tests/gpu/run.sh --no-bench   the checks only
# CUDA_ARCH=90 overrides the architecture nvidia-smi reports. Exit status: the test's.
set -e
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-nvcc}
if ! command -v "$NVCC" >/dev/null 2>&1; then echo "SKIP: $NVCC not found"; exit 1; fi
ARCH=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '. ')}
if [ -z "$ARCH" ]; then echo "SKIP: no GPU found by nvidia-smi (set CUDA_ARCH to build anyway)"; exit 1; fi
mkdir -p build/gpu
echo "$NVCC tests/gpu/test_gpu.cu (sm_$ARCH)"
start=$(date +%s)
"$NVCC" -std=c++17 -O2 --fmad=false -gencode "arch=compute_$ARCH,code=sm_$ARCH" -I. -Itests \
    -diag-suppress 550,1675 -o build/gpu/test_gpu tests/gpu/test_gpu.cu -lpthread -lm
echo "built in $(( $(date +%s) - start )) s"
timeout 300 build/gpu/test_gpu "$@"
