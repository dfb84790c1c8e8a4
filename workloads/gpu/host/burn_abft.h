/* SPDX-License-Identifier: Apache-2.0 */
/* Algorithm-based fault tolerance (ABFT) for gpuburn: every burn GEMM's result is checked through
 * checksums before its buffer is written again, written once for the host and the GPU.
 *
 * For C = A^T B (the TN layout of burn_verify.h: C(i, j) = sum_l A(i, l) B(j, l), A(i, l) stored at
 * a[i*k + l], B(j, l) at b[j*k + l], C(i, j) at c[i + j*n]) the sum of C over any set of rows R is
 * known from the operands alone: sum_{i in R} C(i, j) = sum_l (sum_{i in R} A(i, l)) B(j, l), and
 * over a set of columns Q: sum_{j in Q} C(i, j) = sum_l A(i, l) (sum_{j in Q} B(j, l)). With R = all
 * rows these are the classic column sums e^T C = (e^T A^T) B and row sums C e = A^T (B e). Here the
 * rows and columns are cut into blocks of `block` (256 on the GPU): every column gets one checksum
 * per row block and every row one per column block. The references are computed once per operand
 * set (the operands are fixed for a run), in fp64, so each GEMM costs one read of C. Blocks instead
 * of whole columns make the check sqrt(n / block) times more sensitive: what a checksum cannot
 * resolve is the rounding of the elements it adds, which grows with the square root of their
 * number. A single wrong element shows in exactly one column-block sum and one row-block sum,
 * which together give its row and column.
 *
 * The tolerance (burn_abft_tol) is a rounding-error model of the GEMM for the dtype, k and the
 * operands' RMS: |sum - ref| > rtol |ref| + atol is a mismatch. atol is BURN_ABFT_SIGMAS standard
 * deviations of the rounding noise, bounded from the unit roundoffs: the result format's rounding
 * of each element (at most u_out |C|, zero mean for round-to-nearest), the operand conversion
 * inside the matrix unit (tf32: the low 13 bits of each fp32 operand dropped), the accumulator's
 * rounding (k steps of u_acc relative to the element, or fp8's short accumulator between
 * promotions), and the check's own arithmetic. Independent bounded errors obey Hoeffding's
 * inequality, so the chance that a correct checksum exceeds atol is at most 2 exp(-Z^2/2) (Z = 8:
 * 3e-14 per checksum). rtol bounds what is not zero-mean: the shrink toward zero of operands or
 * partial sums that a matrix unit truncates, which scales every element and so the sum itself.
 * A single-element error larger than twice the tolerance is therefore always found (the clean
 * residual is within one tolerance); in practice the clean residual stays far below it, and the
 * kernels report the largest ratio seen so the headroom is measured. */
#ifndef FB_BURN_ABFT_H
#define FB_BURN_ABFT_H

#include "burn_verify.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Rows (columns) added into one checksum on the GPU. */
#define BURN_ABFT_BLOCK 256u
/* Standard deviations of the rounding noise a checksum may differ by. */
#define BURN_ABFT_SIGMAS 8.0
/* GEMMs with checksums off that one interval records in detail (the rest are counted). */
#define BURN_ABFT_LOG 64u

/* ---- the tolerance --------------------------------------------------------------------------- */

/* How a dtype's GEMM rounds, as burn_abft_tol models it (every field a unit roundoff 2^-p or a
 * count). */
typedef struct {
    double u_out;   /* the result format: bf16 2^-8, fp16 2^-11, fp32 2^-24, fp64 2^-53 */
    double u_op;    /* operand conversion inside the matrix unit: tf32 2^-10 (truncation), else 0 */
    double u_acc;   /* the accumulator: fp32 2^-24, fp64 2^-53; fp8 2^-13 between promotions */
    double steps;   /* accumulator roundings per element, relative to the element's magnitude */
    double bias;    /* bound on the relative shrink toward zero (truncating units), for rtol */
    double u_check; /* the check's own sums (fp32 down columns; fp64 for fp64 results) */
} burn_abft_model_t;

