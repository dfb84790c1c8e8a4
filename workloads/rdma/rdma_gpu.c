/* SPDX-License-Identifier: Apache-2.0 */
/* GPU buffers for GPUDirect RDMA through the CUDA driver API, loaded with dlopen so that every
 * worker carries it and a node without NVIDIA's driver just reports that GPU memory is not used.
 * The prototypes are declared here from the documented driver API; the GPU is chosen from sysfs
 * (nearest to the HCA on the PCI tree), which is what decides whether GPUDirect traffic crosses
 * the CPU's root complex. */
#include "rdma_gpu.h"

#include "common/util.h"
#include "gpu/host/telemetry.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- choosing the GPU ------------------------------------------------------------------------ */

static unsigned s_read_hex(const char *root, const char *pci, const char *file)
{
    char *path = xasprintf("%s/sys/bus/pci/devices/%s/%s", root, pci, file);
    char *text = fb_read_file(path, NULL);
    free(path);
    unsigned long v = text ? strtoul(text, NULL, 16) : 0;
    free(text);
    return (unsigned)v;
}

/* How many leading path components two resolved sysfs device paths share. */
static size_t s_common_depth(const char *a, const char *b)
{
    size_t depth = 0, i = 0;
    for (;; i++) {
        if (a[i] != b[i]) {
            /* The component differs unless both just ended one. */
            break;
        }
        if (a[i] == '\0')
            return depth + 1;
        if (a[i] == '/')
            depth++;
    }
    return depth;
}

int rdma_gpu_nearest(const char *root, const char *hca, char pci[16], unsigned *gpu_index,
                     char *why, size_t why_len)
{
    char *link = xasprintf("%s/sys/class/infiniband/%s/device", root, hca);
    char hca_path[PATH_MAX];
    bool ok = realpath(link, hca_path) != NULL;
    free(link);
    if (!ok) {
        snprintf(why, why_len, "%s has no PCI device in sysfs", hca);
        return -ENODEV;
    }
    tel_pci_t gpus[TEL_MAX_GPUS];
    size_t n = telemetry_sysfs_gpus(root, gpus, TEL_MAX_GPUS);
    size_t best_depth = 0;
    int best = -1;
    for (size_t i = 0; i < n; i++) {
        if (s_read_hex(root, gpus[i].pci, "vendor") != 0x10de)
            continue;
        char *glink = xasprintf("%s/sys/bus/pci/devices/%s", root, gpus[i].pci);
        char gpath[PATH_MAX];
        bool gok = realpath(glink, gpath) != NULL;
        free(glink);
        if (!gok)
            continue;
        size_t depth = s_common_depth(hca_path, gpath);
        if (best < 0 || depth > best_depth) {
            best = (int)i;
            best_depth = depth;
        }
    }
    if (best < 0) {
        snprintf(why, why_len, "no NVIDIA GPU on this node");
        return -ENODEV;
    }
    memcpy(pci, gpus[best].pci, 16);
    if (gpu_index)
        *gpu_index = (unsigned)best;
    return 0;
}

const char *rdma_gpu_peermem_module(const char *root)
{
    static const char *const mods[] = {"nvidia_peermem", "nv_peer_mem"};
    for (size_t i = 0; i < FB_ARRAY_LEN(mods); i++) {
        char *path = xasprintf("%s/sys/module/%s", root, mods[i]);
        char *probe = xasprintf("%s/.", path);
        FILE *f = fopen(probe, "r");
        free(probe);
        free(path);
        if (f) {
            fclose(f);
            return mods[i];
        }
    }
    return NULL;
}

/* ---- the CUDA driver API --------------------------------------------------------------------- */

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr;

#define S_CU_POINTER_ATTRIBUTE_SYNC_MEMOPS 6
#define S_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 124
#define S_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1
#define S_GPU_PAGE (2u << 20)

struct rdma_gpu {
    void *lib;
    CUdevice dev;
    CUcontext ctx;
    bool dmabuf;
    char name[128];
    CUresult (*init)(unsigned);
    CUresult (*device_by_pci)(CUdevice *, const char *);
    CUresult (*device_name)(char *, int, CUdevice);
    CUresult (*device_attribute)(int *, int, CUdevice);
    CUresult (*ctx_retain)(CUcontext *, CUdevice);
    CUresult (*ctx_release)(CUdevice);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*htod)(CUdeviceptr, const void *, size_t);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*pointer_set_attribute)(const void *, int, CUdeviceptr);
    CUresult (*get_handle)(void *, CUdeviceptr, size_t, int, unsigned long long);
    CUresult (*error_string)(CUresult, const char **);
};

static const char *s_cu_error(const rdma_gpu_t *g, CUresult r)
{
    const char *s = NULL;
    if (g->error_string && g->error_string(r, &s) == 0 && s)
        return s;
    return "CUDA driver error";
}

static void *s_sym(void *lib, const char *name)
{
    return dlsym(lib, name);
}

#define S_LOAD(field, name) *(void **)(&g->field) = s_sym(g->lib, name)

