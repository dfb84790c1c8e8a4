/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for gpuburn's host logic (workloads/gpu/host/burn_verify.c, burn_judge.c): the element
 * formats the kernels decode, the known-answer operands being exact, and the three checks run on
 * host arrays through the same per-element check and tolerances the kernels use — a flipped
 * result element, a NaN, and a systematic error that repeats identically are each caught, by the
 * check meant for it; then parameters, device lists, statistics, floors, and the findings and
 * verdict of a run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>


#include "burn_fixture.h"
#include "common/util.h"
#include "gpu/host/burn_judge.h"
#include "gpu/host/burn_verify.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- formats -----------------------------------------------------------------------------------
 */

static void test_dtypes(void **state)
{
    (void)state;
    for (int i = 0; i < BURN_N_DTYPES; i++)
        assert_int_equal(burn_dtype_from_name(burn_dtype_name((burn_dtype_t)i)), i);
    assert_int_equal(burn_dtype_from_name("int8"), -1);
    assert_int_equal(burn_dtype_from_name(NULL), -1);
    assert_int_equal(burn_in_storage(BURN_TF32), BURN_ST_FP32);
    assert_int_equal(burn_in_storage(BURN_FP8), BURN_ST_E4M3);
    assert_int_equal(burn_out_storage(BURN_FP8), BURN_ST_BF16);
    assert_int_equal(burn_out_storage(BURN_FP64), BURN_ST_FP64);
    assert_int_equal(burn_storage_size(BURN_ST_E4M3), 1);
    assert_int_equal(burn_storage_size(BURN_ST_FP16), 2);
    assert_int_equal(burn_storage_size(BURN_ST_FP64), 8);
}

static void test_decoders(void **state)
{
    (void)state;
    assert_true(burn_bf16_to_f32(0x3f80) == 1.0f);
    assert_true(burn_bf16_to_f32(0xc040) == -3.0f);
    assert_true(burn_fp16_to_f32(0x3c00) == 1.0f);
    assert_true(burn_fp16_to_f32(0xc000) == -2.0f);
    assert_true(burn_fp16_to_f32(0x7bff) == 65504.0f);
    assert_true(burn_fp16_to_f32(0x0001) == ldexpf(1, -24));
    assert_true(isinf(burn_fp16_to_f32(0x7c00)));
    assert_true(isnan(burn_fp16_to_f32(0x7e00)));
    assert_true(burn_e4m3_to_f32(0x38) == 1.0f);
    assert_true(burn_e4m3_to_f32(0x7e) == 448.0f);
    assert_true(burn_e4m3_to_f32(0xfe) == -448.0f);
    assert_true(burn_e4m3_to_f32(0x01) == ldexpf(1, -9));
    assert_true(burn_e4m3_to_f32(0x44) == 3.0f);
    assert_true(isnan(burn_e4m3_to_f32(0x7f)));
    /* Encoders: exact values round-trip, NaN stays NaN, out of range saturates. */
    assert_int_equal(burn_f32_to_fp16(65504.0f), 0x7bff);
    assert_int_equal(burn_f32_to_fp16(1e6f), 0x7bff);
    assert_int_equal(burn_f32_to_e4m3(1000.0f), 0x7e);
    assert_int_equal(burn_f32_to_e4m3(-3.0f), 0xc4);
    assert_true(isnan(burn_fp16_to_f32(burn_f32_to_fp16(NAN))));
    assert_true(isnan(burn_e4m3_to_f32(burn_f32_to_e4m3(NAN))));
    assert_true(isnan(burn_bf16_to_f32(burn_f32_to_bf16(NAN))));
    assert_false(burn_finite(INFINITY));
    assert_false(burn_finite(NAN));
    assert_true(burn_finite(-1e308));
}

/* Every known-answer integer is exact in every input format, and random operands stay in range. */
static void test_generators(void **state)
{
    (void)state;
    for (int dt = 0; dt < BURN_N_DTYPES; dt++) {
        burn_storage_t st = burn_in_storage((burn_dtype_t)dt);
        int range = burn_kat_range((burn_dtype_t)dt, 8192);
        for (int v = -range; v <= range; v++) {
            unsigned char buf[8];
            burn_store(buf, 0, st, v);
            assert_true(burn_load(buf, 0, st) == (double)v);
        }
        for (uint64_t i = 0; i < 1000; i++) {
            int v = burn_kat_value(7, i, range);
            assert_true(v >= -range && v <= range);
            double r = burn_random_value(7, i);
            assert_true(r >= -1 && r < 1);
            unsigned char buf[8];
            burn_store(buf, 0, st, r);
            double back = burn_load(buf, 0, st);
            /* a neighbour: fp8 keeps 4 significant bits and flushes below 2^-6 */
            assert_true(burn_finite(back) && fabs(back - r) <= fabs(r) / 8 + 1.0 / 64);
        }
    }
}