/* The model for dtype dt and inner dimension k. */
burn_abft_model_t burn_abft_model(burn_dtype_t dt, uint64_t k);

/* Tolerance of one checksum that adds `block` result elements, for inner dimension k and
 * operands whose elements have RMS rms_a and rms_b. */
burn_tol_t burn_abft_tol(burn_dtype_t dt, uint64_t k, uint64_t block, double rms_a, double rms_b);

/* RMS of a block checksum's reference for independent random operands, sqrt(block k) rms_a rms_b:
 * the typical |ref| that rtol multiplies. */
double burn_abft_sum_rms(uint64_t k, uint64_t block, double rms_a, double rms_b);

/* The smallest single-element error that is always found: twice the tolerance at a typical
 * |ref|. */
double burn_abft_threshold(burn_tol_t tol, double sum_rms);

/* ---- the comparison, host and device --------------------------------------------------------- */

/* Blocks of `block` rows in n rows. */
static inline BURN_HD uint64_t burn_abft_blocks(uint64_t n, uint64_t block)
{
    return (n + block - 1) / block;
}

/* |got - ref| as a fraction of the tolerance; a mismatch when above 1. A non-finite sum is a
 * mismatch of ratio 1e30 (NaN/Inf are counted by their own check as well). */
static inline BURN_HD double burn_abft_ratio(double got, double ref, burn_tol_t tol)
{
    if (!burn_finite(got))
        return 1e30;
    return burn_abs(got - ref) / (tol.rtol * burn_abs(ref) + tol.atol);
}

/* Key of a checksum: block * n + index (column-block sums: row block and column; row-block sums:
 * column block and row). */
static inline BURN_HD uint64_t burn_abft_key(uint64_t blk, uint64_t index, uint64_t n)
{
    return blk * n + index;
}

/* ---- single bit flips (the test-only injection) ---------------------------------------------- */

/* The raw bits of element i of an array of storage st. */
static inline BURN_HD uint64_t burn_bits_load(const void *p, size_t i, burn_storage_t st)
{
    switch (st) {
    case BURN_ST_BF16:
    case BURN_ST_FP16:
        return ((const uint16_t *)p)[i];
    case BURN_ST_FP32:
        return ((const uint32_t *)p)[i];
    case BURN_ST_FP64:
        return ((const uint64_t *)p)[i];
    default:
        return ((const uint8_t *)p)[i];
    }
}

static inline BURN_HD void burn_bits_store(void *p, size_t i, burn_storage_t st, uint64_t v)
{
    switch (st) {
    case BURN_ST_BF16:
    case BURN_ST_FP16:
        ((uint16_t *)p)[i] = (uint16_t)v;
        break;
    case BURN_ST_FP32:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    case BURN_ST_FP64:
        ((uint64_t *)p)[i] = v;
        break;
    default:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    }
}

/* The lowest bit of element i (storage st) whose flip changes its value by at least lo and at
 * most hi and leaves it finite; -1 when there is none. */
static inline BURN_HD int burn_abft_flip_bit(const void *p, size_t i, burn_storage_t st, double lo,
                                             double hi)
{
    uint64_t bits = burn_bits_load(p, i, st);
    double v = burn_load(&bits, 0, st);
    int width = st == BURN_ST_FP64 ? 64 : st == BURN_ST_FP32 ? 32 : st == BURN_ST_E4M3 ? 8 : 16;
    for (int b = 0; b < width; b++) {
        uint64_t flipped = bits ^ (1ull << b);
        double f = burn_load(&flipped, 0, st);
        double d = burn_abs(f - v);
        if (burn_finite(f) && d >= lo && d <= hi)
            return b;
    }
    return -1;
}

/* ---- host twins of the kernels --------------------------------------------------------------- */

/* Block sums of an operand X stored as rows of k (X(r, l) at x[r*k + l]), n rows:
 * out[blk*k + l] = sum over the rows r of block blk of X(r, l), in fp64. */
