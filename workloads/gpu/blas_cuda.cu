/* SPDX-License-Identifier: Apache-2.0 */
/* blas.h on NVIDIA GPUs: cuBLASLt matmuls, with cuBLAS GemmEx as the fallback when cuBLASLt
 * offers no algorithm for a shape. cuBLASLt is preferred because it exposes its candidate
 * algorithms, so gpuburn can time a few and keep the fastest, and because fp8 (e4m3 operands,
 * bf16 result, sm_89 and later) exists only there. Compiles to nothing under hipcc. */
#include "gpu_runtime.h"

#if !FB_GPU_HIP

#include "blas.h"

extern "C" {
#include "common/util.h"
}

#include <cublasLt.h>
#include <cublas_v2.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLAS_MAX_CANDIDATES 8
#define BLAS_WORKSPACE (32u << 20) /* what cuBLASLt recommends on Hopper */

struct blas {
    gpuStream_t stream;
    cublasLtHandle_t lt;
    cublasHandle_t cublas; /* created on first fallback */
    int cc_major, cc_minor;
    char name[64];
};

struct blas_gemm {
    blas_t *blas;
    burn_dtype_t dtype;
    uint64_t n;
    bool lt; /* cuBLASLt; false: cuBLAS GemmEx */
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a_layout, b_layout, c_layout;
    cublasLtMatmulHeuristicResult_t cand[BLAS_MAX_CANDIDATES];
    int n_cand, chosen;
    void *workspace;
    size_t workspace_size;
    char describe[160];
    char error[160];
};

static void s_err(char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void s_err(char *err, size_t len, const char *fmt, ...)
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
    self->stream = (gpuStream_t)stream;
    int dev = 0;
    (void)gpuGetDevice(&dev);
    (void)gpuDeviceGetAttribute(&self->cc_major, gpuDevAttrComputeCapabilityMajor, dev);
    (void)gpuDeviceGetAttribute(&self->cc_minor, gpuDevAttrComputeCapabilityMinor, dev);
    cublasStatus_t st = cublasLtCreate(&self->lt);
    if (st != CUBLAS_STATUS_SUCCESS) {
        s_err(err, errlen, "cublasLtCreate: %s", cublasGetStatusString(st));
        free(self);
        return -EIO;
    }
    size_t v = cublasLtGetVersion();
    snprintf(self->name, sizeof self->name, "cuBLASLt %zu.%zu.%zu", v / 10000, v / 100 % 100,
             v % 100);
    *out = self;
    return 0;
}

void blas_close(blas_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    blas_t *self = *self_p;
    if (self->cublas)
        cublasDestroy(self->cublas);
    cublasLtDestroy(self->lt);
    free(self);
    *self_p = NULL;
}

const char *blas_name(const blas_t *self)
{
    return self->name;
}

const char *blas_unsupported(const blas_t *self, burn_dtype_t dt)
{
    if (dt == BURN_FP8 && self->cc_major * 10 + self->cc_minor < 89)
        return "fp8 (e4m3) matrix multiplies need compute capability 8.9 or later";
    if (dt == BURN_TF32 && self->cc_major < 8)
        return "TF32 tensor cores need compute capability 8.0 or later";
    return NULL;
}

static cudaDataType_t s_cuda_type(burn_storage_t st)
{
    switch (st) {
    case BURN_ST_BF16:
        return CUDA_R_16BF;
    case BURN_ST_FP16:
        return CUDA_R_16F;
    case BURN_ST_FP64:
        return CUDA_R_64F;
    case BURN_ST_E4M3:
        return CUDA_R_8F_E4M3;
    default:
        return CUDA_R_32F;
    }
}

static cublasComputeType_t s_compute(burn_dtype_t dt)
{
    switch (dt) {
    case BURN_TF32:
        return CUBLAS_COMPUTE_32F_FAST_TF32;
    case BURN_FP64:
        return CUBLAS_COMPUTE_64F;
    default:
        return CUBLAS_COMPUTE_32F;
    }
}

static void s_describe_lt(blas_gemm_t *g)
{
    const cublasLtMatmulAlgo_t *algo = &g->cand[g->chosen].algo;
    int id = -1, tile = -1, stages = -1, splitk = -1;
    size_t got = 0;
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &got);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile,
                                         &got);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                         sizeof stages, &got);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk,
                                         sizeof splitk, &got);
    snprintf(g->describe, sizeof g->describe,
             "cuBLASLt algo %d tile %d stages %d split-k %d (candidate %d of %d)", id, tile, stages,
             splitk, g->chosen + 1, g->n_cand);
}