/* The range keeps k * r^2 below 2^24 (exact fp32 partial sums) and fp16 results finite. */
static void test_kat_range(void **state)
{
    (void)state;
    assert_int_equal(burn_kat_range(BURN_BF16, 8192), 45);
    assert_int_equal(burn_kat_range(BURN_FP32, 8192), 45);
    assert_int_equal(burn_kat_range(BURN_FP8, 8192), 5);
    assert_int_equal(burn_kat_range(BURN_FP8, 256), 13);
    assert_int_equal(burn_kat_range(BURN_FP16, 8192), 2);
    assert_int_equal(burn_kat_range(BURN_FP16, 65536), 1);
    assert_int_equal(burn_kat_range(BURN_BF16, 256), 255);
    for (int dt = 0; dt < BURN_N_DTYPES; dt++)
        for (uint64_t k = 256; k <= 65536; k *= 2) {
            uint64_t r = (uint64_t)burn_kat_range((burn_dtype_t)dt, k);
            assert_true(r >= 1);
            if (k < 65536 || dt != BURN_FP16)
                assert_true(k * r * r < (1u << 24));
            if (dt == BURN_FP16 && k < 65536)
                assert_true(k * r * r <= 65504);
        }
    assert_int_equal(burn_kat_row_stride(8192), 1);
    assert_int_equal(burn_kat_row_stride(16384), 1);
    assert_int_equal(burn_kat_row_stride(32768), 4);
    assert_int_equal(burn_kat_row_stride(65536), 16);
}

static void test_check_elem(void **state)
{
    (void)state;
    burn_tol_t tol = {0.01, 0.5};
    assert_int_equal(burn_check_elem(100, 100, tol), BURN_AGREE);
    assert_int_equal(burn_check_elem(101.4, 100, tol), BURN_AGREE);
    assert_int_equal(burn_check_elem(101.6, 100, tol), BURN_MISMATCH);
    assert_int_equal(burn_check_elem(0.4, 0, tol), BURN_AGREE);
    assert_int_equal(burn_check_elem(-0.6, 0, tol), BURN_MISMATCH);
    assert_int_equal(burn_check_elem(NAN, 1, tol), BURN_NONFINITE);
    assert_int_equal(burn_check_elem(-INFINITY, 1, tol), BURN_NONFINITE);
    /* A reference that is not finite is not compared (counted where it was produced). */
    assert_int_equal(burn_check_elem(1, NAN, tol), BURN_AGREE);
}

/* ---- the three checks on host arrays ------------------------------------------------------------
 */

typedef struct {
    burn_dtype_t dt;
    size_t n; /* m = n = k */
    burn_storage_t in, out;
    void *a, *b;
} gemm_t;

static void s_gemm_init(gemm_t *g, burn_dtype_t dt, size_t n, bool kat)
{
    g->dt = dt;
    g->n = n;
    g->in = burn_in_storage(dt);
    g->out = burn_out_storage(dt);
    size_t bytes = n * n * burn_storage_size(g->in);
    g->a = xmalloc(bytes);
    g->b = xmalloc(bytes);
    int range = burn_kat_range(dt, n);
    for (size_t i = 0; i < n * n; i++) {
        burn_store(g->a, i, g->in, kat ? burn_kat_value(1, i, range) : burn_random_value(1, i));
        burn_store(g->b, i, g->in, kat ? burn_kat_value(2, i, range) : burn_random_value(2, i));
    }
}

static void s_gemm_free(gemm_t *g)
{
    free(g->a);
    free(g->b);
}

/* What a GPU would write: the product summed in double in k order (forward) or reverse order,
 * rounded into the result format. A different order than the reference on purpose. */
static void *s_gemm_result(const gemm_t *g, bool reverse)
{
    size_t n = g->n;
    void *c = xmalloc(n * n * burn_storage_size(g->out));
    for (size_t j = 0; j < n; j++)
        for (size_t i = 0; i < n; i++) {
            double sum = 0;
            for (size_t l = 0; l < n; l++) {
                size_t k = reverse ? n - 1 - l : l;
                sum += burn_load(g->a, i * n + k, g->in) * burn_load(g->b, j * n + k, g->in);
            }
            if (g->dt != BURN_FP64)
                sum = (float)sum;
            burn_store(c, i + j * n, g->out, sum);
        }
    return c;
}

