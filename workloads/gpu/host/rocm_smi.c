/* SPDX-License-Identifier: Apache-2.0 */
/* ROCm SMI through dlopen: the AMD counterpart of nvml.c for telemetry and the health sweep —
 * temperatures (edge, junction, HBM), power and its cap, shader and memory clocks, ECC counts per
 * RAS block, PCIe replays and retired HBM pages. The rsmi_* prototypes used are declared here from
 * the library's C API. The one structure whose layout changed between releases (the frequency
 * table) is decoded from either layout. */
#include "rocm_smi.h"

#include "common/util.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int rsmi_status_t; /* an enum in rocm_smi.h */
#define RSMI_STATUS_SUCCESS 0
#define RSMI_STATUS_NOT_SUPPORTED 2
#define RSMI_STATUS_PERMISSION 4
#define RSMI_STATUS_NOT_YET_IMPLEMENTED 9
#define RSMI_STATUS_INSUFFICIENT_SIZE 11
#define RSMI_CLK_TYPE_SYS 0
#define RSMI_CLK_TYPE_MEM 4
#define RSMI_TEMP_CURRENT 0
#define RSMI_SW_COMP_DRIVER 0
#define RSMI_MEM_PAGE_STATUS_RESERVED 0
#define RSMI_MEM_PAGE_STATUS_PENDING 1
#define RSMI_MEM_PAGE_STATUS_UNRESERVABLE 2
#define RSMI_GPU_BLOCK_FIRST 0x1ULL
#define RSMI_GPU_BLOCK_LAST 0x2000ULL /* FUSE; every block up to it is summed */
#define S_FREQ_BUF 1024               /* larger than either frequency-table layout */

typedef struct {
    uint32_t major, minor, patch;
    const char *build;
} rsmi_version_t;

typedef struct {
    uint64_t correctable_err, uncorrectable_err;
    uint64_t spare[4]; /* later releases append counters (deferred_err) */
} rsmi_error_count_t;

typedef struct {
    uint64_t page_address, page_size;
    int status;
} rsmi_retired_page_record_t;

#define S_FUNCS(X)                                                                                 \
    X(init, rsmi_status_t, (uint64_t), "rsmi_init")                                                \
    X(shut_down, rsmi_status_t, (void), "rsmi_shut_down")                                          \
    X(version, rsmi_status_t, (rsmi_version_t *), "rsmi_version_get")                              \
    X(version_str, rsmi_status_t, (int, char *, uint32_t), "rsmi_version_str_get")                 \
    X(count, rsmi_status_t, (uint32_t *), "rsmi_num_monitor_devices")                              \
    X(pci_id, rsmi_status_t, (uint32_t, uint64_t *), "rsmi_dev_pci_id_get")                        \
    X(name, rsmi_status_t, (uint32_t, char *, size_t), "rsmi_dev_name_get")                        \
    X(vbios, rsmi_status_t, (uint32_t, char *, uint32_t), "rsmi_dev_vbios_version_get")            \
    X(memory_total, rsmi_status_t, (uint32_t, int, uint64_t *), "rsmi_dev_memory_total_get")       \
    X(temp, rsmi_status_t, (uint32_t, uint32_t, int, int64_t *), "rsmi_dev_temp_metric_get")       \
    X(power_ave, rsmi_status_t, (uint32_t, uint32_t, uint64_t *), "rsmi_dev_power_ave_get")        \
    X(socket_power, rsmi_status_t, (uint32_t, uint64_t *), "rsmi_dev_current_socket_power_get")    \
    X(power_cap, rsmi_status_t, (uint32_t, uint32_t, uint64_t *), "rsmi_dev_power_cap_get")        \
    X(clk, rsmi_status_t, (uint32_t, int, void *), "rsmi_dev_gpu_clk_freq_get")                    \
    X(ecc_enabled, rsmi_status_t, (uint32_t, uint64_t *), "rsmi_dev_ecc_enabled_get")              \
    X(ecc_count, rsmi_status_t, (uint32_t, uint64_t, rsmi_error_count_t *),                        \
      "rsmi_dev_ecc_count_get")                                                                    \
    X(replay, rsmi_status_t, (uint32_t, uint64_t *), "rsmi_dev_pci_replay_counter_get")            \
    X(bad_pages, rsmi_status_t, (uint32_t, uint32_t *, rsmi_retired_page_record_t *),              \
      "rsmi_dev_memory_reserved_pages_get")

