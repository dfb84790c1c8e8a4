/* SPDX-License-Identifier: Apache-2.0 */
/* The health workload: a passive sweep, run before any stress, that reports what a node already
 * shows without loading it — PCIe links of GPUs and HCAs below their best, InfiniBand ports not
 * ACTIVE or slower than expected, DIMMs with uncorrected EDAC errors, GPUs with retired pages,
 * pending or failed row remaps, uncorrected ECC or that the driver cannot use, and unrepaired
 * faults left in the kernel log (Xids, machine checks, AER, HCA failures). It also reports the
 * software versions the fleet-level comparison needs, as one log line
 * "versions: kernel=... nvidia_driver=... cuda_driver=... nccl=...".
 *
 * Every problem is a finding naming the part; any finding makes the verdict FAIL. Metrics count
 * each class. It takes seconds and needs no GPU runtime: GPU counters come from NVML or ROCm SMI
 * loaded at run time, so it runs in every worker on every node. */
#ifndef FB_HEALTH_H
#define FB_HEALTH_H

#include "worker.h"

typedef struct tel_backend tel_backend_t;

fb_verdict_t health_run(worker_ctx_t *ctx);

/* For tests: where the kernel log and the GPU counters come from. */
typedef struct {
    const char *kmsg_path;  /* NULL: $FLEETBURN_KMSG, else /dev/kmsg */
    tel_backend_t *backend; /* taken over; NULL: NVML / ROCm SMI unless no_libraries */
    bool no_libraries;      /* load neither NVML, ROCm SMI nor NCCL/RCCL */
} health_opts_t;
fb_verdict_t health_run_opts(worker_ctx_t *ctx, const health_opts_t *opts);

/* The versions as "kernel=6.8.0-45-generic nvidia_driver=580.65.06 cuda_driver=13.0 nccl=2.27.3
 * hca_fw=28.39.1002": space-separated key=value pairs, values without blanks, absent components
 * left out. Keys: kernel, nvidia_driver, cuda_driver, nvml, gpu_vbios, amdgpu_driver, rocm_smi,
 * amdgpu (DKMS module), rocm, nccl, rccl (only when libraries), hca_fw, mlx5_core (MLNX_OFED).
 * Values that differ per device are "dev:value" lists. Heap string. */
char *health_versions(const char *root, tel_backend_t *backend, bool libraries);

#endif