static burn_counters_t s_compare(const void *got, burn_storage_t got_st, const void *ref,
                                 burn_storage_t ref_st, size_t n, burn_tol_t tol, uint32_t buf)
{
    burn_counters_t c;
    burn_counters_clear(&c);
    burn_compare_host(got, got_st, ref, ref_st, n, tol, buf, &c);
    return c;
}

/* Repeats agree (even summed in another order), and so does the known answer, for every dtype. */
static void test_clean_results_pass(void **state)
{
    (void)state;
    for (int dt = 0; dt < BURN_N_DTYPES; dt++) {
        const size_t n = 64;
        gemm_t g;
        s_gemm_init(&g, (burn_dtype_t)dt, n, false);
        void *c0 = s_gemm_result(&g, false), *c1 = s_gemm_result(&g, true);
        burn_counters_t r = s_compare(c1, g.out, c0, g.out, n * n, burn_tol_repeat(g.dt, n), 1);
        assert_int_equal(r.mismatches, 0);
        assert_int_equal(r.nonfinite, 0);
        assert_true(r.first_mismatch == BURN_NO_KEY);
        free(c0);
        free(c1);
        s_gemm_free(&g);

        s_gemm_init(&g, (burn_dtype_t)dt, n, true);
        float *ref = xmalloc(n * n * sizeof *ref);
        burn_reference_gemm_host(g.a, g.b, g.in, n, n, n, ref);
        void *kout = s_gemm_result(&g, true);
        r = s_compare(kout, g.out, ref, BURN_ST_FP32, n * n, burn_tol_kat(g.dt), 0);
        assert_int_equal(r.mismatches, 0);
        assert_int_equal(r.nonfinite, 0);
        free(kout);
        free(ref);
        s_gemm_free(&g);
    }
}

/* At the real size (k = 8192) the known-answer sums are exact in fp32 in any order: a few
 * elements summed forward, backward and in double agree bit for bit. */
static void test_kat_exact_at_8192(void **state)
{
    (void)state;
    const size_t k = 8192, rows = 3;
    for (int dt = 0; dt < BURN_N_DTYPES; dt++) {
        burn_storage_t st = burn_in_storage((burn_dtype_t)dt);
        int range = burn_kat_range((burn_dtype_t)dt, k);
        void *a = xmalloc(rows * k * burn_storage_size(st));
        void *b = xmalloc(rows * k * burn_storage_size(st));
        for (size_t i = 0; i < rows * k; i++) {
            burn_store(a, i, st, burn_kat_value(11, i, range));
            burn_store(b, i, st, burn_kat_value(12, i, range));
        }
        float ref[rows * rows];
        burn_reference_gemm_host(a, b, st, rows, rows, k, ref);
        for (size_t i = 0; i < rows; i++)
            for (size_t j = 0; j < rows; j++) {
                float back = 0;
                double exact = 0;
                for (size_t l = k; l-- > 0;) {
                    double p = burn_load(a, i * k + l, st) * burn_load(b, j * k + l, st);
                    back += (float)p;
                    exact += p;
                }
                assert_true(ref[i + j * rows] == back);
                assert_true((double)ref[i + j * rows] == exact);
            }
        free(a);
        free(b);
    }
}

/* inject_corrupt=flip: the top mantissa bit of one element of one result buffer. */
static void test_flip_detected(void **state)
{
    (void)state;
    for (int dt = 0; dt < BURN_N_DTYPES; dt++) {
        const size_t n = 64;
        gemm_t g;
        s_gemm_init(&g, (burn_dtype_t)dt, n, false);
        void *c0 = s_gemm_result(&g, false), *c1 = s_gemm_result(&g, false);
        /* As the injection kernel: the first element from `start` of at least rms/2. */
        size_t at = 100;
        while (fabs(burn_load(c1, at, g.out)) < burn_result_rms(n) / 2)
            at++;
        size_t esz = burn_storage_size(g.out);
        uint64_t mask = burn_flip_mask(g.out), word = 0;
        memcpy(&word, (char *)c1 + at * esz, esz);
        word ^= mask;
        memcpy((char *)c1 + at * esz, &word, esz);
        burn_counters_t r = s_compare(c1, g.out, c0, g.out, n * n, burn_tol_repeat(g.dt, n), 5);
        assert_int_equal(r.mismatches, 1);
        assert_int_equal(r.nonfinite, 0);
        assert_true(r.first_mismatch == burn_key(5, at));
        char where[64];
        burn_format_key(r.first_mismatch, n, where, sizeof where);
        char expect[64];
        snprintf(expect, sizeof expect, "C[5] row %zu col %zu", at % n, at / n);
        assert_string_equal(where, expect);
        free(c0);
        free(c1);
        s_gemm_free(&g);
    }
}