#define S_FIELD(name, ret, args, sym) ret(*name) args;
struct rocm_smi {
    void *lib;
    S_FUNCS(S_FIELD)
};

static int s_errno(rsmi_status_t s)
{
    switch (s) {
    case RSMI_STATUS_SUCCESS:
        return 0;
    case RSMI_STATUS_NOT_SUPPORTED:
    case RSMI_STATUS_NOT_YET_IMPLEMENTED:
        return -EOPNOTSUPP;
    case RSMI_STATUS_PERMISSION:
        return -EPERM;
    case RSMI_STATUS_INSUFFICIENT_SIZE:
        return -ENOSPC;
    default:
        return -EIO;
    }
}

#define S_CALL(self, fn, ...) ((self)->fn ? s_errno((self)->fn(__VA_ARGS__)) : -ENOSYS)

int rocm_smi_open(const char *lib, rocm_smi_t **out, char *why, size_t whylen)
{
    static const char *const names[] = {
        "librocm_smi64.so.7",
        "librocm_smi64.so.6",
        "librocm_smi64.so.5",
        "librocm_smi64.so.1",
        "/opt/rocm/lib/librocm_smi64.so.7",
        "/opt/rocm/lib/librocm_smi64.so",
    };
    *out = NULL;
    void *h = NULL;
    char err[256] = "";
    /* dlerror's text lives only until the next dl call: keep the first one. */
    for (size_t i = 0; !h && i < (lib ? 1 : FB_ARRAY_LEN(names)); i++) {
        h = dlopen(lib ? lib : names[i], RTLD_NOW | RTLD_LOCAL);
        const char *e = h ? NULL : dlerror();
        if (e && !err[0])
            fb_strlcpy(err, e, sizeof err);
    }
    if (!h) {
        if (why && whylen)
            snprintf(why, whylen, "%s not loadable: %s", lib ? lib : "librocm_smi64.so",
                     err[0] ? err : "unknown error");
        return -ENOENT;
    }
    rocm_smi_t *self = xcalloc(1, sizeof *self);
    self->lib = h;
#define S_LOAD(fname, ret, args, sym) *(void **)(&self->fname) = dlsym(h, sym);
    S_FUNCS(S_LOAD)
#undef S_LOAD
    rsmi_status_t s = self->init && self->shut_down ? self->init(0) : -1;
    if (s != RSMI_STATUS_SUCCESS) {
        if (why && whylen)
            snprintf(why, whylen, "rsmi_init failed (status %d)", s);
        dlclose(h);
        free(self);
        return -EIO;
    }
    *out = self;
    return 0;
}

void rocm_smi_close(rocm_smi_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    rocm_smi_t *self = *self_p;
    self->shut_down();
    dlclose(self->lib);
    free(self);
    *self_p = NULL;
}

/* The string a ROCm SMI call wrote into v (vlen bytes, which it may leave unterminated) copied
 * into buf when the call's result rc is 0; returns rc. */
static int s_string_out(int rc, char *v, size_t vlen, char *buf, size_t len)
{
    if (rc == 0) {
        v[vlen - 1] = '\0';
        fb_strlcpy(buf, v, len);
    }
    return rc;
}

int rocm_smi_driver_version(rocm_smi_t *self, char *buf, size_t len)
{
    char v[96] = "";
    return s_string_out(S_CALL(self, version_str, RSMI_SW_COMP_DRIVER, v, sizeof v), v, sizeof v,
                        buf, len);
}

int rocm_smi_library_version(rocm_smi_t *self, char *buf, size_t len)
{
    rsmi_version_t v = {0, 0, 0, NULL};
    int rc = S_CALL(self, version, &v);
    if (rc == 0)
        snprintf(buf, len, "%u.%u.%u", v.major, v.minor, v.patch);
    return rc;
}

