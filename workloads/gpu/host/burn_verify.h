/* SPDX-License-Identifier: Apache-2.0 */
/* How gpuburn decides that a GEMM result is right, written once for the host and the GPU.
 *
 * This header is plain C that nvcc and hipcc also compile into the verification kernels of
 * gpuburn.cu: the element formats (bf16, fp16, fp8 e4m3 decoded and encoded bit by bit, so no
 * vendor half-precision type is needed), the operand generators, the per-element check and the
 * counters the kernels reduce to. burn_verify.c adds what only the host needs: dtype names, the
 * tolerances (computed here and handed to the kernels as numbers, so the host unit tests and the
 * device compare against the same thresholds) and host versions of the reference GEMM and the
 * compare loop that the tests feed with hand-made corruptions.
 *
 * Layout of every GEMM (column-major, as the BLAS libraries see it): C (m x n, ldc = m) =
 * op(A) B with op(A) = A^T, A stored k x m (lda = k) and B stored k x n (ldb = k), so element
 * (i, j) of C is the dot product of the contiguous rows A[i*k ...] and B[j*k ...], and C element
 * (i, j) is at index i + j*m. This "TN" layout is the one every GEMM library runs fastest and the
 * only one cuBLASLt accepts for fp8. */
#ifndef FB_BURN_VERIFY_H
#define FB_BURN_VERIFY_H

#include "common/rng.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define BURN_HD __host__ __device__
#else
#define BURN_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The dtype parameter of gpuburn (scheduler/workload.c), in schema order. */
typedef enum {
    BURN_BF16 = 0, /* bf16 operands and result, fp32 accumulation */
    BURN_FP16,     /* fp16 operands and result, fp32 accumulation */
    BURN_TF32,     /* fp32 storage, TF32 tensor-core multiplies, fp32 accumulation */
    BURN_FP32,     /* fp32 throughout (SIMT FMA) */
    BURN_FP64,     /* fp64 throughout */
    BURN_FP8,      /* fp8 e4m3 operands, bf16 result, fp32 accumulation */
    BURN_N_DTYPES
} burn_dtype_t;

/* How an element is stored in memory. */
typedef enum {
    BURN_ST_BF16 = 0,
    BURN_ST_FP16,
    BURN_ST_FP32,
    BURN_ST_FP64,
    BURN_ST_E4M3,
    BURN_N_STORAGES
} burn_storage_t;

/* "bf16" ... "fp8"; "unknown" out of range. */
const char *burn_dtype_name(burn_dtype_t dt);
/* The dtype called name, or -1. */
int burn_dtype_from_name(const char *name);
/* Storage of the A/B operands and of the C result of a dtype. */
burn_storage_t burn_in_storage(burn_dtype_t dt);
burn_storage_t burn_out_storage(burn_dtype_t dt);
/* Bytes per element. */
size_t burn_storage_size(burn_storage_t st);
/* Significand bits including the implicit one (bf16 8, fp16 11, fp32 24, fp64 53, e4m3 4). */
int burn_storage_precision(burn_storage_t st);
const char *burn_storage_name(burn_storage_t st);

/* ---- element formats, host and device ------------------------------------------------------ */

typedef union {
    float f;
    uint32_t u;
} burn_f32_bits_t;

typedef union {
    double d;
    uint64_t u;
} burn_f64_bits_t;

static inline BURN_HD float burn_f32_from_bits(uint32_t u)
{
    burn_f32_bits_t b;
    b.u = u;
    return b.f;
}

static inline BURN_HD uint32_t burn_f32_to_bits(float f)
{
    burn_f32_bits_t b;
    b.f = f;
    return b.u;
}

static inline BURN_HD bool burn_finite(double x)
{
    burn_f64_bits_t b;
    b.d = x;
    return (b.u >> 52 & 0x7ff) != 0x7ff;
}

static inline BURN_HD double burn_abs(double x)
{
    return x < 0 ? -x : x;
}

static inline BURN_HD float burn_bf16_to_f32(uint16_t h)
{
    return burn_f32_from_bits((uint32_t)h << 16);
}

static inline BURN_HD float burn_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = h >> 10 & 0x1f, mant = h & 0x3ff;
    if (exp == 0) { /* zero and subnormals: mant x 2^-24, exact in fp32 */
        float v = (float)mant * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    if (exp == 0x1f)
        return burn_f32_from_bits(sign | 0x7f800000u | mant << 13);
    return burn_f32_from_bits(sign | (exp + 112) << 23 | mant << 13);
}

/* OCP fp8 e4m3 (bias 7): no infinities, S.1111.111 is NaN, largest finite 448. */
static inline BURN_HD float burn_e4m3_to_f32(uint8_t q)
{
    uint32_t sign = (uint32_t)(q >> 7) << 31, exp = q >> 3 & 0xf, mant = q & 7;
    if (exp == 0xf && mant == 7)
        return burn_f32_from_bits(sign | 0x7fc00000u);
    if (exp == 0) { /* subnormals: mant x 2^-9 */
        float v = (float)mant * 0.001953125f;
        return sign ? -v : v;
    }
    return burn_f32_from_bits(sign | (exp + 120) << 23 | mant << 20);
}