/* The flip is beyond the repeat tolerance for any element the injection may pick, at the real
 * size, for every dtype; a one-ulp difference is not. */
static void test_flip_beyond_tolerance(void **state)
{
    (void)state;
    const uint64_t k = 8192;
    for (int dt = 0; dt < BURN_N_DTYPES; dt++) {
        burn_storage_t out = burn_out_storage((burn_dtype_t)dt);
        burn_tol_t tol = burn_tol_repeat((burn_dtype_t)dt, k);
        double rms = burn_result_rms(k);
        for (int i = 0; i < 2000; i++) {
            double v = rms * (0.5 + 4.0 * i / 2000.0) * (i % 2 ? -1 : 1);
            unsigned char buf[8] = {0}, flipped[8];
            burn_store(buf, 0, out, v);
            memcpy(flipped, buf, sizeof buf);
            uint64_t w = 0, mask = burn_flip_mask(out);
            size_t esz = burn_storage_size(out);
            memcpy(&w, flipped, esz);
            w ^= mask;
            memcpy(flipped, &w, esz);
            double ref = burn_load(buf, 0, out);
            assert_int_equal(burn_check_elem(burn_load(flipped, 0, out), ref, tol), BURN_MISMATCH);
            /* the neighbour one ulp up */
            memcpy(&w, buf, esz);
            w += 1;
            memcpy(flipped, &w, esz);
            assert_int_equal(burn_check_elem(burn_load(flipped, 0, out), ref, tol), BURN_AGREE);
        }
    }
}

/* inject_corrupt=nan: a NaN in a result buffer is counted as NaN/Inf, not as a miscompare, and
 * a NaN in C[0] does not turn every other buffer into miscompares. */
static void test_nan_detected(void **state)
{
    (void)state;
    const size_t n = 32;
    gemm_t g;
    s_gemm_init(&g, BURN_BF16, n, false);
    void *c0 = s_gemm_result(&g, false), *c2 = s_gemm_result(&g, false);
    burn_store(c2, 77, g.out, NAN);
    burn_counters_t r = s_compare(c2, g.out, c0, g.out, n * n, burn_tol_repeat(g.dt, n), 2);
    assert_int_equal(r.mismatches, 0);
    assert_int_equal(r.nonfinite, 1);
    assert_true(r.first_nonfinite == burn_key(2, 77));
    burn_store(c0, 5, g.out, INFINITY);
    r = s_compare(c0, g.out, NULL, g.out, n * n, burn_tol_repeat(g.dt, n), 0);
    assert_int_equal(r.nonfinite, 1);
    assert_true(r.first_nonfinite == burn_key(0, 5));
    r = s_compare(c2, g.out, c0, g.out, n * n, burn_tol_repeat(g.dt, n), 2);
    assert_int_equal(r.mismatches, 0);
    free(c0);
    free(c2);
    s_gemm_free(&g);
}

/* inject_corrupt=systematic: an operand of the known-answer GEMM changed after its reference was
 * computed. Every repeat is identically wrong: repeat comparison sees nothing, the known answer
 * catches it, in the row of the changed operand. */
static void test_systematic_detected(void **state)
{
    (void)state;
    for (int dt = 0; dt < BURN_N_DTYPES; dt++) {
        const size_t n = 48;
        gemm_t g;
        s_gemm_init(&g, (burn_dtype_t)dt, n, true);
        float *ref = xmalloc(n * n * sizeof *ref);
        burn_reference_gemm_host(g.a, g.b, g.in, n, n, n, ref);
        /* As the injection kernel: one element negated (or 0 -> 1). Row 7 of A^T. */
        size_t at = 7 * n + 3;
        double v = burn_load(g.a, at, g.in);
        burn_store(g.a, at, g.in, v != 0 ? -v : 1.0);
        void *rep0 = s_gemm_result(&g, false), *rep1 = s_gemm_result(&g, false);
        burn_counters_t r = s_compare(rep1, g.out, rep0, g.out, n * n, burn_tol_repeat(g.dt, n), 1);
        assert_int_equal(r.mismatches, 0); /* invisible to repeats */
        burn_counters_t k = s_compare(rep1, g.out, ref, BURN_ST_FP32, n * n, burn_tol_kat(g.dt), 0);
        assert_true(k.mismatches > 0);
        assert_int_equal(k.nonfinite, 0);
        assert_int_equal(burn_key_element(k.first_mismatch) % n, 7);
        /* Only row 7 is wrong. */
        for (size_t j = 0; j < n; j++)
            for (size_t i = 0; i < n; i++)
                if (i != 7)
                    assert_int_equal(burn_check_elem(burn_load(rep1, i + j * n, g.out),
                                                     ref[i + j * n], burn_tol_kat(g.dt)),
                                     BURN_AGREE);
        free(rep0);
        free(rep1);
        free(ref);
        s_gemm_free(&g);
    }
}

