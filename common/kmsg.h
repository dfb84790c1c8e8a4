/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel log: parsing /dev/kmsg records (and dmesg-style lines), classifying the lines that
 * name a hardware fault, and reading or following the log.
 *
 * A /dev/kmsg record is "PRI,SEQ,TS_US,FLAGS[,...];TEXT" followed by optional continuation lines
 * " KEY=VALUE" (DEVICE=+pci:0000:41:00.0 names the device of a dev_printk line). PRI holds the
 * syslog facility (PRI >> 3) and level (PRI & 7). Lines from `dmesg`, `dmesg -x`, `dmesg -r` and
 * `journalctl -k` are accepted too; they carry less (no sequence, maybe no timestamp).
 *
 * The classes are the messages the kernel and the vendor drivers print for faults fleetburn looks
 * for, in their real formats:
 *   NVRM: Xid (PCI:0000:41:00): 79, pid=1234, name=..., GPU has fallen off the bus.
 *   amdgpu 0000:48:00.0: amdgpu: WARN: GPU thermal throttling temperature reached, ... HBM.
 *   amdgpu 0000:c1:00.0: amdgpu: 1 uncorrectable hardware errors detected in umc block
 *   EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0 ...)
 *   mce: [Hardware Error]: CPU 3: Machine Check: 0 Bank 5: be00000000800400
 *   mce: CPU12: Core temperature above threshold, cpu clock throttled (total events = 1)
 *   nvidia 0000:41:00.0: AER: PCIe Bus Error: severity=Corrected, type=Physical Layer, ...
 *   mlx5_core 0000:17:00.0 ibp23s0: Link down
 *   mlx5_core 0000:17:00.0: mlx5_port_module_event:1124:(pid 0): Port module event: module 0,
 *     Cable unplugged
 *   mlx5_core 0000:17:00.0: poll_health:800:(pid 0): device's health compromised - reached miss
 *     count
 * Anything else is FB_KMSG_NONE. Input is untrusted: garbage, truncated lines and binary bytes
 * parse to NONE (or to a class with unknown details), never to a crash. */
#ifndef FB_KMSG_H
#define FB_KMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FB_KMSG_TEXT_MAX 1024 /* text longer than this is cut (the kernel's limit is ~1000) */

/* One kernel log record. */
typedef struct {
    int level;      /* syslog level 0 (emerg) .. 7 (debug); -1 when the line did not say */
    int facility;   /* 0 = kernel; -1 when the line did not say */
    uint64_t seq;   /* /dev/kmsg sequence number; 0 when unknown */
    uint64_t ts_us; /* time since boot in microseconds; valid when has_ts */
    bool has_ts;
    char text[FB_KMSG_TEXT_MAX]; /* the message, control bytes replaced by '?' */
    char device[32];             /* PCI address from a DEVICE=+pci:... continuation line, or "" */
} fb_kmsg_record_t;

/* Parses one record: a /dev/kmsg record (with or without its continuation lines) or a
 * dmesg-style line. len bytes of line are read (no terminator needed). Returns 0, or -EINVAL when
 * there is no text at all (empty, only blanks or only a prefix). A prefix that does not parse is
 * kept as part of the text. */
int fb_kmsg_parse(const char *line, size_t len, fb_kmsg_record_t *out);

typedef enum {
    FB_KMSG_NONE = 0,
    FB_KMSG_XID,         /* NVIDIA Xid; pci, xid */
    FB_KMSG_GPU_THERMAL, /* amdgpu thermal throttling or over-temperature; pci */
    FB_KMSG_GPU_ERROR,   /* amdgpu RAS, reset, ring timeout, page fault; pci (may be "") */
    FB_KMSG_EDAC_CE,     /* EDAC corrected memory errors; count, label, mc */
    FB_KMSG_EDAC_UE,     /* EDAC uncorrected (UE, Fatal, Deferred); count, label, mc */
    FB_KMSG_MCE,         /* machine check / [Hardware Error]; fatal when uncorrected */
    FB_KMSG_CPU_THERMAL, /* CPU core/package temperature above threshold, clock throttled */
    FB_KMSG_PCIE_AER,    /* PCIe AER "PCIe Bus Error"; pci; fatal when uncorrected */
    FB_KMSG_LINK_DOWN,   /* mlx5 netdev "Link down", cable/module events; pci, netdev */
    FB_KMSG_NIC_ERROR,   /* mlx5 health: firmware fatal, health compromised; pci */
} fb_kmsg_class_t;
#define FB_KMSG_N_CLASSES (FB_KMSG_NIC_ERROR + 1)

