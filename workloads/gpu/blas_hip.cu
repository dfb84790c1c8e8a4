/* SPDX-License-Identifier: Apache-2.0 */
/* blas_lib.h on AMD GPUs: rocBLAS gemm_ex, loaded with dlopen when gpuburn starts. Nodes run
 * different ROCm releases and rocBLAS changes its soname between them (librocblas.so.0 in ROCm
 * 5, .so.4 in ROCm 6), so the worker links none and declares the few entry points it calls
 * itself, with the values of rocBLAS's stable C enums. Atomics are switched off where the library
 * allows it so that repeats of a GEMM sum in the same order and agree bit for bit. TF32 and fp8
 * are reported unsupported (rocBLAS gemm_ex has neither). Compiles to nothing under nvcc. */
#include "gpu_runtime.h"

#if FB_GPU_HIP

#include "blas_lib.h"

extern "C" {
#include "common/util.h"
}

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* From rocBLAS's public C API (rocblas-types.h, rocblas-functions.h). */
typedef struct s_rocblas_handle *rocblas_handle_t;
typedef int rocblas_status_t; /* rocblas_status_success = 0 */
enum {
    ROCBLAS_OP_NONE = 111,
    ROCBLAS_OP_TRANSPOSE = 112,
    ROCBLAS_F16_R = 150,
    ROCBLAS_F32_R = 151,
    ROCBLAS_F64_R = 152,
    ROCBLAS_BF16_R = 168,
    ROCBLAS_ALGO_STANDARD = 0,
    ROCBLAS_ATOMICS_NOT_ALLOWED = 0,
};
typedef rocblas_status_t (*create_handle_fn)(rocblas_handle_t *);
typedef rocblas_status_t (*destroy_handle_fn)(rocblas_handle_t);
typedef rocblas_status_t (*set_stream_fn)(rocblas_handle_t, hipStream_t);
typedef rocblas_status_t (*set_atomics_fn)(rocblas_handle_t, int);
typedef const char *(*status_string_fn)(rocblas_status_t);
typedef rocblas_status_t (*gemm_ex_fn)(rocblas_handle_t, int trans_a, int trans_b, int32_t m,
                                       int32_t n, int32_t k, const void *alpha, const void *a,
                                       int a_type, int32_t lda, const void *b, int b_type,
                                       int32_t ldb, const void *beta, const void *c, int c_type,
                                       int32_t ldc, void *d, int d_type, int32_t ldd,
                                       int compute_type, int algo, int32_t solution_index,
                                       uint32_t flags);

struct blas_lib {
    void *lib;
    hipStream_t stream;
    rocblas_handle_t handle;
    destroy_handle_fn destroy_handle;
    status_string_fn status_string; /* optional */
    gemm_ex_fn gemm_ex;
};

struct blas_plan {
    blas_lib_t *lib;
    burn_dtype_t dtype;
    int32_t n;
};

static const char *s_status(const blas_lib_t *self, rocblas_status_t st, char *buf, size_t len)
{
    if (self->status_string)
        return self->status_string(st);
    snprintf(buf, len, "rocblas status %d", st);
    return buf;
}