/* A known-answer result off by more than the rounding of the result format (at least 1, the
 * smallest error of an integer answer; 4 units in the last place of bf16/fp16) is caught at the
 * element that is off. fp32/fp64 results catch being one off at any magnitude. */
static void test_kat_off_by_one(void **state)
{
    (void)state;
    const size_t n = 32, at = 40;
    for (int dt = 0; dt < BURN_N_DTYPES; dt++) {
        gemm_t g;
        s_gemm_init(&g, (burn_dtype_t)dt, n, true);
        float *ref = xmalloc(n * n * sizeof *ref);
        burn_reference_gemm_host(g.a, g.b, g.in, n, n, n, ref);
        void *out = s_gemm_result(&g, false);
        double off = fabs(ref[at]) * ldexp(1, 2 - burn_storage_precision(g.out));
        if (burn_storage_precision(g.out) >= 24)
            assert_true(off < 1);
        burn_store(out, at, g.out, ref[at] + (off > 1 ? off : 1));
        burn_counters_t k = s_compare(out, g.out, ref, BURN_ST_FP32, n * n, burn_tol_kat(g.dt), 0);
        if (k.mismatches != 1)
            fail_msg("%s: %g off at %zu: %u mismatches", burn_dtype_name(g.dt), ref[at], at,
                     (unsigned)k.mismatches);
        assert_true(k.first_mismatch == burn_key(0, at));
        free(out);
        free(ref);
        s_gemm_free(&g);
    }
}

static void test_counters_add(void **state)
{
    (void)state;
    burn_counters_t a, b;
    burn_counters_clear(&a);
    burn_counters_clear(&b);
    b.mismatches = 3;
    b.first_mismatch = burn_key(2, 10);
    burn_counters_add(&a, &b);
    b.first_mismatch = burn_key(1, 99);
    b.nonfinite = 1;
    b.first_nonfinite = burn_key(4, 4);
    burn_counters_add(&a, &b);
    assert_int_equal(a.mismatches, 6);
    assert_int_equal(a.nonfinite, 1);
    assert_true(a.first_mismatch == burn_key(1, 99));
    assert_true(a.first_nonfinite == burn_key(4, 4));
    assert_true(a.injected == BURN_NO_KEY);
}

/* ---- parameters
 * ---------------------------------------------------------------------------------- */

static worker_ctx_t *s_ctx(const char *const *params, size_t n, bool inject)
{
    return worker_ctx_new("t1", "node1", params, n, inject);
}

static void test_config_defaults(void **state)
{
    (void)state;
    worker_ctx_t *ctx = s_ctx(NULL, 0, false);
    burn_config_t cfg;
    assert_int_equal(burn_config_parse(ctx, &cfg), 0);
    assert_int_equal(cfg.dtype, BURN_BF16);
    assert_int_equal(cfg.duration_ms, 60000);
    assert_int_equal(cfg.interval_ms, 5000);
    assert_int_equal(cfg.matrix, 8192);
    assert_true(cfg.mem_fraction == 0.9);
    assert_true(cfg.min_relative == 0.9);
    assert_false(cfg.has_min_tflops);
    assert_int_equal(cfg.inject, BURN_INJECT_NONE);
    assert_string_equal(cfg.devices, "all");
    worker_ctx_destroy(&ctx);
    const char *fp8[] = {"dtype=fp8"}; /* its GEMMs long enough for the checksums' read of C */
    ctx = s_ctx(fp8, 1, false);
    assert_int_equal(burn_config_parse(ctx, &cfg), 0);
    assert_int_equal(cfg.matrix, 24576);
    worker_ctx_destroy(&ctx);
    const char *fp8_set[] = {"dtype=fp8", "matrix=8192"};
    ctx = s_ctx(fp8_set, 2, false);
    assert_int_equal(burn_config_parse(ctx, &cfg), 0);
    assert_int_equal(cfg.matrix, 8192);
    worker_ctx_destroy(&ctx);
}

