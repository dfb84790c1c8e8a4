/* SPDX-License-Identifier: Apache-2.0 */
/* The GEMM library behind gpuburn, as one small interface so gpuburn.cu has no vendor code:
 * blas.cu implements it once for both vendors over blas_lib.h, the few vendor calls, which
 * blas_cuda.cu provides with cuBLASLt (cuBLAS when cuBLASLt has no algorithm for a shape), linked
 * into fleetburn-worker-cuda, and blas_hip.cu with rocBLAS loaded by dlopen at run time, because
 * the ROCm release (and so the library's soname) varies from node to node. Each vendor file
 * compiles to nothing under the other vendor's compiler.
 *
 * Every GEMM is square (m = n = k), in the TN layout of host/burn_verify.h: C = A^T B, operands
 * and result in the storages of the dtype, alpha = 1, beta = 0. A handle is bound to the device
 * that was current when it was opened and to one stream; calls on it come from one thread. */
#ifndef FB_BLAS_H
#define FB_BLAS_H

#include "host/burn_verify.h"

#include <stddef.h>
#include <stdint.h>

typedef struct blas blas_t;
typedef struct blas_gemm blas_gemm_t;

/* Opens the library for the current device, queuing work on stream (a gpuStream_t). Returns 0,
 * or a negative errno with a reason in err: -ENOENT when the library is not installed, -EIO when
 * it fails to start. */
int blas_open(void *stream, blas_t **out, char *err, size_t errlen);
void blas_close(blas_t **self_p);
/* "cuBLASLt 13.0.0", "rocBLAS (librocblas.so.0)" (borrowed). */
const char *blas_name(const blas_t *self);
/* NULL when dtype dt runs on this device with this library, else why not (static text). */
const char *blas_unsupported(const blas_t *self, burn_dtype_t dt);

/* Prepares the n x n x n GEMM of dtype dt with the library's candidate algorithms, best first
 * by the library's own estimate, and chooses the first. Allocates the workspace it needs; a
 * failure (-ENOMEM, -EIO, -ENOTSUP, also for a dtype blas_unsupported names; -EINVAL for n
 * beyond 32-bit dimensions) is returned with a reason in err. */
int blas_gemm_new(blas_t *self, burn_dtype_t dt, uint64_t n, blas_gemm_t **out, char *err,
                  size_t errlen);
void blas_gemm_destroy(blas_gemm_t **self_p);
/* Number of candidate algorithms (at least 1), and choosing one of them (0-based). */
int blas_gemm_candidates(const blas_gemm_t *g);
int blas_gemm_choose(blas_gemm_t *g, int index);
/* The chosen implementation, "cuBLASLt algo 66 tile 20 stages 8 split-k 1" (borrowed). */
const char *blas_gemm_describe(const blas_gemm_t *g);
/* Queues C = A^T B on the handle's stream. 0, or -EIO with the library's error in
 * blas_gemm_error(). Device faults surface later, from the runtime. */
int blas_gemm_run(blas_gemm_t *g, const void *a, const void *b, void *c);
const char *blas_gemm_error(const blas_gemm_t *g);

#endif
