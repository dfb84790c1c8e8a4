/* SPDX-License-Identifier: Apache-2.0 */
/* gpuburn's insides, shared by the files that make up the workload (gpuburn.cu has the whole
 * picture): gpuburn.cu (the peak loop, the burn and its intervals, the threads, the workload's
 * entry), gpuburn_setup.cu (one GPU's setup: memory, operands, the library's plan, where the
 * checksums run, the SDC probe) and gpuburn_kernels.cu (the fill, reference, injection and
 * comparison kernels, and their launches over the element storages). Nothing else includes it. */
#ifndef FB_GPUBURN_INTERNAL_H
#define FB_GPUBURN_INTERNAL_H

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

/* Records "what: runtime error" on the GPU with the given state; returns -EIO. */
static inline int burn__gpu_fail(gpu_thread_t *t, burn_gpu_state_t state, const char *what, gpuError_t err)
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
            return burn__gpu_fail((t), BURN_GPU_SETUP_ERROR, (what), try_err_);                        \
    } while (0)

#define TRY_RUN(t, call, what)                                                                     \
    do {                                                                                           \
        gpuError_t try_err_ = (call);                                                              \
        if (try_err_ != gpuSuccess)                                                                \
            return burn__gpu_fail((t), BURN_GPU_RUN_ERROR, (what), try_err_);                          \
    } while (0)

static inline unsigned burn__blocks(const gpu_thread_t *t, size_t n)
{
    size_t want = (n + 255) / 256, cap = (size_t)(t->sms > 0 ? t->sms : 32) * 8;
    return (unsigned)(want < cap ? (want ? want : 1) : cap);
}

/* ---- gpuburn_kernels.cu ------------------------------------------------------------------------ */

/* The operands A and B (random), the known-answer operands and their reference, on t's stream. */
void burn__fill_operands(gpu_thread_t *t, burn_storage_t in, uint64_t n, int range,
                         unsigned stride);
/* Zeroes the two interval counters t->d_cnt[0..1]. */
void burn__reset_counters(gpu_thread_t *t);
/* Test-only corruption of one element of p (storage st, n elements; burn_config_t.inject's
 * modes), recorded in cnt. */
void burn__inject(gpu_thread_t *t, burn_storage_t st, void *p, size_t n, int mode,
                  double threshold, size_t start, uint32_t buffer, burn_counters_t *cnt);
/* Compares a result of storage out with a reference of the same storage (ref_is_f32 false; NULL:
 * only the NaN/Inf scan) or fp32 (the known-answer reference), into cnt. */
void burn__launch_check(gpu_thread_t *t, burn_storage_t out, bool ref_is_f32, const void *got,
                        const void *ref, size_t n, burn_tol_t tol, uint32_t buffer,
                        burn_counters_t *cnt);

/* ---- gpuburn_setup.cu -------------------------------------------------------------------------- */

/* Sets up t's GPU for the burn (docs/workloads.md "gpuburn"); 0, or -EIO/-ENOMEM with the GPU's
 * state and error set. */
int burn__setup(gpu_thread_t *t);

#endif