int blas_lib_open(gpuStream_t stream, blas_lib_t **out, char *name, size_t namelen, char *err,
                  size_t errlen)
{
    static const char *const names[] = {"librocblas.so", "librocblas.so.4", "librocblas.so.3",
                                        "librocblas.so.0", "/opt/rocm/lib/librocblas.so"};
    *out = NULL;
    void *lib = NULL;
    const char *found = NULL;
    for (size_t i = 0; !lib && i < sizeof names / sizeof names[0]; i++) {
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        found = names[i];
    }
    if (!lib) {
        blas_err(err, errlen, "rocBLAS not found (librocblas.so*, /opt/rocm/lib): install rocblas");
        return -ENOENT;
    }
    blas_lib_t *self = (blas_lib_t *)xcalloc(1, sizeof *self);
    self->lib = lib;
    self->stream = stream;
    create_handle_fn create = (create_handle_fn)dlsym(lib, "rocblas_create_handle");
    set_stream_fn set_stream = (set_stream_fn)dlsym(lib, "rocblas_set_stream");
    set_atomics_fn set_atomics = (set_atomics_fn)dlsym(lib, "rocblas_set_atomics_mode");
    self->destroy_handle = (destroy_handle_fn)dlsym(lib, "rocblas_destroy_handle");
    self->status_string = (status_string_fn)dlsym(lib, "rocblas_status_to_string");
    self->gemm_ex = (gemm_ex_fn)dlsym(lib, "rocblas_gemm_ex");
    if (!create || !set_stream || !self->destroy_handle || !self->gemm_ex) {
        blas_err(err, errlen, "%s lacks rocblas_create_handle/set_stream/gemm_ex", found);
        dlclose(lib);
        free(self);
        return -ENOENT;
    }
    char buf[48];
    rocblas_status_t st = create(&self->handle);
    if (st == 0)
        st = set_stream(self->handle, self->stream);
    if (st != 0) {
        blas_err(err, errlen, "rocBLAS (%s) failed to start: %s", found,
                 s_status(self, st, buf, sizeof buf));
        if (self->handle)
            self->destroy_handle(self->handle);
        dlclose(lib);
        free(self);
        return -EIO;
    }
    if (set_atomics)
        set_atomics(self->handle, ROCBLAS_ATOMICS_NOT_ALLOWED);
    snprintf(name, namelen, "rocBLAS (%s%s)", found, set_atomics ? ", atomics off" : "");
    *out = self;
    return 0;
}

void blas_lib_close(blas_lib_t *self)
{
    self->destroy_handle(self->handle);
    dlclose(self->lib);
    free(self);
}

const char *blas_lib_unsupported(const blas_lib_t *self, burn_dtype_t dt)
{
    (void)self;
    if (dt == BURN_TF32)
        return "rocBLAS gemm_ex has no TF32 (xf32) mode";
    if (dt == BURN_FP8)
        return "fp8 GEMMs need hipBLASLt, which this build does not use";
    return NULL;
}

static int s_rocblas_type(burn_storage_t st)
{
    switch (st) {
    case BURN_ST_BF16:
        return ROCBLAS_BF16_R;
    case BURN_ST_FP16:
        return ROCBLAS_F16_R;
    case BURN_ST_FP64:
        return ROCBLAS_F64_R;
    default:
        return ROCBLAS_F32_R;
    }
}

/* rocBLAS chooses its kernel itself: one candidate, nothing to prepare. */
int blas_plan_new(blas_lib_t *lib, burn_dtype_t dt, uint64_t n, blas_plan_t **out, int *n_cand,
                  char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    blas_plan_t *p = (blas_plan_t *)xcalloc(1, sizeof *p);
    p->lib = lib;
    p->dtype = dt;
    p->n = (int32_t)n;
    *n_cand = 1;
    *out = p;
    return 0;
}

void blas_plan_destroy(blas_plan_t *p)
{
    free(p);
}

void blas_plan_describe(const blas_plan_t *p, int chosen, int n_cand, char *buf, size_t len)
{
    (void)chosen;
    (void)n_cand;
    snprintf(buf, len, "rocBLAS gemm_ex %s, %s compute", burn_dtype_name(p->dtype),
             p->dtype == BURN_FP64 ? "fp64" : "fp32");
}

int blas_plan_run(blas_plan_t *p, int chosen, const void *alpha, const void *beta, const void *a,
                  const void *b, void *c, char *error, size_t errlen)
{
    (void)chosen;
    bool fp64 = p->dtype == BURN_FP64;
    int in = s_rocblas_type(burn_in_storage(p->dtype));
    int out = s_rocblas_type(burn_out_storage(p->dtype));
    int n = p->n;
    rocblas_status_t st =
        p->lib->gemm_ex(p->lib->handle, ROCBLAS_OP_TRANSPOSE, ROCBLAS_OP_NONE, n, n, n, alpha, a,
                        in, n, b, in, n, beta, c, out, n, c, out, n,
                        fp64 ? ROCBLAS_F64_R : ROCBLAS_F32_R, ROCBLAS_ALGO_STANDARD, 0, 0);
    if (st != 0) {
        char buf[48];
        blas_err(error, errlen, "rocblas_gemm_ex: %s", s_status(p->lib, st, buf, sizeof buf));
        return -EIO;
    }
    return 0;
}

#endif /* FB_GPU_HIP */