static void test_config_values(void **state)
{
    (void)state;
    const char *p[] = {"dtype=fp64",       "duration=20s", "interval=30s",  "matrix=1000",
                       "mem_fraction=0.5", "devices=0,1",  "min_tflops=40", "min_relative=0"};
    worker_ctx_t *ctx = s_ctx(p, 8, false);
    burn_config_t cfg;
    assert_int_equal(burn_config_parse(ctx, &cfg), 0);
    assert_int_equal(cfg.dtype, BURN_FP64);
    assert_int_equal(cfg.duration_ms, 20000);
    assert_int_equal(cfg.interval_ms, 20000); /* not longer than the run */
    assert_int_equal(cfg.matrix, 992);        /* a multiple of 16 */
    assert_true(cfg.mem_fraction == 0.5);
    assert_string_equal(cfg.devices, "0,1");
    assert_true(cfg.has_min_tflops && cfg.min_tflops == 40);
    assert_true(cfg.min_relative == 0);
    worker_ctx_destroy(&ctx);
}

static void s_expect_bad(const char *param, int rc, const char *needle)
{
    const char *p[] = {param};
    worker_ctx_t *ctx = s_ctx(p, 1, false);
    burn_config_t cfg;
    assert_int_equal(burn_config_parse(ctx, &cfg), rc);
    const char *err = worker_result(ctx)->error;
    assert_non_null(err);
    if (!strstr(err, needle))
        fail_msg("'%s': error '%s' lacks '%s'", param, err, needle);
    worker_ctx_destroy(&ctx);
}

static void test_config_bad(void **state)
{
    (void)state;
    s_expect_bad("dtype=int8", -EINVAL, "dtype 'int8'");
    s_expect_bad("duration=0s", -EINVAL, "duration");
    s_expect_bad("interval=1ms", -EINVAL, "interval");
    s_expect_bad("matrix=100", -EINVAL, "matrix");
    s_expect_bad("matrix=70000", -EINVAL, "matrix");
    s_expect_bad("mem_fraction=0", -EINVAL, "mem_fraction");
    s_expect_bad("mem_fraction=1.5", -EINVAL, "mem_fraction");
    s_expect_bad("min_relative=2", -EINVAL, "min_relative");
    s_expect_bad("min_tflops=-1", -EINVAL, "min_tflops");
    s_expect_bad("inject_corrupt=flip", -EPERM, "--allow-fault-injection");
}

static void test_config_inject(void **state)
{
    (void)state;
    const char *modes[] = {"flip", "nan", "systematic"};
    for (int i = 0; i < 3; i++) {
        char param[64];
        snprintf(param, sizeof param, "inject_corrupt=%s", modes[i]);
        const char *p[] = {param};
        worker_ctx_t *ctx = s_ctx(p, 1, true);
        burn_config_t cfg;
        assert_int_equal(burn_config_parse(ctx, &cfg), 0);
        assert_int_equal(cfg.inject, BURN_INJECT_FLIP + i);
        assert_string_equal(burn_inject_name(cfg.inject), modes[i]);
        worker_ctx_destroy(&ctx);
    }
    const char *p[] = {"inject_corrupt=melt"};
    worker_ctx_t *ctx = s_ctx(p, 1, true);
    burn_config_t cfg;
    assert_int_equal(burn_config_parse(ctx, &cfg), -EINVAL);
    worker_ctx_destroy(&ctx);
}

static void test_statistics(void **state)
{
    (void)state;
    double v[] = {5, 1, 4, 2, 3};
    assert_true(burn_median(v, 5) == 3);
    assert_true(burn_median(v, 4) == 3); /* 5 1 4 2 -> (2 + 4) / 2 */
    assert_true(burn_min(v, 5) == 1);
    assert_true(isnan(burn_median(v, 0)));
    assert_true(isnan(burn_min(v, 0)));
    assert_true(v[0] == 5); /* untouched */
}

/* ---- judging
 * ------------------------------------------------------------------------------------- */

static burn_config_t s_cfg(void)
{
    burn_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.dtype = BURN_BF16;
    cfg.duration_ms = 60000;
    cfg.interval_ms = 5000;
    cfg.matrix = 8192;
    cfg.mem_fraction = 0.9;
    cfg.min_relative = 0.9;
    cfg.devices = "all";
    return cfg;
}

/* n GPUs of one model, each burning at the given TFLOPS for 4 intervals. */
static burn_gpu_t *s_gpus(size_t n, const double *tflops)
{
    burn_gpu_t *g = burn_fixture_gpus(n, "NVIDIA H200", 690, 990, 12000, 4);
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++)
            burn_gpu_add_interval(&g[i], tflops[i] + k);
    return g;
}

