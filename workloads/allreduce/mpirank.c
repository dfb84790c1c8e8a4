/* SPDX-License-Identifier: Apache-2.0 */
/* fleetburn-mpirank: one rank of the host (CPU) all-reduce, started by mpirun from the worker of
 * a group's rank 0 (launch_mpirun.c). It is what the `allreduce` workload measures on nodes
 * without GPUs, so that the stage works on CPU-only fleets and in CI.
 *
 *   mpirun ... fleetburn-mpirank min_bytes=B max_bytes=B factor=F dtype=T op=O iters=N warmup=W
 *              inject_corrupt=0|1
 *
 * Every rank fills its send buffer with ar_input(rank, element, iteration), poisons its receive
 * buffer (so a result that was never written cannot pass as the previous one), and checks every
 * element of every iteration against the exact expected value. Each iteration is timed alone
 * between a barrier and the end of MPI_Allreduce. The sweep is ar_rank_sweep's, with this file's
 * run_size step; after each size, rank 0 gathers the ranks' times and errors and prints the ar.h
 * lines on stdout (ar_mpi.h, shared with fleetburn-mpirank-cuda). Exit status: 0 after a full
 * sweep (wrong elements are reported, not an exit status), 1 when a rank could not run it, 2 for
 * bad arguments. */
#include "ar.h"
#include "ar_mpi.h"
#include "ar_rank.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
/* Sanitizer builds: Open MPI keeps allocations until exit by design; leak reports from it would
 * fail every run. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "detect_leaks=0";
}
#endif

/* What this rank saw at one size, iteration by iteration. */
typedef struct {
    double sum_s, min_s, max_s;
    uint64_t errors, index;
    double expected, got;
    uint32_t iter;
} rank_stats_t;

typedef struct {
    ar_mpi_t mpi; /* rank, nranks, opts */
    size_t elem;
    void *send, *recv;
    uint64_t raw[4]; /* the expected values of ar_expect_table, as dtype bit patterns */
    MPI_Datatype type;
    MPI_Op op;
    bool user_op;
} rank_t;

/* ---- 16-bit floating types: MPI has none, so a user reduction converts through float ---- */

static float s_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while (!(mant & 0x400u)) {
                mant <<= 1;
                exp--;
            }
            bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
        }
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Round to nearest even, like the hardware conversions. */
static uint16_t s_float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u, fexp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
    if (fexp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    int exp = (int)fexp - 127 + 15;
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        unsigned shift = (unsigned)(14 - exp);
        uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1u)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)exp << 10) | (mant >> 13), rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
        half++; /* may carry into the exponent, which is the right result */
    return (uint16_t)(sign | half);
}

static float s_bf16_to_float(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint16_t s_float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu))
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

static ar_op_t s_user_op_kind;
static bool s_user_op_bf16;

static void s_reduce16(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++) {
        float x = s_user_op_bf16 ? s_bf16_to_float(a[i]) : s_half_to_float(a[i]);
        float y = s_user_op_bf16 ? s_bf16_to_float(b[i]) : s_half_to_float(b[i]);
        float r = s_user_op_kind == AR_OP_SUM    ? x + y
                  : s_user_op_kind == AR_OP_PROD ? x * y
                  : s_user_op_kind == AR_OP_MAX  ? (x > y ? x : y)
                                                 : (x < y ? x : y);
        b[i] = s_user_op_bf16 ? s_float_to_bf16(r) : s_float_to_half(r);
    }
}

/* ---- element access by dtype ---- */

static uint64_t s_raw(ar_dtype_t dt, double v)
{
    uint64_t raw = 0;
    switch (dt) {
    case AR_DT_FLOAT: {
        float f = (float)v;
        memcpy(&raw, &f, 4);
        break;
    }
    case AR_DT_DOUBLE:
        memcpy(&raw, &v, 8);
        break;
    case AR_DT_INT32: {
        int32_t k = (int32_t)v;
        memcpy(&raw, &k, 4);
        break;
    }
    case AR_DT_HALF:
        raw = s_float_to_half((float)v);
        break;
    case AR_DT_BF16:
        raw = s_float_to_bf16((float)v);
        break;
    }
    return raw;
}

