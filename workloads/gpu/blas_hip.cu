/* SPDX-License-Identifier: Apache-2.0 */
/* blas.h on AMD GPUs: rocBLAS gemm_ex, loaded with dlopen when gpuburn starts. Nodes run
 * different ROCm releases and rocBLAS changes its soname between them (librocblas.so.0 in ROCm
 * 5, .so.4 in ROCm 6), so the worker links none and declares the few entry points it calls
 * itself, with the values of rocBLAS's stable C enums. Atomics are switched off where the library
 * allows it so that repeats of a GEMM sum in the same order and agree bit for bit. TF32 and fp8
 * are reported unsupported (rocBLAS gemm_ex has neither). Compiles to nothing under nvcc. */
#include "gpu_runtime.h"

#if FB_GPU_HIP

#include "blas.h"

extern "C" {
#include "common/util.h"
}

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
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

struct blas {
    void *lib;
    hipStream_t stream;
    rocblas_handle_t handle;
    destroy_handle_fn destroy_handle;
    status_string_fn status_string; /* optional */
    gemm_ex_fn gemm_ex;
    char name[96];
};

struct blas_gemm {
    blas_t *blas;
    burn_dtype_t dtype;
    int32_t n;
    char describe[96];
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

static const char *s_status(const blas_t *self, rocblas_status_t st, char *buf, size_t len)
{
    if (self->status_string)
        return self->status_string(st);
    snprintf(buf, len, "rocblas status %d", st);
    return buf;
}

int blas_open(void *stream, blas_t **out, char *err, size_t errlen)
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
        s_err(err, errlen, "rocBLAS not found (librocblas.so*, /opt/rocm/lib): install rocblas");
        return -ENOENT;
    }
    blas_t *self = (blas_t *)xcalloc(1, sizeof *self);
    self->lib = lib;
    self->stream = (hipStream_t)stream;
    create_handle_fn create = (create_handle_fn)dlsym(lib, "rocblas_create_handle");
    set_stream_fn set_stream = (set_stream_fn)dlsym(lib, "rocblas_set_stream");
    set_atomics_fn set_atomics = (set_atomics_fn)dlsym(lib, "rocblas_set_atomics_mode");
    self->destroy_handle = (destroy_handle_fn)dlsym(lib, "rocblas_destroy_handle");
    self->status_string = (status_string_fn)dlsym(lib, "rocblas_status_to_string");
    self->gemm_ex = (gemm_ex_fn)dlsym(lib, "rocblas_gemm_ex");
    if (!create || !set_stream || !self->destroy_handle || !self->gemm_ex) {
        s_err(err, errlen, "%s lacks rocblas_create_handle/set_stream/gemm_ex", found);
        dlclose(lib);
        free(self);
        return -ENOENT;
    }
    char buf[48];
    rocblas_status_t st = create(&self->handle);
    if (st == 0)
        st = set_stream(self->handle, self->stream);
    if (st != 0) {
        s_err(err, errlen, "rocBLAS (%s) failed to start: %s", found,
              s_status(self, st, buf, sizeof buf));
        if (self->handle)
            self->destroy_handle(self->handle);
        dlclose(lib);
        free(self);
        return -EIO;
    }
    if (set_atomics)
        set_atomics(self->handle, ROCBLAS_ATOMICS_NOT_ALLOWED);
    snprintf(self->name, sizeof self->name, "rocBLAS (%s%s)", found,
             set_atomics ? ", atomics off" : "");
    *out = self;
    return 0;
}

void blas_close(blas_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    blas_t *self = *self_p;
    self->destroy_handle(self->handle);
    dlclose(self->lib);
    free(self);
    *self_p = NULL;
}

const char *blas_name(const blas_t *self)
{
    return self->name;
}

const char *blas_unsupported(const blas_t *self, burn_dtype_t dt)
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

int blas_gemm_new(blas_t *self, burn_dtype_t dt, uint64_t n, blas_gemm_t **out, char *err,
                  size_t errlen)
{
    *out = NULL;
    const char *why = blas_unsupported(self, dt);
    if (why) {
        s_err(err, errlen, "%s", why);
        return -ENOTSUP;
    }
    if (n > 0x7fffffffu) {
        s_err(err, errlen, "matrix %llu too large for rocBLAS", (unsigned long long)n);
        return -EINVAL;
    }
    blas_gemm_t *g = (blas_gemm_t *)xcalloc(1, sizeof *g);
    g->blas = self;
    g->dtype = dt;
    g->n = (int32_t)n;
    snprintf(g->describe, sizeof g->describe, "rocBLAS gemm_ex %s, %s compute", burn_dtype_name(dt),
             dt == BURN_FP64 ? "fp64" : "fp32");
    *out = g;
    return 0;
}

void blas_gemm_destroy(blas_gemm_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free(*self_p);
    *self_p = NULL;
}

int blas_gemm_candidates(const blas_gemm_t *g)
{
    (void)g;
    return 1;
}

int blas_gemm_choose(blas_gemm_t *g, int index)
{
    (void)g;
    return index == 0 ? 0 : -EINVAL;
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
    int in = s_rocblas_type(burn_in_storage(g->dtype));
    int out = s_rocblas_type(burn_out_storage(g->dtype));
    int n = g->n;
    rocblas_status_t st =
        g->blas->gemm_ex(g->blas->handle, ROCBLAS_OP_TRANSPOSE, ROCBLAS_OP_NONE, n, n, n,
                         fp64 ? (const void *)&one_d : (const void *)&one, a, in, n, b, in, n,
                         fp64 ? (const void *)&zero_d : (const void *)&zero, c, out, n, c, out, n,
                         fp64 ? ROCBLAS_F64_R : ROCBLAS_F32_R, ROCBLAS_ALGO_STANDARD, 0, 0);
    if (st != 0) {
        char buf[48];
        snprintf(g->error, sizeof g->error, "rocblas_gemm_ex: %s",
                 s_status(g->blas, st, buf, sizeof buf));
        return -EIO;
    }
    return 0;
}

#endif /* FB_GPU_HIP */
