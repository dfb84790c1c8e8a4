/* SPDX-License-Identifier: Apache-2.0 */
/* Odd-one-out voting for gpuburn's silent-data-corruption probe. The probe runs identical,
 * deterministic work (fixed inputs, fixed order of every operation, no atomics) in many blocks
 * spread over every SM of a GPU, and each block reports the SM it ran on and a digest of its
 * results; the same work on every GPU of a node gives each GPU's digest. Correct hardware gives
 * one digest everywhere, bit for bit; a unit that computes wrong shows as the odd one out against
 * the majority. Without a majority (two GPUs that disagree, or a probe whose blocks disagree all
 * over) nobody can tell which is right, and the vote says so instead of naming a unit. */
#ifndef FB_SDC_VOTE_H
#define FB_SDC_VOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One probe block's result (unit: the SM), or one GPU's (unit: the GPU index). */
typedef struct {
    uint32_t unit;
    uint32_t pad;
    uint64_t digest;
} sdc_sample_t;

/* A unit with at least one sample off the majority. */
typedef struct {
    uint32_t unit;
    uint32_t off, total; /* its samples that differ from the majority, and all of its samples */
} sdc_odd_t;

typedef struct {
    bool majority;  /* one digest holds more than half of the samples */
    uint64_t digest; /* that digest (the most common one when there is no majority) */
    size_t samples, agree; /* samples, and those equal to digest */
    size_t units;          /* distinct units */
    sdc_odd_t *odd;        /* units with a sample off the majority, ascending (heap) */
    size_t n_odd;
} sdc_vote_t;

/* Votes over n samples into *v (sdc_vote_clear frees it). No unit is odd without a majority. */
void sdc_vote(const sdc_sample_t *s, size_t n, sdc_vote_t *v);
void sdc_vote_clear(sdc_vote_t *v);

#ifdef __cplusplus
}
#endif

#endif