int rocm_smi_device_count(rocm_smi_t *self, unsigned *n)
{
    uint32_t v = 0;
    int rc = S_CALL(self, count, &v);
    if (rc == 0)
        *n = v;
    return rc;
}

int rocm_smi_device_pci(rocm_smi_t *self, unsigned dev, char out[16])
{
    uint64_t bdf = 0;
    int rc = S_CALL(self, pci_id, dev, &bdf);
    if (rc < 0)
        return rc;
    /* BDFID = domain << 32 | partition << 28 | bus << 8 | device << 3 | function */
    uint64_t domain = bdf >> 32;
    if (domain > 0xffff)
        return -EIO;
    snprintf(out, 16, "%04x:%02x:%02x.%u", (unsigned)domain, (unsigned)(bdf >> 8 & 0xff),
             (unsigned)(bdf >> 3 & 0x1f), (unsigned)(bdf & 7));
    return 0;
}

int rocm_smi_device_name(rocm_smi_t *self, unsigned dev, char *buf, size_t len)
{
    char v[128] = "";
    return s_string_out(S_CALL(self, name, dev, v, sizeof v), v, sizeof v, buf, len);
}

int rocm_smi_device_vbios(rocm_smi_t *self, unsigned dev, char *buf, size_t len)
{
    char v[64] = "";
    return s_string_out(S_CALL(self, vbios, dev, v, sizeof v), v, sizeof v, buf, len);
}

int rocm_smi_memory_total(rocm_smi_t *self, unsigned dev, uint64_t *bytes)
{
    uint64_t v = 0;
    int rc = S_CALL(self, memory_total, dev, 0 /* RSMI_MEM_TYPE_VRAM */, &v);
    if (rc == 0) {
        if (v == 0)
            return -EIO;
        *bytes = v;
    }
    return rc;
}

int rocm_smi_temperature(rocm_smi_t *self, unsigned dev, rocm_smi_temp_t which, double *celsius)
{
    int64_t milli = 0;
    int rc = S_CALL(self, temp, dev, (uint32_t)which, RSMI_TEMP_CURRENT, &milli);
    if (rc == 0)
        *celsius = (double)milli / 1000.0;
    return rc;
}

int rocm_smi_power(rocm_smi_t *self, unsigned dev, double *watts)
{
    uint64_t uw = 0;
    int rc = S_CALL(self, power_ave, dev, 0, &uw);
    if (rc < 0 || uw == 0) /* MI300 reports 0 or "not supported" for the average */
        rc = S_CALL(self, socket_power, dev, &uw);
    if (rc == 0)
        *watts = (double)uw / 1e6;
    return rc;
}

int rocm_smi_power_cap(rocm_smi_t *self, unsigned dev, double *watts)
{
    uint64_t uw = 0;
    int rc = S_CALL(self, power_cap, dev, 0, &uw);
    if (rc == 0)
        *watts = (double)uw / 1e6;
    return rc;
}

static bool s_plausible_hz(uint64_t hz)
{
    return hz >= 1000000ULL && hz <= 100000000000ULL;
}

int rocm_smi_decode_freqs(const void *buf, size_t len, double *mhz)
{
    const unsigned char *b = buf;
    uint32_t u32[4];
    uint64_t f;
    if (len < 16)
        return -EIO;
    memcpy(u32, b, sizeof u32);
    /* Since ROCm 6.0: bool at 0, num_supported at 4, current at 8, frequency[] at 16. */
    if (b[0] <= 1 && u32[1] >= 1 && u32[1] <= 33 && u32[2] < u32[1] &&
        16 + 8 * (size_t)u32[2] + 8 <= len) {
        memcpy(&f, b + 16 + 8 * (size_t)u32[2], sizeof f);
        if (s_plausible_hz(f)) {
            *mhz = (double)f / 1e6;
            return 0;
        }
    }
    /* Before: num_supported at 0, current at 4, frequency[] at 8. */
    if (u32[0] >= 1 && u32[0] <= 32 && u32[1] < u32[0] && 8 + 8 * (size_t)u32[1] + 8 <= len) {
        memcpy(&f, b + 8 + 8 * (size_t)u32[1], sizeof f);
        if (s_plausible_hz(f)) {
            *mhz = (double)f / 1e6;
            return 0;
        }
    }
    return -EIO;
}

