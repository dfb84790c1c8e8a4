/* SPDX-License-Identifier: Apache-2.0 */
/* The gpuburn workload: sustained GEMM load on the matrix units of every selected GPU at once,
 * one host thread per GPU, with the results verified three ways once per interval.
 *
 * Each GPU holds two random operands A and B (uniform in [-1, 1), every mantissa bit toggling)
 * and as many result matrices C[0..] as fit in mem_fraction of its free memory, and runs the same
 * GEMM C[i] = A^T B into C[0], C[1], ... round robin through blas.h (cuBLASLt or rocBLAS), in
 * batches of about 50 ms kept two deep so the GPU never waits for the host. At the end of every
 * interval, on the GPU, with the results reduced to a few counters:
 *   1. every C buffer is scanned for NaN/Inf;
 *   2. every C[i] is compared with C[0]: repeats of one GEMM must agree (within a tolerance far
 *      below any corruption worth reporting), so a transient fault shows as a disagreement;
 *   3. a known-answer GEMM runs through the same plan on integer operands whose product is exact
 *      in fp32, and is compared with a reference computed once at start by an independent simple
 *      kernel on the ordinary cores: a fault that repeats identically every time (which 2 cannot
 *      see) shows here.
 * Beyond these, every burn GEMM's result is checked by block checksums against references from
 * the operands before its buffer is written again (abft.h; abft=false turns it off), and once per
 * interval the SDC probe (sdc.h) runs identical deterministic work on every SM, whose results must
 * agree bit for bit between the SMs and between the GPUs of a model (sdc_probe=false turns it
 * off). TFLOPS per interval come from events around the burn GEMMs (with their checks when these
 * run on the GEMM stream). Before the burn every GPU times a plain loop of the same GEMM into one
 * buffer for about 2 s, unchecked, on all SMs (gpuN.blas_peak_tflops), so the burn rate with its
 * checks can be read against the library's own peak. Setup, peak and burn phases start on
 * all GPUs together. The decisions (tolerances, floors, metrics, findings, verdict) are plain C in
 * host/burn_verify.c, host/burn_abft.c, host/sdc_vote.c, host/burn_judge.c and
 * host/burn_fidelity.c; test-only corruption (inject_corrupt) goes into the first selected GPU so
 * the finding must name that one. */
#include "gpu_runtime.h"

#include "abft.h"
#include "blas.h"
#include "sdc.h"
#include "host/burn_judge.h"
#include "host/gpu_devices.h"
#include "gpu.h"

extern "C" {
#include "common/util.h"
}

#if defined(__has_include)
#if __has_include("host/telemetry.h")
extern "C" {
#include "host/telemetry.h"
}
#define BURN_TELEMETRY 1
#endif
#endif

#include <atomic>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BURN_SEED_A 0x41ull
#define BURN_SEED_B 0x42ull
#define BURN_SEED_KA 0x4b41ull
#define BURN_SEED_KB 0x4b42ull
#define BURN_SEED_SDC 0x5dc0ull /* + the interval: the same inputs on every GPU */
#define BURN_BATCH_S 0.05      /* GEMMs queued per batch: about this much GPU time */
#define BURN_PEAK_WARM_S 0.5   /* before the timed peak loop */
#define BURN_PEAK_S 2.0        /* the timed peak loop */
#define BURN_TUNE_CANDIDATES 4 /* library algorithms timed before the burn */
#define BURN_INJECT_SCAN (1u << 20)

enum { PHASE_SETUP = 0, PHASE_PEAK, PHASE_BURN, PHASE_DONE };

/* A barrier whose party count is set once every thread is known to be running. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    size_t expected, arrived;
    unsigned generation;
} gate_t;

typedef struct run run_t;

typedef struct {
    run_t *run;
    burn_gpu_t *g;
    bool inject; /* this GPU receives cfg.inject */
    pthread_t tid;
    bool started; /* tid is a running thread */
    /* device state, owned by the thread */
    int sms;
    gpuStream_t stream;
    gpuEvent_t ev_start, ev_stop, ev_batch[2], ev_done;
    blas_t *blas;
    blas_gemm_t *gemm;      /* all SMs: tuning, the peak */
    blas_gemm_t *gemm_burn; /* the burn's plan: gemm, or one leaving SMs to the checksums */
    abft_t *abft;           /* per-GEMM checksums (cfg.abft) */
    sdc_probe_t *sdc;       /* the SDC probe (cfg.sdc) */
    uint64_t seq;           /* burn GEMMs queued */
    uint64_t last_checked, last_bad; /* the last interval's checksums, for its log line */
    float last_ratio;
    /* inject_corrupt=gemm: the interval and the GEMM within it of each planned flip */
    unsigned inj_interval[BURN_MAX_INJECT_GEMMS];
    uint64_t inj_offset[BURN_MAX_INJECT_GEMMS];
    void *a, *b, *ka, *kb, *kout;
    float *kref;
    void **c;
    size_t n_c;
    burn_counters_t *d_cnt; /* [0] repeats + NaN/Inf scan, [1] known answer */
    burn_counters_t *h_cnt; /* pinned copy */
    double gemm_ms;         /* one GEMM on all SMs, from tuning */
    double burn_ms;         /* one GEMM of the burn's plan */
    size_t batch;
    /* read by the main thread for progress */
    std::atomic<int> phase;
    std::atomic<double> last_tflops;
} gpu_thread_t;

struct run {
    worker_ctx_t *ctx;
    burn_config_t cfg;
    gpu_thread_t *threads;
    burn_gpu_t *gpus;
    size_t n;
    gate_t gate;
    std::atomic<size_t> finished;
};

/* ---- small helpers --------------------------------------------------------------------------- */

static void s_gate_wait(gate_t *g)
{
    pthread_mutex_lock(&g->lock);
    unsigned gen = g->generation;
    if (++g->arrived >= g->expected) {
        g->arrived = 0;
        g->generation++;
        pthread_cond_broadcast(&g->cond);
    } else {
        while (gen == g->generation)
            pthread_cond_wait(&g->cond, &g->lock);
    }
    pthread_mutex_unlock(&g->lock);
}

static void s_gate_expect(gate_t *g, size_t n)
{
    pthread_mutex_lock(&g->lock);
    g->expected = n;
    if (g->arrived && g->arrived >= n) {
        g->arrived = 0;
        g->generation++;
        pthread_cond_broadcast(&g->cond);
    }
    pthread_mutex_unlock(&g->lock);
}

static void s_sleep_s(double s)
{
    struct timespec ts;
    ts.tv_sec = (time_t)s;
    ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}

static double s_gemm_flops(uint64_t n)
{
    return 2.0 * (double)n * (double)n * (double)n;
}

