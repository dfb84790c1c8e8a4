/* SPDX-License-Identifier: Apache-2.0 */
/* The NVML backend of telemetry (tel_backend_t over nvml.h): sensors, error counters (ECC,
 * retired pages, remapped rows, PCIe replays, NVLink errors), Xid events and versions of NVIDIA
 * GPUs, in PCI address order. */
#include "nvml.h"
#include "telemetry_impl.h"

#include "common/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    tel_backend_t base;
    nvml_t *nvml;
    nvml_events_t *events;
    bool events_tried;
    nvml_dev_t dev[TEL_MAX_GPUS];
    tel_gpu_info_t info[TEL_MAX_GPUS];
} nvml_backend_t;

static void s_nv_info(tel_backend_t *b, size_t i, tel_gpu_info_t *out)
{
    *out = ((nvml_backend_t *)b)->info[i];
}

static void s_nv_sample(tel_backend_t *b, size_t i, tel_sample_t *s)
{
    nvml_backend_t *nb = (nvml_backend_t *)b;
    nvml_t *n = nb->nvml;
    nvml_dev_t d = nb->dev[i];
    tel_sample_unknown(s);
    if (nvml_temperature(n, d, &s->temp_c) == -ENODEV) {
        s->lost = true;
        return;
    }
    nvml_memory_temperature(n, d, &s->mem_temp_c);
    nvml_power(n, d, &s->power_w);
    nvml_power_limit(n, d, &s->power_limit_w);
    nvml_sm_clock(n, d, &s->sm_clock_mhz);
    nvml_mem_clock(n, d, &s->mem_clock_mhz);
    s->has_throttle = nvml_throttle_reasons(n, d, &s->throttle) == 0;
    nvml_pcie_t link;
    if (nvml_pcie_link(n, d, &link) == 0) {
        if (link.gen)
            s->pcie_gen = link.gen;
        if (link.width)
            s->pcie_width = link.width;
    }
    uint64_t replay = 0;
    if (nvml_pcie_replay(n, d, &replay) == 0)
        s->pcie_replay = (double)replay;
}

static void s_nv_counters(tel_backend_t *b, size_t i, tel_counters_t *c)
{
    nvml_backend_t *nb = (nvml_backend_t *)b;
    nvml_t *n = nb->nvml;
    nvml_dev_t d = nb->dev[i];
    memset(c, 0, sizeof *c);
    uint64_t v = 0;
    int rc = nvml_ecc_errors(n, d, true, false, &v);
    if (rc == -ENODEV) {
        c->lost = true;
        return;
    }
    if (rc == 0)
        tel_counter_set(c, TEL_ECC_UE_VOLATILE, v);
    if (nvml_ecc_errors(n, d, false, false, &v) == 0)
        tel_counter_set(c, TEL_ECC_CE_VOLATILE, v);
    if (nvml_ecc_errors(n, d, true, true, &v) == 0)
        tel_counter_set(c, TEL_ECC_UE_AGGREGATE, v);
    if (nvml_ecc_errors(n, d, false, true, &v) == 0)
        tel_counter_set(c, TEL_ECC_CE_AGGREGATE, v);
    if (nvml_retired_pages(n, d, false, &v) == 0)
        tel_counter_set(c, TEL_RETIRED_SBE, v);
    if (nvml_retired_pages(n, d, true, &v) == 0)
        tel_counter_set(c, TEL_RETIRED_DBE, v);
    bool pending = false;
    if (nvml_retired_pending(n, d, &pending) == 0)
        tel_counter_set(c, TEL_RETIRED_PENDING, pending);
    nvml_remap_t remap;
    if (nvml_remapped_rows(n, d, &remap) == 0) {
        tel_counter_set(c, TEL_REMAP_CORRECTABLE, remap.corrected);
        tel_counter_set(c, TEL_REMAP_UNCORRECTABLE, remap.uncorrected);
        tel_counter_set(c, TEL_REMAP_PENDING, remap.pending);
        tel_counter_set(c, TEL_REMAP_FAILURE, remap.failure);
    }
    if (nvml_pcie_replay(n, d, &v) == 0)
        tel_counter_set(c, TEL_PCIE_REPLAY, v);
    for (unsigned l = 0; l < TEL_MAX_NVLINKS; l++) {
        bool active = false;
        int src = nvml_nvlink_active(n, d, l, &active);
        if (src == -EINVAL || (src < 0 && l == 0))
            break; /* past the last link, or no NVLink */
        if (src < 0 || !active)
            continue;
        for (unsigned k = 0; k < TEL_NVLINK_N; k++)
            if (nvml_nvlink_errors(n, d, l, (nvml_nvlink_counter_t)k, &v) == 0) {
                c->nvlink[l][k] = v;
                c->nvlink_known[l] |= (uint8_t)(1u << k);
            }
    }
}

