/* SPDX-License-Identifier: Apache-2.0 */
/* What every GPU workload does first: choose its devices from the `devices` parameter, and
 * decide what "no usable GPU" means on this node. Plain C, shared by gpuburn, gpumemtest and p2p. */
#ifndef FB_GPU_DEVICES_H
#define FB_GPU_DEVICES_H

#include "worker.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "all" (every visible device) or a comma list of distinct indices ("0, 2"), blanks ignored.
 * *list_out: heap array the caller frees. -EINVAL for a malformed or repeated index, -ENODEV for
 * an index the runtime does not see (or "all" with none visible). */
int gpu_parse_devices(const char *text, int n_visible, int **list_out, size_t *n_out);

/* The runtime sees no device (why: its error text). `skipped` on a node where the agent saw no
 * GPU of this worker's vendor (FLEETBURN_GPU_VENDORS), `error` where it did: there a missing
 * device is a fault, not a reason to pass. */
fb_verdict_t gpu_no_devices(worker_ctx_t *ctx, const char *workload, const char *vendor,
                            const char *why);

#ifdef __cplusplus
}
#endif

#endif
