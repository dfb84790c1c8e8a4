/* SPDX-License-Identifier: Apache-2.0 */
/* GPU workloads in a worker built without a GPU runtime. A node without GPUs skips them (that is
 * not a failure); a node with GPUs that this worker cannot drive is an error, because passing
 * would hide that nothing was tested. */
#include "gpu.h"

#include <stdlib.h>
#include <string.h>

static fb_verdict_t s_unavailable(worker_ctx_t *ctx, const char *workload)
{
    fb_result_t *result = worker_result(ctx);
    const char *vendors = getenv("FLEETBURN_GPU_VENDORS");
    if (!vendors || !*vendors) {
        fb_result_set_error(result, "%s skipped: no GPUs on this node", workload);
        return FB_VERDICT_SKIPPED;
    }
    fb_result_set_error(result,
                        "%s not available: this node has %s GPUs but fleetburn was built without "
                        "a worker for them (install the fleetburn-agent-%s package, or "
                        "fleetburn-worker-%s next to fleetburn-worker)",
                        workload, vendors, strstr(vendors, "nvidia") ? "cuda" : "hip",
                        strstr(vendors, "nvidia") ? "cuda" : "hip");
    return FB_VERDICT_ERROR;
}

fb_verdict_t gpuburn_run(worker_ctx_t *ctx)
{
    return s_unavailable(ctx, "gpuburn");
}

fb_verdict_t gpumemtest_run(worker_ctx_t *ctx)
{
    return s_unavailable(ctx, "gpumemtest");
}

fb_verdict_t p2p_run(worker_ctx_t *ctx)
{
    return s_unavailable(ctx, "p2p");
}
