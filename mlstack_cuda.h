/* mlstack_cuda.h 0.1.0 - optional CUDA companion to mlstack.h - MIT (see mlstack.h)

   USE
     #include "mlstack.h" first (the implementation, MLSTACK_IMPLEMENTATION, lives in one file),
     then in exactly one file built by nvcc:
         #define MLSTACK_CUDA_IMPLEMENTATION
         #include "mlstack_cuda.h"

   STATUS
     This release has no CUDA kernels yet. Every entry point is declared and links, and reports
     MLSTACK_ERR_NO_BACKEND with the text "no CUDA backend yet" through the usual mlstack_error,
     so programs can be written against the API now and fall back to the CPU engine. The CPU path
     in mlstack.h stays the reference the CUDA backend will be tested against.

   PLAN (see the project's DESIGN.md): weights uploaded once, CUDA kernels for matmul,
   attention and norms, KV pages on the device, behind the same model and engine objects. */
#ifndef MLSTACK_CUDA_H
#define MLSTACK_CUDA_H

#include "mlstack.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device selection. Zero-initialise: device 0 = the first visible GPU. */
typedef struct mlstack_cuda_desc {
    int device;
} mlstack_cuda_desc;

/* Number of usable CUDA devices in *n_devices.
   Returns MLSTACK_OK, or MLSTACK_ERR_NO_BACKEND (this release) with err saying why. */
MLSTACK_API mlstack_result mlstack_cuda_device_count(int *n_devices, mlstack_error *err);

/* An engine whose forward pass runs on a GPU; otherwise as mlstack_engine_init.
   Returns MLSTACK_ERR_NO_BACKEND in this release (*out is NULL): use mlstack_engine_init. */
MLSTACK_API mlstack_result mlstack_engine_init_cuda(mlstack_model *model, const mlstack_engine_desc *desc,
                                                    const mlstack_cuda_desc *cuda, mlstack_engine **out,
                                                    mlstack_error *err);

#ifdef __cplusplus
}
#endif
#endif /* MLSTACK_CUDA_H */

#if defined(MLSTACK_CUDA_IMPLEMENTATION) && !defined(MLSTACK_CUDA_IMPLEMENTATION_INCLUDED)
#define MLSTACK_CUDA_IMPLEMENTATION_INCLUDED
#include <stdio.h>

static mlstack_result mlstack_cuda__none(mlstack_error *err) {
    if (err) {
        err->code = MLSTACK_ERR_NO_BACKEND;
        snprintf(err->message, sizeof err->message, "no CUDA backend yet: use mlstack_engine_init (CPU)");
    }
    return MLSTACK_ERR_NO_BACKEND;
}

#ifdef __cplusplus
extern "C" {
#endif
MLSTACK_API mlstack_result mlstack_cuda_device_count(int *n_devices, mlstack_error *err) {
    if (n_devices) *n_devices = 0;
    return mlstack_cuda__none(err);
}

MLSTACK_API mlstack_result mlstack_engine_init_cuda(mlstack_model *model, const mlstack_engine_desc *desc,
                                                    const mlstack_cuda_desc *cuda, mlstack_engine **out,
                                                    mlstack_error *err) {
    (void)model;
    (void)desc;
    (void)cuda;
    if (out) *out = NULL;
    return mlstack_cuda__none(err);
}
#ifdef __cplusplus
}
#endif
#endif /* MLSTACK_CUDA_IMPLEMENTATION */
