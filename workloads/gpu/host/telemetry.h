/* SPDX-License-Identifier: Apache-2.0 */
/* GPU telemetry for workloads: sensors sampled onto the timeline while a workload runs, the
 * kernel log followed for faults, and error counters compared before and after, all turned into
 * metrics and findings that name the part.
 *
 *   telemetry_t *tel = telemetry_start(ctx, 1.0);
 *   ... load the GPUs ...
 *   int faults = telemetry_stop(&tel, ctx);   // > 0: the task must fail
 *
 * GPUs are numbered gpuN in PCI address order, as the agent's inventory lists them (CUDA and HIP
 * enumerate in the same order with CUDA_DEVICE_ORDER=PCI_BUS_ID). Sensors and counters come from
 * NVML or ROCm SMI (nvml.h, rocm_smi.h), whichever this node has; the kernel log from /dev/kmsg
 * (or $FLEETBURN_KMSG, a file or FIFO in tests). Anything missing — no library, no permission, an
 * unsupported counter — narrows what is sampled and is said once in a log line; it never fails.
 *
 * The pure pieces below (counter diffs, throttle names, kernel-log findings) are shared with the
 * health sweep and tested without a GPU through a fake backend. */
#ifndef FB_TELEMETRY_H
#define FB_TELEMETRY_H

#include "common/kmsg.h"
#include "worker.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct telemetry telemetry_t;

/* Starts a sampler thread: every interval_s, per GPU, NVML or ROCm SMI samples go to the timeline
 * via worker_telemetry (gpu0.temp_c, gpu0.mem_temp_c, gpu0.power_w, gpu0.power_limit_w,
 * gpu0.sm_clock_mhz, gpu0.mem_clock_mhz, gpu0.throttle (bitmask), gpu0.pcie_replay, and
 * gpu0.pcie_gen / gpu0.pcie_width); a /dev/kmsg watcher thread reads new kernel log lines (from the
 * end of the buffer at start) and attributes matching lines to the GPU/device. Baseline counters
 * (ECC, retired pages, remapped rows, replay, NVLink errors) are read at start. Never fails:
 * missing libraries/permissions reduce what is sampled. interval_s <= 0 means 1 s. */
telemetry_t *telemetry_start(worker_ctx_t *ctx, double interval_s);

/* Stops both threads; adds summary metrics to the result (gpuN.temp_max_c, gpuN.mem_temp_max_c,
 * gpuN.power_mean_w, gpuN.power_max_w, gpuN.power_limit_w, gpuN.sm_clock_min_mhz,
 * gpuN.sm_clock_median_mhz, gpuN.throttle_reasons (bitmask), gpuN.samples; throttle reasons as
 * names in a log line, and a finding when thermal or power-brake throttling was seen) and findings
 * for new faults: Xids (from NVML events and kmsg), uncorrectable ECC increase, new retired pages /
 * remapped rows / row-remap failure, NVLink error counter increases, PCIe replay increase, a PCIe
 * link that never reached its generation or width under load, relevant kmsg lines (EDAC, MCE, AER,
 * mlx5/IB link down) — each finding names the part ("<node>/gpuN" with the PCI address in the
 * evidence, the DIMM label for EDAC, "<node>/mlx5_0:1" for an HCA port). Returns the number of new
 * faults that must fail the task (Xid, uncorrectable ECC, retired pages, remap pending/failure, a
 * lost GPU, uncorrected EDAC/MCE/AER). NULL-safe (returns 0); nulls *t. */
int telemetry_stop(telemetry_t **t, worker_ctx_t *ctx);

/* ---- GPUs as a management library sees them -------------------------------------------------- */

#define TEL_MAX_GPUS 64
#define TEL_MAX_NVLINKS 36

