/* SPDX-License-Identifier: Apache-2.0 */
/* The host half of gpuburn's result verification: dtype names and formats, the tolerances the
 * verification kernels are launched with, the range of the known-answer operands, and host twins
 * of the compare kernel and the reference GEMM. The twins run the same per-element check
 * (burn_check_elem in burn_verify.h) as the kernels, so the unit tests that corrupt host arrays
 * prove what the GPU path detects. */
#include "burn_verify.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const s_dtype_names[BURN_N_DTYPES] = {"bf16", "fp16", "tf32",
                                                         "fp32", "fp64", "fp8"};
static const char *const s_storage_names[BURN_N_STORAGES] = {"bf16", "fp16", "fp32", "fp64",
                                                             "fp8e4m3"};

const char *burn_dtype_name(burn_dtype_t dt)
{
    return (int)dt >= 0 && dt < BURN_N_DTYPES ? s_dtype_names[dt] : "unknown";
}

int burn_dtype_from_name(const char *name)
{
    for (int i = 0; name && i < BURN_N_DTYPES; i++)
        if (!strcmp(name, s_dtype_names[i]))
            return i;
    return -1;
}

const char *burn_storage_name(burn_storage_t st)
{
    return (int)st >= 0 && st < BURN_N_STORAGES ? s_storage_names[st] : "unknown";
}

burn_storage_t burn_in_storage(burn_dtype_t dt)
{
    switch (dt) {
    case BURN_BF16:
        return BURN_ST_BF16;
    case BURN_FP16:
        return BURN_ST_FP16;
    case BURN_FP64:
        return BURN_ST_FP64;
    case BURN_FP8:
        return BURN_ST_E4M3;
    default:
        return BURN_ST_FP32;
    }
}

burn_storage_t burn_out_storage(burn_dtype_t dt)
{
    /* fp8 GEMMs write bf16: an fp8 result would need a scale and say little. */
    return dt == BURN_FP8 ? BURN_ST_BF16 : burn_in_storage(dt);
}

size_t burn_storage_size(burn_storage_t st)
{
    switch (st) {
    case BURN_ST_BF16:
    case BURN_ST_FP16:
        return 2;
    case BURN_ST_FP32:
        return 4;
    case BURN_ST_FP64:
        return 8;
    case BURN_ST_E4M3:
        return 1;
    default:
        return 0;
    }
}

int burn_storage_precision(burn_storage_t st)
{
    switch (st) {
    case BURN_ST_BF16:
        return 8;
    case BURN_ST_FP16:
        return 11;
    case BURN_ST_FP32:
        return 24;
    case BURN_ST_FP64:
        return 53;
    case BURN_ST_E4M3:
        return 4;
    default:
        return 0;
    }
}

/* Unit roundoff 2^-p of a format. */
static double s_unit_roundoff(burn_storage_t st)
{
    return ldexp(1.0, -burn_storage_precision(st));
}

double burn_result_rms(uint64_t k)
{
    return sqrt((double)k) / 3.0;
}

burn_tol_t burn_tol_repeat(burn_dtype_t dt, uint64_t k)
{
    double u_acc = dt == BURN_FP64 ? ldexp(1.0, -53) : ldexp(1.0, -24);
    double rtol = 2 * s_unit_roundoff(burn_out_storage(dt)) + 16 * u_acc;
    burn_tol_t tol = {rtol, rtol * burn_result_rms(k)};
    return tol;
}

burn_tol_t burn_tol_kat(burn_dtype_t dt)
{
    burn_tol_t tol = {2 * s_unit_roundoff(burn_out_storage(dt)), 0.5};
    return tol;
}

int burn_kat_range(burn_dtype_t dt, uint64_t k)
{
    if (k == 0)
        k = 1;
    /* k * r^2 < 2^24: every partial sum of integer products is exact in fp32. */
    double r = floor(sqrt((double)((1u << 24) - 1) / (double)k));
    /* Integers exact in the input format: e4m3 up to 16, bf16 up to 256, fp16/tf32 2048. */
    double exact = dt == BURN_FP8 ? 15 : dt == BURN_BF16 ? 255 : 2047;
    if (r > exact)
        r = exact;
    /* fp8: Hopper's fp8 tensor cores are reported to accumulate with about 14 significant bits
     * between promotions to fp32. Keep 8 standard deviations of a sum, sqrt(k) r(r+1)/3, below
     * 2^13 so that even such an accumulator holds every partial sum exactly. */
    if (dt == BURN_FP8)
        while (r > 1 && 8 * sqrt((double)k) * r * (r + 1) / 3 >= 8192)
            r--;
    /* fp16 results: the largest possible sum k * r^2 must stay finite (65504). */
    if (dt == BURN_FP16) {
        double fit = floor(sqrt(65504.0 / (double)k));
        if (r > fit)
            r = fit;
    }
    return r < 1 ? 1 : (int)r;
}

unsigned burn_kat_row_stride(uint64_t n)
{
    if (n <= 16384)
        return 1;
    double ratio = (double)n / 16384.0;
    return (unsigned)ceil(ratio * ratio);
}

void burn_counters_clear(burn_counters_t *c)
{
    memset(c, 0, sizeof *c);
    c->first_mismatch = c->first_nonfinite = c->injected = BURN_NO_KEY;
}

void burn_counters_add(burn_counters_t *a, const burn_counters_t *b)
{
    a->mismatches += b->mismatches;
    a->nonfinite += b->nonfinite;
    if (b->first_mismatch < a->first_mismatch)
        a->first_mismatch = b->first_mismatch;
    if (b->first_nonfinite < a->first_nonfinite)
        a->first_nonfinite = b->first_nonfinite;
    if (b->injected != BURN_NO_KEY)
        a->injected = b->injected;
}

void burn_compare_host(const void *got, burn_storage_t got_st, const void *ref,
                       burn_storage_t ref_st, size_t n, burn_tol_t tol, uint32_t buffer,
                       burn_counters_t *c)
{
    for (size_t i = 0; i < n; i++) {
        double g = burn_load(got, i, got_st);
        int v;
        if (ref)
            v = burn_check_elem(g, burn_load(ref, i, ref_st), tol);
        else
            v = burn_finite(g) ? BURN_AGREE : BURN_NONFINITE;
        uint64_t key = burn_key(buffer, i);
        if (v == BURN_MISMATCH) {
            c->mismatches++;
            if (key < c->first_mismatch)
                c->first_mismatch = key;
        } else if (v == BURN_NONFINITE) {
            c->nonfinite++;
            if (key < c->first_nonfinite)
                c->first_nonfinite = key;
        }
    }
}

void burn_reference_gemm_host(const void *a, const void *b, burn_storage_t st, size_t m, size_t n,
                              size_t k, float *ref)
{
    for (size_t j = 0; j < n; j++)
        for (size_t i = 0; i < m; i++) {
            float sum = 0;
            for (size_t l = 0; l < k; l++)
                sum += (float)burn_load(a, i * k + l, st) * (float)burn_load(b, j * k + l, st);
            ref[i + j * m] = sum;
        }
}

const char *burn_format_key(uint64_t key, uint64_t m, char *buf, size_t len)
{
    if (key == BURN_NO_KEY || m == 0) {
        snprintf(buf, len, "nowhere");
        return buf;
    }
    uint64_t e = burn_key_element(key);
    snprintf(buf, len, "C[%" PRIu64 "] row %" PRIu64 " col %" PRIu64, burn_key_buffer(key), e % m,
             e / m);
    return buf;
}
