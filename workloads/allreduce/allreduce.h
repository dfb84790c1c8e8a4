/* SPDX-License-Identifier: Apache-2.0 */
/* The `allreduce` workload's entry point in every worker (registry.c). */
#ifndef FB_ALLREDUCE_H
#define FB_ALLREDUCE_H

#include "worker.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Picks the path for this node (ar.h: GPU path hook, host MPI path, or skipped) and runs it. */
fb_verdict_t allreduce_run(worker_ctx_t *ctx);

#ifdef __cplusplus
}
#endif

#endif