/* Records "what: runtime error" on the GPU with the given state; returns -EIO. */
static int s_gpu_fail(gpu_thread_t *t, burn_gpu_state_t state, const char *what, gpuError_t err)
{
    burn_gpu_t *g = t->g;
    if (g->state == BURN_GPU_OK || g->state == state) {
        g->state = state;
        snprintf(g->error, sizeof g->error, "%s: %s", what, gpuGetErrorString(err));
    }
    return -EIO;
}

#define TRY_SETUP(t, call, what)                                                                   \
    do {                                                                                           \
        gpuError_t try_err_ = (call);                                                              \
        if (try_err_ != gpuSuccess)                                                                \
            return s_gpu_fail((t), BURN_GPU_SETUP_ERROR, (what), try_err_);                        \
    } while (0)

#define TRY_RUN(t, call, what)                                                                     \
    do {                                                                                           \
        gpuError_t try_err_ = (call);                                                              \
        if (try_err_ != gpuSuccess)                                                                \
            return s_gpu_fail((t), BURN_GPU_RUN_ERROR, (what), try_err_);                          \
    } while (0)

static unsigned s_blocks(const gpu_thread_t *t, size_t n)
{
    size_t want = (n + 255) / 256, cap = (size_t)(t->sms > 0 ? t->sms : 32) * 8;
    return (unsigned)(want < cap ? (want ? want : 1) : cap);
}

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
static void s_launch_check(gpu_thread_t *t, burn_storage_t out, bool ref_is_f32, const void *got,
                           const void *ref, size_t n, burn_tol_t tol, uint32_t buffer,
                           burn_counters_t *cnt)
{
    unsigned grid = s_blocks(t, n);
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

/* ---- setup ----------------------------------------------------------------------------------- */

static int s_alloc(gpu_thread_t *t, void **p, size_t bytes, const char *what)
{
    gpuError_t err = gpuMalloc(p, bytes);
    if (err != gpuSuccess) {
        (void)gpuGetLastError();
        *p = NULL;
        char text[96];
        snprintf(text, sizeof text, "allocating %s (%.1f MiB)", what, (double)bytes / 1048576.0);
        return s_gpu_fail(t, BURN_GPU_SETUP_ERROR, text, err);
    }
    t->g->mem_bytes += bytes;
    return 0;
}

/* Times up to BURN_TUNE_CANDIDATES algorithms of plan gemm on the burn operands and keeps the
 * fastest; *ms gets one GEMM's time. -EIO when none runs (blas_gemm_error says why). */
static int s_tune(gpu_thread_t *t, blas_gemm_t *gemm, double *ms_out)
{
    int n_cand = blas_gemm_candidates(gemm);
    if (n_cand > BURN_TUNE_CANDIDATES)
        n_cand = BURN_TUNE_CANDIDATES;
    int best = -1;
    float best_ms = 0;
    for (int i = 0; i < n_cand; i++) {
        blas_gemm_choose(gemm, i);
        int rc = blas_gemm_run(gemm, t->a, t->b, t->c[0]); /* warm-up */
        TRY_SETUP(t, gpuEventRecord(t->ev_start, t->stream), "recording an event");
        for (int r = 0; rc == 0 && r < 3; r++)
            rc = blas_gemm_run(gemm, t->a, t->b, t->c[0]);
        TRY_SETUP(t, gpuEventRecord(t->ev_stop, t->stream), "recording an event");
        TRY_SETUP(t, gpuEventSynchronize(t->ev_stop), "timing GEMM algorithms");
        float ms = 0;
        TRY_SETUP(t, gpuEventElapsedTime(&ms, t->ev_start, t->ev_stop), "timing GEMM algorithms");
        if (rc == 0 && (best < 0 || ms < best_ms)) {
            best = i;
            best_ms = ms;
        }
    }
    if (best < 0)
        return -EIO;
    blas_gemm_choose(gemm, best);
    *ms_out = best_ms / 3;
    return 0;
}

/* GEMMs per batch: about BURN_BATCH_S of GPU time. */
static void s_set_batch(gpu_thread_t *t, double gemm_ms)
{
    double per_batch = BURN_BATCH_S * 1000.0 / (gemm_ms > 0 ? gemm_ms : 1);
    t->batch = per_batch < 1 ? 1 : (size_t)per_batch;
}

/* The fewest SMs to try giving the checksums beside the GEMMs, from one check's time on one SM
 * (0: after each GEMM on the GEMM stream). Auto: the fewest that finish a check in 70% of a
 * GEMM's time, so the checks keep up with the GEMMs also when the clocks drop under load; none
 * when that takes more than 1/8 of the SMs. Explicit: abft_sms, up to half the SMs. */
static unsigned s_checks_sms(const gpu_thread_t *t, double one_sm_ms)
{
    const burn_config_t *cfg = &t->run->cfg;
    if (cfg->abft_sms >= 0)
        return (unsigned)(cfg->abft_sms < t->sms / 2 ? cfg->abft_sms : t->sms / 2);
    if (FB_GPU_HIP || t->gemm_ms <= 0 || t->sms < 16)
        return 0;
    double need = ceil(one_sm_ms / (0.7 * t->gemm_ms));
    unsigned s = need < 1 ? 1u : (unsigned)need;
    return s <= (unsigned)t->sms / 8 ? s : 0;
}

/* The GEMM plan on all SMs but `reserved`, tuned; NULL (and why) when the library cannot. */
static blas_gemm_t *s_narrow_plan(gpu_thread_t *t, unsigned reserved, double *ms, char *why,
                                  size_t len)
{
    const burn_config_t *cfg = &t->run->cfg;
    blas_gemm_t *narrow = NULL;
    if (blas_gemm_new_on_sms(t->blas, cfg->dtype, cfg->matrix, t->sms - (int)reserved, &narrow,
                             why, len))
        return NULL;
    if (s_tune(t, narrow, ms)) {
        snprintf(why, len, "%s", blas_gemm_error(narrow));
        blas_gemm_destroy(&narrow);
    }
    return narrow;
}

/* Auto: among the first few SM counts from `fewest` up, the one whose GEMM plan is fastest (the
 * GEMM often loses nothing on a few SMs less, when its tiles still take the same number of waves,
 * and much on one SM more); *ms its GEMM time. Returns that plan, NULL when none could be made. */
static blas_gemm_t *s_best_narrow_plan(gpu_thread_t *t, unsigned *reserved, double *ms, char *why,
                                       size_t len)
{
    const burn_config_t *cfg = &t->run->cfg;
    unsigned last = cfg->abft_sms >= 0 ? *reserved : *reserved + 4;
    if (last > (unsigned)t->sms / 8 && cfg->abft_sms < 0)
        last = (unsigned)t->sms / 8;
    blas_gemm_t *best = NULL;
    for (unsigned s = *reserved; s <= last; s++) {
        double s_ms = 0;
        blas_gemm_t *plan = s_narrow_plan(t, s, &s_ms, why, len);
        if (!plan)
            continue;
        worker_log(t->run->ctx, "gpu%d checksums: GEMM on %d SMs %.3f ms (%+.2f%% against all %d)",
                   t->g->device, t->sms - (int)s, s_ms, 100 * (s_ms / t->gemm_ms - 1), t->sms);
        if (!best || s_ms < 0.998 * *ms) { /* fewer SMs for the checks unless clearly faster */
            blas_gemm_destroy(&best);
            best = plan;
            *ms = s_ms;
            *reserved = s;
        } else {
            blas_gemm_destroy(&plan);
        }
    }
    return best;
}

/* The per-GEMM checksums: references of the operands, then where the checks run and the burn's
 * plan (one that leaves SMs to them, tuned again). */
static int s_setup_abft(gpu_thread_t *t)
{
    run_t *run = t->run;
    burn_gpu_t *g = t->g;
    const burn_config_t *cfg = &run->cfg;
    char why[256] = "";
    int rc = abft_new(t->stream, cfg->dtype, cfg->matrix, t->a, t->b, t->sms, &t->abft, why,
                      sizeof why);
    if (rc) {
        g->state = BURN_GPU_SETUP_ERROR;
        snprintf(g->error, sizeof g->error, "%s", why);
        return rc;
    }
    g->mem_bytes += abft_bytes(t->abft);
    double one = 0, all = 0;
    TRY_SETUP(t, abft_time(t->abft, t->c[0], 1, &one), "timing a GEMM check");
    TRY_SETUP(t, abft_time(t->abft, t->c[0], (unsigned)t->sms, &all), "timing a GEMM check");
    unsigned reserved = s_checks_sms(t, one);
    t->burn_ms = t->gemm_ms;
    if (reserved) {
        /* Kept when the GEMM on fewer SMs loses less than a check after each GEMM would cost. */
        double narrow_ms = 0;
        blas_gemm_t *narrow = s_best_narrow_plan(t, &reserved, &narrow_ms, why, sizeof why);
        double loss = narrow ? narrow_ms / t->gemm_ms - 1 : 0, inline_cost = all / t->gemm_ms;
        if (!narrow) {
            worker_log(run->ctx, "gpu%d checksums: the GEMM cannot leave SMs free (%s); checks "
                       "run after each GEMM", g->device, why);
            reserved = 0;
        } else if (cfg->abft_sms < 0 && loss >= inline_cost) {
            worker_log(run->ctx, "gpu%d checksums: the GEMM on %d SMs loses %.2f%%, a check after "
                       "each GEMM costs about %.2f%%: checks run after each GEMM", g->device,
                       t->sms - (int)reserved, 100 * loss, 100 * inline_cost);
            blas_gemm_destroy(&narrow);
            reserved = 0;
        } else {
            t->gemm_burn = narrow;
            t->burn_ms = narrow_ms;
        }
    }
    TRY_SETUP(t, abft_start(t->abft, reserved, t->n_c), "starting the checksums");
    g->abft = true;
    g->abft_sms = reserved;
    double rms_a, rms_b;
    abft_operand_rms(t->abft, &rms_a, &rms_b);
    burn_tol_t tol = abft_tol(t->abft);
    double elem = sqrt((double)cfg->matrix) * rms_a * rms_b;
    double sum = burn_abft_sum_rms(cfg->matrix, BURN_ABFT_BLOCK, rms_a, rms_b);
    g->abft_threshold = burn_abft_threshold(tol, sum) / elem;
    char where[160];
    if (reserved)
        snprintf(where, sizeof where, "on %u SMs beside the GEMMs, which get the other %d "
                 "(GEMM %.3f ms there, %.3f ms on all)", reserved, t->sms - (int)reserved,
                 t->burn_ms, t->gemm_ms);
    else
        snprintf(where, sizeof where, "after each GEMM on its stream (GEMM %.3f ms)", t->gemm_ms);
    worker_log(run->ctx,
               "gpu%d checksums of every burn GEMM: sums of %u rows and of %u columns against "
               "(e^T A)B and A(Be), tolerance %.4g + %.3g |ref| (operand RMS %.4f, %.4f): a "
               "single-element error above %.4g = %.3f of an element's RMS is always found; one "
               "check %.3f ms on 1 SM, %.3f ms on %d; checks run %s",
               g->device, BURN_ABFT_BLOCK, BURN_ABFT_BLOCK, tol.atol, tol.rtol, rms_a, rms_b,
               g->abft_threshold * elem, g->abft_threshold, one, all, t->sms, where);
    return 0;
}

static int s_setup_sdc(gpu_thread_t *t)
{
    burn_gpu_t *g = t->g;
    const burn_config_t *cfg = &t->run->cfg;
    char why[256] = "";
    int rc = sdc_probe_new(t->sms, &t->sdc, why, sizeof why);
    if (rc) {
        g->state = BURN_GPU_SETUP_ERROR;
        snprintf(g->error, sizeof g->error, "%s", why);
        return rc;
    }
    g->sdc_gpu_sms = (unsigned)t->sms;
    if (t->inject && cfg->inject == BURN_INJECT_SDC) {
        g->sdc_inject_sm = (int)(fb_mix64(cfg->inject_seed) % (uint64_t)(t->sms > 0 ? t->sms : 1));
        g->injected = BURN_INJECT_SDC;
        worker_log(t->run->ctx, "gpu%d: inject_corrupt=sdc: the probe's blocks on SM %d report a "
                   "wrong result", g->device, g->sdc_inject_sm);
    }
    return 0;
}

static int s_setup(gpu_thread_t *t)
{
    run_t *run = t->run;
    burn_gpu_t *g = t->g;
    const burn_config_t *cfg = &run->cfg;
    const uint64_t n = cfg->matrix, n2 = n * n;
    const burn_storage_t in = burn_in_storage(cfg->dtype), out = burn_out_storage(cfg->dtype);
    g->matrix = n;

    TRY_SETUP(t, gpuSetDevice(g->device), "selecting the GPU");
    gpuDeviceProp prop;
    TRY_SETUP(t, gpuGetDeviceProperties(&prop, g->device), "reading GPU properties");
    fb_strlcpy(g->name, prop.name, sizeof g->name);
    if (gpuDeviceGetPCIBusId(g->pci, (int)sizeof g->pci, g->device) != gpuSuccess)
        snprintf(g->pci, sizeof g->pci, "unknown");
    for (char *p = g->pci; *p; p++) /* the runtimes differ in case; sysfs writes lower case */
        if (*p >= 'A' && *p <= 'F')
            *p = (char)(*p - 'A' + 'a');
    (void)gpuDeviceGetAttribute(&t->sms, gpuDevAttrMultiProcessorCount, g->device);
    TRY_SETUP(t, gpuStreamCreateWithFlags(&t->stream, gpuStreamNonBlocking), "creating a stream");
    TRY_SETUP(t, gpuEventCreate(&t->ev_start), "creating an event");
    TRY_SETUP(t, gpuEventCreate(&t->ev_stop), "creating an event");
    for (int i = 0; i < 2; i++)
        TRY_SETUP(
            t,
            gpuEventCreateWithFlags(&t->ev_batch[i], gpuEventBlockingSync | gpuEventDisableTiming),
            "creating an event");
    TRY_SETUP(t, gpuEventCreateWithFlags(&t->ev_done, gpuEventBlockingSync | gpuEventDisableTiming),
              "creating an event");

    char why[256] = "";
    if (blas_open(t->stream, &t->blas, why, sizeof why)) {
        g->state = BURN_GPU_SETUP_ERROR;
        snprintf(g->error, sizeof g->error, "%s", why);
        return -EIO;
    }
    const char *unsupported = blas_unsupported(t->blas, cfg->dtype);
    if (unsupported) {
        g->state = BURN_GPU_UNSUPPORTED;
        snprintf(g->error, sizeof g->error, "%s", unsupported);
        return -ENOTSUP;
    }
    int rc = blas_gemm_new(t->blas, cfg->dtype, n, &t->gemm, why, sizeof why);
    if (rc) {
        g->state = rc == -ENOTSUP ? BURN_GPU_UNSUPPORTED : BURN_GPU_SETUP_ERROR;
        snprintf(g->error, sizeof g->error, "%s", why);
        return rc;
    }

    /* Memory: the fixed buffers, then as many results as fit in mem_fraction of what was free. */
    size_t free_b = 0, total_b = 0;
    TRY_SETUP(t, gpuMemGetInfo(&free_b, &total_b), "reading free GPU memory");
    const size_t in_bytes = n2 * burn_storage_size(in), out_bytes = n2 * burn_storage_size(out);
    const size_t fixed = 4 * in_bytes + out_bytes + n2 * sizeof(float) +
                         2 * sizeof(burn_counters_t) +
                         (cfg->abft ? abft_bytes_needed(cfg->dtype, n) : 0);
    const double budget = (double)free_b * cfg->mem_fraction;
    double room = (budget - (double)fixed) / (double)out_bytes;
    if (room < 2) {
        g->state = BURN_GPU_SETUP_ERROR;
        snprintf(g->error, sizeof g->error,
                 "%.1f GiB free x mem_fraction %.2f leaves no room for 2 result matrices of "
                 "%.0f MiB next to the operands (%.0f MiB): lower matrix",
                 (double)free_b / 1073741824.0, cfg->mem_fraction, (double)out_bytes / 1048576.0,
                 (double)fixed / 1048576.0);
        return -ENOMEM;
    }
    if (s_alloc(t, &t->a, in_bytes, "operand A") || s_alloc(t, &t->b, in_bytes, "operand B") ||
        s_alloc(t, &t->ka, in_bytes, "known-answer A") ||
        s_alloc(t, &t->kb, in_bytes, "known-answer B") ||
        s_alloc(t, (void **)&t->kref, n2 * sizeof(float), "known-answer reference") ||
        s_alloc(t, &t->kout, out_bytes, "known-answer result") ||
        s_alloc(t, (void **)&t->d_cnt, 2 * sizeof(burn_counters_t), "counters"))
        return -ENOMEM;
    TRY_SETUP(t, gpuMallocHost((void **)&t->h_cnt, 2 * sizeof(burn_counters_t)),
              "allocating pinned host memory");
    size_t want = (size_t)room;
    t->c = (void **)xcalloc(want, sizeof *t->c);
    while (t->n_c < want) {
        if (gpuMalloc(&t->c[t->n_c], out_bytes) != gpuSuccess) {
            (void)gpuGetLastError(); /* fewer buffers than computed: take what there is */
            t->c[t->n_c] = NULL;
            break;
        }
        t->n_c++;
        g->mem_bytes += out_bytes;
    }
    g->c_buffers = t->n_c;
    if (t->n_c < 2) {
        g->state = BURN_GPU_SETUP_ERROR;
        snprintf(g->error, sizeof g->error,
                 "only %zu result matrices of %.0f MiB could be allocated: lower matrix", t->n_c,
                 (double)out_bytes / 1048576.0);
        return -ENOMEM;
    }

    /* Operands, known-answer operands and their reference. */
    const int range = burn_kat_range(cfg->dtype, n);
    const unsigned stride = burn_kat_row_stride(n);
    unsigned grid = s_blocks(t, n2);
    DISPATCH_IN(in, s_fill_random, grid, 256, t->stream, t->a, n2, BURN_SEED_A);
    DISPATCH_IN(in, s_fill_random, grid, 256, t->stream, t->b, n2, BURN_SEED_B);
    DISPATCH_IN(in, s_fill_kat, grid, 256, t->stream, t->ka, n2, BURN_SEED_KA, range);
    DISPATCH_IN(in, s_fill_kat, grid, 256, t->stream, t->kb, n2, BURN_SEED_KB, range);
    if (stride > 1)
        s_fill_nan<<<grid, 256, 0, t->stream>>>(t->kref, n2);
    size_t tiles = (n + 63) / 64, row_tiles = (tiles + stride - 1) / stride;
    dim3 rgrid((unsigned)tiles, (unsigned)row_tiles), rblock(16, 16);
    DISPATCH_IN(in, s_reference, rgrid, rblock, t->stream, t->ka, t->kb, t->kref, n, stride);
    TRY_SETUP(t, gpuGetLastError(), "launching the setup kernels");
    TRY_SETUP(t, gpuStreamSynchronize(t->stream), "filling the operands");
    if (t->inject && run->cfg.inject == BURN_INJECT_SYSTEMATIC) {
        /* After the reference: every known-answer GEMM from now on is identically wrong. */
        s_reset_counters<<<1, 1, 0, t->stream>>>(t->d_cnt, 2);
        DISPATCH_IN(in, s_inject, 1, 1, t->stream, t->ka, n2, (int)BURN_INJECT_SYSTEMATIC, 0.0,
                    (size_t)(n2 / 3), 0u, &t->d_cnt[1]);
        TRY_SETUP(t, gpuStreamSynchronize(t->stream), "injecting a systematic error");
        g->injected = BURN_INJECT_SYSTEMATIC;
        worker_log(run->ctx, "gpu%d: inject_corrupt=systematic: one known-answer operand changed",
                   g->device);
    }
    if (s_tune(t, t->gemm, &t->gemm_ms)) {
        if (g->state == BURN_GPU_OK) {
            g->state = BURN_GPU_SETUP_ERROR;
            snprintf(g->error, sizeof g->error, "no GEMM algorithm runs: %s",
                     blas_gemm_error(t->gemm));
        }
        return -EIO;
    }
    t->gemm_burn = t->gemm;
    t->burn_ms = t->gemm_ms;
    if ((cfg->abft && s_setup_abft(t)) || (cfg->sdc && s_setup_sdc(t)))
        return -EIO;
    s_set_batch(t, t->burn_ms);
    snprintf(g->blas, sizeof g->blas, "%s, %s", blas_name(t->blas),
             blas_gemm_describe(t->gemm_burn));
    worker_log(run->ctx,
               "gpu%d %s (PCI %s): %s %" PRIu64 "^3 via %s; %zu result matrices of %.0f MiB "
               "(%.1f of %.1f GiB free), known-answer integers up to %d%s",
               g->device, g->name, g->pci, burn_dtype_name(cfg->dtype), n, g->blas, t->n_c,
               (double)out_bytes / 1048576.0, (double)g->mem_bytes / 1073741824.0,
               (double)free_b / 1073741824.0, range,
               stride > 1 ? " (reference on a subset of rows)" : "");
    return 0;
}

/* ---- peak and burn --------------------------------------------------------------------------- */

/* Queues count GEMMs into buffers next, next+1, ... (round robin); returns 0 or -EIO. */
static int s_queue(gpu_thread_t *t, size_t count, size_t *next, bool one_buffer)
{
    blas_gemm_t *gemm = one_buffer ? t->gemm : t->gemm_burn;
    const bool check = !one_buffer && t->abft;
    for (size_t i = 0; i < count; i++) {
        const size_t b = one_buffer ? 0 : *next;
        void *c = t->c[b];
        if (check)
            TRY_RUN(t, abft_before_gemm(t->abft, t->seq), "ordering a GEMM after its buffer's check");
        if (blas_gemm_run(gemm, t->a, t->b, c)) {
            t->g->state = BURN_GPU_RUN_ERROR;
            snprintf(t->g->error, sizeof t->g->error, "%s", blas_gemm_error(gemm));
            return -EIO;
        }
        if (check)
            TRY_RUN(t, abft_after_gemm(t->abft, c, t->seq, (uint32_t)b), "queuing a GEMM check");
        if (!one_buffer) {
            t->seq++;
            *next = (*next + 1) % t->n_c;
        }
    }
    return 0;
}

/* Runs GEMM batches until the monotonic clock reaches until_s, never more than two batches in
 * flight; *count gets the GEMMs queued. ev_start/ev_stop bracket them. */
static int s_run_until(gpu_thread_t *t, double until_s, size_t *next, bool one_buffer,
                       uint64_t *count, float *ms)
{
    *count = 0;
    TRY_RUN(t, gpuEventRecord(t->ev_start, t->stream), "recording an event");
    for (unsigned j = 0;; j++) {
        if (s_queue(t, t->batch, next, one_buffer))
            return -EIO;
        *count += t->batch;
        TRY_RUN(t, gpuEventRecord(t->ev_batch[j & 1], t->stream), "recording an event");
        if (j > 0)
            TRY_RUN(t, gpuEventSynchronize(t->ev_batch[(j - 1) & 1]), "running GEMMs");
        if (fb_mono_s() >= until_s)
            break;
    }
    TRY_RUN(t, gpuEventRecord(t->ev_stop, t->stream), "recording an event");
    TRY_RUN(t, gpuEventSynchronize(t->ev_stop), "running GEMMs");
    TRY_RUN(t, gpuEventElapsedTime(ms, t->ev_start, t->ev_stop), "timing GEMMs");
    return 0;
}

static int s_peak(gpu_thread_t *t)
{
    size_t next = 0;
    uint64_t count = 0;
    float ms = 0;
    t->phase = PHASE_PEAK;
    if (s_run_until(t, fb_mono_s() + BURN_PEAK_WARM_S, &next, true, &count, &ms) ||
        s_run_until(t, fb_mono_s() + BURN_PEAK_S, &next, true, &count, &ms))
        return -EIO;
    if (ms > 0)
        t->g->peak_tflops = (double)count * s_gemm_flops(t->run->cfg.matrix) / (ms * 1e-3) / 1e12;
    return 0;
}

/* "C[3] row 5 col 9 = 1.5, C[0] has 0.75" for a mismatch key: reads the two elements back. */
static void s_describe(gpu_thread_t *t, uint64_t key, const void *ref_buf, burn_storage_t ref_st,
                       const char *ref_name, bool kat, char *out, size_t len)
{
    const burn_config_t *cfg = &t->run->cfg;
    burn_storage_t st = burn_out_storage(cfg->dtype);
    size_t esz = burn_storage_size(st), e = burn_key_element(key), b = burn_key_buffer(key);
    uint64_t got_raw = 0, ref_raw = 0;
    const void *got_buf = kat ? t->kout : t->c[b < t->n_c ? b : 0];
    char where[96];
    burn_format_key(key, cfg->matrix, where, sizeof where);
    if (kat) /* the known-answer result is one buffer of its own */
        snprintf(where, sizeof where, "row %" PRIu64 " col %" PRIu64, (uint64_t)(e % cfg->matrix),
                 (uint64_t)(e / cfg->matrix));
    bool read = gpuMemcpy(&got_raw, (const char *)got_buf + e * esz, esz, gpuMemcpyDeviceToHost) ==
                gpuSuccess;
    if (ref_buf)
        read = read && gpuMemcpy(&ref_raw, (const char *)ref_buf + e * burn_storage_size(ref_st),
                                 burn_storage_size(ref_st), gpuMemcpyDeviceToHost) == gpuSuccess;
    if (!read) {
        snprintf(out, len, "%s", where);
        return;
    }
    double got = burn_load(&got_raw, 0, st);
    if (ref_buf)
        snprintf(out, len, "%s%s = %.9g, %s %.9g", kat ? "known-answer " : "", where, got, ref_name,
                 burn_load(&ref_raw, 0, ref_st));
    else
        snprintf(out, len, "%s%s = %.9g", kat ? "known-answer " : "", where, got);
}

/* The interval's checksum counters and test-only flips into g, with a log line per flip. */
static int s_collect_checksums(gpu_thread_t *t, unsigned interval)
{
    burn_gpu_t *g = t->g;
    burn_abft_state_t *state = (burn_abft_state_t *)xmalloc(sizeof *state); /* 4.6 KB */
    burn_abft_injection_t inj[BURN_ABFT_MAX_INJECTIONS];
    size_t n_inj = 0;
    gpuError_t err = abft_collect(t->abft, state, inj, &n_inj);
    if (err != gpuSuccess) {
        free(state);
        return s_gpu_fail(t, BURN_GPU_RUN_ERROR, "reading the checksum counters", err);
    }
    burn_gpu_add_abft(g, interval, t->run->cfg.matrix, state, inj, n_inj);
    for (size_t i = 0; i < n_inj; i++) {
        if (inj[i].bit < 0)
            worker_log(t->run->ctx, "gpu%d: inject_corrupt=gemm: GEMM %" PRIu64 " has no element "
                       "with a suitable bit near the chosen one; not corrupted", g->device,
                       inj[i].gemm);
        else
            worker_log(t->run->ctx, "gpu%d: inject_corrupt=gemm: GEMM %" PRIu64 " (C[%u]) row %"
                       PRIu64 " col %" PRIu64 ": bit %d flipped, %.9g -> %.9g (by %.4g; tolerance "
                       "there %.4g)", g->device, inj[i].gemm, inj[i].buffer, inj[i].row,
                       inj[i].col, inj[i].bit, inj[i].before, inj[i].after,
                       fabs(inj[i].after - inj[i].before), inj[i].bound);
    }
    t->last_checked = state->checked;
    t->last_bad = state->gemms_bad;
    memcpy(&t->last_ratio, &state->max_ratio_bits, sizeof t->last_ratio);
    free(state);
    return 0;
}

/* inject_corrupt=gemm: picks cfg.inject_gemms (interval, GEMM) pairs from the seed; a GEMM is
 * taken among the first quarter of the interval's expected GEMMs, so it is reached even when the
 * GPU slows down. */
static void s_plan_injections(gpu_thread_t *t, unsigned n_intervals)
{
    const burn_config_t *cfg = &t->run->cfg;
    burn_gpu_t *g = t->g;
    for (unsigned k = 0; k < cfg->inject_gemms; k++) {
        uint64_t h = fb_mix64(cfg->inject_seed + k + 1);
        unsigned it = (unsigned)(h % n_intervals);
        double len_ms = (double)cfg->interval_ms;
        if (len_ms > (double)cfg->duration_ms - (double)it * (double)cfg->interval_ms)
            len_ms = (double)cfg->duration_ms - (double)it * (double)cfg->interval_ms;
        double expect = 0.25 * len_ms / (t->burn_ms > 0 ? t->burn_ms : 1);
        uint64_t span = expect < 1 ? 1 : (uint64_t)expect;
        t->inj_interval[k] = it;
        t->inj_offset[k] = fb_mix64(h) % span;
    }
    g->abft_planned = cfg->inject_gemms;
    g->injected = BURN_INJECT_GEMM;
    worker_log(t->run->ctx, "gpu%d: inject_corrupt=gemm: %u GEMM(s) of random intervals get one "
               "flipped bit before their check (inject_seed=%" PRIu64 ")", g->device,
               cfg->inject_gemms, cfg->inject_seed);
}

/* Arms the planned flips of interval it, relative to the GEMMs queued so far. */
static void s_arm_injections(gpu_thread_t *t, unsigned it)
{
    const burn_config_t *cfg = &t->run->cfg;
    for (unsigned k = 0; k < cfg->inject_gemms; k++)
        if (t->inj_interval[k] == it)
            abft_arm_injection(t->abft, t->seq + t->inj_offset[k], cfg->inject_seed ^ (k + 1));
}

/* The verification at the end of an interval; written = GEMMs since the burn began. */
static int s_verify(gpu_thread_t *t, unsigned interval, uint64_t written, size_t last)
{
    run_t *run = t->run;
    burn_gpu_t *g = t->g;
    const burn_config_t *cfg = &run->cfg;
    const uint64_t n = cfg->matrix, n2 = n * n;
    const burn_storage_t out = burn_out_storage(cfg->dtype);
    const size_t valid = written < t->n_c ? (size_t)written : t->n_c;

    if (t->abft && s_collect_checksums(t, interval))
        return -EIO;
    s_reset_counters<<<1, 1, 0, t->stream>>>(t->d_cnt, 2);
    if (t->inject && interval == 0 &&
        (cfg->inject == BURN_INJECT_FLIP || cfg->inject == BURN_INJECT_NAN)) {
        /* Into the last buffer written, never C[0] (the one the others are compared with). */
        size_t victim = last == 0 && valid > 1 ? 1 : last;
        DISPATCH_IN(out, s_inject, 1, 1, t->stream, t->c[victim], n2, (int)cfg->inject,
                    burn_result_rms(n) / 2, (size_t)(n2 / 2 + 12345) % n2, (uint32_t)victim,
                    &t->d_cnt[0]);
        g->injected = cfg->inject;
    }
    burn_tol_t tol = burn_tol_repeat(cfg->dtype, n);
    s_launch_check(t, out, false, t->c[0], NULL, n2, tol, 0, &t->d_cnt[0]);
    for (size_t i = 1; i < valid; i++)
        s_launch_check(t, out, false, t->c[i], t->c[0], n2, tol, (uint32_t)i, &t->d_cnt[0]);
    if (blas_gemm_run(t->gemm_burn, t->ka, t->kb, t->kout)) {
        g->state = BURN_GPU_RUN_ERROR;
        snprintf(g->error, sizeof g->error, "known-answer GEMM: %s",
                 blas_gemm_error(t->gemm_burn));
        return -EIO;
    }
    s_launch_check(t, out, true, t->kout, t->kref, n2, burn_tol_kat(cfg->dtype), 0, &t->d_cnt[1]);
    TRY_RUN(t, gpuGetLastError(), "launching verification kernels");
    TRY_RUN(t,
            gpuMemcpyAsync(t->h_cnt, t->d_cnt, 2 * sizeof(burn_counters_t), gpuMemcpyDeviceToHost,
                           t->stream),
            "reading verification counters");
    TRY_RUN(t, gpuEventRecord(t->ev_done, t->stream), "recording an event");
    TRY_RUN(t, gpuEventSynchronize(t->ev_done), "verifying results");

    const burn_counters_t *rep = &t->h_cnt[0], *kat = &t->h_cnt[1];
    if (rep->mismatches && !g->repeat_detail[0])
        s_describe(t, rep->first_mismatch, t->c[0], out, "C[0] has", false, g->repeat_detail,
                   sizeof g->repeat_detail);
    if (rep->nonfinite && !g->nonfinite_detail[0])
        s_describe(t, rep->first_nonfinite, NULL, out, "", false, g->nonfinite_detail,
                   sizeof g->nonfinite_detail);
    else if (kat->nonfinite && !g->nonfinite_detail[0])
        s_describe(t, kat->first_nonfinite, NULL, out, "", true, g->nonfinite_detail,
                   sizeof g->nonfinite_detail);
    if (kat->mismatches && !g->kat_detail[0])
        s_describe(t, kat->first_mismatch, t->kref, BURN_ST_FP32, "exact answer", true,
                   g->kat_detail, sizeof g->kat_detail);
    burn_counters_add(&g->repeat, rep);
    burn_counters_add(&g->kat, kat);
    g->kat_checked++;
    if (t->sdc) {
        const sdc_sample_t *samples = NULL;
        size_t n_samples = 0;
        TRY_RUN(t,
                sdc_probe_run(t->sdc, t->stream, BURN_SEED_SDC + interval, g->sdc_inject_sm,
                              &samples, &n_samples, &g->sdc_ms),
                "running the SDC probe");
        burn_gpu_add_sdc(g, samples, n_samples);
    }
    return 0;
}

/* SMs the SDC probe has named so far. */
static unsigned s_odd_sms(const burn_gpu_t *g)
{
    unsigned n = 0;
    for (unsigned sm = 0; sm < g->sdc_sm_cap; sm++)
        n += g->sdc_sm_off[sm] > 0;
    return n;
}

static void s_burn(gpu_thread_t *t)
{
    run_t *run = t->run;
    burn_gpu_t *g = t->g;
    const burn_config_t *cfg = &run->cfg;
    const double t0 = fb_mono_s(), end = t0 + (double)cfg->duration_ms / 1000.0;
    const double interval_s = (double)cfg->interval_ms / 1000.0;
    const unsigned n_intervals =
        (unsigned)((cfg->duration_ms + cfg->interval_ms - 1) / cfg->interval_ms);
    size_t next = 0;
    uint64_t written = 0;
    t->phase = PHASE_BURN;
    if (t->inject && cfg->inject == BURN_INJECT_GEMM && t->abft)
        s_plan_injections(t, n_intervals);
    for (unsigned it = 0; it < n_intervals; it++) {
        if (t->inject && cfg->inject == BURN_INJECT_GEMM && t->abft)
            s_arm_injections(t, it);
        double until = t0 + interval_s * (it + 1);
        if (until > end || it + 1 == n_intervals)
            until = end;
        uint64_t count = 0;
        float ms = 0;
        if (s_run_until(t, until, &next, false, &count, &ms))
            return;
        written += count;
        g->gemms += count;
        double tflops = ms > 0 ? (double)count * s_gemm_flops(cfg->matrix) / (ms * 1e-3) / 1e12 : 0;
        burn_gpu_add_interval(g, tflops);
        t->last_tflops = tflops;
        uint64_t before_rep = g->repeat.mismatches,
                 before_nan = g->repeat.nonfinite + g->kat.nonfinite,
                 before_kat = g->kat.mismatches;
        if (s_verify(t, it, written, (next + t->n_c - 1) % t->n_c))
            return;
        char checks[160] = "", sdc[96] = "";
        if (t->abft)
            snprintf(checks, sizeof checks,
                     "; checksums of %" PRIu64 " GEMMs: %" PRIu64 " bad (largest %.3f of "
                     "tolerance)",
                     t->last_checked, t->last_bad, (double)t->last_ratio);
        if (t->sdc)
            snprintf(sdc, sizeof sdc, "; SDC probe %.1f ms over %u SMs, %u odd SM(s) so far",
                     g->sdc_ms, g->sdc_sms, s_odd_sms(g));
        worker_log(run->ctx,
                   "gpu%d interval %u/%u: %.1f TFLOPS (%" PRIu64 " GEMMs in %.2f s); %" PRIu64
                   " miscompares over %zu buffers, %" PRIu64 " NaN/Inf, known answer %s%s%s",
                   g->device, it + 1, n_intervals, tflops, count, ms / 1000.0,
                   g->repeat.mismatches - before_rep, (size_t)(written < t->n_c ? written : t->n_c),
                   g->repeat.nonfinite + g->kat.nonfinite - before_nan,
                   g->kat.mismatches == before_kat ? "ok" : "WRONG", checks, sdc);
    }
}

/* ---- threads --------------------------------------------------------------------------------- */

static void s_teardown(gpu_thread_t *t)
{
    if (t->stream)
        (void)gpuStreamSynchronize(t->stream);
    abft_destroy(&t->abft);
    sdc_probe_destroy(&t->sdc);
    if (t->gemm_burn != t->gemm)
        blas_gemm_destroy(&t->gemm_burn);
    t->gemm_burn = NULL;
    blas_gemm_destroy(&t->gemm);
    blas_close(&t->blas);
    for (size_t i = 0; t->c && i < t->n_c; i++)
        (void)gpuFree(t->c[i]);
    free(t->c);
    t->c = NULL;
    void *bufs[] = {t->a, t->b, t->ka, t->kb, t->kout, t->kref, t->d_cnt};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            (void)gpuFree(bufs[i]);
    if (t->h_cnt)
        (void)gpuFreeHost(t->h_cnt);
    gpuEvent_t evs[] = {t->ev_start, t->ev_stop, t->ev_batch[0], t->ev_batch[1], t->ev_done};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (evs[i])
            (void)gpuEventDestroy(evs[i]);
    if (t->stream)
        (void)gpuStreamDestroy(t->stream);
    (void)gpuGetLastError();
}

static void *s_gpu_main(void *arg)
{
    gpu_thread_t *t = (gpu_thread_t *)arg;
    run_t *run = t->run;
    bool ok = s_setup(t) == 0;
    if (!ok)
        t->phase = PHASE_DONE; /* for progress: nothing more from this GPU */
    s_gate_wait(&run->gate);   /* everyone set up: peak together */
    if (ok)
        ok = s_peak(t) == 0;
    if (!ok)
        t->phase = PHASE_DONE;
    s_gate_wait(&run->gate); /* burn together */
    if (ok)
        s_burn(t);
    s_teardown(t);
    t->phase = PHASE_DONE;
    run->finished++;
    return NULL;
}

/* Reports progress until every GPU thread is done. */
static void s_watch(run_t *run)
{
    const char *dt = burn_dtype_name(run->cfg.dtype);
    double burn_start = 0, duration = (double)run->cfg.duration_ms / 1000.0;
    while (run->finished.load() < run->n) {
        int phase = PHASE_DONE;
        double sum = 0;
        size_t burning = 0;
        for (size_t i = 0; i < run->n; i++) {
            int p = run->threads[i].phase.load();
            if (p < phase)
                phase = p;
            if (p == PHASE_BURN) {
                burning++;
                sum += run->threads[i].last_tflops.load();
            }
        }
        if (burning && burn_start == 0)
            burn_start = fb_mono_s();
        if (phase == PHASE_SETUP)
            worker_progress(run->ctx, 0, "gpuburn %s: setting up %zu GPU(s)", dt, run->n);
        else if (phase == PHASE_PEAK)
            worker_progress(run->ctx, 0, "gpuburn %s: measuring the BLAS peak", dt);
        else if (burning) {
            double f = (fb_mono_s() - burn_start) / duration;
            worker_progress(run->ctx, f < 0.99 ? f : 0.99,
                            "gpuburn %s on %zu GPU(s): %.1f TFLOPS (sum of the last intervals)", dt,
                            burning, sum);
        }
        s_sleep_s(0.5);
    }
}

static fb_verdict_t s_run(worker_ctx_t *ctx)
{
    fb_result_t *res = worker_result(ctx);
    /* gpuN is the PCI bus order index, as nvidia-smi, NVML and the inventory number GPUs. */
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
    run_t *run = new run_t();
    run->ctx = ctx;
    if (burn_config_parse(ctx, &run->cfg)) {
        delete run;
        return FB_VERDICT_ERROR;
    }
    int visible = 0;
    gpuError_t err = gpuGetDeviceCount(&visible);
    if (err != gpuSuccess || visible <= 0) {
        delete run;
        return gpu_no_devices(ctx, "gpuburn", FB_GPU_VENDOR, err != gpuSuccess ? gpuGetErrorString(err) : "no devices");
    }
    int *devs = NULL;
    size_t n = 0;
    int rc = gpu_parse_devices(run->cfg.devices, visible, &devs, &n);
    if (rc) {
        fb_result_set_error(res, "gpuburn: devices '%s' %s (%d GPU(s) visible: 0-%d)",
                            run->cfg.devices,
                            rc == -ENODEV ? "names a GPU that is not there"
                                          : "must be all or a list of distinct indices",
                            visible, visible - 1);
        delete run;
        return FB_VERDICT_ERROR;
    }
    run->n = n;
    run->gpus = (burn_gpu_t *)xcalloc(n, sizeof *run->gpus);
    run->threads = new gpu_thread_t[n]();
    pthread_mutex_init(&run->gate.lock, NULL);
    pthread_cond_init(&run->gate.cond, NULL);
    run->gate.expected = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        run->gpus[i].device = devs[i];
        run->gpus[i].sdc_inject_sm = -1;
        run->threads[i].run = run;
        run->threads[i].g = &run->gpus[i];
        run->threads[i].inject = i == 0 && run->cfg.inject != BURN_INJECT_NONE;
    }
    free(devs);
    worker_log(ctx,
               "gpuburn: %s %" PRIu64 "^3 on %zu GPU(s) for %.0f s, verified every %.1f s; "
               "mem_fraction %.2f; checksums of every GEMM %s; SDC probe %s%s%s",
               burn_dtype_name(run->cfg.dtype), run->cfg.matrix, n,
               (double)run->cfg.duration_ms / 1000.0, (double)run->cfg.interval_ms / 1000.0,
               run->cfg.mem_fraction, run->cfg.abft ? "on" : "off (abft=false)",
               run->cfg.sdc ? "on" : "off (sdc_probe=false)",
               run->cfg.inject ? "; inject_corrupt=" : "",
               run->cfg.inject ? burn_inject_name(run->cfg.inject) : "");

#ifdef BURN_TELEMETRY
    telemetry_t *telemetry = telemetry_start(ctx, 1.0);
#endif
    size_t started = 0;
    for (size_t i = 0; i < n; i++) {
        if (pthread_create(&run->threads[i].tid, NULL, s_gpu_main, &run->threads[i])) {
            burn_gpu_t *g = &run->gpus[i];
            g->state = BURN_GPU_SETUP_ERROR;
            snprintf(g->error, sizeof g->error, "cannot start a host thread for it");
            run->threads[i].phase = PHASE_DONE;
            run->finished++;
            continue;
        }
        run->threads[i].started = true;
        started++;
    }
    s_gate_expect(&run->gate, started);
    s_watch(run);
    for (size_t i = 0; i < n; i++)
        if (run->threads[i].started)
            pthread_join(run->threads[i].tid, NULL);
    int faults = 0;
#ifdef BURN_TELEMETRY
    faults = telemetry_stop(&telemetry, ctx);
    if (faults < 0) {
        worker_log(ctx, "gpuburn: telemetry unavailable (%s)", strerror(-faults));
        faults = 0;
    }
#endif

    fb_verdict_t verdict = burn_judge(res, worker_node(ctx), &run->cfg, run->gpus, n, faults);
    char *summary = burn_summary(&run->cfg, run->gpus, n, verdict);
    worker_log(ctx, "%s", summary);
    free(summary);

    for (size_t i = 0; i < n; i++)
        burn_gpu_clear(&run->gpus[i]);
    free(run->gpus);
    delete[] run->threads;
    pthread_mutex_destroy(&run->gate.lock);
    pthread_cond_destroy(&run->gate.cond);
    delete run;
    return verdict;
}

