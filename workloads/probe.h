/* SPDX-License-Identifier: Apache-2.0 */
/* `fleetburn-worker --probe`: what the agent's inventory cannot read from sysfs, asked of the GPU
 * management library (NVML, else ROCm SMI) in a child process, so that a driver that hangs
 * hangs the probe and not the agent (agent/gpuprobe.c runs it with a deadline). It prints, one
 * line each:
 *
 *   gpu 0000:41:00.0 memory=150754820096 vbios=96.00.A5.00.1A inforom=G525.0225.00.03 name=NVIDIA
 * H200 none NVML: libnvidia-ml.so.1 not loadable: ...      (instead of gpu lines: why there are
 * none) versions: kernel=... nvidia_driver=580.159.04 cuda_driver=13.0 ... nccl=2.28.3
 *
 * gpu lines come in PCI address order; a value the library does not give is left out; name= is
 * last and runs to the end of the line. The versions line is health's (workloads/health/health.h).
 * Nothing here loads a GPU: NVML and ROCm SMI read the driver's state, NCCL/RCCL are asked their
 * version only. */
#ifndef FB_PROBE_H
#define FB_PROBE_H

#include <stdio.h>

/* Writes the lines above to out. Returns 0 (the probe itself cannot fail: what is missing is
 * said in a none line). */
int worker_probe(FILE *out);

#endif
