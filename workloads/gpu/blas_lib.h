/* SPDX-License-Identifier: Apache-2.0 */
/* The vendor side of blas.h: the few calls that differ between cuBLASLt/cuBLAS (blas_cuda.cu)
 * and rocBLAS (blas_hip.cu). blas.cu, built by nvcc and hipcc alike, holds everything else once —
 * the handles' common state, argument checks, the choice among candidate algorithms, alpha and
 * beta — and reaches a library only through these functions. Each vendor file compiles to
 * nothing under the other vendor's compiler, so a worker links exactly one implementation.
 *
 * Error texts go to err (errlen bytes) as in blas.h; the negative errno values are blas.h's. */
#ifndef FB_BLAS_LIB_H
#define FB_BLAS_LIB_H

#include "gpu_runtime.h"

#include "host/burn_verify.h"

#include <stddef.h>
#include <stdint.h>

typedef struct blas_lib blas_lib_t;   /* the library and its handles */
typedef struct blas_plan blas_plan_t; /* one prepared GEMM shape */

/* Loads and starts the library for the current device, queuing work on stream; its name and
 * version ("cuBLASLt 13.0.0", "rocBLAS (librocblas.so.4, atomics off)") into name. 0, -ENOENT
 * when it is not installed, -EIO when it fails to start. */
int blas_lib_open(gpuStream_t stream, blas_lib_t **out, char *name, size_t namelen, char *err,
                  size_t errlen);
void blas_lib_close(blas_lib_t *lib);
/* NULL when dtype dt runs on this device with this library, else why not (static text). */
const char *blas_lib_unsupported(const blas_lib_t *lib, burn_dtype_t dt);

/* Prepares the n x n x n GEMM of dtype dt (n fits in 31 bits); *n_cand gets the number of
 * candidate algorithms, best first, at least 1. 0, or -ENOMEM, -ENOTSUP or -EIO. */
int blas_plan_new(blas_lib_t *lib, burn_dtype_t dt, uint64_t n, blas_plan_t **out, int *n_cand,
                  char *err, size_t errlen);
void blas_plan_destroy(blas_plan_t *p);
/* What candidate `chosen` of n_cand is, for blas_gemm_describe, into buf. */
void blas_plan_describe(const blas_plan_t *p, int chosen, int n_cand, char *buf, size_t len);
/* Queues C = A^T B with candidate `chosen`; alpha and beta point to 1 and 0 in the scale type
 * (double for fp64, float otherwise). 0, or -EIO with "call: library status" in error. */
int blas_plan_run(blas_plan_t *p, int chosen, const void *alpha, const void *beta, const void *a,
                  const void *b, void *c, char *error, size_t errlen);

/* snprintf into an error buffer that may be NULL or empty (blas.cu). */
void blas_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