/* Encoders truncate toward zero: exact for every value the generators below produce, and good
 * enough (a representable neighbour) for random operands. Values beyond the format's range
 * saturate to its largest finite value; values below its smallest normal become zero. NaN stays
 * NaN. */
static inline BURN_HD uint16_t burn_f32_to_bf16(float f)
{
    return (uint16_t)(burn_f32_to_bits(f) >> 16);
}

static inline BURN_HD uint16_t burn_f32_to_fp16(float f)
{
    uint32_t u = burn_f32_to_bits(f), sign = u >> 16 & 0x8000;
    int exp = (int)(u >> 23 & 0xff) - 127;
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00);
    if (exp < -14)
        return (uint16_t)sign;
    if (exp > 15)
        return (uint16_t)(sign | 0x7bff);
    return (uint16_t)(sign | (uint32_t)(exp + 15) << 10 | (u >> 13 & 0x3ff));
}

static inline BURN_HD uint8_t burn_f32_to_e4m3(float f)
{
    uint32_t u = burn_f32_to_bits(f), sign = u >> 24 & 0x80;
    int exp = (int)(u >> 23 & 0xff) - 127;
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint8_t)(sign | 0x7f);
    if (exp < -6)
        return (uint8_t)sign;
    uint32_t q = (uint32_t)(exp + 7) << 3 | (u >> 20 & 7);
    if (exp > 8 || q > 0x7e)
        q = 0x7e; /* 448 */
    return (uint8_t)(sign | q);
}

/* Element i of an array of storage st, as a double. */
static inline BURN_HD double burn_load(const void *p, size_t i, burn_storage_t st)
{
    switch (st) {
    case BURN_ST_BF16:
        return burn_bf16_to_f32(((const uint16_t *)p)[i]);
    case BURN_ST_FP16:
        return burn_fp16_to_f32(((const uint16_t *)p)[i]);
    case BURN_ST_FP32:
        return ((const float *)p)[i];
    case BURN_ST_FP64:
        return ((const double *)p)[i];
    case BURN_ST_E4M3:
        return burn_e4m3_to_f32(((const uint8_t *)p)[i]);
    default:
        return 0;
    }
}

/* Stores v (rounded as the encoders above do) as element i of an array of storage st. */
static inline BURN_HD void burn_store(void *p, size_t i, burn_storage_t st, double v)
{
    switch (st) {
    case BURN_ST_BF16:
        ((uint16_t *)p)[i] = burn_f32_to_bf16((float)v);
        break;
    case BURN_ST_FP16:
        ((uint16_t *)p)[i] = burn_f32_to_fp16((float)v);
        break;
    case BURN_ST_FP32:
        ((float *)p)[i] = (float)v;
        break;
    case BURN_ST_FP64:
        ((double *)p)[i] = v;
        break;
    case BURN_ST_E4M3:
        ((uint8_t *)p)[i] = burn_f32_to_e4m3((float)v);
        break;
    default:
        break;
    }
}

/* The bit that `inject_corrupt=flip` flips: the top stored mantissa bit, which moves a normal
 * value by 25% to 50% of itself. */
static inline BURN_HD uint64_t burn_flip_mask(burn_storage_t st)
{
    switch (st) {
    case BURN_ST_BF16:
        return 1u << 6;
    case BURN_ST_FP16:
        return 1u << 9;
    case BURN_ST_FP32:
        return 1u << 22;
    case BURN_ST_FP64:
        return 1ull << 51;
    case BURN_ST_E4M3:
        return 1u << 2;
    default:
        return 0;
    }
}

/* ---- operand generators -------------------------------------------------------------------- */

/* The burn operands: uniform in [-1, 1), a function of (seed, index) only, so that every repeat
 * of the GEMM sees the same data and every mantissa bit toggles. */
static inline BURN_HD double burn_random_value(uint64_t seed, uint64_t i)
{
    uint64_t h = fb_mix64(seed ^ fb_mix64(i));
    return 2.0 * fb_rng_unit(h) - 1.0;
}

/* The known-answer operands: integers in [-range, range]. With range from burn_kat_range every
 * product and every partial sum of the GEMM is an integer below 2^24, so fp32 accumulation in
 * any order, blocking or split is exact and the answer is known before the GEMM runs. */
static inline BURN_HD int burn_kat_value(uint64_t seed, uint64_t i, int range)
{
    uint64_t h = fb_mix64(seed ^ 0x6b61745f6f70ull ^ fb_mix64(i));
    return (int)(h % (uint64_t)(2 * range + 1)) - range;
}

