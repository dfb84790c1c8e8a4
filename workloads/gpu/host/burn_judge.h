/* SPDX-License-Identifier: Apache-2.0 */
/* Host-side decisions of the gpuburn workload, in plain C so they are unit-tested without a GPU:
 * its parameters, the `devices` selection, statistics over the per-interval TFLOPS, the absolute
 * and relative (same model, same task) floors, and turning what each GPU measured and counted
 * into metrics, findings on "<node>/gpuN" and the verdict. gpuburn.cu drives the GPUs and fills
 * one burn_gpu_t per GPU; burn_judge() reads them. */
#ifndef FB_BURN_JUDGE_H
#define FB_BURN_JUDGE_H

#include "burn_abft.h"
#include "burn_verify.h"
#include "sdc_vote.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* worker.h and result.h are C headers without C++ guards: gpuburn.cu sees them through here. */
#ifdef __cplusplus
extern "C" {
#endif

#include "common/result.h"
#include "worker.h"

/* inject_corrupt (test-only). */
typedef enum {
    BURN_INJECT_NONE = 0,
    BURN_INJECT_FLIP,       /* one element of one result buffer: its top mantissa bit flipped */
    BURN_INJECT_NAN,        /* one element of one result buffer set to NaN */
    BURN_INJECT_SYSTEMATIC, /* one known-answer operand changed: every repeat identically wrong */
    BURN_INJECT_GEMM,       /* one bit of one element of random burn GEMMs, before their check */
    BURN_INJECT_SDC,        /* the SDC probe's blocks on one SM report a wrong result */
} burn_inject_t;

/* Most GEMMs inject_corrupt=gemm corrupts in one run (inject_gemms). */
#define BURN_MAX_INJECT_GEMMS 32

/* "none", "flip", "nan", "systematic", "gemm", "sdc". */
const char *burn_inject_name(burn_inject_t inject);

typedef struct {
    burn_dtype_t dtype;
    uint64_t duration_ms, interval_ms;
    uint64_t matrix; /* M = N = K, a multiple of 16 */
    double mem_fraction;
    const char *devices; /* borrowed from the context: "all" or "0,2,3" */
    bool has_min_tflops;
    double min_tflops;   /* absolute floor on a GPU's median TFLOPS */
    double min_relative; /* floor as a fraction of the median of the GPUs of the same model */
    bool abft;           /* every burn GEMM checked by block checksums (abft) */
    int abft_sms;        /* SMs left to the checks beside the GEMMs; 0 inline; -1 auto */
    bool sdc;            /* the SDC probe once per interval (sdc_probe) */
    burn_inject_t inject;
    unsigned inject_gemms; /* inject_corrupt=gemm: how many GEMMs */
    uint64_t inject_seed;  /* which GEMMs, elements and SM; from the clock unless given */
} burn_config_t;

/* fp8's default matrix. The checksums read each result once, and an fp8 GEMM at 8192^3 is so
 * short (0.75 ms on an H100) against reading its result that the checks need 5-6 SMs beside it
 * and cost 1.7-4.0% of the same run's peak; the work grows with k and the result only with m*n,
 * so at 24576^3 a check after each GEMM costs about 1% (H200: 0.5-0.9% in two runs,
 * bench/results/h200-2026-11-28-abft-fp8-sizes.txt). gpu-burn has no fp8 mode to compare with at
 * 8192; the other dtypes keep 8192. */
#define BURN_FP8_MATRIX "24576"
/* Reads gpuburn's parameters from ctx (defaults as in scheduler/workload.c). On a bad value or a
 * refused inject_corrupt, inject_gemms or inject_seed (fault injection not allowed) sets the
 * result's error and returns -EINVAL; -EPERM for the refused injection. A matrix that is not a multiple of 16 is rounded
 * down (logged), as the BLAS libraries need 16-element alignment for fp8 and run fastest so. */
int burn_config_parse(worker_ctx_t *ctx, burn_config_t *cfg);


/* The median of n values (NAN when n is 0); v is not modified. */
double burn_median(const double *v, size_t n);
/* The smallest of n values (NAN when n is 0). */
double burn_min(const double *v, size_t n);

typedef enum {
    BURN_GPU_OK = 0,      /* burned (maybe with errors found) */
    BURN_GPU_UNSUPPORTED, /* the dtype does not run on this GPU (fp8 before sm_89, tf32 on ROCm) */
    BURN_GPU_SETUP_ERROR, /* could not start: allocation, library, ... (error) */
    BURN_GPU_RUN_ERROR,   /* the runtime failed while the GPU was under load (a GPU fault) */
} burn_gpu_state_t;

#define BURN_MAX_INTERVALS 100000

/* What one GPU did, filled by gpuburn.cu. */
typedef struct {
    int device;    /* runtime index (PCI bus order) */
    char pci[32];  /* "0000:19:00.0" */
    char name[96]; /* model */
    burn_gpu_state_t state;
    char error[320];    /* why, for every state but OK */
    char blas[160];     /* the GEMM implementation and algorithm */
    double peak_tflops; /* plain GEMM loop before the burn; 0 when not measured */
    double *tflops;     /* per interval (heap, owned; burn_gpu_clear frees) */
    size_t n_intervals, cap_intervals;
    uint64_t gemms;     /* burn GEMMs completed */
    uint64_t c_buffers; /* result matrices the burn cycles through */
    uint64_t matrix;
    uint64_t mem_bytes;         /* GPU memory the burn allocated */
    burn_counters_t repeat;     /* repeats vs the first buffer, NaN/Inf over all buffers */
    burn_counters_t kat;        /* known-answer GEMMs vs the exact answer */
    uint64_t kat_checked;       /* known-answer checks run */
    char repeat_detail[200];    /* first miscompare: "C[3] row 5 col 9: 1.5, C[0] has 0.75" */
    char nonfinite_detail[200]; /* first NaN/Inf */
    char kat_detail[200];       /* first known-answer error */
    burn_inject_t injected;     /* what was injected into this GPU */

    /* Checksums of every burn GEMM (burn_abft.h). */
    bool abft;                /* they ran */
    unsigned abft_sms;        /* SMs they ran on beside the GEMMs; 0: after each GEMM */
    double abft_threshold;    /* smallest single-element error always found, in element RMS */
    uint64_t abft_checked;    /* burn GEMMs whose checksums were compared */
    uint64_t abft_gemms_bad;  /* of them, GEMMs with a checksum off */
    uint64_t abft_sums_off;   /* block checksums off */
    double abft_max_ratio;    /* largest |sum - reference| / tolerance seen */
    char abft_detail[320];    /* the first bad GEMM, with its interval */
    unsigned abft_planned;    /* inject_corrupt=gemm: GEMMs planned */
    unsigned abft_injected;   /* flips done */
    unsigned abft_found;      /* of them, in a GEMM the checksums flagged */
    unsigned abft_located;    /* of them, flagged at the flipped element's row and column */

    /* The silent-data-corruption probe (sdc_vote.h), once per interval. */
    unsigned sdc_probes;      /* probes run */
    unsigned sdc_sms;         /* distinct SMs that ran probe blocks (most in one probe) */
    unsigned sdc_gpu_sms;     /* the GPU's multiprocessor count */
    uint64_t sdc_blocks;      /* probe blocks compared */
    uint64_t sdc_blocks_off;  /* of them, off their probe's majority */
    unsigned sdc_no_majority; /* probes without a majority */
    unsigned *sdc_sm_off;     /* per SM id: probes in which it disagreed (heap, sdc_sm_cap) */
    unsigned sdc_sm_cap;
    uint64_t *sdc_digest;     /* per probe: its majority digest, 0 without one (heap) */
    double sdc_ms;            /* GPU time of the last probe */
    int sdc_inject_sm;        /* test-only: the SM made to report wrong results, -1 none */
} burn_gpu_t;

/* Records one interval's TFLOPS (grows the array). */
void burn_gpu_add_interval(burn_gpu_t *g, double tflops);
/* Records one interval's checksum counters and the flips done in it: a flip is found when the
 * checksums flagged its GEMM, located when at its row and column. */
void burn_gpu_add_abft(burn_gpu_t *g, unsigned interval, uint64_t n, const burn_abft_state_t *st,
                       const burn_abft_injection_t *inj, size_t n_inj);
/* Records one SDC probe of this GPU (samples: one per block). */
void burn_gpu_add_sdc(burn_gpu_t *g, const sdc_sample_t *samples, size_t n);
/* Frees what g owns and zeroes it. */
void burn_gpu_clear(burn_gpu_t *g);

/* Adds the metrics of every GPU (gpuN.tflops_min, .tflops_median, .blas_peak_tflops,
 * .burn_vs_peak, .errors, .nan_inf, .kat_errors, .gemms, .c_buffers, .intervals,
 * .dtype_unsupported, .abft_*, .sdc_*) and overall ones (tflops_median: median of the GPUs'
 * medians, gpus, telemetry_faults) to res, one finding on "<node>/gpuN" (node "" or NULL is
 * "localhost") per problem (kind "gpu", "sdc" for the SDC probe), and returns the verdict:
 *   fail     a GPU miscompared, produced NaN/Inf, failed the known-answer check, gave a GEMM
 *            whose checksums are off, had an SM (or was the GPU) whose SDC probe result differs
 *            from the majority, failed under load, or ran below min_tflops or below
 *            min_relative x the median of its model; or telemetry saw new GPU faults
 *            (telemetry_faults > 0; telemetry_stop has added the findings naming the GPUs, this
 *            adds the metric telemetry_faults);
 *   error    otherwise, when a GPU could not be set up, the checksums did not cover every burn
 *            GEMM, or an injected corruption went unseen;
 *   skipped  when no GPU could run the dtype (every GPU unsupported) or n is 0;
 *   pass     otherwise.
 * The result's error text says why for error and skipped. */
fb_verdict_t burn_judge(fb_result_t *res, const char *node, const burn_config_t *cfg,
                        const burn_gpu_t *gpus, size_t n, int telemetry_faults);

/* One line for stdout and the timeline, e.g. "gpuburn pass bf16 8192: gpu0 NVIDIA H200 689.3
 * TFLOPS median (min 684.0, peak 694.2 = 99.3%), 0 miscompares, 0 NaN/Inf, 0 known-answer errors;
 * gpu1 ..." (heap string the caller frees). */
char *burn_summary(const burn_config_t *cfg, const burn_gpu_t *gpus, size_t n,
                   fb_verdict_t verdict);

#ifdef __cplusplus
}
#endif

#endif
