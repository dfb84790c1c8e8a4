/* SPDX-License-Identifier: Apache-2.0 */
/* abft.h: the kernels of gpuburn's per-GEMM checksums and their orchestration.
 *
 * References (once per run): block sums of the operands' rows in fp64 (s_block_sums, which also
 * sums the squares for the operands' RMS), then colref = block_sums(A) B and rowref =
 * block_sums(B) A by a small tiled fp64 product (s_refs), stored as fp32 (fp64 for fp64 results).
 *
 * The check (every burn GEMM): s_check reads C once, in 16-byte streaming loads (so C does not
 * push the GEMM's operands out of L2). Each group of 32 threads (a warp; half a wavefront on AMD)
 * takes whole 256 x 256 tiles: a lane owns 8 rows of every column of the tile, so the tile's 256
 * row sums (over its 256 columns) build up in registers, and the column sums (over its 256 rows)
 * come from a butterfly exchange between the lanes a chunk of columns at a time. Every sum is
 * compared with its reference at once. Sums are fp32 for 16-bit results and fp64 row sums for
 * fp32 and fp64 results, as the tolerance assumes. Mismatches become counters and the lowest
 * keys; the kernel's last block (a fence and a counter) reads the two mismatching sums again,
 * appends one record per bad GEMM, and resets the per-kernel scratch, so no second launch is
 * needed. Each block of 32 warps asks for more than half of an SM's shared memory, so a check of
 * N blocks holds exactly N SMs and never shares one with a GEMM block.
 *
 * One file of about 800 lines: the reference and check kernels share the tile shape and the
 * sums' types (s_shape) with the host code that sizes their launches and reads their records,
 * and the host side is already plain C where it can be (host/burn_abft.c: tolerances, judging). */
#include "abft.h"

extern "C" {
#include "common/util.h"
}

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <type_traits>

#define ABFT_B BURN_ABFT_BLOCK
#define ABFT_GROUP 32 /* threads that share a column segment */
#define ABFT_RING 8   /* check-done events the GEMM stream can wait on */

struct abft {
    burn_dtype_t dt;
    burn_storage_t out;
    uint64_t n, nblk;
    int sms;
    gpuStream_t gemm_stream, check_stream; /* check_stream: reserved mode only */
    void *colref, *rowref;                 /* nblk x n, fp32 or fp64 */
    burn_abft_state_t *d_state, *h_state;
    burn_abft_injection_t *d_inj, *h_inj;
    size_t n_inj; /* injections queued this interval */
    burn_tol_t tol;
    double rms_a, rms_b;
    size_t smem, bytes;
    unsigned reserved;
    gpuEvent_t written, done[ABFT_RING], t0, t1;
    size_t ring;
    struct {
        uint64_t gemm, seed;
    } armed[BURN_ABFT_MAX_INJECTIONS * 4];
    size_t n_armed;
};

/* ---- per-storage compile-time shapes ------------------------------------------------------------ */

/* One warp checks a whole 256 x 256 tile: each lane owns 8 rows of every column (one to four
 * 16-byte loads), the warp walks the tile's columns a chunk at a time (8 loads per lane in flight),
 * so the row sums stay in registers and only the column sums need the lanes together. */
template <int ST> struct s_shape {
    static constexpr int es = ST == BURN_ST_FP64 ? 8 : ST == BURN_ST_FP32 ? 4 : 2;
    static constexpr int per_vec = 16 / es;                    /* elements in a 16-byte load */
    static constexpr int vecs = ABFT_B * es / 16 / ABFT_GROUP; /* loads per lane per column */
    static constexpr int rows = vecs * per_vec;                /* rows per lane: 8 */
    static constexpr int chunk = 8 / vecs;                     /* columns per step */
    static constexpr int G = ABFT_GROUP / chunk;               /* steps per compare of sums */
    static constexpr int threads = 1024;
    /* Row sums run over 256 columns: fp64 for 4- and 8-byte results; column partials over 8. */
    typedef typename std::conditional<ST == BURN_ST_FP64 || ST == BURN_ST_FP32, double, float>::type
        acc;
    typedef typename std::conditional<ST == BURN_ST_FP64, double, float>::type part;
    typedef typename std::conditional<ST == BURN_ST_FP64, double, float>::type ref;
    /* fp16 is summed as its bits moved into fp32 position, 2^-112 of its value (s_half). */
    static constexpr double scale = ST == BURN_ST_FP16 ? 5.192296858534828e33 : 1.0;
};

static size_t s_ref_size(burn_storage_t out)
{
    return out == BURN_ST_FP64 ? sizeof(double) : sizeof(float);
}

/* ---- device helpers ----------------------------------------------------------------------------- */

