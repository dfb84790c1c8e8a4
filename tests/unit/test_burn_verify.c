/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for gpuburn's host checks (workloads/gpu/host/burn_verify.c): the element formats the
 * kernels decode, the known-answer operands being exact, and the three checks run on host arrays
 * through the same per-element check and tolerances the kernels use — a flipped result element, a
 * NaN, and a systematic error that repeats identically are each caught, by the check meant for
 * it. Parameters and judging: test_burn_judge.c. */
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

/* ---- formats --------------------------------------------------------------------------------- */

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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
