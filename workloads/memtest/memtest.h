/* SPDX-License-Identifier: Apache-2.0 */
/* Host DRAM test workload: multithreaded, NUMA-aware pattern tests over locked memory. */
#ifndef FB_MEMTEST_H
#define FB_MEMTEST_H

#include "worker.h"
#include "common/edac.h"

#include <stddef.h>

fb_verdict_t memtest_run(worker_ctx_t *ctx);

/* Turns two EDAC snapshots taken around a run into evidence: one "dimm" finding per DIMM whose
 * corrected or uncorrected count went up (part = "host/label"), one finding on host for errors the
 * controllers counted but did not attribute to a DIMM, and the metrics edac_ce_delta and
 * edac_ue_delta (controller totals). Returns the number of findings added; memtest fails when it
 * is not zero. */
size_t memtest_edac_report(fb_result_t *result, const char *host, const fb_edac_t *before,
                           const fb_edac_t *after);

#endif