/* Counters that only go up, and name a fault when they do. */
typedef enum {
    TEL_ECC_CE_VOLATILE,  /* corrected ECC errors since the driver loaded */
    TEL_ECC_UE_VOLATILE,  /* uncorrected ECC errors since the driver loaded */
    TEL_ECC_CE_AGGREGATE, /* lifetime counts (NVIDIA InfoROM) */
    TEL_ECC_UE_AGGREGATE,
    TEL_RETIRED_SBE,       /* pages retired for repeated single-bit errors */
    TEL_RETIRED_DBE,       /* pages retired for double-bit/uncorrected errors (AMD: bad pages) */
    TEL_RETIRED_PENDING,   /* 1 when a retirement waits for a reset (AMD: pending pages) */
    TEL_RETIRED_FAILED,    /* AMD: bad pages that could not be retired */
    TEL_REMAP_CORRECTABLE, /* rows remapped for correctable errors */
    TEL_REMAP_UNCORRECTABLE,
    TEL_REMAP_PENDING, /* 1 when a remap waits for a reset */
    TEL_REMAP_FAILURE, /* 1 when a remap failed */
    TEL_PCIE_REPLAY,
    TEL_N_COUNTERS
} tel_counter_t;

typedef enum {
    TEL_NVLINK_REPLAY,
    TEL_NVLINK_RECOVERY,
    TEL_NVLINK_CRC_FLIT,
    TEL_NVLINK_CRC_DATA,
    TEL_NVLINK_N
} tel_nvlink_counter_t;

typedef struct {
    uint64_t value[TEL_N_COUNTERS];
    uint32_t known; /* bit c: value[c] was read */
    uint64_t nvlink[TEL_MAX_NVLINKS][TEL_NVLINK_N];
    uint8_t nvlink_known[TEL_MAX_NVLINKS]; /* bit k: nvlink[link][k] was read */
    bool lost;                             /* the GPU has fallen off the bus */
} tel_counters_t;

/* One sample of one GPU; NAN = unknown. */
typedef struct {
    double temp_c, mem_temp_c, power_w, power_limit_w, sm_clock_mhz, mem_clock_mhz;
    double pcie_gen, pcie_width, pcie_replay;
    uint64_t throttle;
    bool has_throttle;
    bool lost;
} tel_sample_t;

typedef struct {
    char pci[16]; /* "0000:41:00.0" */
    char name[96];
    char uuid[96];
    const char *vendor;                    /* "nvidia" or "amd" (static) */
    unsigned pcie_max_gen, pcie_max_width; /* the link's best (GPU and slot); 0 unknown */
    uint64_t memory_bytes;                 /* the memory the driver reports in all; 0 unknown */
    char vbios[64], inforom[64];           /* "" unknown; InfoROM: NVIDIA only */
} tel_gpu_info_t;

/* A management library behind one interface; GPUs in PCI address order. */
typedef struct tel_backend tel_backend_t;
struct tel_backend {
    const char *name; /* "NVML", "ROCm SMI" */
    size_t n_gpus;
    void (*info)(tel_backend_t *b, size_t gpu, tel_gpu_info_t *out);
    void (*sample)(tel_backend_t *b, size_t gpu, tel_sample_t *out);
    void (*counters)(tel_backend_t *b, size_t gpu, tel_counters_t *out);
    /* Waits up to timeout_ms for an Xid: 1 with *gpu and *xid, 0 on timeout, negative errno when
     * the library has no events (the caller then sleeps). May be NULL. */
    int (*wait_xid)(tel_backend_t *b, int timeout_ms, size_t *gpu, int *xid);
    /* Appends " key=value" version pairs (driver, CUDA, library, VBIOS) to buf. */
    void (*versions)(tel_backend_t *b, char *buf, size_t len);
    void (*destroy)(tel_backend_t *b);
};

/* Opens NVML, else ROCm SMI; NULL when neither finds a GPU (why says what was tried). */
tel_backend_t *telemetry_backend_open(char *why, size_t whylen);
void telemetry_backend_destroy(tel_backend_t **b_p);
/* The backends (telemetry_nvml.c over nvml.c, telemetry_rocm_smi.c over rocm_smi.c); NULL when
 * not available. */
tel_backend_t *telemetry_nvml_backend(const char *lib, char *why, size_t whylen);
tel_backend_t *telemetry_rocm_backend(const char *lib, char *why, size_t whylen);

/* ---- pure pieces ----------------------------------------------------------------------------- */

/* NVIDIA throttle bits that are findings: hardware slowdown, software and hardware thermal
 * slowdown, hardware power brake (a power supply or board signalling trouble). A software power
 * cap is the normal state of a GPU under full load and is only logged. */
#define TEL_THROTTLE_FAULTS (0x8ULL | 0x20ULL | 0x40ULL | 0x80ULL)

/* "sw_power_cap,hw_thermal_slowdown" for NVML's bitmask into buf; "none" for 0; unknown bits as
 * "0x200". Returns buf. */
