/* SPDX-License-Identifier: Apache-2.0 */
/* What the unit tests of gpuburn's host logic (test_burn_verify.c, test_burn_fidelity.c) share:
 * GPUs of one model as a run left them, before any interval. Linked into every unit test
 * (tests/CMakeLists.txt). */
#ifndef FB_TEST_BURN_FIXTURE_H
#define FB_TEST_BURN_FIXTURE_H

#include "gpu/host/burn_judge.h"

#include <stddef.h>

/* n GPUs named `name` at PCI 0000:19:00.0, 0000:1a:00.0 ..., matrix 8192, with the peak, buffers,
 * GEMMs and known-answer checks given, clean counters and no intervals yet. */
burn_gpu_t *burn_fixture_gpus(size_t n, const char *name, double peak_tflops, uint64_t c_buffers,
                              uint64_t gemms, uint64_t kat_checked);
/* Clears and frees what burn_fixture_gpus made. */
void burn_fixture_free_gpus(burn_gpu_t *g, size_t n);

#endif
