/* SPDX-License-Identifier: Apache-2.0 */
/* Entry points of the GPU workloads. The vendor workers (fleetburn-worker-cuda built with nvcc,
 * fleetburn-worker-hip built with hipcc) implement them from one source; the plain
 * fleetburn-worker links gpu/unavailable.c instead, which reports `skipped` on a node without
 * GPUs and `error` on a node whose GPUs this build cannot drive. The agent picks the worker that
 * matches the node's GPUs (agent.c) and tells workers the vendors it found in
 * FLEETBURN_GPU_VENDORS ("nvidia", "amd", "nvidia,amd", or empty). */
#ifndef FB_GPU_H
#define FB_GPU_H

#include "worker.h"

#ifdef __cplusplus
extern "C" {
#endif

fb_verdict_t gpuburn_run(worker_ctx_t *ctx);
fb_verdict_t gpumemtest_run(worker_ctx_t *ctx);
fb_verdict_t p2p_run(worker_ctx_t *ctx);

#ifdef __cplusplus
}
#endif

#endif
