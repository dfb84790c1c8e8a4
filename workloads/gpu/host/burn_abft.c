/* SPDX-License-Identifier: Apache-2.0 */
/* The host half of gpuburn's checksums (burn_abft.h): the rounding model and tolerance of a block
 * checksum per dtype, host twins of the reference and check kernels that the unit tests run on
 * emulated GEMMs, and the text of a finding. */
#include "burn_abft.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

burn_abft_model_t burn_abft_model(burn_dtype_t dt, uint64_t k)
{
    const double u32 = ldexp(1.0, -24), u64 = ldexp(1.0, -53);
    const double kk = (double)(k ? k : 1);
    burn_abft_model_t m = {ldexp(1.0, -burn_storage_precision(burn_out_storage(dt))), 0, u32, kk,
                           0, u32};
    switch (dt) {
    case BURN_BF16:
    case BURN_FP16:
        /* Tensor cores: exact products, fp32 partial sums that may be truncated once per k-group
         * (8 or 16 products): at most a 2 ulp shrink per group. */
        m.bias = 2 * u32 * kk / 8;
        break;
    case BURN_TF32:
        /* Each fp32 operand loses its low 13 bits (truncation: up to 2^-10 relative, toward zero),
         * so the products shrink by up to 2 x 2^-10 on top of the fp32 accumulation. */
        m.u_op = ldexp(1.0, -10);
        m.bias = 2 * m.u_op + 2 * u32 * kk / 8;
        break;
    case BURN_FP8:
        /* Hopper's fp8 tensor cores accumulate with about 14 significant bits; cuBLASLt (fast
         * accumulation off) promotes the partial sums to fp32 every few k-groups. Counted as 4
         * truncating 14-bit steps relative to the element, plus k fp32 steps: steps u_acc^2 =
         * 4 (2^-13)^2 + k (2^-24)^2. */
        m.u_acc = ldexp(1.0, -13);
        m.steps = 4 + kk * ldexp(1.0, -22);
        m.bias = 4 * 2 * m.u_acc + 2 * u32 * kk / 32;
        break;
    case BURN_FP64:
        m.u_acc = u64;
        m.u_check = u64;
        break;
    default: /* fp32: FMA with round-to-nearest, no bias */
        break;
    }
    return m;
}

double burn_abft_sum_rms(uint64_t k, uint64_t block, double rms_a, double rms_b)
{
    return sqrt((double)block * (double)k) * rms_a * rms_b;
}

burn_tol_t burn_abft_tol(burn_dtype_t dt, uint64_t k, uint64_t block, double rms_a, double rms_b)
{
    burn_abft_model_t m = burn_abft_model(dt, k);
    double energy = burn_abft_sum_rms(k, block, rms_a, rms_b);
    /* Relative to the block's energy sqrt(sum C^2): the result's rounding, the operand conversion
     * of both operands, the accumulator, the check's own sums (up to 256 roundings along a row,
     * fewer down a column), and the fp64 reference (k roundings). */
    const double u64 = ldexp(1.0, -53);
    double var = m.u_out * m.u_out + 2 * m.u_op * m.u_op + m.steps * m.u_acc * m.u_acc +
                 256 * m.u_check * m.u_check + (double)k * u64 * u64;
    /* The references are stored as fp32 on the GPU for every dtype but fp64. */
    double u_ref = dt == BURN_FP64 ? u64 : ldexp(1.0, -24);
    burn_tol_t tol = {m.bias + u_ref, BURN_ABFT_SIGMAS * energy * sqrt(var)};
    return tol;
}

double burn_abft_threshold(burn_tol_t tol, double sum_rms)
{
    return 2 * (tol.rtol * sum_rms + tol.atol);
}

void burn_abft_block_sums_host(const void *x, burn_storage_t st, size_t n, size_t k, size_t block,
                               double *out)
{
    size_t nblk = burn_abft_blocks(n, block);
    memset(out, 0, nblk * k * sizeof *out);
    for (size_t r = 0; r < n; r++)
        for (size_t l = 0; l < k; l++)
            out[(r / block) * k + l] += burn_load(x, r * k + l, st);
}

void burn_abft_refs_host(const double *sums, size_t nblk, const void *y, burn_storage_t st,
                         size_t n, size_t k, double *ref)
{
    for (size_t blk = 0; blk < nblk; blk++)
        for (size_t q = 0; q < n; q++) {
            double s = 0;
            for (size_t l = 0; l < k; l++)
                s += sums[blk * k + l] * burn_load(y, q * k + l, st);
            ref[blk * n + q] = s;
        }
}