/* Sets up the cuBLASLt descriptors and asks for candidates; 0 when there is at least one. */
static int s_setup_lt(blas_gemm_t *g, char *err, size_t errlen)
{
    burn_storage_t in = burn_in_storage(g->dtype), out = burn_out_storage(g->dtype);
    cudaDataType_t scale = g->dtype == BURN_FP64 ? CUDA_R_64F : CUDA_R_32F;
    uint64_t n = g->n;
    cublasOperation_t trans = CUBLAS_OP_T, notrans = CUBLAS_OP_N;
    cublasLtMatmulPreference_t pref = NULL;
    cublasStatus_t st = cublasLtMatmulDescCreate(&g->desc, s_compute(g->dtype), scale);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans,
                                            sizeof trans);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &notrans,
                                            sizeof notrans);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&g->a_layout, s_cuda_type(in), n, n, (int64_t)n);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&g->b_layout, s_cuda_type(in), n, n, (int64_t)n);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&g->c_layout, s_cuda_type(out), n, n, (int64_t)n);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceCreate(&pref);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &g->workspace_size, sizeof g->workspace_size);
    int found = 0;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(g->blas->lt, g->desc, g->a_layout, g->b_layout,
                                            g->c_layout, g->c_layout, pref, BLAS_MAX_CANDIDATES,
                                            g->cand, &found);
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS) {
        s_err(err, errlen, "cuBLASLt: %s", cublasGetStatusString(st));
        return -ENOTSUP;
    }
    /* Only candidates the library says it can run. */
    g->n_cand = 0;
    for (int i = 0; i < found; i++)
        if (g->cand[i].state == CUBLAS_STATUS_SUCCESS)
            g->cand[g->n_cand++] = g->cand[i];
    if (g->n_cand == 0) {
        s_err(err, errlen, "cuBLASLt has no algorithm for a %s %llux%llux%llu GEMM",
              burn_dtype_name(g->dtype), (unsigned long long)n, (unsigned long long)n,
              (unsigned long long)n);
        return -ENOTSUP;
    }
    g->lt = true;
    g->chosen = 0;
    s_describe_lt(g);
    return 0;
}

static void s_free_lt(blas_gemm_t *g)
{
    if (g->a_layout)
        cublasLtMatrixLayoutDestroy(g->a_layout);
    if (g->b_layout)
        cublasLtMatrixLayoutDestroy(g->b_layout);
    if (g->c_layout)
        cublasLtMatrixLayoutDestroy(g->c_layout);
    if (g->desc)
        cublasLtMatmulDescDestroy(g->desc);
    g->a_layout = g->b_layout = g->c_layout = NULL;
    g->desc = NULL;
}

int blas_gemm_new(blas_t *self, burn_dtype_t dt, uint64_t n, blas_gemm_t **out, char *err,
                  size_t errlen)
{
    *out = NULL;
    if (n > 0x7fffffffu) {
        s_err(err, errlen, "matrix %llu too large for the BLAS interface", (unsigned long long)n);
        return -EINVAL;
    }
    blas_gemm_t *g = (blas_gemm_t *)xcalloc(1, sizeof *g);
    g->blas = self;
    g->dtype = dt;
    g->n = n;
    g->workspace_size = BLAS_WORKSPACE;
    gpuError_t ce = gpuMalloc(&g->workspace, g->workspace_size);
    if (ce != gpuSuccess) {
        (void)gpuGetLastError();
        s_err(err, errlen, "cuBLASLt workspace of %u MiB: %s", BLAS_WORKSPACE >> 20,
              gpuGetErrorString(ce));
        free(g);
        return -ENOMEM;
    }
    char why[160] = "";
    if (s_setup_lt(g, why, sizeof why) == 0) {
        *out = g;
        return 0;
    }
    s_free_lt(g);
    if (dt == BURN_FP8) { /* fp8 exists only in cuBLASLt */
        s_err(err, errlen, "%s", why);
        (void)gpuFree(g->workspace);
        free(g);
        return -ENOTSUP;
    }
    if (!self->cublas) {
        cublasStatus_t st = cublasCreate(&self->cublas);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasSetStream(self->cublas, self->stream);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasSetWorkspace(self->cublas, g->workspace, g->workspace_size);
        if (st != CUBLAS_STATUS_SUCCESS) {
            s_err(err, errlen, "%s; cuBLAS fallback: %s", why, cublasGetStatusString(st));
            if (self->cublas)
                cublasDestroy(self->cublas);
            self->cublas = NULL;
            (void)gpuFree(g->workspace);
            free(g);
            return -EIO;
        }
    }
    g->lt = false;
    g->n_cand = 1;
    snprintf(g->describe, sizeof g->describe, "cuBLAS GemmEx (%s)", why);
    *out = g;
    return 0;
}

void blas_gemm_destroy(blas_gemm_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    blas_gemm_t *g = *self_p;
    s_free_lt(g);
    if (!g->lt && g->blas->cublas) /* the fallback borrowed this workspace */
        cublasSetWorkspace(g->blas->cublas, NULL, 0);
    (void)gpuFree(g->workspace);
    free(g);
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
    if (g->lt)
        s_describe_lt(g);
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
    cublasStatus_t st;
    if (g->lt) {
        st = cublasLtMatmul(g->blas->lt, g->desc, alpha, a, g->a_layout, b, g->b_layout, beta, c,
                            g->c_layout, c, g->c_layout, &g->cand[g->chosen].algo, g->workspace,
                            g->workspace_size, g->blas->stream);
    } else {
        int n = (int)g->n;
        cudaDataType_t in = s_cuda_type(burn_in_storage(g->dtype));
        cudaDataType_t out = s_cuda_type(burn_out_storage(g->dtype));
        st = cublasGemmEx(g->blas->cublas, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, alpha, a, in, n, b,
                          in, n, beta, c, out, n, s_compute(g->dtype), CUBLAS_GEMM_DEFAULT);
    }
    if (st != CUBLAS_STATUS_SUCCESS) {
        snprintf(g->error, sizeof g->error, "%s: %s", g->lt ? "cublasLtMatmul" : "cublasGemmEx",
                 cublasGetStatusString(st));
        return -EIO;
    }
    return 0;
}

#endif /* !FB_GPU_HIP */