/* What a classified line says. */
typedef struct {
    fb_kmsg_class_t cls;
    bool fatal;      /* an uncorrected fault: Xid, EDAC UE, uncorrected MCE/AER, amdgpu reset,
                        uncorrectable RAS error or ring timeout */
    char pci[16];    /* "0000:41:00.0" (an Xid's "0000:41:00" gets function .0); "" unknown */
    char netdev[32]; /* FB_KMSG_LINK_DOWN: the interface ("ibp23s0"), or "" */
    int xid;         /* FB_KMSG_XID: the Xid number, -1 when the line was cut before it */
    uint64_t count;  /* EDAC: errors this line reports (at least 1) */
    char label[128]; /* EDAC: the DIMM label ("CPU_SrcID#0_MC#0_Chan#1_DIMM#0"), or "" */
    int mc;          /* EDAC: memory controller number, -1 unknown */
} fb_kmsg_event_t;

/* Classifies a record; fills out (zeroed first) and returns its class. */
fb_kmsg_class_t fb_kmsg_classify(const fb_kmsg_record_t *rec, fb_kmsg_event_t *out);
/* "xid", "gpu_thermal", "gpu_error", "edac_ce", "edac_ue", "mce", "cpu_thermal", "pcie_aer",
 * "link_down", "nic_error"; "none". */
const char *fb_kmsg_class_name(fb_kmsg_class_t c);
/* True for the Xids NVIDIA documents as caused by applications (13, 31, 43, 45, 68, 109: the set
 * NVIDIA's Kubernetes device plugin also ignores). Seen in a log left by earlier jobs they do not
 * mean the GPU is bad; during a fleetburn workload they still fail it. */
bool fb_kmsg_xid_is_application(int xid);
/* NVIDIA's short description of an Xid ("GPU has fallen off the bus"), or NULL. Static. */
const char *fb_kmsg_xid_text(int xid);

/* Canonical PCI address "dddd:bb:dd.f" (lowercase, 4-digit domain) from the forms drivers print:
 * "0000:41:00.0", "00000000:41:00.0" (NVML), "0000:41:00" (Xid; function 0). Returns 0 or
 * -EINVAL. out must hold 16 bytes. */
int fb_kmsg_pci_canon(const char *text, char out[16]);

/* ---- reading ------------------------------------------------------------------------------ */

typedef struct fb_kmsg fb_kmsg_t;
typedef void (*fb_kmsg_fn)(const fb_kmsg_record_t *rec, void *user);

typedef enum {
    FB_KMSG_FROM_END,   /* only records written after opening */
    FB_KMSG_FROM_CLEAR, /* from the last `dmesg -C` (the whole buffer when never cleared) */
    FB_KMSG_FROM_START, /* the whole buffer */
} fb_kmsg_from_t;

/* Opens the kernel log at path (NULL = "/dev/kmsg") without blocking. A regular file or FIFO
 * (tests, or a log replayed into a FIFO) is read as a stream of lines in the same formats.
 * Returns 0 or a negative errno: -EPERM/-EACCES when the kernel restricts its log
 * (kernel.dmesg_restrict=1 without CAP_SYSLOG), -ENOENT when there is none. */
int fb_kmsg_open(const char *path, fb_kmsg_from_t from, fb_kmsg_t **out);
/* Reads every record available now and calls fn for each. Never blocks. Returns the number of
 * records, or a negative errno on a read error. A record the kernel overwrote before it was read
 * is counted by fb_kmsg_lost, not an error. */
int fb_kmsg_read(fb_kmsg_t *k, fb_kmsg_fn fn, void *user);
/* The descriptor to poll for POLLIN (not meaningful for regular files: poll them on a timer). */
int fb_kmsg_fd(const fb_kmsg_t *k);
bool fb_kmsg_is_file(const fb_kmsg_t *k);
uint64_t fb_kmsg_lost(const fb_kmsg_t *k);
void fb_kmsg_close(fb_kmsg_t **k);

/* ---- following ---------------------------------------------------------------------------- */

typedef struct fb_kmsg_watch fb_kmsg_watch_t;
/* Starts a thread that follows the log from its end (path as in fb_kmsg_open) and calls fn from
 * that thread for every new record. Returns 0, or the negative errno of fb_kmsg_open (no thread
 * then). */
int fb_kmsg_watch_start(const char *path, fb_kmsg_fn fn, void *user, fb_kmsg_watch_t **out);
/* Reads what is left, stops the thread and frees the watcher. NULL-safe; nulls *w. Returns the
 * number of records the kernel overwrote before they were read. */
uint64_t fb_kmsg_watch_stop(fb_kmsg_watch_t **w);

#endif