static int s_clock(rocm_smi_t *self, unsigned dev, int type, double *mhz)
{
    uint64_t *buf = xcalloc(S_FREQ_BUF / sizeof(uint64_t), sizeof(uint64_t));
    int rc = S_CALL(self, clk, dev, type, buf);
    if (rc == 0)
        rc = rocm_smi_decode_freqs(buf, S_FREQ_BUF, mhz);
    free(buf);
    return rc;
}

int rocm_smi_sclk(rocm_smi_t *self, unsigned dev, double *mhz)
{
    return s_clock(self, dev, RSMI_CLK_TYPE_SYS, mhz);
}

int rocm_smi_mclk(rocm_smi_t *self, unsigned dev, double *mhz)
{
    return s_clock(self, dev, RSMI_CLK_TYPE_MEM, mhz);
}

int rocm_smi_ecc(rocm_smi_t *self, unsigned dev, uint64_t *corrected, uint64_t *uncorrected)
{
    if (!self->ecc_count)
        return -ENOSYS;
    uint64_t enabled = ~0ULL;
    if (self->ecc_enabled && self->ecc_enabled(dev, &enabled) != RSMI_STATUS_SUCCESS)
        enabled = ~0ULL;
    uint64_t ce = 0, ue = 0;
    int got = 0, rc = -EOPNOTSUPP;
    for (uint64_t blk = RSMI_GPU_BLOCK_FIRST; blk <= RSMI_GPU_BLOCK_LAST; blk <<= 1) {
        if (!(enabled & blk))
            continue;
        rsmi_error_count_t ec;
        memset(&ec, 0, sizeof ec);
        int r = s_errno(self->ecc_count(dev, blk, &ec));
        if (r == 0) {
            ce += ec.correctable_err;
            ue += ec.uncorrectable_err;
            got++;
        } else if (r == -EPERM) {
            rc = r;
        }
    }
    if (!got)
        return rc;
    *corrected = ce;
    *uncorrected = ue;
    return 0;
}

int rocm_smi_pcie_replay(rocm_smi_t *self, unsigned dev, uint64_t *count)
{
    uint64_t v = 0;
    int rc = S_CALL(self, replay, dev, &v);
    if (rc == 0)
        *count = v;
    return rc;
}

int rocm_smi_bad_pages(rocm_smi_t *self, unsigned dev, uint64_t *reserved, uint64_t *pending,
                       uint64_t *unreservable)
{
    if (!self->bad_pages)
        return -ENOSYS;
    uint32_t n = 0;
    rsmi_status_t s = self->bad_pages(dev, &n, NULL);
    if (s != RSMI_STATUS_SUCCESS && s != RSMI_STATUS_INSUFFICIENT_SIZE)
        return s_errno(s);
    uint64_t r = 0, p = 0, u = 0;
    if (n > 0) {
        uint32_t cap = n < 65536 ? n : 65536;
        rsmi_retired_page_record_t *rec = xcalloc(cap, sizeof *rec);
        uint32_t got = cap;
        s = self->bad_pages(dev, &got, rec);
        if (s != RSMI_STATUS_SUCCESS && s != RSMI_STATUS_INSUFFICIENT_SIZE) {
            free(rec);
            return s_errno(s);
        }
        for (uint32_t i = 0; i < got && i < cap; i++) {
            if (rec[i].status == RSMI_MEM_PAGE_STATUS_PENDING)
                p++;
            else if (rec[i].status == RSMI_MEM_PAGE_STATUS_UNRESERVABLE)
                u++;
            else
                r++;
        }
        free(rec);
    }
    *reserved = r;
    *pending = p;
    *unreservable = u;
    return 0;
}
