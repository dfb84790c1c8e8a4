/* SPDX-License-Identifier: Apache-2.0 */
/* gpuburn's silent-data-corruption probe on the GPU: identical, deterministic work in many blocks
 * spread over every SM, each block reporting the SM it ran on (%smid; the CU on AMD) and a digest
 * of its results. Correct hardware gives one digest bit for bit; host/sdc_vote.h names the SM
 * whose blocks disagree with the majority, and gpuburn compares the GPUs' majority digests of the
 * same probe (the same seed on every GPU) to name an odd GPU of a node.
 *
 * The work: per thread four chaotic logistic-map chains in fp32 (x = r x (1 - x) as a multiply
 * and an FMA, so a single wrong bit grows until it shows), an integer multiply-xor chain fed by
 * them, an exchange through shared memory every 64 steps, and per warp a chain of fp16 tensor-core
 * MMAs on small integers whose fp32 sums are exact (CUDA only). The block's digest is a hash tree
 * of the threads' results in a fixed order. No atomics, no order that depends on timing. */
#ifndef FB_SDC_H
#define FB_SDC_H

#include "gpu_runtime.h"

#include "host/sdc_vote.h"

#include <stddef.h>
#include <stdint.h>

typedef struct sdc_probe sdc_probe_t;

/* A probe for the current device, which has sms multiprocessors. 0, or -ENOMEM/-EIO with the
 * reason in err. */
int sdc_probe_new(int sms, sdc_probe_t **out, char *err, size_t errlen);
void sdc_probe_destroy(sdc_probe_t **self_p);

/* Runs the probe with inputs from seed on stream and waits for it: *samples (borrowed, valid
 * until the next run) gets one (SM, digest) per block, *n their number, *ms the GPU time.
 * inject_sm >= 0 (test only): blocks on that SM report a wrong digest. */
gpuError_t sdc_probe_run(sdc_probe_t *self, gpuStream_t stream, uint64_t seed, int inject_sm,
                         const sdc_sample_t **samples, size_t *n, double *ms);

#endif
