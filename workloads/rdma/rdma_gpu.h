/* SPDX-License-Identifier: Apache-2.0 */
/* GPU memory as the source and sink of RDMA (GPUDirect RDMA), through the CUDA driver API loaded
 * at run time (dlopen "libcuda.so.1"): no CUDA toolkit at build time, and the same code in every
 * worker. Two ways for the HCA to reach GPU memory:
 *   - dma-buf: the GPU range exported as a dma-buf file descriptor (cuMemGetHandleForAddressRange)
 *     and registered with ibv_reg_dmabuf_mr. Needs the open GPU kernel modules and a kernel and
 *     rdma-core with dma-buf support;
 *   - nvidia_peermem (or the older nv_peer_mem) loaded: ibv_reg_mr on the device pointer.
 * Which GPU: the NVIDIA GPU nearest the HCA on the PCI tree (the one behind the same switch),
 * read from sysfs so that it is unit-tested on fixture trees. */
#ifndef FB_RDMA_GPU_H
#define FB_RDMA_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The PCI address ("0000:41:00.0") of the NVIDIA GPU nearest to hca: the one sharing the
 * longest PCI path with it (same switch, then same root port, then same root complex), the
 * lowest address on a tie. Returns 0, or -ENODEV with why filled (no NVIDIA GPU, HCA without a
 * PCI device). `gpu_index` (may be NULL) gets its gpuN number (PCI order among GPUs). */
int rdma_gpu_nearest(const char *root, const char *hca, char pci[16], unsigned *gpu_index,
                     char *why, size_t why_len);

/* Where the peer-memory kernel module is loaded: "nvidia_peermem", "nv_peer_mem" or NULL. */
const char *rdma_gpu_peermem_module(const char *root);

typedef struct rdma_gpu rdma_gpu_t;

/* Opens the CUDA driver and the GPU at pci, and makes its primary context current on this
 * thread. -ENOENT when libcuda does not load, -ENODEV when the driver does not know the GPU;
 * err says why. */
int rdma_gpu_open(const char *pci, rdma_gpu_t **out, char *err, size_t errlen);
void rdma_gpu_close(rdma_gpu_t **self_p);

/* True when the device and the driver can export dma-bufs
 * (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED and cuMemGetHandleForAddressRange). */
bool rdma_gpu_dmabuf_supported(const rdma_gpu_t *g);

/* Allocates bytes (rounded up to 2 MiB: the GPU page, and what dma-buf export needs) of device
 * memory with synchronous memory operations (CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, as GPUDirect RDMA
 * requires). *dptr gets the device address, *bytes_out the rounded size. 0 or -ENOMEM / -EIO. */
int rdma_gpu_alloc(rdma_gpu_t *g, size_t bytes, uint64_t *dptr, size_t *bytes_out, char *err,
                   size_t errlen);
/* A dma-buf file descriptor for [dptr, dptr + bytes) (the caller closes it), or -errno. */
int rdma_gpu_dmabuf_fd(rdma_gpu_t *g, uint64_t dptr, size_t bytes, char *err, size_t errlen);
void rdma_gpu_free(rdma_gpu_t *g, uint64_t dptr);

/* Synchronous copies between host and device memory. 0 or -EIO. */
int rdma_gpu_to_device(rdma_gpu_t *g, uint64_t dst, const void *src, size_t n);
int rdma_gpu_to_host(rdma_gpu_t *g, void *dst, uint64_t src, size_t n);

/* "NVIDIA H100 80GB HBM3" (borrowed). */
const char *rdma_gpu_name(const rdma_gpu_t *g);

#endif