static double s_metric(const fb_result_t *r, const char *name)
{
    const fb_metric_t *m = fb_result_metric(r, name);
    if (!m)
        fail_msg("no metric %s", name);
    return m->value;
}

/* The one finding of r (there must be exactly one) on part, containing needle. */
static void s_one_finding(const fb_result_t *r, const char *part, const char *needle)
{
    assert_int_equal(r->n_findings, 1);
    assert_string_equal(r->findings[0].part, part);
    assert_string_equal(r->findings[0].kind, "gpu");
    if (!strstr(r->findings[0].what, needle))
        fail_msg("finding '%s' lacks '%s'", r->findings[0].what, needle);
}

static void test_judge_pass(void **state)
{
    (void)state;
    double tf[] = {680, 684};
    burn_gpu_t *g = s_gpus(2, tf);
    burn_config_t cfg = s_cfg();
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_PASS);
    assert_int_equal(r->n_findings, 0);
    assert_null(r->error);
    assert_true(s_metric(r, "gpu0.tflops_median") == 681.5);
    assert_true(s_metric(r, "gpu0.tflops_min") == 680);
    assert_true(s_metric(r, "gpu1.blas_peak_tflops") == 690);
    assert_true(fabs(s_metric(r, "gpu1.burn_vs_peak") - 685.5 / 690) < 1e-12);
    assert_true(s_metric(r, "gpu1.errors") == 0);
    assert_true(s_metric(r, "gpu1.nan_inf") == 0);
    assert_true(s_metric(r, "gpu1.kat_errors") == 0);
    assert_true(s_metric(r, "tflops_median") == (681.5 + 685.5) / 2);
    assert_true(s_metric(r, "gpus") == 2);
    char *line = burn_summary(&cfg, g, 2, FB_VERDICT_PASS);
    assert_non_null(strstr(line, "gpuburn pass bf16 8192: gpu0 NVIDIA H200 681.5 TFLOPS median"));
    assert_non_null(strstr(line, "; gpu1 NVIDIA H200 685.5 TFLOPS median (min 684.0, peak 690.0"));
    free(line);
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 2);
}

static void test_judge_miscompare(void **state)
{
    (void)state;
    double tf[] = {680, 684};
    burn_gpu_t *g = s_gpus(2, tf);
    g[1].repeat.mismatches = 1;
    g[1].repeat.first_mismatch = burn_key(17, 5);
    snprintf(g[1].repeat_detail, sizeof g[1].repeat_detail,
             "C[17] row 5 col 0 = 1.5, C[0] has 0.75");
    g[1].injected = BURN_INJECT_FLIP;
    burn_config_t cfg = s_cfg();
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_FAIL);
    s_one_finding(r, "node1/gpu1",
                  "gpu1 (NVIDIA H200, PCI 0000:1a:00.0): 1 result element(s) "
                  "differ between repeats");
    assert_non_null(strstr(r->findings[0].what, "C[17] row 5 col 0 = 1.5, C[0] has 0.75"));
    assert_true(s_metric(r, "gpu1.errors") == 1);
    assert_true(s_metric(r, "gpu0.errors") == 0);
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 2);
}

static void test_judge_nan(void **state)
{
    (void)state;
    double tf[] = {680};
    burn_gpu_t *g = s_gpus(1, tf);
    g[0].repeat.nonfinite = 1;
    burn_config_t cfg = s_cfg();
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "", &cfg, g, 1, 0), FB_VERDICT_FAIL);
    s_one_finding(r, "localhost/gpu0", "1 NaN/Inf result element(s)");
    assert_true(s_metric(r, "gpu0.nan_inf") == 1);
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 1);
}

static void test_judge_kat(void **state)
{
    (void)state;
    double tf[] = {680, 681, 682};
    burn_gpu_t *g = s_gpus(3, tf);
    g[2].kat.mismatches = 8000;
    g[2].injected = BURN_INJECT_SYSTEMATIC;
    burn_config_t cfg = s_cfg();
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "n7", &cfg, g, 3, 0), FB_VERDICT_FAIL);
    s_one_finding(r, "n7/gpu2", "8000 element(s) of the known-answer bf16 GEMM");
    assert_true(s_metric(r, "gpu2.kat_errors") == 8000);
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 3);
}