/* ---- the check ----------------------------------------------------------------------------- */

/* An element is wrong when |got - ref| > rtol * |ref| + atol. */
typedef struct {
    double rtol, atol;
} burn_tol_t;

typedef enum {
    BURN_AGREE = 0,
    BURN_MISMATCH = 1,  /* finite, beyond tolerance */
    BURN_NONFINITE = 2, /* the result is NaN or infinite */
} burn_elem_verdict_t;

/* The one per-element check, on the host and in the kernels. A non-finite reference is not
 * compared (it is counted where it was produced, or marks an element that is not checked). */
static inline BURN_HD int burn_check_elem(double got, double ref, burn_tol_t tol)
{
    if (!burn_finite(got))
        return BURN_NONFINITE;
    if (!burn_finite(ref))
        return BURN_AGREE;
    return burn_abs(got - ref) > tol.rtol * burn_abs(ref) + tol.atol ? BURN_MISMATCH : BURN_AGREE;
}

/* What a verification kernel reduces a buffer (or a set of buffers) to. A key locates one
 * element: buffer index << 32 | element index; BURN_NO_KEY when there is none. */
typedef struct {
    uint64_t mismatches;      /* elements beyond tolerance */
    uint64_t nonfinite;       /* NaN/Inf elements */
    uint64_t first_mismatch;  /* lowest key of a mismatch */
    uint64_t first_nonfinite; /* lowest key of a NaN/Inf */
    uint64_t injected;        /* key of the element inject_corrupt changed, or BURN_NO_KEY */
} burn_counters_t;

#define BURN_NO_KEY UINT64_MAX

static inline BURN_HD uint64_t burn_key(uint64_t buffer, uint64_t element)
{
    return buffer << 32 | (element & 0xffffffffu);
}

static inline BURN_HD uint64_t burn_key_buffer(uint64_t key)
{
    return key >> 32;
}

static inline BURN_HD uint64_t burn_key_element(uint64_t key)
{
    return key & 0xffffffffu;
}

/* ---- host side ----------------------------------------------------------------------------- */

/* Tolerance between repeats of the same GEMM into different buffers. Libraries are
 * deterministic for a fixed algorithm, so repeats normally agree bit for bit; the tolerance only
 * absorbs a different summation order (split-K with atomics) and is far below the smallest
 * corruption worth reporting: 2 units in the last place of the result format (plus 16 of the fp32
 * or fp64 accumulator) relative to the element, and the same relative to the RMS of the result,
 * sqrt(k)/3 for the uniform [-1, 1) operands, as an absolute floor near zero. */
burn_tol_t burn_tol_repeat(burn_dtype_t dt, uint64_t k);
/* Tolerance of the known-answer check against the exact integer product: one unit in the last
 * place of the result format (the rounding of the result) and 0.5 absolute, below the
 * smallest error an integer answer can have. */
burn_tol_t burn_tol_kat(burn_dtype_t dt);
/* RMS of a burn result element, sqrt(k)/3 (the scale the flip injection looks for). */
double burn_result_rms(uint64_t k);

/* The largest integer magnitude of the known-answer operands for inner dimension k: every
 * partial sum stays below 2^24 (exact in fp32), every operand is exact in the input format,
 * (fp16 results) the largest possible result fits fp16, and (fp8) the sums stay far below 2^13 for
 * fp8 tensor cores that accumulate with fewer bits. At least 1. */
int burn_kat_range(burn_dtype_t dt, uint64_t k);

/* Every how many 64-row tiles the known-answer reference is computed for matrix size n: 1 (all)
 * up to n = 16384; beyond it a subset of row tiles keeps the one-time reference GEMM on plain
 * cores under a few seconds. Rows not computed are not checked. */
unsigned burn_kat_row_stride(uint64_t n);

/* Counters with nothing seen. */
void burn_counters_clear(burn_counters_t *c);
/* Adds b's counts into a (first keys: the lower one). */
void burn_counters_add(burn_counters_t *a, const burn_counters_t *b);

/* The host twin of the verification kernels: checks n elements of got (storage got_st) against
 * ref (storage ref_st; NULL: only count NaN/Inf) with burn_check_elem and adds to c, keys in
 * buffer `buffer`. */
void burn_compare_host(const void *got, burn_storage_t got_st, const void *ref,
                       burn_storage_t ref_st, size_t n, burn_tol_t tol, uint32_t buffer,
                       burn_counters_t *c);

/* The host twin of the known-answer reference kernel: ref (m x n fp32, column-major) = A^T B in
 * the TN layout above, A and B of storage st, summed in fp32 in k order. */
void burn_reference_gemm_host(const void *a, const void *b, burn_storage_t st, size_t m, size_t n,
                              size_t k, float *ref);

/* "C[17] row 5 col 1023" for key in an m-row result into buf; returns buf. */
const char *burn_format_key(uint64_t key, uint64_t m, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
