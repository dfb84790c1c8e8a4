/* SPDX-License-Identifier: Apache-2.0 */
/* gpuburn's kernels (gpuburn_internal.h): operands filled on the GPU from a seed, the
 * known-answer reference on the ordinary cores, the test-only corruption, and the comparison of
 * results against C[0] or the reference, each launched over the element storages. */
#include "gpuburn_internal.h"

/* ---- kernels --------------------------------------------------------------------------------- */

/* Grid-stride loops: the first element of this thread, and the step. */
__device__ __forceinline__ size_t s_first(void)
{
    return blockIdx.x * (size_t)blockDim.x + threadIdx.x;
}

__device__ __forceinline__ size_t s_step(void)
{
    return (size_t)gridDim.x * blockDim.x;
}

template <int ST> __global__ void s_fill_random(void *p, size_t n, uint64_t seed)
{
    for (size_t i = s_first(); i < n; i += s_step())
        burn_store(p, i, (burn_storage_t)ST, burn_random_value(seed, i));
}

template <int ST> __global__ void s_fill_kat(void *p, size_t n, uint64_t seed, int range)
{
    for (size_t i = s_first(); i < n; i += s_step())
        burn_store(p, i, (burn_storage_t)ST, (double)burn_kat_value(seed, i, range));
}

__global__ void s_fill_nan(float *p, size_t n)
{
    for (size_t i = s_first(); i < n; i += s_step())
        p[i] = burn_f32_from_bits(0x7fc00000u);
}

/* The known-answer reference on the ordinary cores: ref (n x n, column-major) = A^T B in fp32,
 * exact for the integer operands. 16x16 threads compute a 64x64 tile, 4x4 elements each; row
 * tiles are taken every row_stride tiles (burn_kat_row_stride). */
template <int ST>
__global__ void s_reference(const void *a, const void *b, float *ref, size_t n, unsigned row_stride)
{
    __shared__ float as[16][65], bs[16][65];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const size_t i0 = (size_t)blockIdx.y * row_stride * 64, j0 = (size_t)blockIdx.x * 64;
    float acc[4][4];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            acc[r][c] = 0;
    for (size_t k0 = 0; k0 < n; k0 += 16) {
        for (int l = 0; l < 4; l++) {
            int e = tid + 256 * l, r = e / 16, kk = e % 16;
            size_t i = i0 + r, j = j0 + r, k = k0 + kk;
            as[kk][r] = i < n && k < n ? (float)burn_load(a, i * n + k, (burn_storage_t)ST) : 0.f;
            bs[kk][r] = j < n && k < n ? (float)burn_load(b, j * n + k, (burn_storage_t)ST) : 0.f;
        }
        __syncthreads();
        for (int kk = 0; kk < 16; kk++) {
            float av[4], bv[4];
            for (int r = 0; r < 4; r++)
                av[r] = as[kk][tx + 16 * r];
            for (int c = 0; c < 4; c++)
                bv[c] = bs[kk][ty + 16 * c];
            for (int r = 0; r < 4; r++)
                for (int c = 0; c < 4; c++)
                    acc[r][c] = fmaf(av[r], bv[c], acc[r][c]);
        }
        __syncthreads();
    }
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) {
            size_t i = i0 + tx + 16 * r, j = j0 + ty + 16 * c;
            if (i < n && j < n)
                ref[i + j * n] = acc[r][c];
        }
}

__global__ void s_reset_counters(burn_counters_t *c, int n)
{
    for (int i = 0; i < n; i++) {
        c[i].mismatches = c[i].nonfinite = 0;
        c[i].first_mismatch = c[i].first_nonfinite = c[i].injected = BURN_NO_KEY;
    }
}

/* Checks got against ref with burn_check_elem (ref NULL: NaN/Inf only) into *cnt. */
template <int GOT, int REF>
__global__ void s_check(const void *got, const void *ref, size_t n, burn_tol_t tol, uint32_t buffer,
                        burn_counters_t *cnt)
{
    unsigned long long mis = 0, bad = 0, first_mis = BURN_NO_KEY, first_bad = BURN_NO_KEY;
    for (size_t i = s_first(); i < n; i += s_step()) {
        double g = burn_load(got, i, (burn_storage_t)GOT);
        int v;
        if (ref)
            v = burn_check_elem(g, burn_load(ref, i, (burn_storage_t)REF), tol);
        else
            v = burn_finite(g) ? BURN_AGREE : BURN_NONFINITE;
        if (v == BURN_MISMATCH) {
            if (!mis++)
                first_mis = burn_key(buffer, i);
        } else if (v == BURN_NONFINITE) {
            if (!bad++)
                first_bad = burn_key(buffer, i);
        }
    }
    if (mis) {
        atomicAdd((unsigned long long *)&cnt->mismatches, mis);
        atomicMin((unsigned long long *)&cnt->first_mismatch, first_mis);
    }
    if (bad) {
        atomicAdd((unsigned long long *)&cnt->nonfinite, bad);
        atomicMin((unsigned long long *)&cnt->first_nonfinite, first_bad);
    }
}

template <int ST> __device__ void s_flip_element(void *p, size_t i)
{
    uint64_t mask = burn_flip_mask((burn_storage_t)ST);
    if (ST == BURN_ST_E4M3)
        ((uint8_t *)p)[i] ^= (uint8_t)mask;
    else if (ST == BURN_ST_FP32)
        ((uint32_t *)p)[i] ^= (uint32_t)mask;
    else if (ST == BURN_ST_FP64)
        ((uint64_t *)p)[i] ^= mask;
    else
        ((uint16_t *)p)[i] ^= (uint16_t)mask;
}

