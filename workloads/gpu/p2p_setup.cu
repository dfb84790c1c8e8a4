/* SPDX-License-Identifier: Apache-2.0 */
/* The p2p workload's setup (p2p_internal.h): its parameters, each GPU's buffers and streams, peer
 * access between the GPUs, and how each pair is linked, from the runtime and from the PCIe tree in
 * sysfs. */
#include "gpu/p2p_internal.h"

extern "C" {
#include "common/units.h"
#include "common/util.h"
#include "gpu/host/gpu_devices.h"
}
#include "gpu/gpu.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int p2p_fail(p2p_run_t *run, const char *what, gpuError_t err)
{
    if (!run->res->error)
        fb_result_set_error(run->res, "p2p: %s: %s", what, gpuGetErrorString(err));
    return -EIO;
}


static void s_normalise_pci(char *pci, size_t len)
{
    unsigned dom = 0, bus = 0, dev = 0, fn = 0;
    if (sscanf(pci, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4)
        snprintf(pci, len, "%04x:%02x:%02x.%x", dom & 0xffff, bus, dev, fn);
}

p2p_link_t p2p_classify_link(p2p_run_t *run, size_t i, size_t j)
{
    const p2p_gpu_t *a = &run->g[i], *b = &run->g[j];
    if (!run->peer[i * run->n + j])
        return P2P_LINK_HOST;
    unsigned type = 0, hops = 0;
    if (gpuExtGetLinkTypeAndHopCount(a->dev, b->dev, &type, &hops) == gpuSuccess &&
        type == gpuLinkTypeXgmi)
        return P2P_LINK_XGMI;
    (void)gpuGetLastError();
    int atomics = 0;
    /* On NVIDIA, native peer atomics are offered over NVLink (and NVSwitch) only. */
    if (!strcmp(FB_GPU_VENDOR, "nvidia") &&
        gpuDeviceGetP2PAttribute(&atomics, gpuDevP2PAttrNativeAtomicSupported, a->dev, b->dev) ==
            gpuSuccess &&
        atomics)
        return P2P_LINK_NVLINK;
    (void)gpuGetLastError();
    const char *root = worker_sysfs_root(run->ctx);
    char *la = xasprintf("%s/sys/bus/pci/devices/%s", root, a->pci);
    char *lb = xasprintf("%s/sys/bus/pci/devices/%s", root, b->pci);
    char pa[PATH_MAX], pb[PATH_MAX];
    p2p_link_t link = P2P_LINK_UNKNOWN;
    if (realpath(la, pa) && realpath(lb, pb))
        link = p2p_pcie_relation(pa, pb);
    free(la);
    free(lb);
    return link;
}

/* ---- setup ----------------------------------------------------------------------------------- */

int p2p_setup_gpu(p2p_run_t *run, p2p_gpu_t *g)
{
    size_t bytes = run->cfg->size;
    gpuDeviceProp prop;
    P2P_TRY(run, gpuSetDevice(g->dev), "gpuSetDevice");
    P2P_TRY(run, gpuGetDeviceProperties(&prop, g->dev), "gpuGetDeviceProperties");
    fb_strlcpy(g->name, prop.name, sizeof g->name);
    if (gpuDeviceGetPCIBusId(g->pci, (int)sizeof g->pci, g->dev) != gpuSuccess)
        fb_strlcpy(g->pci, "unknown", sizeof g->pci);
    s_normalise_pci(g->pci, sizeof g->pci);
    P2P_TRY(run, gpuDeviceGetAttribute(&g->sms, gpuDevAttrMultiProcessorCount, g->dev),
            "gpuDeviceGetAttribute");
    if (g->sms <= 0)
        g->sms = 1;
    P2P_TRY(run, gpuMalloc((void **)&g->src, bytes), "allocating the source buffer");
    P2P_TRY(run, gpuMalloc((void **)&g->dst, bytes), "allocating the destination buffer");
    P2P_TRY(run, gpuMalloc((void **)&g->log, sizeof(p2p_log)), "allocating the check log");
    P2P_TRY(run, gpuMalloc((void **)&g->scratch, sizeof(u64)), "allocating the chase result");
    P2P_TRY(run, gpuMemset(g->log, 0, sizeof(p2p_log)), "clearing the check log");
    P2P_TRY(run, gpuMemset(g->dst, 0, bytes), "clearing the destination buffer");
    P2P_TRY(run, gpuStreamCreateWithFlags(&g->s, gpuStreamNonBlocking), "gpuStreamCreate");
    P2P_TRY(run, gpuStreamCreateWithFlags(&g->s2, gpuStreamNonBlocking), "gpuStreamCreate");
    P2P_TRY(run, gpuEventCreate(&g->start), "gpuEventCreate");
    P2P_TRY(run, gpuEventCreate(&g->stop), "gpuEventCreate");
    P2P_TRY(run, gpuEventCreate(&g->sync), "gpuEventCreate");
    P2P_TRY(run, gpuEventCreate(&g->sync2), "gpuEventCreate");
    return 0;
}

void p2p_teardown_gpu(p2p_gpu_t *g)
{
    if (gpuSetDevice(g->dev) != gpuSuccess)
        return;
    gpuEvent_t ev[4] = {g->start, g->stop, g->sync, g->sync2};
    for (int i = 0; i < 4; i++)
        if (ev[i])
            (void)gpuEventDestroy(ev[i]);
    if (g->s)
        (void)gpuStreamDestroy(g->s);
    if (g->s2)
        (void)gpuStreamDestroy(g->s2);
    (void)gpuFree(g->src);
    (void)gpuFree(g->dst);
    (void)gpuFree(g->log);
    (void)gpuFree(g->scratch);
}

int p2p_enable_peers(p2p_run_t *run)
{
    for (size_t i = 0; i < run->n; i++)
        for (size_t j = 0; j < run->n; j++) {
            if (i == j)
                continue;
            int can = 0;
            P2P_TRY(run, gpuDeviceCanAccessPeer(&can, run->g[i].dev, run->g[j].dev),
                    "gpuDeviceCanAccessPeer");
            if (!can)
                continue;
            P2P_TRY(run, gpuSetDevice(run->g[i].dev), "gpuSetDevice");
            gpuError_t err = gpuDeviceEnablePeerAccess(run->g[j].dev, 0);
            if (err == gpuErrorPeerAccessAlreadyEnabled)
                (void)gpuGetLastError();
            else if (err != gpuSuccess)
                return p2p_fail(run, "gpuDeviceEnablePeerAccess", err);
            run->peer[i * run->n + j] = true;
        }
    return 0;
}

/* ---- parameters ------------------------------------------------------------------------------ */

int p2p_parse_config(worker_ctx_t *ctx, p2p_config_t *cfg, int n_visible)
{
    const char *text;
    if ((text = worker_param(ctx, "inject_corrupt"))) {
        if (!worker_fault_injection_allowed(ctx)) {
            worker_error(ctx, "inject_corrupt refused: the agent was not started with "
                          "--allow-fault-injection");
            return -EPERM;
        }
        if (fb_parse_bool(text, &cfg->inject)) {
            worker_error(ctx, "p2p: inject_corrupt '%s' must be true or false", text);
            return -EINVAL;
        }
    }
    text = worker_param(ctx, "size");
    if (!text)
        text = "256MiB";
    if (fb_parse_bytes(text, &cfg->size) || cfg->size < P2P_MIN_SIZE || cfg->size > P2P_MAX_SIZE ||
        cfg->size % 16) {
        worker_error(ctx, "p2p: size '%s' must be a byte size from 4KiB to 16GiB, a multiple of 16",
                 text);
        return -EINVAL;
    }
    text = worker_param(ctx, "iters");
    if (!text)
        text = "20";
    if (fb_parse_uint(text, 100000, &cfg->iters) || !cfg->iters) {
        worker_error(ctx, "p2p: iters '%s' must be a whole number from 1 to 100000", text);
        return -EINVAL;
    }
    cfg->min_gbs = 0;
    if ((text = worker_param(ctx, "min_gbs")) &&
        (fb_parse_double(text, &cfg->min_gbs) || cfg->min_gbs < 0)) {
        worker_error(ctx, "p2p: min_gbs '%s' must be a number of GB/s, 0 or more", text);
        return -EINVAL;
    }
    text = worker_param(ctx, "min_relative");
    if (!text)
        text = "0.9";
    if (fb_parse_double(text, &cfg->min_relative) || cfg->min_relative < 0 ||
        cfg->min_relative > 1) {
        worker_error(ctx, "p2p: min_relative '%s' must be a fraction from 0 to 1", text);
        return -EINVAL;
    }
    text = worker_param(ctx, "devices");
    if (!text)
        text = "all";
    int rc = gpu_parse_devices(text, n_visible, &cfg->devices, &cfg->n);
    if (rc) {
        worker_error(ctx, "p2p: devices '%s' %s (%d GPU%s visible)", text,
                 rc == -ENODEV ? "names a GPU that is not there"
                               : "is not 'all' or a list of indices",
                 n_visible, n_visible == 1 ? "" : "s");
        return rc;
    }
    return 0;
}
