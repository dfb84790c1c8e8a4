/* SPDX-License-Identifier: Apache-2.0 */
/* gpuburn's per-GEMM checksums on the GPU (the math and tolerance: host/burn_abft.h). One abft_t
 * per GPU thread: it computes the block-checksum references of the run's fixed operands once, then
 * checks every burn GEMM's result before its buffer is written again, and reduces what it finds to
 * a few counters and records read once per interval.
 *
 * Two ways to run the checks:
 *   inline    (reserved 0) each check follows its GEMM on the GEMM stream, one block per SM: the
 *             read of C at full memory bandwidth adds to every GEMM's time.
 *   reserved  (reserved N) the GEMMs are planned for all SMs but N (blas_gemm_new_on_sms), and
 *             each check runs on a stream of its own in N blocks, one per SM, on the SMs the GEMM
 *             leaves free, while the next GEMM computes. The GEMM stream waits only when a buffer
 *             comes round again before the check of its previous content is done.
 * Every function is called from the GPU's thread with its device current; runtime errors come
 * back as gpuError_t for the caller's TRY_RUN. */
#ifndef FB_ABFT_H
#define FB_ABFT_H

#include "gpu_runtime.h"

#include "host/burn_abft.h"

#include <stddef.h>
#include <stdint.h>

typedef struct abft abft_t;

/* Computes the references for C = A^T B of the n x n operands a, b of dtype dt on stream (which
 * becomes the GEMM stream); sms is the GPU's multiprocessor count. 0, or -ENOMEM / -EIO with the
 * reason in err. */
int abft_new(gpuStream_t stream, burn_dtype_t dt, uint64_t n, const void *a, const void *b,
             int sms, abft_t **out, char *err, size_t errlen);
void abft_destroy(abft_t **self_p);

/* GPU memory abft_new needs for n x n operands of dtype dt (while computing the references) and
 * keeps (after). */
size_t abft_bytes_needed(burn_dtype_t dt, uint64_t n);
size_t abft_bytes(const abft_t *self);

/* The tolerance of one block checksum and the operands' RMS it was derived from. */
burn_tol_t abft_tol(const abft_t *self);
void abft_operand_rms(const abft_t *self, double *rms_a, double *rms_b);

/* Milliseconds of one check of result c on `blocks` SMs (one block each), on the GEMM stream with
 * nothing else running; the counters are reset after. */
gpuError_t abft_time(abft_t *self, const void *c, unsigned blocks, double *ms);

/* Starts checking: reserved 0 inline, else on a stream of its own in `reserved` blocks; n_buffers
 * is the number of result buffers the GEMMs cycle through. */
gpuError_t abft_start(abft_t *self, unsigned reserved, size_t n_buffers);

/* Around each burn GEMM, the gemm-th of the burn, into buffer `buffer` at c. */
gpuError_t abft_before_gemm(abft_t *self, uint64_t gemm);
gpuError_t abft_after_gemm(abft_t *self, void *c, uint64_t gemm, uint32_t buffer);

/* Test-only: flip one bit of one element of the result of GEMM number `gemm` (or of the first
 * GEMM after it, if it has passed) between the GEMM and its check, choosing from `seed` an
 * element and a bit whose change is 2 to 6 tolerances of its checksums. At most
 * BURN_ABFT_MAX_INJECTIONS per interval. */
#define BURN_ABFT_MAX_INJECTIONS 32u
void abft_arm_injection(abft_t *self, uint64_t gemm, uint64_t seed);
/* Injections armed and not yet done. */
size_t abft_armed(const abft_t *self);

/* Waits for every check queued, copies the interval's counters into *state and the injections
 * done in it into inj (*n_inj of them, at most BURN_ABFT_MAX_INJECTIONS), and resets both. */
gpuError_t abft_collect(abft_t *self, burn_abft_state_t *state, burn_abft_injection_t *inj,
                        size_t *n_inj);

#endif