/* One thread: the test-only corruption of element `start` (flip: the first element from there on
 * whose magnitude is at least threshold, so the flip is far beyond the tolerance). */
template <int ST>
__global__ void s_inject(void *p, size_t n, int mode, double threshold, size_t start,
                         uint32_t buffer, burn_counters_t *cnt)
{
    size_t at = start % n;
    if (mode == BURN_INJECT_FLIP) {
        for (size_t s = 0; s < n && s < BURN_INJECT_SCAN; s++) {
            size_t i = (start + s) % n;
            if (burn_abs(burn_load(p, i, (burn_storage_t)ST)) >= threshold) {
                at = i;
                break;
            }
        }
        s_flip_element<ST>(p, at);
    } else if (mode == BURN_INJECT_NAN) {
        burn_store(p, at, (burn_storage_t)ST, burn_f32_from_bits(0x7fc00000u));
    } else {
        double v = burn_load(p, at, (burn_storage_t)ST);
        burn_store(p, at, (burn_storage_t)ST, v != 0 ? -v : 1.0);
    }
    cnt->injected = burn_key(buffer, at);
}

/* ---- kernel dispatch over storages ----------------------------------------------------------- */

#define DISPATCH_IN(st, KERNEL, grid, block, stream, ...)                                          \
    do {                                                                                           \
        switch (st) {                                                                              \
        case BURN_ST_BF16:                                                                         \
            KERNEL<BURN_ST_BF16><<<grid, block, 0, stream>>>(__VA_ARGS__);                         \
            break;                                                                                 \
        case BURN_ST_FP16:                                                                         \
            KERNEL<BURN_ST_FP16><<<grid, block, 0, stream>>>(__VA_ARGS__);                         \
            break;                                                                                 \
        case BURN_ST_FP32:                                                                         \
            KERNEL<BURN_ST_FP32><<<grid, block, 0, stream>>>(__VA_ARGS__);                         \
            break;                                                                                 \
        case BURN_ST_FP64:                                                                         \
            KERNEL<BURN_ST_FP64><<<grid, block, 0, stream>>>(__VA_ARGS__);                         \
            break;                                                                                 \
        default:                                                                                   \
            KERNEL<BURN_ST_E4M3><<<grid, block, 0, stream>>>(__VA_ARGS__);                         \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

/* Launches s_check for a result of storage out against a reference of the same storage
 * (ref_is_f32 false) or fp32 (the known-answer reference). */
void burn__launch_check(gpu_thread_t *t, burn_storage_t out, bool ref_is_f32, const void *got,
                        const void *ref, size_t n, burn_tol_t tol, uint32_t buffer,
                        burn_counters_t *cnt)
{
    unsigned grid = burn__blocks(t, n);
    gpuStream_t s = t->stream;
#define CHECK_CASE(ST)                                                                             \
    case ST:                                                                                       \
        if (ref_is_f32)                                                                            \
            s_check<ST, BURN_ST_FP32><<<grid, 256, 0, s>>>(got, ref, n, tol, buffer, cnt);         \
        else                                                                                       \
            s_check<ST, ST><<<grid, 256, 0, s>>>(got, ref, n, tol, buffer, cnt);                   \
        break;
    switch (out) {
        CHECK_CASE(BURN_ST_BF16)
        CHECK_CASE(BURN_ST_FP16)
        CHECK_CASE(BURN_ST_FP32)
        CHECK_CASE(BURN_ST_FP64)
    default:
        break;
    }
#undef CHECK_CASE
}

void burn__fill_operands(gpu_thread_t *t, burn_storage_t in, uint64_t n, int range,
                         unsigned stride)
{
    const uint64_t n2 = n * n;
    unsigned grid = burn__blocks(t, n2);
    DISPATCH_IN(in, s_fill_random, grid, 256, t->stream, t->a, n2, BURN_SEED_A);
    DISPATCH_IN(in, s_fill_random, grid, 256, t->stream, t->b, n2, BURN_SEED_B);
    DISPATCH_IN(in, s_fill_kat, grid, 256, t->stream, t->ka, n2, BURN_SEED_KA, range);
    DISPATCH_IN(in, s_fill_kat, grid, 256, t->stream, t->kb, n2, BURN_SEED_KB, range);
    if (stride > 1)
        s_fill_nan<<<grid, 256, 0, t->stream>>>(t->kref, n2);
    size_t tiles = (n + 63) / 64, row_tiles = (tiles + stride - 1) / stride;
    dim3 rgrid((unsigned)tiles, (unsigned)row_tiles), rblock(16, 16);
    DISPATCH_IN(in, s_reference, rgrid, rblock, t->stream, t->ka, t->kb, t->kref, n, stride);
}

void burn__reset_counters(gpu_thread_t *t)
{
    s_reset_counters<<<1, 1, 0, t->stream>>>(t->d_cnt, 2);
}

void burn__inject(gpu_thread_t *t, burn_storage_t st, void *p, size_t n, int mode,
                  double threshold, size_t start, uint32_t buffer, burn_counters_t *cnt)
{
    DISPATCH_IN(st, s_inject, 1, 1, t->stream, p, n, mode, threshold, start, buffer, cnt);
}
