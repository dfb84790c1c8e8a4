/* SPDX-License-Identifier: Apache-2.0 */
/* The judging of gpuburn's two result-fidelity checks that go beyond the end-of-interval ones:
 * the checksums of every burn GEMM (burn_abft.h) and the silent-data-corruption probe
 * (sdc_vote.h). burn_judge() calls these for every GPU it burned and once for the GPUs together;
 * they add metrics and findings to the result. Internal to host/. */
#ifndef FB_BURN_FIDELITY_H
#define FB_BURN_FIDELITY_H

#include "burn_judge.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The node's headline figures of a burn, over its GPUs: burn GEMMs, how many were checked by
 * checksums, and the largest cost against a GPU's own unchecked peak in the same run. */
typedef struct {
    uint64_t gemms, checked;
    size_t gpus_checked;  /* GPUs that ran the checksums */
    double worst_vs_peak; /* lowest burn_vs_peak; 0 = none measured */
} burn_node_figures_t;

void burn_node_figures_add(burn_node_figures_t *fig, const burn_gpu_t *g);
/* gemms, gemms_checked (with checksums on) and overhead_vs_peak_pct = 100 (1 - lowest
 * burn_vs_peak) (with a peak measured). */
void burn_node_figures_set(fb_result_t *res, const burn_node_figures_t *fig);

/* gpuN.abft_* metrics and, when a GEMM's checksums disagreed, a finding of kind "checksum" on
 * part (sets *fail). Returns a, a finding on part (sets *fail). Returns a
 * heap text for the task's error when the checks did not cover every burn GEMM, else NULL. */
char *burn_judge_abft(fb_result_t *res, const char *part, const char *who, const burn_gpu_t *g,
                      const burn_config_t *cfg, bool *fail);

/* gpuN.sdc_* metrics and findings of kind "sdc" on part for SMs that disagreed with the majority
 * of the GPU's SMs, or probes without a majority (sets *fail). */
void burn_judge_sdc(fb_result_t *res, const char *part, const char *who, const burn_gpu_t *g,
                    bool *fail);

/* The probes compared across the GPUs of one model in the task (the same seed on every GPU):
 * findings of kind "sdc" on a GPU whose majority result differs from the other GPUs', or on both
 * of two GPUs that disagree (sets *fail). */
void burn_judge_sdc_gpus(fb_result_t *res, const char *host, const burn_gpu_t *gpus, size_t n,
                         bool *fail);

/* Whether inject_corrupt=gemm (every flip done and found) and inject_corrupt=sdc (the SM named)
 * were detected. */
bool burn_abft_injection_seen(const burn_gpu_t *g);
bool burn_sdc_injection_seen(const burn_gpu_t *g);

#ifdef __cplusplus
}
#endif

#endif