void burn_abft_block_sums_host(const void *x, burn_storage_t st, size_t n, size_t k, size_t block,
                               double *out);

/* References from block sums S (nblk x k) and the other operand Y (n rows of k):
 * ref[blk*n + q] = sum_l S[blk*k + l] Y(q, l), in fp64. Column-block references are
 * refs(block_sums(A), B); row-block references refs(block_sums(B), A). */
void burn_abft_refs_host(const double *sums, size_t nblk, const void *y, burn_storage_t st,
                         size_t n, size_t k, double *ref);

/* What checking one GEMM found. */
typedef struct {
    uint64_t col_off, row_off; /* column-block and row-block sums beyond tolerance */
    uint64_t col_key, row_key; /* lowest key of each (burn_abft_key), or BURN_NO_KEY */
    double max_ratio;          /* largest burn_abft_ratio of any sum */
} burn_abft_result_t;

void burn_abft_result_clear(burn_abft_result_t *r);

/* The host twin of the check kernel: the block sums of C (m x n, storage st, column-major) in
 * fp64 against colref (blocks(m) x n: refs(block_sums(A), B)) and rowref (blocks(n) x m:
 * refs(block_sums(B), A)); keys are burn_abft_key(blk, j, n) and burn_abft_key(blk, i, m). The
 * GPU's results are square (m = n); the tests also use a few rows and columns with a long k. */
void burn_abft_check_host(const void *c, burn_storage_t st, size_t m, size_t n, size_t block,
                          const double *colref, const double *rowref, burn_tol_t tol,
                          burn_abft_result_t *out);

/* ---- what the GPU reports -------------------------------------------------------------------- */

/* One GEMM whose checksums were off. */
typedef struct {
    uint64_t gemm;             /* its index among the burn GEMMs of this GPU, from 0 */
    uint32_t buffer;           /* the result buffer it wrote */
    uint32_t col_off, row_off; /* sums beyond tolerance */
    uint32_t pad;
    uint64_t col_key, row_key; /* lowest of each, or BURN_NO_KEY */
    double col_got, col_ref;   /* the sum and reference at col_key */
    double row_got, row_ref;   /* at row_key */
} burn_abft_bad_t;

/* The check kernels' counters on the GPU, read and reset once per interval. The first block
 * holds one kernel's scratch, which that kernel's last block folds in and resets. */
typedef struct {
    /* one check kernel */
    uint32_t blocks_done, col_off, row_off, pad0;
    uint64_t col_key, row_key;
    /* the interval */
    uint64_t checked;        /* check kernels that completed */
    uint64_t sums_off;       /* checksums beyond tolerance */
    uint64_t gemms_bad;      /* GEMMs with at least one */
    uint32_t max_ratio_bits; /* the largest ratio, as the bits of a non-negative float */
    uint32_t n_bad;          /* GEMMs recorded below (may exceed BURN_ABFT_LOG: counted only) */
    burn_abft_bad_t bad[BURN_ABFT_LOG];
} burn_abft_state_t;

/* One test-only corruption: bit `bit` of one element of a GEMM's result flipped between the GEMM
 * and its check. */
typedef struct {
    uint64_t gemm;
    uint32_t buffer;
    int32_t bit; /* -1: not done (no element found, or the GEMM was never reached) */
    uint64_t row, col;
    double before, after, bound; /* the element before and after, and the tolerance there */
} burn_abft_injection_t;

/* "GEMM 1234 (C[17]): 1 column-block and 1 row-block sum off, at row 1573 col 4101; column 4101
 * rows 1536-1791 sums to 512.3, expected 480.1; row 1573 cols 4096-4351 sums to ..., expected ..."
 * into buf (n x n results, block rows per sum); returns buf. */
const char *burn_abft_describe(const burn_abft_bad_t *bad, uint64_t n, uint64_t block, char *buf,
                               size_t len);

#ifdef __cplusplus
}
#endif

#endif
