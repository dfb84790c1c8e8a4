/* SPDX-License-Identifier: Apache-2.0 */
/* blas.h once for both vendors: the handles' common state, argument checks, the choice among a
 * library's candidate algorithms and the GEMM's scale factors. What differs between cuBLASLt and
 * rocBLAS is behind blas_lib.h (blas_cuda.cu, blas_hip.cu); this file uses only the
 * gpu_runtime.h dialect, so nvcc and hipcc build it unchanged. */
#include "blas.h"
#include "blas_lib.h"

extern "C" {
#include "common/util.h"
}

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define BLAS_MAX_N 0x7fffffffu /* the libraries take 32-bit signed dimensions */

struct blas {
    blas_lib_t *lib;
    char name[96];
};

struct blas_gemm {
    blas_t *blas;
    burn_dtype_t dtype;
    blas_plan_t *plan;
    int n_cand, chosen;
    char describe[160];
    char error[160];
};

void blas_err(char *err, size_t len, const char *fmt, ...)
{
    if (!err || !len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

int blas_open(void *stream, blas_t **out, char *err, size_t errlen)
{
    *out = NULL;
    blas_t *self = (blas_t *)xcalloc(1, sizeof *self);
    int rc =
        blas_lib_open((gpuStream_t)stream, &self->lib, self->name, sizeof self->name, err, errlen);
    if (rc) {
        free(self);
        return rc;
    }
    *out = self;
    return 0;
}

void blas_close(blas_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    blas_lib_close((*self_p)->lib);
    free(*self_p);
    *self_p = NULL;
}

const char *blas_name(const blas_t *self)
{
    return self->name;
}

const char *blas_unsupported(const blas_t *self, burn_dtype_t dt)
{
    return blas_lib_unsupported(self->lib, dt);
}

int blas_gemm_new(blas_t *self, burn_dtype_t dt, uint64_t n, blas_gemm_t **out, char *err,
                  size_t errlen)
{
    *out = NULL;
    const char *why = blas_unsupported(self, dt);
    if (why) {
        blas_err(err, errlen, "%s", why);
        return -ENOTSUP;
    }
    if (n > BLAS_MAX_N) {
        blas_err(err, errlen, "matrix %llu too large for the BLAS interface",
                 (unsigned long long)n);
        return -EINVAL;
    }
    blas_gemm_t *g = (blas_gemm_t *)xcalloc(1, sizeof *g);
    g->blas = self;
    g->dtype = dt;
    int rc = blas_plan_new(self->lib, dt, n, &g->plan, &g->n_cand, err, errlen);
    if (rc) {
        free(g);
        return rc;
    }
    blas_plan_describe(g->plan, 0, g->n_cand, g->describe, sizeof g->describe);
    *out = g;
    return 0;
}

void blas_gemm_destroy(blas_gemm_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    blas_plan_destroy((*self_p)->plan);
    free(*self_p);
    *self_p = NULL;
}

int blas_gemm_candidates(const blas_gemm_t *g)
{
    return g->n_cand;
}

int blas_gemm_choose(blas_gemm_t *g, int index)
{
    if (index < 0 || index >= g->n_cand)
        return -EINVAL;
    g->chosen = index;
    blas_plan_describe(g->plan, index, g->n_cand, g->describe, sizeof g->describe);
    return 0;
}

const char *blas_gemm_describe(const blas_gemm_t *g)
{
    return g->describe;
}

const char *blas_gemm_error(const blas_gemm_t *g)
{
    return g->error;
}

int blas_gemm_run(blas_gemm_t *g, const void *a, const void *b, void *c)
{
    const float one = 1, zero = 0;
    const double one_d = 1, zero_d = 0;
    bool fp64 = g->dtype == BURN_FP64;
    const void *alpha = fp64 ? (const void *)&one_d : (const void *)&one;
    const void *beta = fp64 ? (const void *)&zero_d : (const void *)&zero;
    return blas_plan_run(g->plan, g->chosen, alpha, beta, a, b, c, g->error, sizeof g->error);
}