/* Metrics as "gpu0: tflops_median=689.3 TFLOPS, ..." lines, one per GPU and one for the rest, so
 * that a run read from stdout alone shows everything the result file holds. */
static void s_log_metrics(worker_ctx_t *ctx, const fb_result_t *res)
{
    char *lines[65] = {NULL}; /* gpu0..gpu63, then the overall ones */
    for (size_t i = 0; i < res->n_metrics; i++) {
        const fb_metric_t *m = &res->metrics[i];
        int gpu = -1, used = 0;
        const char *name = m->name;
        if (sscanf(m->name, "gpu%d.%n", &gpu, &used) == 1 && used > 0 && gpu >= 0 && gpu < 64)
            name += used;
        else
            gpu = 64;
        char *line = lines[gpu];
        lines[gpu] = xasprintf("%s%s%s=%.6g%s%s", line ? line : "", line ? ", " : "", name,
                               m->value, m->unit && *m->unit ? " " : "", m->unit ? m->unit : "");
        free(line);
    }
    for (int i = 0; i <= 64; i++) {
        if (!lines[i])
            continue;
        if (i < 64)
            worker_log(ctx, "gpuburn metrics gpu%d: %s", i, lines[i]);
        else
            worker_log(ctx, "gpuburn metrics: %s", lines[i]);
        free(lines[i]);
    }
}

fb_verdict_t gpuburn_run(worker_ctx_t *ctx)
{
    fb_verdict_t verdict = s_run(ctx);
    fb_result_t *res = worker_result(ctx);
    s_log_metrics(ctx, res);
    for (size_t i = 0; i < res->n_findings; i++)
        worker_log(ctx, "gpuburn finding %s: %s", res->findings[i].part, res->findings[i].what);
    worker_log(ctx, "gpuburn verdict %s%s%s", fb_verdict_name(verdict), res->error ? ": " : "",
               res->error ? res->error : "");
    worker_progress(ctx, 1.0, "gpuburn %s", fb_verdict_name(verdict));
    return verdict;
}