static int s_nv_wait_xid(tel_backend_t *b, int timeout_ms, size_t *gpu, int *xid)
{
    nvml_backend_t *nb = (nvml_backend_t *)b;
    if (!nb->events_tried) {
        nb->events_tried = true;
        if (nvml_events_open(nb->nvml, &nb->events) < 0)
            nb->events = NULL;
    }
    if (!nb->events)
        return -EOPNOTSUPP;
    nvml_dev_t d = NULL;
    uint64_t x = 0;
    int rc = nvml_events_wait(nb->events, (unsigned)timeout_ms, &d, &x);
    if (rc <= 0)
        return rc;
    for (size_t i = 0; i < b->n_gpus; i++)
        if (nb->dev[i] == d) {
            *gpu = i;
            *xid = x > INT_MAX ? 999 : (int)x;
            return 1;
        }
    return 0;
}

static void s_nv_vbios(tel_backend_t *b, size_t i, char *out, size_t len)
{
    nvml_backend_t *nb = (nvml_backend_t *)b;
    nvml_device_vbios(nb->nvml, nb->dev[i], out, len);
}

static void s_nv_versions(tel_backend_t *b, char *buf, size_t len)
{
    nvml_backend_t *nb = (nvml_backend_t *)b;
    char v[128];
    if (nvml_driver_version(nb->nvml, v, sizeof v) == 0)
        tel_append_kv(buf, len, "nvidia_driver", v);
    if (nvml_cuda_version(nb->nvml, v, sizeof v) == 0)
        tel_append_kv(buf, len, "cuda_driver", v);
    if (nvml_library_version(nb->nvml, v, sizeof v) == 0)
        tel_append_kv(buf, len, "nvml", v);
    tel_append_vbios(b, buf, len, s_nv_vbios);
}

static void s_nv_destroy(tel_backend_t *b)
{
    nvml_backend_t *nb = (nvml_backend_t *)b;
    nvml_events_close(&nb->events);
    nvml_close(&nb->nvml);
    free(nb);
}

/* NVML's GPU `index` into slot `slot`; false when NVML cannot open it or read its address (a GPU
 * that health then reports from sysfs). */
static bool s_nv_found(tel_backend_t *b, unsigned index, size_t slot)
{
    nvml_backend_t *nb = (nvml_backend_t *)b;
    nvml_t *n = nb->nvml;
    nvml_dev_t *dev = &nb->dev[slot];
    tel_gpu_info_t *info = &nb->info[slot];
    if (nvml_device_by_index(n, index, dev) < 0 || nvml_device_pci(n, *dev, info->pci) < 0)
        return false;
    info->vendor = "nvidia";
    nvml_device_name(n, *dev, info->name, sizeof info->name);
    nvml_device_uuid(n, *dev, info->uuid, sizeof info->uuid);
    nvml_device_memory_total(n, *dev, &info->memory_bytes);
    nvml_device_vbios(n, *dev, info->vbios, sizeof info->vbios);
    nvml_device_inforom(n, *dev, info->inforom, sizeof info->inforom);
    nvml_pcie_t link;
    if (nvml_pcie_link(n, *dev, &link) == 0) {
        info->pcie_max_gen = link.max_gen;
        info->pcie_max_width = link.max_width;
    }
    return true;
}

tel_backend_t *telemetry_nvml_backend(const char *lib, char *why, size_t whylen)
{
    nvml_t *n = NULL;
    if (nvml_open(lib, &n, why, whylen) < 0)
        return NULL;
    nvml_backend_t *nb = xcalloc(1, sizeof *nb);
    nb->nvml = n;
    nb->base = (tel_backend_t){
        "NVML",        0,           s_nv_info, s_nv_sample, s_nv_counters, s_nv_wait_xid,
        s_nv_versions, s_nv_destroy};
    unsigned count = 0;
    int rc = nvml_device_count(n, &count);
    if (tel_backend_fill(&nb->base, rc, count, s_nv_found, nb->info, nb->dev, sizeof nb->dev[0],
                         why, whylen))
        return &nb->base;
    s_nv_destroy(&nb->base);
    return NULL;
}