static void test_judge_floors(void **state)
{
    (void)state;
    double tf[] = {680, 682, 500, 684};
    burn_gpu_t *g = s_gpus(4, tf);
    burn_config_t cfg = s_cfg();
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 4, 0), FB_VERDICT_FAIL);
    s_one_finding(r, "node1/gpu2", "of the median");
    assert_non_null(strstr(r->findings[0].what, "the 4 NVIDIA H200 GPUs"));
    fb_result_destroy(&r);

    /* Relative floor off, absolute floor on. */
    cfg.min_relative = 0;
    cfg.has_min_tflops = true;
    cfg.min_tflops = 600;
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 4, 0), FB_VERDICT_FAIL);
    s_one_finding(r, "node1/gpu2", "below the floor min_tflops=600");
    fb_result_destroy(&r);

    /* A different model is not compared with the H200s. */
    cfg.has_min_tflops = false;
    cfg.min_relative = 0.9;
    snprintf(g[2].name, sizeof g[2].name, "NVIDIA H100 PCIe");
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 4, 0), FB_VERDICT_PASS);
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 4);
}

static void test_judge_states(void **state)
{
    (void)state;
    double tf[] = {680, 681};
    burn_config_t cfg = s_cfg();

    /* fp8 before sm_89 on every GPU: skipped with the reason, and a metric per GPU. */
    burn_gpu_t *g = s_gpus(2, tf);
    cfg.dtype = BURN_FP8;
    for (int i = 0; i < 2; i++) {
        g[i].state = BURN_GPU_UNSUPPORTED;
        snprintf(g[i].error, sizeof g[i].error, "fp8 needs compute capability 8.9");
    }
    fb_result_t *r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_SKIPPED);
    assert_non_null(strstr(r->error, "dtype fp8 does not run on NVIDIA H200"));
    assert_true(s_metric(r, "gpu1.dtype_unsupported") == 1);
    fb_result_destroy(&r);

    /* A GPU that could not be set up: error (an allocation failure is a result). */
    cfg.dtype = BURN_BF16;
    g[0].state = BURN_GPU_OK;
    g[1].state = BURN_GPU_SETUP_ERROR;
    snprintf(g[1].error, sizeof g[1].error, "allocating operand A (128.0 MiB): out of memory");
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_ERROR);
    assert_non_null(strstr(r->error, "gpu1 (NVIDIA H200, PCI 0000:1a:00.0): allocating operand A"));
    assert_int_equal(r->n_findings, 0);
    fb_result_destroy(&r);

    /* A GPU that failed under load is the suspect. */
    g[1].state = BURN_GPU_RUN_ERROR;
    snprintf(g[1].error, sizeof g[1].error, "running GEMMs: unspecified launch failure");
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_FAIL);
    s_one_finding(r, "node1/gpu1", "failed under bf16 GEMM load: running GEMMs");
    fb_result_destroy(&r);

    /* New GPU faults from telemetry fail the task (telemetry names the GPU). */
    g[1].state = BURN_GPU_OK;
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 2), FB_VERDICT_FAIL);
    assert_true(s_metric(r, "telemetry_faults") == 2);
    fb_result_destroy(&r);

    /* An injection nobody noticed is an error, never a pass. */
    g[0].injected = BURN_INJECT_NAN;
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, g, 2, 0), FB_VERDICT_ERROR);
    assert_non_null(strstr(r->error, "inject_corrupt=nan was not detected"));
    fb_result_destroy(&r);
    burn_fixture_free_gpus(g, 2);

    /* No GPU at all. */
    r = fb_result_new();
    assert_int_equal(burn_judge(r, "node1", &cfg, NULL, 0, 0), FB_VERDICT_SKIPPED);
    fb_result_destroy(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_decoders),
        cmocka_unit_test(test_generators),
        cmocka_unit_test(test_kat_range),
        cmocka_unit_test(test_check_elem),
        cmocka_unit_test(test_clean_results_pass),
        cmocka_unit_test(test_kat_exact_at_8192),
        cmocka_unit_test(test_flip_detected),
        cmocka_unit_test(test_flip_beyond_tolerance),
        cmocka_unit_test(test_nan_detected),
        cmocka_unit_test(test_systematic_detected),
        cmocka_unit_test(test_kat_off_by_one),
        cmocka_unit_test(test_counters_add),
        cmocka_unit_test(test_config_defaults),
        cmocka_unit_test(test_config_values),
        cmocka_unit_test(test_config_bad),
        cmocka_unit_test(test_config_inject),
        cmocka_unit_test(test_statistics),
        cmocka_unit_test(test_judge_pass),
        cmocka_unit_test(test_judge_miscompare),
        cmocka_unit_test(test_judge_nan),
        cmocka_unit_test(test_judge_kat),
        cmocka_unit_test(test_judge_floors),
        cmocka_unit_test(test_judge_states),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