void burn_abft_result_clear(burn_abft_result_t *r)
{
    memset(r, 0, sizeof *r);
    r->col_key = r->row_key = BURN_NO_KEY;
}

/* One checksum against its reference into r. */
static void s_compare(double got, double ref, burn_tol_t tol, uint64_t key, uint64_t *off,
                      uint64_t *first, burn_abft_result_t *r)
{
    double ratio = burn_abft_ratio(got, ref, tol);
    if (ratio > r->max_ratio)
        r->max_ratio = ratio;
    if (ratio > 1) {
        (*off)++;
        if (key < *first)
            *first = key;
    }
}

/* The block sums of one direction: for each block blk of `along` lines and each line x of
 * `across`, the sum of elements y * along_step + x * across_step for y in the block, against
 * ref[burn_abft_key(blk, x, across)]. Columns and rows are the two directions of a column-major
 * m x n matrix. */
static void s_check_sums(const void *c, burn_storage_t st, size_t along, size_t across,
                         size_t along_step, size_t across_step, size_t block, const double *ref,
                         burn_tol_t tol, uint64_t *off, uint64_t *first, burn_abft_result_t *out)
{
    for (size_t blk = 0; blk < burn_abft_blocks(along, block); blk++)
        for (size_t x = 0; x < across; x++) {
            double sum = 0;
            for (size_t y = blk * block; y < along && y < (blk + 1) * block; y++)
                sum += burn_load(c, y * along_step + x * across_step, st);
            uint64_t key = burn_abft_key(blk, x, across);
            s_compare(sum, ref[key], tol, key, off, first, out);
        }
}

void burn_abft_check_host(const void *c, burn_storage_t st, size_t m, size_t n, size_t block,
                          const double *colref, const double *rowref, burn_tol_t tol,
                          burn_abft_result_t *out)
{
    /* column j over a row block */
    s_check_sums(c, st, m, n, 1, m, block, colref, tol, &out->col_off, &out->col_key, out);
    /* row i over a column block */
    s_check_sums(c, st, n, m, m, 1, block, rowref, tol, &out->row_off, &out->row_key, out);
}

/* Last row (column) of block blk of n. */
static uint64_t s_block_end(uint64_t blk, uint64_t block, uint64_t n)
{
    uint64_t end = (blk + 1) * block;
    return (end < n ? end : n) - 1;
}

const char *burn_abft_describe(const burn_abft_bad_t *bad, uint64_t n, uint64_t block, char *buf,
                               size_t len)
{
    if (!n || !block) {
        snprintf(buf, len, "GEMM %" PRIu64, bad->gemm);
        return buf;
    }
    int used = snprintf(buf, len, "GEMM %" PRIu64 " (C[%" PRIu32 "]): %" PRIu32
                        " column-block and %" PRIu32 " row-block sum(s) off",
                        bad->gemm, bad->buffer, bad->col_off, bad->row_off);
    bool col = bad->col_key != BURN_NO_KEY, row = bad->row_key != BURN_NO_KEY;
    uint64_t col_j = col ? bad->col_key % n : 0, col_blk = col ? bad->col_key / n : 0;
    uint64_t row_i = row ? bad->row_key % n : 0, row_blk = row ? bad->row_key / n : 0;
    if (col && row && used > 0 && (size_t)used < len)
        used += snprintf(buf + used, len - (size_t)used,
                         ", first at row %" PRIu64 " col %" PRIu64, row_i, col_j);
    if (col && used > 0 && (size_t)used < len)
        used += snprintf(buf + used, len - (size_t)used,
                         "; col %" PRIu64 " rows %" PRIu64 "-%" PRIu64 " sum to %.9g, expected %.9g",
                         col_j, col_blk * block, s_block_end(col_blk, block, n), bad->col_got,
                         bad->col_ref);
    if (row && used > 0 && (size_t)used < len)
        snprintf(buf + used, len - (size_t)used,
                 "; row %" PRIu64 " cols %" PRIu64 "-%" PRIu64 " sum to %.9g, expected %.9g", row_i,
                 row_blk * block, s_block_end(row_blk, block, n), bad->row_got, bad->row_ref);
    return buf;
}
