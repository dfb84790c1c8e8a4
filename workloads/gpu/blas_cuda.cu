/* SPDX-License-Identifier: Apache-2.0 */
/* blas_lib.h on NVIDIA GPUs: cuBLASLt matmuls, with cuBLAS GemmEx as the fallback when cuBLASLt
 * offers no algorithm for a shape. cuBLASLt is preferred because it exposes its candidate
 * algorithms, so gpuburn can time a few and keep the fastest, and because fp8 (e4m3 operands,
 * bf16 result, sm_89 and later) exists only there. Compiles to nothing under hipcc. */
#include "gpu_runtime.h"

#if !FB_GPU_HIP

#include "blas_lib.h"

extern "C" {
#include "common/util.h"
}

#include <cublasLt.h>
#include <cublas_v2.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLAS_MAX_CANDIDATES 8
#define BLAS_WORKSPACE (32u << 20) /* what cuBLASLt recommends on Hopper */

struct blas_lib {
    gpuStream_t stream;
    cublasLtHandle_t lt;
    cublasHandle_t cublas; /* created on first fallback */
    int cc_major, cc_minor;
};

struct blas_plan {
    blas_lib_t *lib;
    burn_dtype_t dtype;
    uint64_t n;
    bool lt; /* cuBLASLt; false: cuBLAS GemmEx */
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a_layout, b_layout, c_layout;
    cublasLtMatmulHeuristicResult_t cand[BLAS_MAX_CANDIDATES];
    int n_cand;
    void *workspace;
    size_t workspace_size;
    char fallback_why[160]; /* why cuBLASLt was not used */
};

int blas_lib_open(gpuStream_t stream, blas_lib_t **out, char *name, size_t namelen, char *err,
                  size_t errlen)
{
    *out = NULL;
    blas_lib_t *lib = (blas_lib_t *)xcalloc(1, sizeof *lib);
    lib->stream = stream;
    int dev = 0;
    (void)gpuGetDevice(&dev);
    (void)gpuDeviceGetAttribute(&lib->cc_major, gpuDevAttrComputeCapabilityMajor, dev);
    (void)gpuDeviceGetAttribute(&lib->cc_minor, gpuDevAttrComputeCapabilityMinor, dev);
    cublasStatus_t st = cublasLtCreate(&lib->lt);
    if (st != CUBLAS_STATUS_SUCCESS) {
        blas_err(err, errlen, "cublasLtCreate: %s", cublasGetStatusString(st));
        free(lib);
        return -EIO;
    }
    size_t v = cublasLtGetVersion();
    snprintf(name, namelen, "cuBLASLt %zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
    *out = lib;
    return 0;
}

void blas_lib_close(blas_lib_t *lib)
{
    if (lib->cublas)
        cublasDestroy(lib->cublas);
    cublasLtDestroy(lib->lt);
    free(lib);
}

const char *blas_lib_unsupported(const blas_lib_t *lib, burn_dtype_t dt)
{
    if (dt == BURN_FP8 && lib->cc_major * 10 + lib->cc_minor < 89)
        return "fp8 (e4m3) matrix multiplies need compute capability 8.9 or later";
    if (dt == BURN_TF32 && lib->cc_major < 8)
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

/* Sets up the cuBLASLt descriptors and asks for candidates; 0 when there is at least one. */
static int s_setup_lt(blas_plan_t *p, char *err, size_t errlen)
{
    burn_storage_t in = burn_in_storage(p->dtype), out = burn_out_storage(p->dtype);
    cudaDataType_t scale = p->dtype == BURN_FP64 ? CUDA_R_64F : CUDA_R_32F;
    uint64_t n = p->n;
    cublasOperation_t trans = CUBLAS_OP_T, notrans = CUBLAS_OP_N;
    cublasLtMatmulPreference_t pref = NULL;
    cublasStatus_t st = cublasLtMatmulDescCreate(&p->desc, s_compute(p->dtype), scale);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans,
                                            sizeof trans);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &notrans,
                                            sizeof notrans);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&p->a_layout, s_cuda_type(in), n, n, (int64_t)n);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&p->b_layout, s_cuda_type(in), n, n, (int64_t)n);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutCreate(&p->c_layout, s_cuda_type(out), n, n, (int64_t)n);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceCreate(&pref);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &p->workspace_size, sizeof p->workspace_size);
    int found = 0;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(p->lib->lt, p->desc, p->a_layout, p->b_layout,
                                            p->c_layout, p->c_layout, pref, BLAS_MAX_CANDIDATES,
                                            p->cand, &found);
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS) {
        blas_err(err, errlen, "cuBLASLt: %s", cublasGetStatusString(st));
        return -ENOTSUP;
    }
    /* Only candidates the library says it can run. */
    p->n_cand = 0;
    for (int i = 0; i < found; i++)
        if (p->cand[i].state == CUBLAS_STATUS_SUCCESS)
            p->cand[p->n_cand++] = p->cand[i];
    if (p->n_cand == 0) {
        blas_err(err, errlen, "cuBLASLt has no algorithm for a %s %llux%llux%llu GEMM",
                 burn_dtype_name(p->dtype), (unsigned long long)n, (unsigned long long)n,
                 (unsigned long long)n);
        return -ENOTSUP;
    }
    p->lt = true;
    return 0;
}