const char *telemetry_throttle_names(uint64_t mask, char *buf, size_t len);

/* Adds findings for the faults between two counter snapshots of one GPU (part "node/gpu0",
 * pci for the evidence, during: what the interval was, e.g. "during gpuburn"). Only counters known
 * in both snapshots are compared. Returns how many must fail the task (uncorrected ECC, retired
 * pages, remap pending or failure, the GPU lost); corrected ECC, correctable remaps, NVLink
 * errors and PCIe replays are findings that do not. */
int telemetry_counters_diff(fb_result_t *result, const char *part, const char *pci,
                            const tel_counters_t *before, const tel_counters_t *after,
                            const char *during);

/* A canonical PCI address, "0000:41:00.0". */
typedef struct {
    char pci[16];
} tel_pci_t;

/* GPUs from sysfs under root: NVIDIA and AMD display/3D/accelerator-class PCI functions (the
 * inventory's rule, without the integrated GPUs fleetburn cannot drive), in PCI address order.
 * Fills up to max addresses; returns the count. */
size_t telemetry_sysfs_gpus(const char *root, tel_pci_t *out, size_t max);

/* A PCI device's link from sysfs. The expected best is the device's maximum lowered to its
 * upstream port's maximum where that is lower: a Gen5 GPU in a Gen4 slot runs at Gen4 by design. */
typedef struct {
    double speed_gts, max_speed_gts; /* current and expected best, GT/s; 0 unknown */
    unsigned gen, max_gen;           /* the same as PCIe generations; 0 unknown */
    unsigned width, max_width;       /* lanes; 0 unknown */
    bool slot_limited;               /* the upstream port is what limits the expected best */
} tel_pcie_link_t;
/* Returns 0, -ENOENT when the device has no link attributes, or -EINVAL when they do not parse
 * (unknown parts are left 0). */
int telemetry_sysfs_link(const char *root, const char *pci, tel_pcie_link_t *out);
/* PCIe generation of a transfer rate in GT/s (2.5 -> 1 ... 64 -> 6); 0 when not a PCIe rate. */
unsigned telemetry_pcie_gen(double gts);

/* Kernel-log faults gathered into findings: one finding per part and kind of fault (a GPU's Xid
 * 79, a DIMM's uncorrected errors, an HCA port's link drops) with a count and the first line as
 * evidence. Thread-safe. */
typedef struct tel_klog tel_klog_t;
/* gpus: PCI addresses in gpuN order (borrowed for the object's lifetime). root: sysfs root for
 * naming HCAs. */
tel_klog_t *tel_klog_new(const char *node, const char *root, const tel_pci_t *gpus, size_t n_gpus);
void tel_klog_destroy(tel_klog_t **k_p);
/* Classifies and keeps a record; returns its class (FB_KMSG_NONE: ignored). */
fb_kmsg_class_t tel_klog_add(tel_klog_t *k, const fb_kmsg_record_t *rec);
/* An Xid reported by the management library (NVML event) for gpuN. */
void tel_klog_add_xid(tel_klog_t *k, size_t gpu, int xid);
typedef enum {
    TEL_KLOG_LIVE,    /* during a workload: every class is a finding */
    TEL_KLOG_HISTORY, /* the buffer before a run: only unrepaired faults (non-application Xids,
                         uncorrected errors, HCA failures) are findings; the rest are logged */
} tel_klog_mode_t;
/* Adds findings (and log lines) to ctx's result; counts[class] gets the lines per class (may be
 * NULL). Returns how many findings must fail the task. */
int tel_klog_report(tel_klog_t *k, worker_ctx_t *ctx, tel_klog_mode_t mode,
                    size_t counts[FB_KMSG_N_CLASSES]);

/* ---- for tests ------------------------------------------------------------------------------- */

typedef struct {
    double interval_s;
    const char *kmsg_path;  /* NULL: $FLEETBURN_KMSG, else /dev/kmsg */
    tel_backend_t *backend; /* taken over; NULL: telemetry_backend_open() unless no_libraries */
    bool no_libraries;      /* do not load NVML / ROCm SMI */
} telemetry_opts_t;
telemetry_t *telemetry_start_opts(worker_ctx_t *ctx, const telemetry_opts_t *opts);

#ifdef __cplusplus
}
#endif

#endif