__device__ __forceinline__ float s_group_sum(float v)
{
    for (int m = ABFT_GROUP / 2; m > 0; m /= 2)
        v += gpu_shfl_xor(v, m, ABFT_GROUP);
    return v;
}

__device__ __forceinline__ double s_group_sum(double v)
{
    for (int m = ABFT_GROUP / 2; m > 0; m /= 2)
        v += gpu_shfl_xor(v, m, ABFT_GROUP);
    return v;
}

__device__ __forceinline__ float s_group_max(float v)
{
    for (int m = ABFT_GROUP / 2; m > 0; m /= 2)
        v = fmaxf(v, gpu_shfl_xor(v, m, ABFT_GROUP));
    return v;
}

/* fp16 to fp32 without a conversion instruction: sign, exponent and mantissa moved into fp32
 * position give 2^-112 of the value, subnormals included; the sums are scaled back (s_shape::scale).
 * Inf/NaN become large finite values, which no checksum accepts. */
__device__ __forceinline__ float s_half(uint32_t h)
{
    return __uint_as_float((h & 0x8000u) << 16 | (h & 0x7fffu) << 13);
}

template <int ST>
__device__ __forceinline__ void s_unpack(uint4 v, typename s_shape<ST>::part *x)
{
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    if (ST == BURN_ST_BF16) {
        for (int i = 0; i < 4; i++) {
            x[2 * i] = __uint_as_float(w[i] << 16);
            x[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        }
    } else if (ST == BURN_ST_FP16) {
        for (int i = 0; i < 4; i++) {
            x[2 * i] = s_half(w[i] & 0xffffu);
            x[2 * i + 1] = s_half(w[i] >> 16);
        }
    } else if (ST == BURN_ST_FP32) {
        for (int i = 0; i < 4; i++)
            x[i] = __uint_as_float(w[i]);
    } else {
        x[0] = __hiloint2double((int)w[1], (int)w[0]);
        x[1] = __hiloint2double((int)w[3], (int)w[2]);
    }
}

/* Asks L2 for the line at p ahead of its load (nothing on AMD): a warp has only a chunk of loads
 * in flight in registers, so the next ones should find their data in L2. */
__device__ __forceinline__ void s_prefetch(const void *p)
{
#if !FB_GPU_HIP
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#else
    (void)p;
#endif
}

/* Sums C partial values over the 32 lanes in log2(C) halving exchanges and 5 - log2(C) plain
 * ones (C + 4 shuffles instead of 5 C); *col gets which of the C sums this lane holds (every
 * lane with the same lane / (32 / C) holds the same one). */
template <int C, typename T> __device__ __forceinline__ T s_butterfly(T (&v)[C], int lane, int *col)
{
    int c = 0;
#pragma unroll
    for (int half = C / 2, mask = 16; half >= 1; half /= 2, mask /= 2) {
        const bool upper = lane & mask;
#pragma unroll
        for (int i = 0; i < half; i++) {
            T keep = upper ? v[i + half] : v[i];
            T send = upper ? v[i] : v[i + half];
            v[i] = keep + gpu_shfl_xor(send, mask, ABFT_GROUP);
        }
        c += upper ? half : 0;
    }
    T s = v[0];
#pragma unroll
    for (int mask = 16 / C; mask >= 1; mask /= 2)
        s += gpu_shfl_xor(s, mask, ABFT_GROUP);
    *col = c;
    return s;
}

/* One checksum against its reference; counts a mismatch into *off and the lowest key into
 * *first. Returns |got - ref| / tolerance (fast fp32 division: it only reports headroom). */
__device__ __forceinline__ float s_compare(double got, double ref, burn_tol_t tol, uint64_t key,
                                           uint32_t *off, uint64_t *first)
{
    const double d = burn_abs(got - ref), lim = tol.rtol * burn_abs(ref) + tol.atol;
    if (!(d <= lim)) { /* NaN too */
        atomicAdd(off, 1u);
        atomicMin((unsigned long long *)first, (unsigned long long)key);
        if (!burn_finite(d))
            return 1e30f;
    }
    return __fdividef((float)d, (float)lim);
}

/* The sum over the block's threads of v (thread 0 gets it). */
template <int THREADS> __device__ double s_block_sum(double v)
{
    __shared__ double part[THREADS / ABFT_GROUP];
    v = s_group_sum(v);
    if (threadIdx.x % ABFT_GROUP == 0)
        part[threadIdx.x / ABFT_GROUP] = v;
    __syncthreads();
    double total = 0;
    if (threadIdx.x == 0)
        for (int g = 0; g < THREADS / ABFT_GROUP; g++)
            total += part[g];
    __syncthreads();
    return total;
}

/* ---- references ----------------------------------------------------------------------------------- */

/* sums[blk*k + l] = sum of X(r, l) over the rows r of block blk; *sumsq += sum of X^2. */
template <int ST>
__global__ void s_block_sums(const void *x, uint64_t n, double *sums, double *sumsq)
{
    const uint64_t k = n, nblk = burn_abft_blocks(n, ABFT_B);
    double sq = 0;
    for (uint64_t idx = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; idx < nblk * k;
         idx += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t blk = idx / k, l = idx % k;
        double s = 0;
        for (uint64_t r = blk * ABFT_B; r < n && r < (blk + 1) * ABFT_B; r++) {
            double v = burn_load(x, r * k + l, (burn_storage_t)ST);
            s += v;
            sq += v * v;
        }
        sums[idx] = s;
    }
    double total = s_block_sum<256>(sq);
    if (threadIdx.x == 0)
        atomicAdd(sumsq, total);
}

/* ref[blk*n + q] = sum_l sums[blk*k + l] Y(q, l): 32 q by 32 blocks per thread block of 32 x 8,
 * k in steps of 32 through shared memory, fp64. */
template <int ST, typename RT>
__global__ void s_refs(const double *sums, uint64_t nblk, const void *y, uint64_t n, RT *ref)
{
    __shared__ double ss[32][33], ys[32][33];
    const uint64_t k = n;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const uint64_t q0 = blockIdx.x * 32ull, b0 = blockIdx.y * 32ull;
    double acc[4] = {0, 0, 0, 0};
    for (uint64_t l0 = 0; l0 < k; l0 += 32) {
        for (int r = ty; r < 32; r += 8) {
            uint64_t blk = b0 + r, q = q0 + r, l = l0 + tx;
            ss[r][tx] = blk < nblk && l < k ? sums[blk * k + l] : 0;
            ys[r][tx] = q < n && l < k ? burn_load(y, q * k + l, (burn_storage_t)ST) : 0;
        }
        __syncthreads();
        for (int l = 0; l < 32; l++)
            for (int r = 0; r < 4; r++)
                acc[r] = fma(ss[ty + 8 * r][l], ys[tx][l], acc[r]);
        __syncthreads();
    }
    for (int r = 0; r < 4; r++) {
        uint64_t blk = b0 + ty + 8 * r, q = q0 + tx;
        if (blk < nblk && q < n)
            ref[blk * n + q] = (RT)acc[r];
    }
}

/* ---- the check -------------------------------------------------------------------------------- */

__global__ void s_reset(burn_abft_state_t *st)
{
    uint32_t *w = (uint32_t *)st;
    for (size_t i = 0; i < sizeof *st / sizeof *w; i++)
        w[i] = 0;
    st->col_key = st->row_key = BURN_NO_KEY;
}

/* The last block of a check: re-reads the first mismatching sums, records the GEMM, folds the
 * scratch into the interval's counters and resets it. */
template <int ST>
__device__ void s_fold(const void *c, uint64_t n, const typename s_shape<ST>::ref *colref,
                       const typename s_shape<ST>::ref *rowref, uint64_t gemm, uint32_t buffer,
                       burn_abft_state_t *state)
{
    constexpr int T = s_shape<ST>::threads;
    const int tid = threadIdx.x;
    volatile burn_abft_state_t *vs = state;
    const uint32_t col_off = vs->col_off, row_off = vs->row_off;
    const uint64_t col_key = vs->col_key, row_key = vs->row_key;
    if (col_off || row_off) {
        double col_got = 0, row_got = 0;
        if (col_key != BURN_NO_KEY) { /* column col_key % n, rows of block col_key / n */
            uint64_t j = col_key % n, i = col_key / n * ABFT_B + tid;
            col_got = s_block_sum<T>(tid < ABFT_B && i < n ? burn_load(c, i + j * n,
                                                                        (burn_storage_t)ST)
                                                           : 0.0);
        }
        if (row_key != BURN_NO_KEY) { /* row row_key % n, columns of block row_key / n */
            uint64_t i = row_key % n, j = row_key / n * ABFT_B + tid;
            row_got = s_block_sum<T>(tid < ABFT_B && j < n ? burn_load(c, i + j * n,
                                                                        (burn_storage_t)ST)
                                                           : 0.0);
        }
        if (tid == 0) {
            if (state->n_bad < BURN_ABFT_LOG) {
                burn_abft_bad_t *b = &state->bad[state->n_bad];
                b->gemm = gemm;
                b->buffer = buffer;
                b->col_off = col_off;
                b->row_off = row_off;
                b->pad = 0;
                b->col_key = col_key;
                b->row_key = row_key;
                b->col_got = col_got;
                b->col_ref = col_key != BURN_NO_KEY ? (double)colref[col_key] : 0;
                b->row_got = row_got;
                b->row_ref = row_key != BURN_NO_KEY ? (double)rowref[row_key] : 0;
            }
            state->n_bad++;
            state->gemms_bad++;
            state->sums_off += col_off + row_off;
        }
    }
    if (tid == 0) {
        state->checked++;
        state->blocks_done = 0;
        state->col_off = state->row_off = 0;
        state->col_key = state->row_key = BURN_NO_KEY;
    }
}

template <int ST>
__global__ void __launch_bounds__(s_shape<ST>::threads, 1)
    s_check(const void *__restrict__ c, uint64_t n, const typename s_shape<ST>::ref *colref,
            const typename s_shape<ST>::ref *rowref, burn_tol_t tol, uint64_t gemm,
            uint32_t buffer, burn_abft_state_t *state)
{
    typedef s_shape<ST> S;
    typedef typename S::acc A;
    typedef typename S::part P;
    const int lane = threadIdx.x % ABFT_GROUP;
    const uint64_t warps = (uint64_t)gridDim.x * (S::threads / ABFT_GROUP);
    const uint64_t nblk = burn_abft_blocks(n, ABFT_B), tiles = nblk * nblk;
    const char *cb = (const char *)c;
    float worst = 0;
    for (uint64_t t = blockIdx.x * (uint64_t)(S::threads / ABFT_GROUP) + threadIdx.x / ABFT_GROUP;
         t < tiles; t += warps) {
        const uint64_t rb = t % nblk, cblk = t / nblk, r0 = rb * ABFT_B, c0 = cblk * ABFT_B;
        const uint64_t rows = n - r0 < ABFT_B ? n - r0 : ABFT_B;
        const uint64_t cols = n - c0 < ABFT_B ? n - c0 : ABFT_B;
        A racc[S::rows];
#pragma unroll
        for (int e = 0; e < S::rows; e++)
            racc[e] = 0;
        /* This lane's bytes in a column: vector lane + 32 r at (lane + 32 r) * 16. */
        const char *base = cb + (c0 * n + r0) * S::es + (uint64_t)lane * 16;
        /* The column sums of G chunks wait in the lanes (one a lane) for one compare by all 32:
         * lane slot `mine` keeps step `mine`'s sum, of column `which` (fixed per lane) there. */
        P pend = 0;
        const unsigned mine = (unsigned)lane & (S::G - 1);
        unsigned step = 0;
        for (uint64_t q = 0; q < cols; q += S::chunk, step = (step + 1) % S::G) {
            if (q + 2 * S::chunk < cols) /* two chunks ahead */
#pragma unroll
                for (int u = 0; u < S::chunk; u++)
#pragma unroll
                    for (int r = 0; r < S::vecs; r++)
                        s_prefetch(base + (q + 2 * S::chunk + u) * n * S::es + r * ABFT_GROUP * 16);
            uint4 vec[S::chunk][S::vecs];
#pragma unroll
            for (int u = 0; u < S::chunk; u++)
#pragma unroll
                for (int r = 0; r < S::vecs; r++)
                    vec[u][r] = (uint64_t)(lane + ABFT_GROUP * r) * S::per_vec < rows
                                    ? gpu_load_streaming((const uint4 *)(base + (q + u) * n * S::es +
                                                                         r * ABFT_GROUP * 16))
                                    : make_uint4(0, 0, 0, 0);
            P part[S::chunk];
#pragma unroll
            for (int u = 0; u < S::chunk; u++) {
                part[u] = 0;
#pragma unroll
                for (int r = 0; r < S::vecs; r++) {
                    P x[S::per_vec];
                    s_unpack<ST>(vec[u][r], x);
#pragma unroll
                    for (int e = 0; e < S::per_vec; e++) {
                        racc[r * S::per_vec + e] += x[e];
                        part[u] += x[e];
                    }
                }
            }
            int which;
            P sum = s_butterfly<S::chunk>(part, lane, &which);
            /* The G lanes of a group hold the same sum: the step-th of them keeps it. */
            if (mine == step)
                pend = sum;
            if (step == S::G - 1 || q + S::chunk >= cols) { /* warp-uniform */
                if (mine <= step) {
                    const uint64_t col = c0 + q - (step - mine) * S::chunk + (uint64_t)which;
                    const uint64_t key = burn_abft_key(rb, col, n);
                    worst = fmaxf(worst, s_compare((double)pend * S::scale, (double)colref[key],
                                                   tol, key, &state->col_off, &state->col_key));
                }
            }
        }
#pragma unroll
        for (int r = 0; r < S::vecs; r++)
#pragma unroll
            for (int e = 0; e < S::per_vec; e++) {
                const uint64_t row = (uint64_t)(lane + ABFT_GROUP * r) * S::per_vec + e;
                if (row < rows) {
                    const uint64_t key = burn_abft_key(cblk, r0 + row, n);
                    worst = fmaxf(worst, s_compare((double)racc[r * S::per_vec + e] * S::scale,
                                                   (double)rowref[key], tol, key, &state->row_off,
                                                   &state->row_key));
                }
            }
    }
    worst = s_group_max(worst);
    if (lane == 0 && worst > 0)
        atomicMax(&state->max_ratio_bits, __float_as_uint(worst));

    /* The last block to finish folds this GEMM's scratch into the interval. */
    __shared__ int last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        last = atomicAdd(&state->blocks_done, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    s_fold<ST>(c, n, colref, rowref, gemm, buffer, state);
}

/* One thread block: the test-only flip. Scans from `start` for the first element with a bit whose
 * flip changes it by 2 to 6 tolerances of the larger of its two checksums, flips it and records
 * what it did. */
template <int ST>
__global__ void s_inject(void *c, uint64_t n, const typename s_shape<ST>::ref *colref,
                         const typename s_shape<ST>::ref *rowref, burn_tol_t tol, uint64_t start,
                         uint64_t gemm, uint32_t buffer, burn_abft_injection_t *out)
{
    __shared__ unsigned long long best;
    const uint64_t n2 = n * n;
    if (threadIdx.x == 0)
        best = ~0ull;
    __syncthreads();
    for (uint64_t s = threadIdx.x; s < (1u << 16) && s < n2; s += blockDim.x) {
        uint64_t e = (start + s) % n2, i = e % n, j = e / n;
        double cref = burn_abs((double)colref[burn_abft_key(i / ABFT_B, j, n)]);
        double rref = burn_abs((double)rowref[burn_abft_key(j / ABFT_B, i, n)]);
        double bound = tol.rtol * (cref > rref ? cref : rref) + tol.atol;
        if (burn_abft_flip_bit(c, e, (burn_storage_t)ST, 2 * bound, 6 * bound) >= 0)
            atomicMin(&best, (unsigned long long)s);
    }
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    out->gemm = gemm;
    out->buffer = buffer;
    out->bit = -1;
    if (best == ~0ull)
        return;
    uint64_t e = (start + best) % n2, i = e % n, j = e / n;
    double cref = burn_abs((double)colref[burn_abft_key(i / ABFT_B, j, n)]);
    double rref = burn_abs((double)rowref[burn_abft_key(j / ABFT_B, i, n)]);
    double bound = tol.rtol * (cref > rref ? cref : rref) + tol.atol;
    int bit = burn_abft_flip_bit(c, e, (burn_storage_t)ST, 2 * bound, 6 * bound);
    uint64_t bits = burn_bits_load(c, e, (burn_storage_t)ST);
    out->before = burn_load(c, e, (burn_storage_t)ST);
    burn_bits_store(c, e, (burn_storage_t)ST, bits ^ (1ull << bit));
    out->after = burn_load(c, e, (burn_storage_t)ST);
    out->bit = bit;
    out->row = i;
    out->col = j;
    out->bound = bound;
}

/* ---- launches ---------------------------------------------------------------------------------- */

#define ABFT_DISPATCH(out, CALL)                                                                   \
    do {                                                                                           \
        switch (out) {                                                                             \
        case BURN_ST_BF16:                                                                         \
            CALL(BURN_ST_BF16);                                                                    \
            break;                                                                                 \
        case BURN_ST_FP16:                                                                         \
            CALL(BURN_ST_FP16);                                                                    \
            break;                                                                                 \
        case BURN_ST_FP32:                                                                         \
            CALL(BURN_ST_FP32);                                                                    \
            break;                                                                                 \
        default:                                                                                   \
            CALL(BURN_ST_FP64);                                                                    \
            break;                                                                                 \
        }                                                                                          \
    } while (0)

static gpuError_t s_launch_check(abft_t *a, gpuStream_t s, unsigned blocks, const void *c,
                                 uint64_t gemm, uint32_t buffer)
{
#define CHECK_CALL(ST)                                                                             \
    s_check<ST><<<blocks, s_shape<ST>::threads, a->smem, s>>>(                                     \
        c, a->n, (const s_shape<ST>::ref *)a->colref, (const s_shape<ST>::ref *)a->rowref, a->tol, \
        gemm, buffer, a->d_state)
    ABFT_DISPATCH(a->out, CHECK_CALL);
#undef CHECK_CALL
    return gpuGetLastError();
}

/* Shared memory per check block: more than half of an SM's, unused, so that one SM never runs two
 * check blocks (or a check block beside a GEMM block) and `blocks` blocks hold `blocks` SMs. */
static size_t s_check_smem(abft_t *a, int device)
{
    size_t part = 0;
    int per_sm = 0;
    (void)gpuDeviceGetAttribute(&per_sm, gpuDevAttrMaxSharedMemoryPerMultiprocessor, device);
    size_t want = per_sm > 0 ? (size_t)per_sm / 2 + 1024 : part;
    if (want < part)
        want = part;
#define SMEM_CALL(ST)                                                                              \
    err = gpuFuncSetAttribute((const void *)s_check<ST>,                                           \
                              gpuFuncAttributeMaxDynamicSharedMemorySize, (int)want)
    gpuError_t err = gpuSuccess;
    ABFT_DISPATCH(a->out, SMEM_CALL);
#undef SMEM_CALL
    if (err != gpuSuccess) {
        (void)gpuGetLastError();
        return part;
    }
    return want;
}

size_t abft_bytes_needed(burn_dtype_t dt, uint64_t n)
{
    uint64_t nblk = burn_abft_blocks(n, ABFT_B);
    return 2 * nblk * n * (s_ref_size(burn_out_storage(dt)) + sizeof(double)) +
           sizeof(burn_abft_state_t) + BURN_ABFT_MAX_INJECTIONS * sizeof(burn_abft_injection_t) +
           sizeof(double) * 2;
}

static int s_fail(char *err, size_t errlen, const char *what, gpuError_t e)
{
    snprintf(err, errlen, "checksums: %s: %s", what, gpuGetErrorString(e));
    (void)gpuGetLastError();
    return e == gpuErrorMemoryAllocation ? -ENOMEM : -EIO;
}

/* The references of both operands; the block sums are scratch. */
static int s_compute_refs(abft_t *a, burn_storage_t in, const void *pa, const void *pb, char *err,
                          size_t errlen)
{
    const uint64_t n = a->n, nblk = a->nblk;
    double *sums = NULL, *sq = NULL, h_sq[2];
    gpuError_t e = gpuMalloc((void **)&sums, 2 * nblk * n * sizeof(double));
    if (e == gpuSuccess)
        e = gpuMalloc((void **)&sq, 2 * sizeof(double));
    if (e != gpuSuccess) {
        if (sums)
            (void)gpuFree(sums);
        return s_fail(err, errlen, "allocating block sums", e);
    }
    gpuStream_t s = a->gemm_stream;
    (void)gpuMemsetAsync(sq, 0, 2 * sizeof(double), s);
    unsigned grid = (unsigned)((nblk * n + 255) / 256);
    if (grid > 65535u * 8)
        grid = 65535u * 8;
    dim3 rgrid((unsigned)((n + 31) / 32), (unsigned)((nblk + 31) / 32)), rblock(32, 8);
#define REFS_CALL(ST)                                                                              \
    s_block_sums<ST><<<grid, 256, 0, s>>>(pa, n, sums, sq);                                        \
    s_block_sums<ST><<<grid, 256, 0, s>>>(pb, n, sums + nblk * n, sq + 1);                         \
    if (a->out == BURN_ST_FP64) {                                                                  \
        s_refs<ST, double><<<rgrid, rblock, 0, s>>>(sums, nblk, pb, n, (double *)a->colref);       \
        s_refs<ST, double><<<rgrid, rblock, 0, s>>>(sums + nblk * n, nblk, pa, n,                  \
                                                    (double *)a->rowref);                          \
    } else {                                                                                       \
        s_refs<ST, float><<<rgrid, rblock, 0, s>>>(sums, nblk, pb, n, (float *)a->colref);         \
        s_refs<ST, float><<<rgrid, rblock, 0, s>>>(sums + nblk * n, nblk, pa, n,                   \
                                                   (float *)a->rowref);                            \
    }
    switch (in) {
    case BURN_ST_BF16:
        REFS_CALL(BURN_ST_BF16);
        break;
    case BURN_ST_FP16:
        REFS_CALL(BURN_ST_FP16);
        break;
    case BURN_ST_FP32:
        REFS_CALL(BURN_ST_FP32);
        break;
    case BURN_ST_FP64:
        REFS_CALL(BURN_ST_FP64);
        break;
    default:
        REFS_CALL(BURN_ST_E4M3);
        break;
    }
#undef REFS_CALL
    e = gpuGetLastError();
    if (e == gpuSuccess)
        e = gpuMemcpyAsync(h_sq, sq, sizeof h_sq, gpuMemcpyDeviceToHost, s);
    if (e == gpuSuccess)
        e = gpuStreamSynchronize(s);
    (void)gpuFree(sums);
    (void)gpuFree(sq);
    if (e != gpuSuccess)
        return s_fail(err, errlen, "computing references", e);
    a->rms_a = sqrt(h_sq[0] / ((double)n * (double)n));
    a->rms_b = sqrt(h_sq[1] / ((double)n * (double)n));
    return 0;
}

int abft_new(gpuStream_t stream, burn_dtype_t dt, uint64_t n, const void *pa, const void *pb,
             int sms, abft_t **out, char *err, size_t errlen)
{
    *out = NULL;
    abft_t *a = (abft_t *)xcalloc(1, sizeof *a);
    a->dt = dt;
    a->out = burn_out_storage(dt);
    a->n = n;
    a->nblk = burn_abft_blocks(n, ABFT_B);
    a->sms = sms > 0 ? sms : 1;
    a->gemm_stream = stream;
    size_t refs = a->nblk * n * s_ref_size(a->out);
    gpuError_t e = gpuMalloc(&a->colref, refs);
    if (e == gpuSuccess)
        e = gpuMalloc(&a->rowref, refs);
    if (e == gpuSuccess)
        e = gpuMalloc((void **)&a->d_state, sizeof *a->d_state);
    if (e == gpuSuccess)
        e = gpuMalloc((void **)&a->d_inj, BURN_ABFT_MAX_INJECTIONS * sizeof *a->d_inj);
    if (e == gpuSuccess)
        e = gpuMallocHost((void **)&a->h_state, sizeof *a->h_state);
    if (e == gpuSuccess)
        e = gpuMallocHost((void **)&a->h_inj, BURN_ABFT_MAX_INJECTIONS * sizeof *a->h_inj);
    if (e == gpuSuccess)
        e = gpuEventCreate(&a->t0);
    if (e == gpuSuccess)
        e = gpuEventCreate(&a->t1);
    int rc = e == gpuSuccess ? 0 : s_fail(err, errlen, "allocating references", e);
    a->bytes = 2 * refs + sizeof *a->d_state + BURN_ABFT_MAX_INJECTIONS * sizeof *a->d_inj;
    if (!rc)
        rc = s_compute_refs(a, burn_in_storage(dt), pa, pb, err, errlen);
    if (rc) {
        abft_destroy(&a);
        return rc;
    }
    a->tol = burn_abft_tol(dt, n, ABFT_B, a->rms_a, a->rms_b);
    int device = 0;
    (void)gpuGetDevice(&device);
    a->smem = s_check_smem(a, device);
    s_reset<<<1, 1, 0, stream>>>(a->d_state);
    e = gpuGetLastError();
    if (e != gpuSuccess) {
        rc = s_fail(err, errlen, "resetting counters", e);
        abft_destroy(&a);
        return rc;
    }
    *out = a;
    return 0;
}

void abft_destroy(abft_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    abft_t *a = *self_p;
    if (a->check_stream)
        (void)gpuStreamSynchronize(a->check_stream);
    void *dev[] = {a->colref, a->rowref, a->d_state, a->d_inj};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        if (dev[i])
            (void)gpuFree(dev[i]);
    if (a->h_state)
        (void)gpuFreeHost(a->h_state);
    if (a->h_inj)
        (void)gpuFreeHost(a->h_inj);
    for (size_t i = 0; i < a->ring; i++)
        (void)gpuEventDestroy(a->done[i]);
    gpuEvent_t evs[] = {a->written, a->t0, a->t1};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (evs[i])
            (void)gpuEventDestroy(evs[i]);
    if (a->check_stream)
        (void)gpuStreamDestroy(a->check_stream);
    (void)gpuGetLastError();
    free(a);
    *self_p = NULL;
}

size_t abft_bytes(const abft_t *self)
{
    return self->bytes;
}

burn_tol_t abft_tol(const abft_t *self)
{
    return self->tol;
}

void abft_operand_rms(const abft_t *self, double *rms_a, double *rms_b)
{
    *rms_a = self->rms_a;
    *rms_b = self->rms_b;
}

gpuError_t abft_time(abft_t *self, const void *c, unsigned blocks, double *ms)
{
    const int reps = 3;
    gpuStream_t s = self->gemm_stream;
    gpuError_t e = s_launch_check(self, s, blocks, c, 0, 0); /* warm-up */
    if (e == gpuSuccess)
        e = gpuEventRecord(self->t0, s);
    for (int i = 0; e == gpuSuccess && i < reps; i++)
        e = s_launch_check(self, s, blocks, c, 0, 0);
    if (e == gpuSuccess)
        e = gpuEventRecord(self->t1, s);
    if (e == gpuSuccess)
        e = gpuEventSynchronize(self->t1);
    float elapsed = 0;
    if (e == gpuSuccess)
        e = gpuEventElapsedTime(&elapsed, self->t0, self->t1);
    *ms = elapsed / reps;
    s_reset<<<1, 1, 0, s>>>(self->d_state);
    if (e == gpuSuccess)
        e = gpuGetLastError();
    return e;
}

gpuError_t abft_start(abft_t *self, unsigned reserved, size_t n_buffers)
{
    self->reserved = reserved;
    if (!reserved)
        return gpuSuccess;
    gpuError_t e = gpuStreamCreateWithFlags(&self->check_stream, gpuStreamNonBlocking);
    if (e == gpuSuccess)
        e = gpuEventCreateWithFlags(&self->written, gpuEventDisableTiming);
    /* GEMM g waits for the check of GEMM g - ring, which wrote the same buffer or a later one. */
    size_t ring = n_buffers < ABFT_RING ? n_buffers : ABFT_RING;
    for (; e == gpuSuccess && self->ring < ring; self->ring++)
        e = gpuEventCreateWithFlags(&self->done[self->ring], gpuEventDisableTiming);
    return e;
}

gpuError_t abft_before_gemm(abft_t *self, uint64_t gemm)
{
    if (!self->reserved || gemm < self->ring)
        return gpuSuccess;
    return gpuStreamWaitEvent(self->gemm_stream, self->done[gemm % self->ring], 0);
}

void abft_arm_injection(abft_t *self, uint64_t gemm, uint64_t seed)
{
    size_t cap = sizeof self->armed / sizeof self->armed[0];
    if (self->n_armed == cap)
        return;
    size_t at = self->n_armed++;
    while (at > 0 && self->armed[at - 1].gemm > gemm) { /* kept sorted */
        self->armed[at] = self->armed[at - 1];
        at--;
    }
    self->armed[at].gemm = gemm;
    self->armed[at].seed = seed;
}

size_t abft_armed(const abft_t *self)
{
    return self->n_armed;
}

/* The injection due at this GEMM, if any: one per GEMM, the earliest armed. */
static gpuError_t s_maybe_inject(abft_t *a, void *c, uint64_t gemm, uint32_t buffer)
{
    if (!a->n_armed || a->armed[0].gemm > gemm || a->n_inj >= BURN_ABFT_MAX_INJECTIONS)
        return gpuSuccess;
    uint64_t start = fb_mix64(a->armed[0].seed) % (a->n * a->n);
    burn_abft_injection_t *slot = &a->d_inj[a->n_inj++];
#define INJECT_CALL(ST)                                                                            \
    s_inject<ST><<<1, 256, 0, a->gemm_stream>>>(c, a->n, (const s_shape<ST>::ref *)a->colref,     \
                                                (const s_shape<ST>::ref *)a->rowref, a->tol,       \
                                                start, gemm, buffer, slot)
    ABFT_DISPATCH(a->out, INJECT_CALL);
#undef INJECT_CALL
    memmove(&a->armed[0], &a->armed[1], (a->n_armed - 1) * sizeof a->armed[0]);
    a->n_armed--;
    return gpuGetLastError();
}

gpuError_t abft_after_gemm(abft_t *self, void *c, uint64_t gemm, uint32_t buffer)
{
    gpuError_t e = s_maybe_inject(self, c, gemm, buffer);
    if (e != gpuSuccess)
        return e;
    if (!self->reserved)
        return s_launch_check(self, self->gemm_stream, (unsigned)self->sms, c, gemm, buffer);
    e = gpuEventRecord(self->written, self->gemm_stream);
    if (e == gpuSuccess)
        e = gpuStreamWaitEvent(self->check_stream, self->written, 0);
    if (e == gpuSuccess)
        e = s_launch_check(self, self->check_stream, self->reserved, c, gemm, buffer);
    if (e == gpuSuccess)
        e = gpuEventRecord(self->done[gemm % self->ring], self->check_stream);
    return e;
}

gpuError_t abft_collect(abft_t *self, burn_abft_state_t *state, burn_abft_injection_t *inj,
                        size_t *n_inj)
{
    gpuStream_t s = self->check_stream ? self->check_stream : self->gemm_stream;
    gpuError_t e = gpuMemcpyAsync(self->h_state, self->d_state, sizeof *self->h_state,
                                  gpuMemcpyDeviceToHost, s);
    if (e == gpuSuccess && self->n_inj)
        e = gpuMemcpyAsync(self->h_inj, self->d_inj, self->n_inj * sizeof *self->h_inj,
                           gpuMemcpyDeviceToHost, self->gemm_stream);
    if (e == gpuSuccess)
        e = gpuStreamSynchronize(self->gemm_stream);
    if (e == gpuSuccess && self->check_stream)
        e = gpuStreamSynchronize(self->check_stream);
    if (e != gpuSuccess)
        return e;
    *state = *self->h_state;
    memcpy(inj, self->h_inj, self->n_inj * sizeof *inj);
    *n_inj = self->n_inj;
    self->n_inj = 0;
    s_reset<<<1, 1, 0, s>>>(self->d_state);
    return gpuGetLastError();
}