static void s_free_lt(blas_plan_t *p)
{
    if (p->a_layout)
        cublasLtMatrixLayoutDestroy(p->a_layout);
    if (p->b_layout)
        cublasLtMatrixLayoutDestroy(p->b_layout);
    if (p->c_layout)
        cublasLtMatrixLayoutDestroy(p->c_layout);
    if (p->desc)
        cublasLtMatmulDescDestroy(p->desc);
    p->a_layout = p->b_layout = p->c_layout = NULL;
    p->desc = NULL;
}

/* The cuBLAS handle of the fallback, created on first use; it borrows p's workspace. */
static int s_setup_fallback(blas_plan_t *p, char *err, size_t errlen)
{
    blas_lib_t *lib = p->lib;
    if (lib->cublas)
        return 0;
    cublasStatus_t st = cublasCreate(&lib->cublas);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasSetStream(lib->cublas, lib->stream);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasSetWorkspace(lib->cublas, p->workspace, p->workspace_size);
    if (st == CUBLAS_STATUS_SUCCESS)
        return 0;
    blas_err(err, errlen, "%s; cuBLAS fallback: %s", p->fallback_why, cublasGetStatusString(st));
    if (lib->cublas)
        cublasDestroy(lib->cublas);
    lib->cublas = NULL;
    return -EIO;
}

int blas_plan_new(blas_lib_t *lib, burn_dtype_t dt, uint64_t n, blas_plan_t **out, int *n_cand,
                  char *err, size_t errlen)
{
    *out = NULL;
    blas_plan_t *p = (blas_plan_t *)xcalloc(1, sizeof *p);
    p->lib = lib;
    p->dtype = dt;
    p->n = n;
    p->workspace_size = BLAS_WORKSPACE;
    gpuError_t ce = gpuMalloc(&p->workspace, p->workspace_size);
    if (ce != gpuSuccess) {
        (void)gpuGetLastError();
        blas_err(err, errlen, "cuBLASLt workspace of %u MiB: %s", BLAS_WORKSPACE >> 20,
                 gpuGetErrorString(ce));
        free(p);
        return -ENOMEM;
    }
    int rc = s_setup_lt(p, p->fallback_why, sizeof p->fallback_why);
    if (rc) {
        s_free_lt(p);
        if (dt == BURN_FP8) { /* fp8 exists only in cuBLASLt */
            blas_err(err, errlen, "%s", p->fallback_why);
            rc = -ENOTSUP;
        } else {
            rc = s_setup_fallback(p, err, errlen);
            p->n_cand = 1;
        }
    }
    if (rc) {
        (void)gpuFree(p->workspace);
        free(p);
        return rc;
    }
    *n_cand = p->n_cand;
    *out = p;
    return 0;
}

void blas_plan_destroy(blas_plan_t *p)
{
    s_free_lt(p);
    if (!p->lt && p->lib->cublas) /* the fallback borrowed this workspace */
        cublasSetWorkspace(p->lib->cublas, NULL, 0);
    (void)gpuFree(p->workspace);
    free(p);
}

void blas_plan_describe(const blas_plan_t *p, int chosen, int n_cand, char *buf, size_t len)
{
    if (!p->lt) {
        snprintf(buf, len, "cuBLAS GemmEx (%s)", p->fallback_why);
        return;
    }
    const cublasLtMatmulAlgo_t *algo = &p->cand[chosen].algo;
    int id = -1, tile = -1, stages = -1, splitk = -1;
    size_t got = 0;
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &got);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile,
                                         &got);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                         sizeof stages, &got);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk,
                                         sizeof splitk, &got);
    snprintf(buf, len, "cuBLASLt algo %d tile %d stages %d split-k %d (candidate %d of %d)", id,
             tile, stages, splitk, chosen + 1, n_cand);
}

int blas_plan_run(blas_plan_t *p, int chosen, const void *alpha, const void *beta, const void *a,
                  const void *b, void *c, char *error, size_t errlen)
{
    cublasStatus_t st;
    if (p->lt) {
        st = cublasLtMatmul(p->lib->lt, p->desc, alpha, a, p->a_layout, b, p->b_layout, beta, c,
                            p->c_layout, c, p->c_layout, &p->cand[chosen].algo, p->workspace,
                            p->workspace_size, p->lib->stream);
    } else {
        int n = (int)p->n;
        cudaDataType_t in = s_cuda_type(burn_in_storage(p->dtype));
        cudaDataType_t out = s_cuda_type(burn_out_storage(p->dtype));
        st = cublasGemmEx(p->lib->cublas, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, alpha, a, in, n, b, in,
                          n, beta, c, out, n, s_compute(p->dtype), CUBLAS_GEMM_DEFAULT);
    }
    if (st != CUBLAS_STATUS_SUCCESS) {
        blas_err(error, errlen, "%s: %s", p->lt ? "cublasLtMatmul" : "cublasGemmEx",
                 cublasGetStatusString(st));
        return -EIO;
    }
    return 0;
}

#endif /* !FB_GPU_HIP */
