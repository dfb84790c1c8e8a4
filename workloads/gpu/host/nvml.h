/* SPDX-License-Identifier: Apache-2.0 */
/* NVIDIA Management Library (NVML) loaded at run time. libnvidia-ml.so.1 comes with the driver,
 * so its version varies from node to node and it is absent on nodes without NVIDIA GPUs: it is
 * opened with dlopen, and every function fleetburn uses is looked up by name, the newest variant
 * first (nvmlInit_v2, then nvmlInit). The few NVML types used are declared in nvml.c from the
 * documented, stable C API; nvml.h is not needed to build.
 *
 * Every query returns 0 or a negative errno and leaves its output untouched on failure: a value a
 * GPU, driver or permission does not give is "unknown", never an error for the caller to act on.
 * NVML answers map to errno values: not supported -EOPNOTSUPP, no permission -EPERM, GPU lost
 * (fallen off the bus) -ENODEV, function missing in this driver -ENOSYS, timeout -ETIMEDOUT,
 * anything else -EIO. The library is thread-safe; so is this wrapper once opened. */
#ifndef FB_NVML_H
#define FB_NVML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct nvml nvml_t;
typedef struct nvml_device *nvml_dev_t; /* NVML's nvmlDevice_t */

/* Loads lib (NULL = "libnvidia-ml.so.1") and initialises NVML. Returns 0, -ENOENT when the
 * library is not installed, -ENXIO when the NVIDIA driver is not loaded or does not match the
 * library, -EPERM, or -EIO; why (may be NULL) gets a one-line reason. */
int nvml_open(const char *lib, nvml_t **out, char *why, size_t whylen);
/* Shuts NVML down (reference-counted by NVML) and unloads it. NULL-safe; nulls *self_p. */
void nvml_close(nvml_t **self_p);

/* "580.65.06" */
int nvml_driver_version(nvml_t *self, char *buf, size_t len);
/* NVML's own version, "13.580.65.06" */
int nvml_library_version(nvml_t *self, char *buf, size_t len);
/* The CUDA version the driver supports, as "13.0" */
int nvml_cuda_version(nvml_t *self, char *buf, size_t len);

int nvml_device_count(nvml_t *self, unsigned *n);
int nvml_device_by_index(nvml_t *self, unsigned index, nvml_dev_t *dev);
/* pci: any form fb_kmsg_pci_canon accepts ("0000:41:00.0"). */
int nvml_device_by_pci(nvml_t *self, const char *pci, nvml_dev_t *dev);
/* The device's PCI address in canonical form "0000:41:00.0" (16 bytes). */
int nvml_device_pci(nvml_t *self, nvml_dev_t dev, char out[16]);
int nvml_device_name(nvml_t *self, nvml_dev_t dev, char *buf, size_t len);
int nvml_device_uuid(nvml_t *self, nvml_dev_t dev, char *buf, size_t len);
int nvml_device_vbios(nvml_t *self, nvml_dev_t dev, char *buf, size_t len);
/* The InfoROM image version, "G525.0225.00.03". */
int nvml_device_inforom(nvml_t *self, nvml_dev_t dev, char *buf, size_t len);
/* The memory the driver reports in all (nvmlDeviceGetMemoryInfo's total: 143771 MiB on an
 * H200), in bytes. */
int nvml_device_memory_total(nvml_t *self, nvml_dev_t dev, uint64_t *bytes);

/* Sensors. */
int nvml_temperature(nvml_t *self, nvml_dev_t dev, double *celsius);
/* HBM temperature (field NVML_FI_DEV_MEMORY_TEMP); GDDR boards do not report one. */
int nvml_memory_temperature(nvml_t *self, nvml_dev_t dev, double *celsius);
int nvml_power(nvml_t *self, nvml_dev_t dev, double *watts);
int nvml_power_limit(nvml_t *self, nvml_dev_t dev, double *watts); /* the enforced limit */
int nvml_sm_clock(nvml_t *self, nvml_dev_t dev, double *mhz);
int nvml_mem_clock(nvml_t *self, nvml_dev_t dev, double *mhz);

/* Clock event ("throttle") reasons, NVML's bitmask (nvmlClocksEventReason*). */
#define NVML_THROTTLE_GPU_IDLE 0x1ULL
#define NVML_THROTTLE_APP_CLOCKS 0x2ULL
#define NVML_THROTTLE_SW_POWER_CAP 0x4ULL
#define NVML_THROTTLE_HW_SLOWDOWN 0x8ULL
#define NVML_THROTTLE_SYNC_BOOST 0x10ULL
#define NVML_THROTTLE_SW_THERMAL 0x20ULL
#define NVML_THROTTLE_HW_THERMAL 0x40ULL
#define NVML_THROTTLE_HW_POWER_BRAKE 0x80ULL
#define NVML_THROTTLE_DISPLAY_CLOCKS 0x100ULL
int nvml_throttle_reasons(nvml_t *self, nvml_dev_t dev, uint64_t *mask);

/* Counters. */
int nvml_ecc_errors(nvml_t *self, nvml_dev_t dev, bool uncorrected, bool aggregate,
                    uint64_t *count);
/* Pages retired for multiple single-bit (double_bit false) or double-bit errors. */
int nvml_retired_pages(nvml_t *self, nvml_dev_t dev, bool double_bit, uint64_t *count);
int nvml_retired_pending(nvml_t *self, nvml_dev_t dev, bool *pending);
typedef struct {
    uint64_t corrected, uncorrected; /* rows remapped for each kind of error */
    bool pending;                    /* a remap waits for a GPU reset */
    bool failure;                    /* a remap failed: the GPU is out of spare rows */
} nvml_remap_t;
int nvml_remapped_rows(nvml_t *self, nvml_dev_t dev, nvml_remap_t *out);
int nvml_pcie_replay(nvml_t *self, nvml_dev_t dev, uint64_t *count);

typedef struct {
    unsigned gen, max_gen, width, max_width; /* 0 = unknown; max_gen is the GPU's and slot's */
} nvml_pcie_t;
/* Returns 0 when at least one of the four is known. */
int nvml_pcie_link(nvml_t *self, nvml_dev_t dev, nvml_pcie_t *out);

#define NVML_MAX_LINKS 36
/* Whether NVLink link is up; -EINVAL past the device's last link. */
int nvml_nvlink_active(nvml_t *self, nvml_dev_t dev, unsigned link, bool *active);
typedef enum {
    NVML_NVLINK_REPLAY = 0,   /* data link transmit replays */
    NVML_NVLINK_RECOVERY = 1, /* data link recoveries */
    NVML_NVLINK_CRC_FLIT = 2, /* flow-control digit CRC errors */
    NVML_NVLINK_CRC_DATA = 3, /* data CRC errors */
} nvml_nvlink_counter_t;
int nvml_nvlink_errors(nvml_t *self, nvml_dev_t dev, unsigned link, nvml_nvlink_counter_t which,
                       uint64_t *count);

/* Xid events: a set registered for nvmlEventTypeXidCriticalError on every device that supports
 * it. Returns 0, or -EOPNOTSUPP when no device supports Xid events. */
typedef struct nvml_events nvml_events_t;
int nvml_events_open(nvml_t *self, nvml_events_t **out);
/* Waits up to timeout_ms. Returns 1 with the device and Xid (999 = unknown) of an event, 0 on
 * timeout, or a negative errno. */
int nvml_events_wait(nvml_events_t *ev, unsigned timeout_ms, nvml_dev_t *dev, uint64_t *xid);
void nvml_events_close(nvml_events_t **ev_p);

#endif