static double s_value(ar_dtype_t dt, uint64_t raw)
{
    switch (dt) {
    case AR_DT_FLOAT: {
        float f;
        uint32_t r = (uint32_t)raw;
        memcpy(&f, &r, 4);
        return f;
    }
    case AR_DT_DOUBLE: {
        double d;
        memcpy(&d, &raw, 8);
        return d;
    }
    case AR_DT_INT32: {
        int32_t k;
        uint32_t r = (uint32_t)raw;
        memcpy(&k, &r, 4);
        return k;
    }
    case AR_DT_HALF:
        return s_half_to_float((uint16_t)raw);
    case AR_DT_BF16:
        return s_bf16_to_float((uint16_t)raw);
    }
    return 0;
}

static uint64_t s_load(const void *buf, size_t elem, uint64_t i)
{
    uint64_t raw = 0;
    memcpy(&raw, (const char *)buf + i * elem, elem); /* little-endian hosts */
    return raw;
}

static void s_fill(rank_t *rk, uint64_t count, unsigned it)
{
    uint64_t raw[5];
    for (int v = 1; v <= 4; v++)
        raw[v] = s_raw(rk->mpi.opts.dtype, v);
    char *p = rk->send;
    for (uint64_t i = 0; i < count; i++)
        memcpy(p + i * rk->elem, &raw[ar_input(rk->mpi.opts.op, (unsigned)rk->mpi.rank, i, it)],
               rk->elem);
}

/* Checks the result of iteration it; the first wrong element of the size goes into st. */
static void s_check(rank_t *rk, uint64_t count, unsigned it, rank_stats_t *st)
{
    for (uint64_t i = 0; i < count; i++) {
        unsigned k = ar_expect_index(rk->mpi.opts.op, i, it);
        uint64_t got = s_load(rk->recv, rk->elem, i);
        if (got == rk->raw[k])
            continue;
        if (st->errors++ == 0) {
            st->index = i;
            st->iter = it;
            st->expected = s_value(rk->mpi.opts.dtype, rk->raw[k]);
            st->got = s_value(rk->mpi.opts.dtype, got);
        }
    }
}

/* ---- the sweep ---- */

static void s_iteration(rank_t *rk, uint64_t count, unsigned it, bool timed, bool inject,
                        rank_stats_t *st)
{
    s_fill(rk, count, it);
    memset(rk->recv, 0xff, count * rk->elem); /* NaN in every float type, -1 in int32 */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(rk->send, rk->recv, (int)count, rk->type, rk->op, MPI_COMM_WORLD);
    double dt = MPI_Wtime() - t0;
    if (inject) { /* test-only: one wrong element proves that the check sees it */
        uint64_t i = count / 2, raw = s_load(rk->recv, rk->elem, i) ^ 1u;
        memcpy((char *)rk->recv + i * rk->elem, &raw, rk->elem);
    }
    s_check(rk, count, it, st);
    if (timed) {
        st->sum_s += dt;
        st->min_s = dt < st->min_s ? dt : st->min_s;
        st->max_s = dt > st->max_s ? dt : st->max_s;
    }
}

/* ar_run_size_fn: the warm-ups and timed iterations of one size, as this rank saw them. */
static int s_run_size(void *self, uint64_t bytes, bool inject, ar_size_result_t *r,
                      ar_rank_error_t *bad)
{
    rank_t *rk = self;
    const ar_opts_t *o = &rk->mpi.opts;
    uint64_t count = bytes / rk->elem;
    rank_stats_t st = {.min_s = 1e30};
    for (unsigned it = 0; it < o->warmup + o->iters; it++)
        s_iteration(rk, count, it, it >= o->warmup, inject && it == o->warmup, &st);
    *r = (ar_size_result_t){.bytes = bytes,
                            .count = count,
                            .avg_us = st.sum_s / o->iters * 1e6,
                            .min_us = st.min_s * 1e6,
                            .max_us = st.max_s * 1e6,
                            .errors = st.errors,
                            .iters = o->iters,
                            .first_bad_rank = st.errors ? rk->mpi.rank : -1};
    *bad = (ar_rank_error_t){
        bytes, (unsigned)rk->mpi.rank, st.errors, st.index, st.iter, st.expected, st.got};
    return 0;
}

