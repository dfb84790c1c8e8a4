/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for gpuburn's checksums (workloads/gpu/host/burn_abft.c): the references are the exact
 * block sums of the product; GEMMs computed on the host with each dtype's rounding emulated as a
 * GPU does it at its worst (round-to-nearest results; tf32 operands and tensor-core partial sums
 * truncated toward zero; fp8's 14-bit accumulator between promotions) never raise a false alarm
 * over many seeds, also at the production k of 8192; a single flipped element whose change is
 * above the bound is always found, in exactly one column-block and one row-block sum, which name
 * its row and column; and the tolerance orders the dtypes by their precision. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "common/util.h"
#include "gpu/host/burn_abft.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a host GEMM with the dtype's rounding ---------------------------------------------------- */

/* x rounded to p significant bits: to nearest (ties to even) or toward zero. */
static double s_round(double x, int p, bool toward_zero)
{
    if (x == 0 || !isfinite(x))
        return x;
    int e;
    double s = ldexp(frexp(x, &e), p);
    s = toward_zero ? trunc(s) : nearbyint(s);
    return ldexp(s, e - p);
}

typedef struct {
    burn_dtype_t dt;
    size_t m, n, k; /* C is m x n, A is m rows of k, B is n rows of k */
    burn_storage_t in, out;
    void *a, *b, *c;
    double *ad, *bd; /* the operands as the multipliers see them (tf32: truncated) */
    double rms_a, rms_b;
} gemm_t;

/* Products summed exactly (double) in groups of `group`, each group added to an accumulator of
 * acc_bits significant bits rounded toward zero, which every `promote` groups is added to an
 * fp32 sum rounded to nearest (promote 0: never). */
static double s_tensor_dot(const gemm_t *g, size_t i, size_t j, size_t group, int acc_bits,
                           size_t promote)
{
    double acc = 0, total = 0;
    size_t groups = 0;
    for (size_t l0 = 0; l0 < g->k; l0 += group) {
        double sum = 0;
        for (size_t l = l0; l < l0 + group && l < g->k; l++)
            sum += g->ad[i * g->k + l] * g->bd[j * g->k + l];
        acc = s_round(acc + sum, acc_bits, true);
        if (promote && ++groups % promote == 0) {
            total = s_round(total + acc, 24, false);
            acc = 0;
        }
    }
    return promote ? s_round(total + acc, 24, false) : acc;
}

static double s_element(const gemm_t *g, size_t i, size_t j)
{
    switch (g->dt) {
    case BURN_BF16:
    case BURN_FP16:
        return s_tensor_dot(g, i, j, 16, 24, 0);
    case BURN_TF32:
        return s_tensor_dot(g, i, j, 8, 24, 0);
    case BURN_FP8:
        return s_tensor_dot(g, i, j, 32, 14, 4);
    case BURN_FP32: {
        float acc = 0;
        for (size_t l = 0; l < g->k; l++)
            acc = fmaf((float)g->ad[i * g->k + l], (float)g->bd[j * g->k + l], acc);
        return acc;
    }
    default: {
        double acc = 0;
        for (size_t l = 0; l < g->k; l++)
            acc = fma(g->ad[i * g->k + l], g->bd[j * g->k + l], acc);
        return acc;
    }
    }
}

/* The operand as doubles (tf32: truncated to 11 significant bits, as the unit reads it); returns
 * the RMS of the stored values. */
static double s_operand(const void *x, burn_storage_t st, size_t count, burn_dtype_t dt,
                        double **out)
{
    double sq = 0;
    *out = xmalloc(count * sizeof **out);
    for (size_t i = 0; i < count; i++) {
        double v = burn_load(x, i, st);
        sq += v * v;
        (*out)[i] = dt == BURN_TF32 ? s_round(v, 11, true) : v;
    }
    return sqrt(sq / (double)count);
}

/* Random operands (as gpuburn fills them) and their product with the dtype's rounding. */
static void s_gemm(gemm_t *g, burn_dtype_t dt, size_t m, size_t n, size_t k, uint64_t seed)
{
    memset(g, 0, sizeof *g);
    g->dt = dt;
    g->m = m, g->n = n, g->k = k;
    g->in = burn_in_storage(dt);
    g->out = burn_out_storage(dt);
    g->a = xmalloc(m * k * burn_storage_size(g->in));
    g->b = xmalloc(n * k * burn_storage_size(g->in));
    g->c = xmalloc(m * n * burn_storage_size(g->out));
    for (size_t x = 0; x < m * k; x++)
        burn_store(g->a, x, g->in, burn_random_value(seed * 2, x));
    for (size_t x = 0; x < n * k; x++)
        burn_store(g->b, x, g->in, burn_random_value(seed * 2 + 1, x));
    g->rms_a = s_operand(g->a, g->in, m * k, dt, &g->ad);
    g->rms_b = s_operand(g->b, g->in, n * k, dt, &g->bd);
    int p = burn_storage_precision(g->out);
    for (size_t j = 0; j < n; j++)
        for (size_t i = 0; i < m; i++) /* the result format, rounded to nearest as GPUs do */
            burn_store(g->c, i + j * m, g->out, s_round(s_element(g, i, j), p, false));
}

static void s_gemm_free(gemm_t *g)
{
    free(g->a);
    free(g->b);
    free(g->c);
    free(g->ad);
    free(g->bd);
}

typedef struct {
    size_t block;
    double *colref, *rowref;
    burn_tol_t tol;
} refs_t;

static void s_refs(refs_t *r, const gemm_t *g, size_t block)
{
    size_t bm = burn_abft_blocks(g->m, block), bn = burn_abft_blocks(g->n, block);
    double *sa = xmalloc(bm * g->k * sizeof *sa), *sb = xmalloc(bn * g->k * sizeof *sb);
    burn_abft_block_sums_host(g->a, g->in, g->m, g->k, block, sa);
    burn_abft_block_sums_host(g->b, g->in, g->n, g->k, block, sb);
    r->block = block;
    r->colref = xmalloc(bm * g->n * sizeof *r->colref);
    r->rowref = xmalloc(bn * g->m * sizeof *r->rowref);
    burn_abft_refs_host(sa, bm, g->b, g->in, g->n, g->k, r->colref);
    burn_abft_refs_host(sb, bn, g->a, g->in, g->m, g->k, r->rowref);
    r->tol = burn_abft_tol(g->dt, g->k, block, g->rms_a, g->rms_b);
    free(sa);
    free(sb);
}

static void s_refs_free(refs_t *r)
{
    free(r->colref);
    free(r->rowref);
}

static burn_abft_result_t s_check(const gemm_t *g, const refs_t *r)
{
    burn_abft_result_t res;
    burn_abft_result_clear(&res);
    burn_abft_check_host(g->c, g->out, g->m, g->n, r->block, r->colref, r->rowref, r->tol, &res);
    return res;
}

/* ---- references ---------------------------------------------------------------------------- */

/* ref[blk * n_y + y] must be, for every block of `block` rows of x (n_x rows of k) and every row y
 * of ys (n_y rows of k), the sum over the block's rows of their dot products with y, added in
 * order: the column references when x is A, the row references when x is B. */
static void s_expect_refs(const double *ref, size_t n_blocks, const double *xs, size_t n_x,
                          const double *ys, size_t n_y, size_t k, size_t block)
{
    for (size_t blk = 0; blk < n_blocks; blk++)
        for (size_t y = 0; y < n_y; y++) {
            double want = 0;
            for (size_t x = blk * block; x < n_x && x < (blk + 1) * block; x++)
                for (size_t l = 0; l < k; l++)
                    want += xs[x * k + l] * ys[y * k + l];
            assert_true(ref[blk * n_y + y] == want);
        }
}

/* With integer operands every sum is exact: the references equal the block sums of the exact
 * product, computed the plain way. */
static void test_refs_exact(void **state)
{
    (void)state;
    const size_t m = 40, n = 24, k = 16, block = 16;
    int8_t a[40 * 16], b[24 * 16];
    double av[40 * 16], bv[24 * 16];
    for (size_t x = 0; x < m * k; x++)
        av[x] = a[x] = (int8_t)burn_kat_value(3, x, 7);
    for (size_t x = 0; x < n * k; x++)
        bv[x] = b[x] = (int8_t)burn_kat_value(4, x, 7);
    (void)a;
    (void)b;
    double sa[3 * 16], sb[2 * 16], colref[3 * 24], rowref[2 * 40];
    burn_abft_block_sums_host(av, BURN_ST_FP64, m, k, block, sa);
    burn_abft_block_sums_host(bv, BURN_ST_FP64, n, k, block, sb);
    burn_abft_refs_host(sa, 3, bv, BURN_ST_FP64, n, k, colref);
    burn_abft_refs_host(sb, 2, av, BURN_ST_FP64, m, k, rowref);
    s_expect_refs(colref, 3, av, m, bv, n, k, block);
    s_expect_refs(rowref, 2, bv, n, av, m, k, block);
    /* An exact product checks clean with a zero tolerance, and every element off by one is seen. */
    double c[40 * 24];
    for (size_t j = 0; j < n; j++)
        for (size_t i = 0; i < m; i++) {
            double s = 0;
            for (size_t l = 0; l < k; l++)
                s += av[i * k + l] * bv[j * k + l];
            c[i + j * m] = s;
        }
    burn_tol_t zero = {0, 0.5};
    burn_abft_result_t r;
    burn_abft_result_clear(&r);
    burn_abft_check_host(c, BURN_ST_FP64, m, n, block, colref, rowref, zero, &r);
    assert_int_equal(r.col_off + r.row_off, 0);
    c[37 + 21 * m] += 1;
    burn_abft_result_clear(&r);
    burn_abft_check_host(c, BURN_ST_FP64, m, n, block, colref, rowref, zero, &r);
    assert_int_equal(r.col_off, 1);
    assert_int_equal(r.row_off, 1);
    assert_int_equal(r.col_key, burn_abft_key(37 / block, 21, n));
    assert_int_equal(r.row_key, burn_abft_key(21 / block, 37, m));
}

/* ---- the tolerance -------------------------------------------------------------------------- */

static void test_tolerance(void **state)
{
    (void)state;
    const double r = 1 / sqrt(3.0); /* RMS of uniform [-1, 1) */
    double elem = sqrt(8192.0) * r * r, sum = burn_abft_sum_rms(8192, 256, r, r);
    assert_true(fabs(sum - sqrt(256.0 * 8192.0) / 3) < 1e-9);
    /* bf16 at the default size: 8 sigma of the bf16 rounding of 256 elements, about half an
     * element's RMS; what is always found is below 1.1 element RMS. */
    burn_tol_t bf16 = burn_abft_tol(BURN_BF16, 8192, 256, r, r);
    assert_true(fabs(bf16.atol - 8 * sum * ldexp(1, -8)) < 0.01 * bf16.atol);
    assert_true(bf16.rtol < 1e-3);
    assert_true(burn_abft_threshold(bf16, sum) < 1.1 * elem);
    /* Ordered by precision: fp64 < fp32 < fp16 < tf32 (operands truncated inside the unit, against
     * references from the full fp32 values) < bf16 <= fp8. */
    double t[BURN_N_DTYPES];
    for (int dt = 0; dt < BURN_N_DTYPES; dt++)
        t[dt] = burn_abft_threshold(burn_abft_tol((burn_dtype_t)dt, 8192, 256, r, r), sum);
    assert_true(t[BURN_FP64] < 1e-6 * elem);
    assert_true(t[BURN_FP64] < t[BURN_FP32] && t[BURN_FP32] < t[BURN_FP16]);
    assert_true(t[BURN_FP16] < t[BURN_TF32] && t[BURN_TF32] < t[BURN_BF16]);
    assert_true(t[BURN_BF16] <= t[BURN_FP8]);
    assert_true(t[BURN_FP32] < 0.01 * elem);
    /* It grows with k, the block and the operands' magnitude, and scales with them. */
    for (int dt = 0; dt < BURN_N_DTYPES; dt++) {
        burn_tol_t a = burn_abft_tol((burn_dtype_t)dt, 4096, 256, r, r);
        burn_tol_t b = burn_abft_tol((burn_dtype_t)dt, 8192, 256, r, r);
        burn_tol_t c = burn_abft_tol((burn_dtype_t)dt, 8192, 64, r, r);
        burn_tol_t d = burn_abft_tol((burn_dtype_t)dt, 8192, 256, 2 * r, r);
        assert_true(a.atol < b.atol && c.atol < b.atol);
        assert_true(fabs(d.atol - 2 * b.atol) < 1e-9 * b.atol && d.rtol == b.rtol);
    }
    /* The ratio: 1 at the tolerance, NaN/Inf sums always off. */
    burn_tol_t tol = {0.01, 1};
    assert_true(fabs(burn_abft_ratio(102, 100, tol) - 1) < 1e-12);
    assert_true(burn_abft_ratio(101, 100, tol) < 1);
    assert_true(burn_abft_ratio(NAN, 100, tol) > 1);
    assert_true(burn_abft_ratio(-INFINITY, 100, tol) > 1);
}

/* ---- no false alarms ------------------------------------------------------------------------ */

/* The largest ratio over clean GEMMs m x n x k with seeds 1..seeds, checked by blocks of
 * `block`: none of them may be flagged. */
static double s_worst_clean_ratio(burn_dtype_t dt, size_t m, size_t n, size_t k, size_t block,
                                  uint64_t seeds)
{
    double worst = 0;
    for (uint64_t seed = 1; seed <= seeds; seed++) {
        gemm_t g;
        refs_t r;
        s_gemm(&g, dt, m, n, k, seed);
        s_refs(&r, &g, block);
        burn_abft_result_t res = s_check(&g, &r);
        assert_int_equal(res.col_off + res.row_off, 0);
        if (res.max_ratio > worst)
            worst = res.max_ratio;
        s_refs_free(&r);
        s_gemm_free(&g);
    }
    return worst;
}

/* For every dtype, clean GEMMs of m x n x k in blocks of `block`: the largest ratio (printed with
 * `what`, the shape in words) stays inside. */
static void s_clean_every_dtype(size_t m, size_t n, size_t k, size_t block, uint64_t gemms,
                                const char *what)
{
    for (int dt = 0; dt < BURN_N_DTYPES; dt++) {
        double worst = s_worst_clean_ratio((burn_dtype_t)dt, m, n, k, block, gemms);
        printf("%s: largest clean ratio %.3f %s\n", burn_dtype_name((burn_dtype_t)dt), worst, what);
        assert_true(worst < 0.6);
    }
}

/* Many random operand sets per dtype, small blocks; the largest ratio stays far below 1. */
static void test_clean_no_false_alarm(void **state)
{
    (void)state;
    s_clean_every_dtype(96, 96, 96, 32, 24, "over 24 GEMMs 96^3, block 32");
}

/* The production k (8192) and block (256) on a few rows and columns: the long accumulation of
 * each element (truncated tensor-core partial sums, fp8's short accumulator) stays inside. */
static void test_clean_long_k(void **state)
{
    (void)state;
    s_clean_every_dtype(256, 24, 8192, 256, 2, "at k 8192, block 256");
}

/* ---- single-element errors ------------------------------------------------------------------ */

/* The tolerance of the two sums element (i, j) is in. */
static double s_elem_tol(const gemm_t *g, const refs_t *r, size_t i, size_t j)
{
    double cref = fabs(r->colref[burn_abft_key(i / r->block, j, g->n)]);
    double rref = fabs(r->rowref[burn_abft_key(j / r->block, i, g->m)]);
    return r->tol.rtol * (cref > rref ? cref : rref) + r->tol.atol;
}

static void s_expect_found_at(const gemm_t *g, const refs_t *r, size_t i, size_t j)
{
    burn_abft_result_t res = s_check(g, r);
    assert_int_equal(res.col_off, 1);
    assert_int_equal(res.row_off, 1);
    assert_int_equal(res.col_key, burn_abft_key(i / r->block, j, g->n));
    assert_int_equal(res.row_key, burn_abft_key(j / r->block, i, g->m));
}

/* A single bit flip whose change is 2 to 8 tolerances, in random elements of random GEMMs of
 * every dtype: found every time, and located. */
static void test_flip_found(void **state)
{
    (void)state;
    for (int dt = 0; dt < BURN_N_DTYPES; dt++) {
        unsigned tried = 0;
        for (uint64_t seed = 1; seed <= 6; seed++) {
            gemm_t g;
            refs_t r;
            s_gemm(&g, (burn_dtype_t)dt, 128, 128, 128, seed + 100);
            s_refs(&r, &g, 32);
            for (unsigned t = 0; t < 8; t++) {
                uint64_t h = fb_mix64(seed * 1000 + t);
                size_t i = h % g.m, j = (h >> 20) % g.n, e = i + j * g.m;
                double tol = s_elem_tol(&g, &r, i, j);
                int bit = burn_abft_flip_bit(g.c, e, g.out, 2 * tol, 8 * tol);
                if (bit < 0)
                    continue;
                uint64_t bits = burn_bits_load(g.c, e, g.out);
                burn_bits_store(g.c, e, g.out, bits ^ (1ull << bit));
                s_expect_found_at(&g, &r, i, j);
                burn_bits_store(g.c, e, g.out, bits);
                tried++;
            }
            assert_int_equal(s_check(&g, &r).col_off, 0);
            s_refs_free(&r);
            s_gemm_free(&g);
        }
        assert_true(tried >= 24); /* most elements have such a bit */
    }
}

/* Errors of any size above the bound (2 tolerances), up to a million tolerances and of either
 * sign, added to one element: always found. */
static void test_any_error_above_bound(void **state)
{
    (void)state;
    const double factors[] = {2.05, 3, 10, 1e3, 1e6};
    for (int dt = 0; dt < BURN_N_DTYPES; dt++) {
        gemm_t g;
        refs_t r;
        s_gemm(&g, (burn_dtype_t)dt, 96, 96, 96, 7);
        s_refs(&r, &g, 32);
        for (size_t f = 0; f < sizeof factors / sizeof factors[0]; f++)
            for (int sign = -1; sign <= 1; sign += 2) {
                uint64_t h = fb_mix64(f * 7 + (uint64_t)(sign + 1) + (uint64_t)dt * 100);
                size_t i = h % g.m, j = (h >> 20) % g.n, e = i + j * g.m;
                double before = burn_load(g.c, e, g.out), tol = s_elem_tol(&g, &r, i, j);
                uint64_t bits = burn_bits_load(g.c, e, g.out);
                burn_store(g.c, e, g.out, before + sign * factors[f] * tol * 1.02);
                double change = fabs(burn_load(g.c, e, g.out) - before);
                if (change >= 2 * tol) /* the result format can hold it (fp16 ends at 65504) */
                    s_expect_found_at(&g, &r, i, j);
                burn_bits_store(g.c, e, g.out, bits);
            }
        s_refs_free(&r);
        s_gemm_free(&g);
    }
}

/* ---- helpers ---------------------------------------------------------------------------------- */

static void test_flip_bit(void **state)
{
    (void)state;
    uint16_t v = burn_f32_to_bf16(30.0f); /* 1.875 x 2^4 */
    /* mantissa bit 6 is worth 8; the exponent's bit 0 halves it (15), bit 1 quarters it (22.5) */
    assert_int_equal(burn_abft_flip_bit(&v, 0, BURN_ST_BF16, 8, 8), 6);
    assert_int_equal(burn_abft_flip_bit(&v, 0, BURN_ST_BF16, 14, 16), 7);
    assert_int_equal(burn_abft_flip_bit(&v, 0, BURN_ST_BF16, 20, 25), 8);
    assert_int_equal(burn_abft_flip_bit(&v, 0, BURN_ST_BF16, 59.9, 60.1), 15); /* the sign */
    assert_int_equal(burn_abft_flip_bit(&v, 0, BURN_ST_BF16, 1e40, 1e50), -1);
    double d = 1.0;
    int bit = burn_abft_flip_bit(&d, 0, BURN_ST_FP64, 1e-9, 2e-9);
    assert_true(bit >= 0 && bit < 52);
    assert_true(ldexp(1, bit - 52) >= 1e-9 && ldexp(1, bit - 52) <= 2e-9);
    float f = 2.0f;
    burn_bits_store(&f, 0, BURN_ST_FP32, burn_bits_load(&f, 0, BURN_ST_FP32) ^ (1u << 22));
    assert_true(f == 3.0f);
}

static void test_describe(void **state)
{
    (void)state;
    burn_abft_bad_t bad = {.gemm = 1234,
                           .buffer = 17,
                           .col_off = 1,
                           .row_off = 1,
                           .col_key = burn_abft_key(6, 4101, 8192),
                           .row_key = burn_abft_key(16, 1573, 8192),
                           .col_got = 512.25,
                           .col_ref = 480.125,
                           .row_got = -3.5,
                           .row_ref = 28.75};
    char buf[400];
    burn_abft_describe(&bad, 8192, 256, buf, sizeof buf);
    assert_string_equal(buf, "GEMM 1234 (C[17]): 1 column-block and 1 row-block sum(s) off, first "
                             "at row 1573 col 4101; col 4101 rows 1536-1791 sum to 512.25, "
                             "expected 480.125; row 1573 cols 4096-4351 sum to -3.5, expected "
                             "28.75");
    bad.row_key = BURN_NO_KEY;
    bad.row_off = 0;
    bad.col_key = burn_abft_key(2, 93, 1000);
    burn_abft_describe(&bad, 1000, 256, buf, sizeof buf);
    assert_non_null(strstr(buf, "1 column-block and 0 row-block sum(s) off; col 93 rows 512-767"));
    bad.col_key = burn_abft_key(3, 1, 1000);
    burn_abft_describe(&bad, 1000, 256, buf, sizeof buf);
    assert_non_null(strstr(buf, "col 1 rows 768-999 sum"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refs_exact),
        cmocka_unit_test(test_tolerance),
        cmocka_unit_test(test_clean_no_false_alarm),
        cmocka_unit_test(test_clean_long_k),
        cmocka_unit_test(test_flip_found),
        cmocka_unit_test(test_any_error_above_bound),
        cmocka_unit_test(test_flip_bit),
        cmocka_unit_test(test_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
