/* SPDX-License-Identifier: Apache-2.0 */
/* What sysfs does not tell about a node's GPUs, for the inventory: their model and memory, VBIOS
 * and InfoROM versions, and the CUDA/ROCm, NCCL/RCCL versions. Asked of the GPU management
 * library by `fleetburn-worker --probe` (workloads/probe.h) in a child process with a deadline,
 * so that a driver that hangs delays the agent's start by the deadline at most and never hangs
 * it. The child's output is untrusted text: bounded, every line and value checked, anything odd
 * left out with a warning. docs/inventory.md lists what comes from here. */
#ifndef FB_GPUPROBE_H
#define FB_GPUPROBE_H

#include "fleetburn.pb-c.h"

#include <stddef.h>

/* How long the probe may take (NVML's start on 8 GPUs without persistence mode takes seconds). */
#define GPUPROBE_TIMEOUT_MS 30000
/* The most output read from it. */
#define GPUPROBE_MAX_OUTPUT (64u * 1024)

/* Runs `worker --probe` (worker: the agent's fleetburn-worker) and merges what it says into inv.
 * Does nothing when inv has no GPUs. Never fails: a probe that cannot start, times out (it is
 * killed) or says nothing useful leaves inv as it was, with a log line saying why. */
void gpuprobe_run(Fleetburn__Inventory *inv, const char *worker, unsigned timeout_ms);

/* Merges the probe's output (text[0..len)) into inv: each "gpu PCI ..." line sets the model and
 * memory of the inventory's GPU at that PCI address (others are ignored), VBIOS and InfoROM
 * versions become software entries gpu_vbios and gpu_inforom (inventory_per_device, devices
 * named gpuN in inventory order), and of the "versions:" line cuda_driver, nccl, rccl,
 * amdgpu_driver, and nvidia_driver and rocm when the agent did not read them itself. Returns the
 * number of GPUs it described. */
size_t gpuprobe_merge(Fleetburn__Inventory *inv, const char *text, size_t len);

#endif