int rdma_gpu_open(const char *pci, rdma_gpu_t **out, char *err, size_t errlen)
{
    *out = NULL;
    rdma_gpu_t *g = xcalloc(1, sizeof *g);
    g->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!g->lib) {
        snprintf(err, errlen, "libcuda.so.1 does not load (no NVIDIA driver)");
        free(g);
        return -ENOENT;
    }
    S_LOAD(init, "cuInit");
    S_LOAD(device_by_pci, "cuDeviceGetByPCIBusId");
    S_LOAD(device_name, "cuDeviceGetName");
    S_LOAD(device_attribute, "cuDeviceGetAttribute");
    S_LOAD(ctx_retain, "cuDevicePrimaryCtxRetain");
    S_LOAD(ctx_release, "cuDevicePrimaryCtxRelease_v2");
    if (!g->ctx_release)
        S_LOAD(ctx_release, "cuDevicePrimaryCtxRelease");
    S_LOAD(ctx_set_current, "cuCtxSetCurrent");
    S_LOAD(mem_alloc, "cuMemAlloc_v2");
    S_LOAD(mem_free, "cuMemFree_v2");
    S_LOAD(htod, "cuMemcpyHtoD_v2");
    S_LOAD(dtoh, "cuMemcpyDtoH_v2");
    S_LOAD(pointer_set_attribute, "cuPointerSetAttribute");
    S_LOAD(get_handle, "cuMemGetHandleForAddressRange"); /* CUDA 11.7+; optional */
    S_LOAD(error_string, "cuGetErrorString");
    if (!g->init || !g->device_by_pci || !g->ctx_retain || !g->ctx_release || !g->ctx_set_current ||
        !g->mem_alloc || !g->mem_free || !g->htod || !g->dtoh || !g->pointer_set_attribute) {
        snprintf(err, errlen,
                 "libcuda.so.1 lacks a function GPUDirect RDMA needs (driver too old)");
        rdma_gpu_close(&g);
        return -ENOTSUP;
    }
    CUresult r = g->init(0);
    if (r == 0)
        r = g->device_by_pci(&g->dev, pci);
    if (r != 0) {
        snprintf(err, errlen, "the CUDA driver does not know the GPU at %s: %s", pci,
                 s_cu_error(g, r));
        rdma_gpu_close(&g);
        return -ENODEV;
    }
    r = g->ctx_retain(&g->ctx, g->dev);
    if (r == 0)
        r = g->ctx_set_current(g->ctx);
    if (r != 0) {
        snprintf(err, errlen, "no CUDA context on the GPU at %s: %s", pci, s_cu_error(g, r));
        g->ctx = NULL;
        rdma_gpu_close(&g);
        return -ENODEV;
    }
    if (!g->device_name || g->device_name(g->name, (int)sizeof g->name, g->dev) != 0)
        fb_strlcpy(g->name, "GPU", sizeof g->name);
    int dmabuf = 0;
    g->dmabuf =
        g->get_handle && g->device_attribute &&
        g->device_attribute(&dmabuf, S_CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, g->dev) == 0 &&
        dmabuf == 1;
    *out = g;
    return 0;
}

void rdma_gpu_close(rdma_gpu_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    rdma_gpu_t *g = *self_p;
    if (g->ctx && g->ctx_release)
        g->ctx_release(g->dev);
    /* libcuda stays loaded: unloading the driver library is not supported by NVIDIA. */
    free(g);
    *self_p = NULL;
}

bool rdma_gpu_dmabuf_supported(const rdma_gpu_t *g)
{
    return g && g->dmabuf;
}

const char *rdma_gpu_name(const rdma_gpu_t *g)
{
    return g ? g->name : "";
}

int rdma_gpu_alloc(rdma_gpu_t *g, size_t bytes, uint64_t *dptr, size_t *bytes_out, char *err,
                   size_t errlen)
{
    size_t rounded = (bytes + S_GPU_PAGE - 1) / S_GPU_PAGE * S_GPU_PAGE;
    CUdeviceptr p = 0;
    CUresult r = g->mem_alloc(&p, rounded);
    if (r != 0) {
        snprintf(err, errlen, "cuMemAlloc of %zu bytes on %s failed: %s", rounded, g->name,
                 s_cu_error(g, r));
        return -ENOMEM;
    }
    /* Every CUDA memory operation on this range completes before the call returns, so data the
     * HCA reads after a copy is the copied data (NVIDIA's GPUDirect RDMA requirement). */
    unsigned one = 1;
    r = g->pointer_set_attribute(&one, S_CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p);
    if (r != 0) {
        snprintf(err, errlen, "cuPointerSetAttribute(SYNC_MEMOPS) on %s failed: %s", g->name,
                 s_cu_error(g, r));
        g->mem_free(p);
        return -EIO;
    }
    *dptr = p;
    *bytes_out = rounded;
    return 0;
}

int rdma_gpu_dmabuf_fd(rdma_gpu_t *g, uint64_t dptr, size_t bytes, char *err, size_t errlen)
{
    if (!g->get_handle) {
        snprintf(err, errlen, "the CUDA driver cannot export dma-bufs (before CUDA 11.7)");
        return -ENOTSUP;
    }
    int fd = -1;
    CUresult r = g->get_handle(&fd, dptr, bytes, S_CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (r != 0 || fd < 0) {
        snprintf(err, errlen, "exporting GPU memory of %s as a dma-buf failed: %s", g->name,
                 s_cu_error(g, r));
        return -ENOTSUP;
    }
    return fd;
}

void rdma_gpu_free(rdma_gpu_t *g, uint64_t dptr)
{
    if (g && dptr)
        g->mem_free(dptr);
}

int rdma_gpu_to_device(rdma_gpu_t *g, uint64_t dst, const void *src, size_t n)
{
    return g->htod(dst, src, n) == 0 ? 0 : -EIO;
}

int rdma_gpu_to_host(rdma_gpu_t *g, void *dst, uint64_t src, size_t n)
{
    return g->dtoh(dst, src, n) == 0 ? 0 : -EIO;
}
