/* SPDX-License-Identifier: Apache-2.0 */
/* AMD's ROCm SMI library loaded at run time (librocm_smi64.so.7, .so.6, .so.5, .so.1 or
 * /opt/rocm/lib/librocm_smi64.so), like NVML in nvml.h: every function is looked up by name and
 * every query returns 0 or a negative errno, leaving its output untouched when the value is not
 * available (-EOPNOTSUPP not supported, -EPERM needs root, -ENOSYS missing in this library, -EIO
 * otherwise). Devices are ROCm SMI's indices. Throttle status is not read: ROCm SMI exposes it only
 * inside gpu_metrics structures whose layout changes with every ASIC and ROCm release. */
#ifndef FB_ROCM_SMI_H
#define FB_ROCM_SMI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct rocm_smi rocm_smi_t;

/* Loads lib (NULL = the usual sonames, then /opt/rocm/lib) and initialises ROCm SMI. Returns 0,
 * -ENOENT when no library is installed, or -EIO; why (may be NULL) gets a one-line reason. */
int rocm_smi_open(const char *lib, rocm_smi_t **out, char *why, size_t whylen);
void rocm_smi_close(rocm_smi_t **self_p);

/* amdgpu driver version ("6.8.5"); ROCm SMI library version ("7.3.0"). */
int rocm_smi_driver_version(rocm_smi_t *self, char *buf, size_t len);
int rocm_smi_library_version(rocm_smi_t *self, char *buf, size_t len);

int rocm_smi_device_count(rocm_smi_t *self, unsigned *n);
/* "0000:c1:00.0" (16 bytes). */
int rocm_smi_device_pci(rocm_smi_t *self, unsigned dev, char out[16]);
int rocm_smi_device_name(rocm_smi_t *self, unsigned dev, char *buf, size_t len);
int rocm_smi_device_vbios(rocm_smi_t *self, unsigned dev, char *buf, size_t len);
/* The device's VRAM in bytes (rsmi_dev_memory_total_get). */
int rocm_smi_memory_total(rocm_smi_t *self, unsigned dev, uint64_t *bytes);

typedef enum {
    ROCM_SMI_TEMP_EDGE = 0,
    ROCM_SMI_TEMP_JUNCTION = 1, /* hotspot: what throttles */
    ROCM_SMI_TEMP_MEMORY = 2,   /* HBM */
} rocm_smi_temp_t;
int rocm_smi_temperature(rocm_smi_t *self, unsigned dev, rocm_smi_temp_t which, double *celsius);
/* Average power, or current socket power on ASICs (MI300) that have no average. */
int rocm_smi_power(rocm_smi_t *self, unsigned dev, double *watts);
int rocm_smi_power_cap(rocm_smi_t *self, unsigned dev, double *watts);
/* Current system (shader) clock and memory clock. */
int rocm_smi_sclk(rocm_smi_t *self, unsigned dev, double *mhz);
int rocm_smi_mclk(rocm_smi_t *self, unsigned dev, double *mhz);

/* ECC errors summed over every RAS block (UMC is the HBM). */
int rocm_smi_ecc(rocm_smi_t *self, unsigned dev, uint64_t *corrected, uint64_t *uncorrected);
int rocm_smi_pcie_replay(rocm_smi_t *self, unsigned dev, uint64_t *count);
/* Retired ("bad") HBM pages by state: reserved (retired), pending (retired at the next reset),
 * unreservable (could not be retired). */
int rocm_smi_bad_pages(rocm_smi_t *self, unsigned dev, uint64_t *reserved, uint64_t *pending,
                       uint64_t *unreservable);

/* Decodes a frequency table as returned by rsmi_dev_gpu_clk_freq_get from either layout (ROCm
 * before 6.0: {u32 num_supported; u32 current; u64 frequency[32]}, since: {bool has_deep_sleep;
 * u32 num_supported; u32 current; u64 frequency[33]}). Frequencies are in Hz. Returns 0 with the
 * current frequency in MHz, or -EIO when neither layout makes sense. Exposed for tests. */
int rocm_smi_decode_freqs(const void *buf, size_t len, double *mhz);

#endif
