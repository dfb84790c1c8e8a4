/* SPDX-License-Identifier: Apache-2.0 */
/* What the telemetry sources share among themselves, and nothing else includes:
 *   telemetry.c            the backend-neutral core: the sampler loop, per-GPU records, summary
 *                          metrics and thresholds, counter diffs, and the helpers below
 *   telemetry_nvml.c       the NVML backend (over nvml.c)
 *   telemetry_rocm_smi.c   the ROCm SMI backend (over rocm_smi.c)
 *   telemetry_sysfs.c      GPUs and PCIe links from sysfs
 *   telemetry_klog.c       kernel-log findings and the watcher that follows /dev/kmsg in a run
 * A backend is a tel_backend_t (telemetry.h): a struct of function pointers the core calls from
 * its sampler thread and at start and stop. */
#ifndef FB_TELEMETRY_IMPL_H
#define FB_TELEMETRY_IMPL_H

#include "telemetry.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The node's name in parts, "localhost" when the worker has none. */
static inline const char *tel_host(const char *node)
{
    return node && *node ? node : "localhost";
}

/* ---- for the backends (telemetry.c) ---------------------------------------------------------- */

/* A sample with every value unknown (NAN), no throttle bits, the GPU not lost. */
void tel_sample_unknown(tel_sample_t *s);
/* Counter k read as v. */
void tel_counter_set(tel_counters_t *c, tel_counter_t k, uint64_t v);
/* Fills a backend's GPU tables from its library, which counted count GPUs (count_rc: the count's
 * return code): found(b, index, slot) is asked about each of the first TEL_MAX_GPUS and fills slot
 * `slot` of info and of the backend's handles (handle_size bytes each) when it can use that GPU.
 * The GPUs kept are ordered by PCI address, so that gpuN is the same GPU for every backend and for
 * sysfs, and counted in b->n_gpus. false, with "<b->name> sees no GPU" in why, when the library
 * could not count or saw none: the caller then destroys b. */
bool tel_backend_fill(tel_backend_t *b, int count_rc, unsigned count,
                      bool (*found)(tel_backend_t *b, unsigned index, size_t slot),
                      tel_gpu_info_t *info, void *handles, size_t handle_size, char *why,
                      size_t whylen);
/* Appends " key=value" to buf when value is non-empty; blanks become '_'. */
void tel_append_kv(char *buf, size_t len, const char *key, const char *value);
/* Appends " gpu_vbios=V1,V2": every distinct VBIOS version of b's GPUs, read by vbios(). */
void tel_append_vbios(tel_backend_t *b, char *buf, size_t len,
                      void (*vbios)(tel_backend_t *b, size_t gpu, char *out, size_t outlen));

/* ---- following the kernel log during a run (telemetry_klog.c) -------------------------------- */

typedef struct tel_klog_watch tel_klog_watch_t;
/* Follows path (NULL: $FLEETBURN_KMSG, else /dev/kmsg) from its end on a thread of its own: every
 * record goes to k, and the first fault lines also to ctx's log. A log that cannot be read is said
 * in ctx's log and gives NULL: the run goes on without it. */
tel_klog_watch_t *tel_klog_watch_start(tel_klog_t *k, worker_ctx_t *ctx, const char *path);
/* Reads what is left and stops; says in ctx's log how many records were overwritten before they
 * were read. NULL-safe; nulls *w. */
void tel_klog_watch_stop(tel_klog_watch_t **w, worker_ctx_t *ctx);

#endif
