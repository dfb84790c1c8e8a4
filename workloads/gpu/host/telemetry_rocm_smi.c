/* SPDX-License-Identifier: Apache-2.0 */
/* The ROCm SMI backend of telemetry (tel_backend_t over rocm_smi.h): sensors, ECC counts, bad
 * pages, PCIe replays and versions of AMD GPUs, in PCI address order. ROCm SMI has no event
 * interface (Xids are NVIDIA's; amdgpu faults come from the kernel log) and no throttle status
 * (rocm_smi.h says why); the PCIe link comes from sysfs. */
#include "rocm_smi.h"
#include "telemetry_impl.h"

#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    tel_backend_t base;
    rocm_smi_t *smi;
    unsigned dev[TEL_MAX_GPUS];
    tel_gpu_info_t info[TEL_MAX_GPUS];
} rocm_backend_t;

static void s_rs_info(tel_backend_t *b, size_t i, tel_gpu_info_t *out)
{
    *out = ((rocm_backend_t *)b)->info[i];
}

static void s_rs_sample(tel_backend_t *b, size_t i, tel_sample_t *s)
{
    rocm_backend_t *rb = (rocm_backend_t *)b;
    rocm_smi_t *r = rb->smi;
    unsigned d = rb->dev[i];
    tel_sample_unknown(s);
    /* The junction (hotspot) temperature is what throttles; older boards only have the edge. */
    if (rocm_smi_temperature(r, d, ROCM_SMI_TEMP_JUNCTION, &s->temp_c) < 0)
        rocm_smi_temperature(r, d, ROCM_SMI_TEMP_EDGE, &s->temp_c);
    rocm_smi_temperature(r, d, ROCM_SMI_TEMP_MEMORY, &s->mem_temp_c);
    rocm_smi_power(r, d, &s->power_w);
    rocm_smi_power_cap(r, d, &s->power_limit_w);
    rocm_smi_sclk(r, d, &s->sm_clock_mhz);
    rocm_smi_mclk(r, d, &s->mem_clock_mhz);
    uint64_t replay = 0;
    if (rocm_smi_pcie_replay(r, d, &replay) == 0)
        s->pcie_replay = (double)replay;
    tel_pcie_link_t link;
    if (telemetry_sysfs_link("", rb->info[i].pci, &link) == 0) {
        if (link.gen)
            s->pcie_gen = link.gen;
        if (link.width)
            s->pcie_width = link.width;
    }
}

static void s_rs_counters(tel_backend_t *b, size_t i, tel_counters_t *c)
{
    rocm_backend_t *rb = (rocm_backend_t *)b;
    memset(c, 0, sizeof *c);
    uint64_t ce = 0, ue = 0, res = 0, pend = 0, unres = 0, replay = 0;
    if (rocm_smi_ecc(rb->smi, rb->dev[i], &ce, &ue) == 0) {
        tel_counter_set(c, TEL_ECC_CE_VOLATILE, ce);
        tel_counter_set(c, TEL_ECC_UE_VOLATILE, ue);
    }
    if (rocm_smi_bad_pages(rb->smi, rb->dev[i], &res, &pend, &unres) == 0) {
        tel_counter_set(c, TEL_RETIRED_DBE, res);
        tel_counter_set(c, TEL_RETIRED_PENDING, pend);
        tel_counter_set(c, TEL_RETIRED_FAILED, unres);
    }
    if (rocm_smi_pcie_replay(rb->smi, rb->dev[i], &replay) == 0)
        tel_counter_set(c, TEL_PCIE_REPLAY, replay);
}

static void s_rs_vbios(tel_backend_t *b, size_t i, char *out, size_t len)
{
    rocm_backend_t *rb = (rocm_backend_t *)b;
    rocm_smi_device_vbios(rb->smi, rb->dev[i], out, len);
}

static void s_rs_versions(tel_backend_t *b, char *buf, size_t len)
{
    rocm_backend_t *rb = (rocm_backend_t *)b;
    char v[128];
    if (rocm_smi_driver_version(rb->smi, v, sizeof v) == 0)
        tel_append_kv(buf, len, "amdgpu_driver", v);
    if (rocm_smi_library_version(rb->smi, v, sizeof v) == 0)
        tel_append_kv(buf, len, "rocm_smi", v);
    tel_append_vbios(b, buf, len, s_rs_vbios);
}

static void s_rs_destroy(tel_backend_t *b)
{
    rocm_backend_t *rb = (rocm_backend_t *)b;
    rocm_smi_close(&rb->smi);
    free(rb);
}

/* ROCm SMI's GPU `index` into slot `slot`; false when its PCI address cannot be read. */
static bool s_rs_found(tel_backend_t *b, unsigned index, size_t slot)
{
    rocm_backend_t *rb = (rocm_backend_t *)b;
    tel_gpu_info_t *info = &rb->info[slot];
    if (rocm_smi_device_pci(rb->smi, index, info->pci) < 0)
        return false;
    rb->dev[slot] = index;
    info->vendor = "amd";
    rocm_smi_device_name(rb->smi, index, info->name, sizeof info->name);
    rocm_smi_memory_total(rb->smi, index, &info->memory_bytes);
    rocm_smi_device_vbios(rb->smi, index, info->vbios, sizeof info->vbios);
    tel_pcie_link_t link;
    if (telemetry_sysfs_link("", info->pci, &link) == 0) {
        info->pcie_max_gen = link.max_gen;
        info->pcie_max_width = link.max_width;
    }
    return true;
}

tel_backend_t *telemetry_rocm_backend(const char *lib, char *why, size_t whylen)
{
    rocm_smi_t *r = NULL;
    if (rocm_smi_open(lib, &r, why, whylen) < 0)
        return NULL;
    rocm_backend_t *rb = xcalloc(1, sizeof *rb);
    rb->smi = r;
    rb->base = (tel_backend_t){"ROCm SMI",    0,    s_rs_info,     s_rs_sample,
                               s_rs_counters, NULL, s_rs_versions, s_rs_destroy};
    unsigned count = 0;
    int rc = rocm_smi_device_count(r, &count);
    if (tel_backend_fill(&rb->base, rc, count, s_rs_found, rb->info, rb->dev, sizeof rb->dev[0],
                         why, whylen))
        return &rb->base;
    s_rs_destroy(&rb->base);
    return NULL;
}