/* ---- setup ---- */

static void s_types(rank_t *rk)
{
    static const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
    rk->elem = ar_dtype_size(rk->mpi.opts.dtype);
    rk->op = ops[rk->mpi.opts.op];
    switch (rk->mpi.opts.dtype) {
    case AR_DT_FLOAT:
        rk->type = MPI_FLOAT;
        break;
    case AR_DT_DOUBLE:
        rk->type = MPI_DOUBLE;
        break;
    case AR_DT_INT32:
        rk->type = MPI_INT32_T;
        break;
    case AR_DT_HALF:
    case AR_DT_BF16:
        rk->type = MPI_UINT16_T;
        s_user_op_kind = rk->mpi.opts.op;
        s_user_op_bf16 = rk->mpi.opts.dtype == AR_DT_BF16;
        MPI_Op_create(s_reduce16, 1, &rk->op);
        rk->user_op = true;
        break;
    }
    double table[4];
    ar_expect_table(rk->mpi.opts.op, (unsigned)rk->mpi.nranks, table);
    for (int k = 0; k < 4; k++)
        rk->raw[k] = s_raw(rk->mpi.opts.dtype, table[k]);
}

/* Every rank allocates; all agree whether all could, so none waits in a collective forever. */
static int s_buffers(rank_t *rk)
{
    size_t bytes = (size_t)rk->mpi.opts.max_bytes;
    rk->send = malloc(bytes);
    rk->recv = malloc(bytes);
    int ok = rk->send && rk->recv, all_ok = 0;
    if (!ok)
        fprintf(stderr, "fleetburn-mpirank: rank %d cannot allocate 2 x %" PRIu64 " bytes\n",
                rk->mpi.rank, rk->mpi.opts.max_bytes);
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all_ok ? 0 : -ENOMEM;
}

/* In sanitizer builds: no leak check at a rank's exit. The MPI library keeps its allocations
 * until the process ends and unloads the plugins that made them, so the check would report only
 * the library, with unreadable stacks, and fail every run. Memory errors are still caught. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return 1;
}

int main(int argc, char **argv)
{
    rank_t rk = {0};
    char err[256];
    int rc = ar_mpi_start(&argc, &argv, "fleetburn-mpirank", &rk.mpi, err, sizeof err);
    if (rc)
        return rc;
    const ar_opts_t *o = &rk.mpi.opts;
    if (o->max_bytes / ar_dtype_size(o->dtype) > INT_MAX) {
        if (rk.mpi.rank == 0)
            fprintf(stderr,
                    "fleetburn-mpirank: max_bytes %" PRIu64 " is more than MPI's %d "
                    "elements of %s\n",
                    o->max_bytes, INT_MAX, ar_dtype_name(o->dtype));
        MPI_Finalize();
        return 2;
    }
    uint64_t *sizes = NULL;
    size_t n = ar_sweep(o, &sizes);
    s_types(&rk);
    char me[AR_MPI_NAME_MAX] = "";
    ar_rank_node((unsigned)rk.mpi.rank, me, sizeof me);
    ar_mpi_print_names(&rk.mpi, me);
    rc = s_buffers(&rk);
    if (rc == 0) {
        ar_rank_sweep_t sweep = {sizes,      n,   (unsigned)rk.mpi.rank, o->inject_corrupt,
                                 s_run_size, &rk, ar_mpi_size_done,      &rk.mpi};
        rc = ar_rank_sweep(&sweep, err, sizeof err);
        if (rc)
            fprintf(stderr, "fleetburn-mpirank: rank %d: %s\n", rk.mpi.rank, err);
    }
    free(rk.send);
    free(rk.recv);
    free(sizes);
    if (rk.user_op)
        MPI_Op_free(&rk.op);
    MPI_Finalize();
    return rc ? 1 : 0;
}
