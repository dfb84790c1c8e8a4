/* SPDX-License-Identifier: Apache-2.0 */
/* GPU telemetry around a workload. A sampler thread reads every GPU's sensors through NVML or
 * ROCm SMI once per interval and sends them to the timeline, waiting for NVML Xid events between
 * samples; a kernel-log thread follows /dev/kmsg and keeps the lines that name a fault. Error
 * counters are read at start and at stop, and the difference, the log lines and the sensor history
 * become metrics and findings that name the part — a GPU by index and PCI address, a DIMM by its
 * EDAC label, an HCA port by device and port. The same pieces serve the health sweep, which reads
 * the counters and the log as they are before any load. */
#include "telemetry.h"
#include "nvml.h"
#include "rocm_smi.h"

#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define S_CLOCK_BINS 8192        /* SM clock histogram, 1 MHz bins, for the median */
#define S_KLOG_MAX_ENTRIES 256   /* distinct (part, fault) pairs kept */
#define S_KLOG_MAX_LIVE_LOGS 100 /* kernel lines echoed to the timeline during a run */
#define S_XID_WAIT_MS 200        /* longest wait for an Xid event before looking at the stop flag */
#define S_LOADED_FRACTION 0.5    /* a sample at >= half the power limit counts as "under load" */

static const char *s_host(const char *node)
{
    return node && *node ? node : "localhost";
}

/* ---- throttle reasons ------------------------------------------------------------------------ */

const char *telemetry_throttle_names(uint64_t mask, char *buf, size_t len)
{
    static const char *const names[] = {
        "gpu_idle",       "applications_clocks", "sw_power_cap",        "hw_slowdown",
        "sync_boost",     "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake",
        "display_clocks",
    };
    size_t used = 0;
    if (len == 0)
        return buf;
    buf[0] = '\0';
    if (mask == 0) {
        fb_strlcpy(buf, "none", len);
        return buf;
    }
    for (unsigned b = 0; b < 64; b++) {
        if (!(mask >> b & 1))
            continue;
        char unknown[24];
        const char *name = b < FB_ARRAY_LEN(names) ? names[b] : NULL;
        if (!name) {
            snprintf(unknown, sizeof unknown, "0x%llx", 1ULL << b);
            name = unknown;
        }
        int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", name);
        if (n < 0 || (size_t)n >= len - used) {
            buf[used] = '\0';
            break;
        }
        used += (size_t)n;
    }
    return buf;
}

/* ---- counter diffs --------------------------------------------------------------------------- */

static bool s_known(const tel_counters_t *c, tel_counter_t k)
{
    return c->known >> k & 1;
}

/* The increase of counter k, 0 when it is not known in both or went down (a driver reload). */
static uint64_t s_delta(const tel_counters_t *b, const tel_counters_t *a, tel_counter_t k)
{
    if (!s_known(b, k) || !s_known(a, k) || a->value[k] <= b->value[k])
        return 0;
    return a->value[k] - b->value[k];
}

int telemetry_counters_diff(fb_result_t *r, const char *part, const char *pci,
                            const tel_counters_t *b, const tel_counters_t *a, const char *during)
{
    int fatal = 0;
    if (!during)
        during = "during the run";
    if (a->lost && !b->lost) {
        fb_result_add_findingf(r, part, "gpu",
                               "GPU at PCI %s became inaccessible %s (fallen off the bus or lost)",
                               pci, during);
        fatal++;
    }
    /* Uncorrected ECC: the volatile count where known, else the lifetime count. */
    bool vol = s_known(b, TEL_ECC_UE_VOLATILE) && s_known(a, TEL_ECC_UE_VOLATILE);
    uint64_t ue = s_delta(b, a, vol ? TEL_ECC_UE_VOLATILE : TEL_ECC_UE_AGGREGATE);
    uint64_t ce = s_delta(b, a, vol ? TEL_ECC_CE_VOLATILE : TEL_ECC_CE_AGGREGATE);
    if (ue) {
        fb_result_add_findingf(r, part, "gpu",
                               "uncorrectable ECC errors +%" PRIu64
                               " %s (PCI %s; corrected +%" PRIu64 ")",
                               ue, during, pci, ce);
        fatal++;
    } else if (ce) {
        fb_result_add_findingf(r, part, "gpu", "corrected ECC errors +%" PRIu64 " %s (PCI %s)", ce,
                               during, pci);
    }
    uint64_t sbe = s_delta(b, a, TEL_RETIRED_SBE), dbe = s_delta(b, a, TEL_RETIRED_DBE);
    if (sbe || dbe) {
        fb_result_add_findingf(r, part, "gpu",
                               "memory pages retired %s: +%" PRIu64 " for double-bit/uncorrected "
                               "errors, +%" PRIu64 " for repeated single-bit errors (PCI %s)",
                               during, dbe, sbe, pci);
        fatal++;
    }
    if (s_delta(b, a, TEL_RETIRED_PENDING)) {
        fb_result_add_findingf(r, part, "gpu",
                               "a page retirement became pending %s: it takes effect at the next "
                               "GPU reset (PCI %s)",
                               during, pci);
        fatal++;
    }
    uint64_t failed = s_delta(b, a, TEL_RETIRED_FAILED);
    if (failed) {
        fb_result_add_findingf(r, part, "gpu",
                               "%" PRIu64 " bad memory pages could not be retired %s (PCI %s)",
                               failed, during, pci);
        fatal++;
    }
    uint64_t rc = s_delta(b, a, TEL_REMAP_CORRECTABLE), ru = s_delta(b, a, TEL_REMAP_UNCORRECTABLE);
    if (ru) {
        fb_result_add_findingf(r, part, "gpu",
                               "memory rows remapped %s: +%" PRIu64
                               " for uncorrectable errors, +%" PRIu64
                               " for correctable errors (PCI %s)",
                               during, ru, rc, pci);
        fatal++;
    } else if (rc) {
        fb_result_add_findingf(
            r, part, "gpu", "memory rows remapped for correctable errors +%" PRIu64 " %s (PCI %s)",
            rc, during, pci);
    }
    if (s_delta(b, a, TEL_REMAP_PENDING)) {
        fb_result_add_findingf(r, part, "gpu",
                               "a row remap became pending %s: the GPU needs a reset (PCI %s)",
                               during, pci);
        fatal++;
    }
    if (s_delta(b, a, TEL_REMAP_FAILURE)) {
        fb_result_add_findingf(r, part, "gpu",
                               "a row remap failed %s: the GPU has no spare rows left (PCI %s)",
                               during, pci);
        fatal++;
    }
    uint64_t replay = s_delta(b, a, TEL_PCIE_REPLAY);
    if (replay)
        fb_result_add_findingf(r, part, "link",
                               "PCIe replays +%" PRIu64 " %s on the link of PCI %s (CRC errors on "
                               "the link: riser, slot or cable)",
                               replay, during, pci);
    static const char *const nv_names[TEL_NVLINK_N] = {"replays", "recoveries", "CRC flit errors",
                                                       "CRC data errors"};
    for (unsigned l = 0; l < TEL_MAX_NVLINKS; l++) {
        char what[256];
        size_t used = 0;
        what[0] = '\0';
        for (unsigned k = 0; k < TEL_NVLINK_N; k++) {
            if (!(b->nvlink_known[l] >> k & 1) || !(a->nvlink_known[l] >> k & 1) ||
                a->nvlink[l][k] <= b->nvlink[l][k])
                continue;
            int n = snprintf(what + used, sizeof what - used, "%s%s +%" PRIu64, used ? ", " : "",
                             nv_names[k], a->nvlink[l][k] - b->nvlink[l][k]);
            if (n > 0 && (size_t)n < sizeof what - used)
                used += (size_t)n;
        }
        if (used) {
            char *lpart = xasprintf("%s/nvlink%u", part, l);
            fb_result_add_findingf(r, lpart, "link", "NVLink %u of PCI %s: %s %s", l, pci, what,
                                   during);
            free(lpart);
        }
    }
    return fatal;
}

/* ---- sysfs: GPUs and PCIe links -------------------------------------------------------------- */

static int s_read_hex(const char *path, unsigned long *out)
{
    char *text = fb_read_file(path, NULL);
    if (!text)
        return -ENOENT;
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(text, &end, 16);
    int rc = (errno || end == text || *end) ? -EINVAL : 0;
    free(text);
    if (rc == 0)
        *out = v;
    return rc;
}

static int s_pci_cmp(const void *a, const void *b)
{
    return strcmp(((const tel_pci_t *)a)->pci, ((const tel_pci_t *)b)->pci);
}

size_t telemetry_sysfs_gpus(const char *root, tel_pci_t *out, size_t max)
{
    char *base = xasprintf("%s/sys/bus/pci/devices", root ? root : "");
    DIR *d = opendir(base);
    size_t n = 0;
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) && n < max) {
            char canon[16];
            if (fb_kmsg_pci_canon(de->d_name, canon) < 0 || strlen(de->d_name) != 12)
                continue;
            unsigned long cls = 0, vendor = 0;
            char *p = xasprintf("%s/%s/class", base, de->d_name);
            int rc = s_read_hex(p, &cls);
            free(p);
            p = xasprintf("%s/%s/vendor", base, de->d_name);
            rc = rc ? rc : s_read_hex(p, &vendor);
            free(p);
            if (rc || (vendor != 0x10de && vendor != 0x1002))
                continue;
            unsigned long c = cls >> 8;
            if (c == 0x0300 || c == 0x0302 || c == 0x0380 || (c == 0x1200 && vendor == 0x1002))
                memcpy(out[n++].pci, canon, sizeof canon);
        }
        closedir(d);
    }
    free(base);
    qsort(out, n, sizeof *out, s_pci_cmp);
    return n;
}

unsigned telemetry_pcie_gen(double gts)
{
    static const double rates[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0, 128.0};
    for (unsigned i = 0; i < FB_ARRAY_LEN(rates); i++)
        if (fabs(gts - rates[i]) < 0.01)
            return i + 1;
    return 0;
}

/* "32.0 GT/s PCIe", "16 GT/s", "2.5 GT/s"; 0 for "Unknown" or garbage. */
static double s_read_speed(const char *path, int *rc)
{
    char *text = fb_read_file(path, NULL);
    if (!text) {
        *rc = -ENOENT;
        return 0;
    }
    char *end = NULL;
    double v = strtod(text, &end);
    bool ok = end != text && !strncmp(end, " GT/s", 5) && v > 0 && v < 1000;
    if (!ok && strncmp(text, "Unknown", 7) != 0)
        *rc = -EINVAL;
    free(text);
    return ok ? v : 0;
}

static unsigned s_read_width(const char *path, int *rc)
{
    uint64_t w = 0;
    int r = fb_read_u64(path, &w);
    if (r == -EINVAL)
        *rc = -EINVAL;
    return r == 0 && w <= 64 ? (unsigned)w : 0;
}

int telemetry_sysfs_link(const char *root, const char *pci, tel_pcie_link_t *out)
{
    memset(out, 0, sizeof *out);
    char *dev = xasprintf("%s/sys/bus/pci/devices/%s", root ? root : "", pci);
    int rc = 0, miss = 0;
    char *p = xasprintf("%s/current_link_speed", dev);
    out->speed_gts = s_read_speed(p, &miss);
    free(p);
    if (miss == -ENOENT) {
        free(dev);
        return -ENOENT;
    }
    rc = miss;
    p = xasprintf("%s/max_link_speed", dev);
    out->max_speed_gts = s_read_speed(p, &rc);
    free(p);
    p = xasprintf("%s/current_link_width", dev);
    out->width = s_read_width(p, &rc);
    free(p);
    p = xasprintf("%s/max_link_width", dev);
    out->max_width = s_read_width(p, &rc);
    free(p);
    /* The upstream port: the parent directory of the device's real path. */
    char real[PATH_MAX];
    if (realpath(dev, real)) {
        char *slash = strrchr(real, '/');
        if (slash && slash != real) {
            *slash = '\0';
            int urc = 0;
            p = xasprintf("%s/max_link_speed", real);
            double up = s_read_speed(p, &urc);
            free(p);
            p = xasprintf("%s/max_link_width", real);
            unsigned upw = s_read_width(p, &urc);
            free(p);
            if (up > 0 && out->max_speed_gts > 0 && up < out->max_speed_gts) {
                out->max_speed_gts = up;
                out->slot_limited = true;
            }
            if (upw > 0 && out->max_width > 0 && upw < out->max_width) {
                out->max_width = upw;
                out->slot_limited = true;
            }
        }
    }
    free(dev);
    out->gen = telemetry_pcie_gen(out->speed_gts);
    out->max_gen = telemetry_pcie_gen(out->max_speed_gts);
    return rc == -ENOENT ? 0 : rc;
}

/* ---- kernel log ------------------------------------------------------------------------------ */

typedef struct {
    fb_kmsg_class_t cls;
    char part[192];
    const char *kind;
    char key[128]; /* what makes two lines the same fault: Xid number, DIMM label, netdev */
    char pci[16];
    int xid;
    bool fatal;
    uint64_t lines, events, errors; /* kernel lines, NVML events, EDAC error counts */
    char first[320];
} klog_entry_t;

struct tel_klog {
    pthread_mutex_t lock;
    char *node;
    char *root;
    const tel_pci_t *gpus;
    size_t n_gpus;
    klog_entry_t *e;
    size_t n;
    uint64_t dropped;
    size_t counts[FB_KMSG_N_CLASSES];
};

tel_klog_t *tel_klog_new(const char *node, const char *root, const tel_pci_t *gpus, size_t n_gpus)
{
    tel_klog_t *k = xcalloc(1, sizeof *k);
    pthread_mutex_init(&k->lock, NULL);
    k->node = xstrdup(s_host(node));
    k->root = xstrdup(root ? root : "");
    k->gpus = gpus;
    k->n_gpus = n_gpus;
    k->e = xcalloc(S_KLOG_MAX_ENTRIES, sizeof *k->e);
    return k;
}

void tel_klog_destroy(tel_klog_t **k_p)
{
    if (!k_p || !*k_p)
        return;
    tel_klog_t *k = *k_p;
    pthread_mutex_destroy(&k->lock);
    free(k->node);
    free(k->root);
    free(k->e);
    free(k);
    *k_p = NULL;
}

/* gpuN for a PCI address; an Xid names bus and device only, so function 0 matches any. */
static int s_gpu_index(const tel_klog_t *k, const char *pci)
{
    if (!pci[0])
        return -1;
    for (size_t i = 0; i < k->n_gpus; i++)
        if (!strcmp(k->gpus[i].pci, pci))
            return (int)i;
    for (size_t i = 0; i < k->n_gpus; i++)
        if (!strncmp(k->gpus[i].pci, pci, 10))
            return (int)i;
    return -1;
}

/* "mlx5_0" (and ":1" when it has a single port) for an HCA's PCI address; false if not an HCA. */
static bool s_hca_name(const char *root, const char *pci, char *out, size_t len)
{
    char *dir = xasprintf("%s/sys/bus/pci/devices/%s/infiniband", root, pci);
    DIR *d = opendir(dir);
    free(dir);
    if (!d)
        return false;
    struct dirent *de;
    bool found = false;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.' && strlen(de->d_name) < 64) {
            fb_strlcpy(out, de->d_name, len);
            found = true;
            break;
        }
    closedir(d);
    if (!found)
        return false;
    char *ports = xasprintf("%s/sys/class/infiniband/%s/ports", root, out);
    d = opendir(ports);
    free(ports);
    if (d) {
        int n = 0;
        char port[16] = "";
        while ((de = readdir(d)))
            if (de->d_name[0] != '.' && strlen(de->d_name) < sizeof port) {
                n++;
                fb_strlcpy(port, de->d_name, sizeof port);
            }
        closedir(d);
        size_t used = strlen(out);
        if (n == 1 && used + 1 + strlen(port) < len)
            snprintf(out + used, len - used, ":%s", port);
    }
    return true;
}

/* Fills the entry's part, kind and key. */
static void s_klog_part(const tel_klog_t *k, const fb_kmsg_event_t *ev, klog_entry_t *e)
{
    char hca[96];
    int gpu = s_gpu_index(k, ev->pci);
    e->kind = "node";
    switch (ev->cls) {
    case FB_KMSG_EDAC_CE:
    case FB_KMSG_EDAC_UE:
        if (ev->label[0]) {
            snprintf(e->part, sizeof e->part, "%s/%s", k->node, ev->label);
            e->kind = "dimm";
        } else {
            snprintf(e->part, sizeof e->part, "%s", k->node);
            e->kind = "memory";
        }
        snprintf(e->key, sizeof e->key, "%s", ev->label);
        return;
    case FB_KMSG_MCE:
    case FB_KMSG_CPU_THERMAL:
        snprintf(e->part, sizeof e->part, "%s", k->node);
        return;
    case FB_KMSG_XID:
        snprintf(e->key, sizeof e->key, "%d", ev->xid);
        break;
    case FB_KMSG_LINK_DOWN:
        snprintf(e->key, sizeof e->key, "%s", ev->netdev);
        break;
    default:
        break;
    }
    if (gpu >= 0) {
        snprintf(e->part, sizeof e->part, "%s/gpu%d", k->node, gpu);
        e->kind = ev->cls == FB_KMSG_PCIE_AER ? "link" : "gpu";
    } else if (ev->pci[0] && s_hca_name(k->root, ev->pci, hca, sizeof hca)) {
        snprintf(e->part, sizeof e->part, "%s/%s", k->node, hca);
        e->kind = ev->cls == FB_KMSG_NIC_ERROR ? "nic" : "link";
    } else if (ev->cls == FB_KMSG_LINK_DOWN && ev->netdev[0]) {
        snprintf(e->part, sizeof e->part, "%s/%s", k->node, ev->netdev);
        e->kind = "link";
    } else if (ev->pci[0]) {
        snprintf(e->part, sizeof e->part, "%s/%s", k->node, ev->pci);
        e->kind =
            ev->cls == FB_KMSG_XID || ev->cls == FB_KMSG_GPU_ERROR || ev->cls == FB_KMSG_GPU_THERMAL
                ? "gpu"
            : ev->cls == FB_KMSG_NIC_ERROR ? "nic"
                                           : "link";
    } else {
        snprintf(e->part, sizeof e->part, "%s", k->node);
    }
}

/* The entry for an event, created when new; NULL when the table is full. Lock held. */
static klog_entry_t *s_klog_entry(tel_klog_t *k, const fb_kmsg_event_t *ev)
{
    klog_entry_t probe;
    memset(&probe, 0, sizeof probe);
    s_klog_part(k, ev, &probe);
    for (size_t i = 0; i < k->n; i++) {
        klog_entry_t *e = &k->e[i];
        if (e->cls == ev->cls && e->fatal == ev->fatal && !strcmp(e->part, probe.part) &&
            !strcmp(e->key, probe.key))
            return e;
    }
    if (k->n == S_KLOG_MAX_ENTRIES) {
        k->dropped++;
        return NULL;
    }
    klog_entry_t *e = &k->e[k->n++];
    *e = probe;
    e->cls = ev->cls;
    e->fatal = ev->fatal;
    e->xid = ev->xid;
    memcpy(e->pci, ev->pci, sizeof e->pci);
    return e;
}

fb_kmsg_class_t tel_klog_add(tel_klog_t *k, const fb_kmsg_record_t *rec)
{
    fb_kmsg_event_t ev;
    fb_kmsg_class_t c = fb_kmsg_classify(rec, &ev);
    if (c == FB_KMSG_NONE)
        return c;
    pthread_mutex_lock(&k->lock);
    k->counts[c]++;
    klog_entry_t *e = s_klog_entry(k, &ev);
    if (e) {
        if (e->lines++ == 0 && !e->first[0])
            fb_strlcpy(e->first, rec->text, sizeof e->first);
        e->errors += ev.count;
    }
    pthread_mutex_unlock(&k->lock);
    return c;
}

void tel_klog_add_xid(tel_klog_t *k, size_t gpu, int xid)
{
    fb_kmsg_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.cls = FB_KMSG_XID;
    ev.fatal = true;
    ev.xid = xid;
    ev.mc = -1;
    pthread_mutex_lock(&k->lock);
    if (gpu < k->n_gpus)
        memcpy(ev.pci, k->gpus[gpu].pci, sizeof ev.pci);
    klog_entry_t *e = s_klog_entry(k, &ev);
    if (e)
        e->events++;
    pthread_mutex_unlock(&k->lock);
}

/* The evidence text of an entry. */
static char *s_klog_what(const klog_entry_t *e, tel_klog_mode_t mode)
{
    char src[96];
    const char *when = mode == TEL_KLOG_LIVE ? "during the run" : "in the kernel log";
    if (e->events && e->lines)
        snprintf(src, sizeof src, "%" PRIu64 " kernel log line%s and %" PRIu64 " NVML event%s",
                 e->lines, e->lines == 1 ? "" : "s", e->events, e->events == 1 ? "" : "s");
    else if (e->events)
        snprintf(src, sizeof src, "%" PRIu64 " NVML event%s", e->events, e->events == 1 ? "" : "s");
    else
        snprintf(src, sizeof src, "%" PRIu64 " kernel log line%s", e->lines,
                 e->lines == 1 ? "" : "s");
    char first[360] = "";
    if (e->first[0])
        snprintf(first, sizeof first, "; first: %s", e->first);
    char at[40] = "";
    if (e->pci[0])
        snprintf(at, sizeof at, " at PCI %s", e->pci);
    switch (e->cls) {
    case FB_KMSG_XID: {
        const char *text = fb_kmsg_xid_text(e->xid);
        char num[16] = "?";
        if (e->xid >= 0)
            snprintf(num, sizeof num, "%d", e->xid);
        return xasprintf("Xid %s%s%s%s%s %s (%s)%s", num, text ? " (" : "", text ? text : "",
                         text ? ")" : "", at, when, src, first);
    }
    case FB_KMSG_EDAC_CE:
    case FB_KMSG_EDAC_UE:
        return xasprintf("EDAC: %" PRIu64 " %s memory error%s %s (%s)%s", e->errors,
                         e->cls == FB_KMSG_EDAC_UE ? "uncorrected" : "corrected",
                         e->errors == 1 ? "" : "s", when, src, first);
    case FB_KMSG_MCE:
        return xasprintf("machine check (%s) %s (%s)%s", e->fatal ? "uncorrected" : "corrected",
                         when, src, first);
    case FB_KMSG_CPU_THERMAL:
        return xasprintf("CPU thermal throttling %s (%s)%s", when, src, first);
    case FB_KMSG_PCIE_AER:
        return xasprintf("PCIe AER %s errors%s %s (%s)%s", e->fatal ? "uncorrected" : "corrected",
                         at, when, src, first);
    case FB_KMSG_GPU_THERMAL:
        return xasprintf("GPU thermal throttling%s %s (%s)%s", at, when, src, first);
    case FB_KMSG_GPU_ERROR:
        return xasprintf("GPU %serror%s %s (%s)%s", e->fatal ? "fatal " : "", at, when, src, first);
    case FB_KMSG_LINK_DOWN:
        return xasprintf("link down or cable event%s %s (%s)%s", at, when, src, first);
    case FB_KMSG_NIC_ERROR:
        return xasprintf("HCA/NIC error%s %s (%s)%s", at, when, src, first);
    default:
        return xasprintf("%s (%s)%s", fb_kmsg_class_name(e->cls), src, first);
    }
}

/* Whether an entry left in the log before a run is a fault to fix now. */
static bool s_history_finding(const klog_entry_t *e)
{
    switch (e->cls) {
    case FB_KMSG_XID:
        return !fb_kmsg_xid_is_application(e->xid);
    case FB_KMSG_EDAC_UE:
    case FB_KMSG_NIC_ERROR:
        return true;
    case FB_KMSG_GPU_ERROR:
    case FB_KMSG_MCE:
    case FB_KMSG_PCIE_AER:
        return e->fatal;
    default:
        return false;
    }
}

int tel_klog_report(tel_klog_t *k, worker_ctx_t *ctx, tel_klog_mode_t mode,
                    size_t counts[FB_KMSG_N_CLASSES])
{
    int fatal = 0;
    pthread_mutex_lock(&k->lock);
    fb_result_t *r = worker_result(ctx);
    for (size_t i = 0; i < k->n; i++) {
        const klog_entry_t *e = &k->e[i];
        char *what = s_klog_what(e, mode);
        if (mode == TEL_KLOG_LIVE || s_history_finding(e)) {
            fb_result_add_finding(r, e->part, e->kind, what);
            if (mode == TEL_KLOG_HISTORY || e->fatal)
                fatal++;
        } else {
            worker_log(ctx, "kernel log (not failing): %s: %s", e->part, what);
        }
        free(what);
    }
    if (k->dropped)
        worker_log(ctx, "kernel log: %" PRIu64 " more fault lines on other parts not itemised",
                   k->dropped);
    if (counts)
        memcpy(counts, k->counts, sizeof k->counts);
    pthread_mutex_unlock(&k->lock);
    return fatal;
}

/* ---- NVML backend ---------------------------------------------------------------------------- */

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
    *s = (tel_sample_t){NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, 0, false, false};
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

static void s_set(tel_counters_t *c, tel_counter_t k, uint64_t v)
{
    c->value[k] = v;
    c->known |= 1u << k;
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
        s_set(c, TEL_ECC_UE_VOLATILE, v);
    if (nvml_ecc_errors(n, d, false, false, &v) == 0)
        s_set(c, TEL_ECC_CE_VOLATILE, v);
    if (nvml_ecc_errors(n, d, true, true, &v) == 0)
        s_set(c, TEL_ECC_UE_AGGREGATE, v);
    if (nvml_ecc_errors(n, d, false, true, &v) == 0)
        s_set(c, TEL_ECC_CE_AGGREGATE, v);
    if (nvml_retired_pages(n, d, false, &v) == 0)
        s_set(c, TEL_RETIRED_SBE, v);
    if (nvml_retired_pages(n, d, true, &v) == 0)
        s_set(c, TEL_RETIRED_DBE, v);
    bool pending = false;
    if (nvml_retired_pending(n, d, &pending) == 0)
        s_set(c, TEL_RETIRED_PENDING, pending);
    nvml_remap_t remap;
    if (nvml_remapped_rows(n, d, &remap) == 0) {
        s_set(c, TEL_REMAP_CORRECTABLE, remap.corrected);
        s_set(c, TEL_REMAP_UNCORRECTABLE, remap.uncorrected);
        s_set(c, TEL_REMAP_PENDING, remap.pending);
        s_set(c, TEL_REMAP_FAILURE, remap.failure);
    }
    if (nvml_pcie_replay(n, d, &v) == 0)
        s_set(c, TEL_PCIE_REPLAY, v);
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

/* Appends " key=value" to buf when value is non-empty; blanks become '_'. */
static void s_append_kv(char *buf, size_t len, const char *key, const char *value)
{
    size_t used = strlen(buf);
    if (!value || !*value || used + 3 >= len)
        return;
    int n = snprintf(buf + used, len - used, " %s=%s", key, value);
    if (n < 0 || (size_t)n >= len - used) {
        buf[used] = '\0';
        return;
    }
    for (char *p = buf + used + 1 + strlen(key) + 1; *p; p++)
        if (*p == ' ' || *p == '\t')
            *p = '_';
}

/* The distinct values of per-GPU strings, comma-separated, into out. */
static void s_distinct(char (*values)[64], size_t n, char *out, size_t len)
{
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!values[i][0])
            continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(values[i], values[j]);
        size_t used = strlen(out);
        if (!seen && used + strlen(values[i]) + 2 < len)
            snprintf(out + used, len - used, "%s%s", used ? "," : "", values[i]);
    }
}

static void s_nv_versions(tel_backend_t *b, char *buf, size_t len)
{
    nvml_backend_t *nb = (nvml_backend_t *)b;
    char v[128];
    if (nvml_driver_version(nb->nvml, v, sizeof v) == 0)
        s_append_kv(buf, len, "nvidia_driver", v);
    if (nvml_cuda_version(nb->nvml, v, sizeof v) == 0)
        s_append_kv(buf, len, "cuda_driver", v);
    if (nvml_library_version(nb->nvml, v, sizeof v) == 0)
        s_append_kv(buf, len, "nvml", v);
    char(*vb)[64] = xcalloc(b->n_gpus ? b->n_gpus : 1, sizeof *vb);
    for (size_t i = 0; i < b->n_gpus; i++)
        nvml_device_vbios(nb->nvml, nb->dev[i], vb[i], sizeof vb[i]);
    char all[256];
    s_distinct(vb, b->n_gpus, all, sizeof all);
    s_append_kv(buf, len, "gpu_vbios", all);
    free(vb);
}

static void s_nv_destroy(tel_backend_t *b)
{
    nvml_backend_t *nb = (nvml_backend_t *)b;
    nvml_events_close(&nb->events);
    nvml_close(&nb->nvml);
    free(nb);
}

typedef struct {
    tel_gpu_info_t info;
    nvml_dev_t dev;
    unsigned index;
} s_nv_sort_t;

static int s_nv_sort_cmp(const void *a, const void *b)
{
    return strcmp(((const s_nv_sort_t *)a)->info.pci, ((const s_nv_sort_t *)b)->info.pci);
}

tel_backend_t *telemetry_nvml_backend(const char *lib, char *why, size_t whylen)
{
    nvml_t *n = NULL;
    if (nvml_open(lib, &n, why, whylen) < 0)
        return NULL;
    unsigned count = 0;
    if (nvml_device_count(n, &count) < 0 || count == 0) {
        if (why && whylen)
            snprintf(why, whylen, "NVML sees no GPU");
        nvml_close(&n);
        return NULL;
    }
    if (count > TEL_MAX_GPUS)
        count = TEL_MAX_GPUS;
    s_nv_sort_t *all = xcalloc(count, sizeof *all);
    size_t got = 0;
    for (unsigned i = 0; i < count; i++) {
        s_nv_sort_t *g = &all[got];
        if (nvml_device_by_index(n, i, &g->dev) < 0 || nvml_device_pci(n, g->dev, g->info.pci) < 0)
            continue; /* a GPU NVML cannot open is one health reports from sysfs */
        g->index = i;
        g->info.vendor = "nvidia";
        nvml_device_name(n, g->dev, g->info.name, sizeof g->info.name);
        nvml_device_uuid(n, g->dev, g->info.uuid, sizeof g->info.uuid);
        nvml_device_memory_total(n, g->dev, &g->info.memory_bytes);
        nvml_device_vbios(n, g->dev, g->info.vbios, sizeof g->info.vbios);
        nvml_device_inforom(n, g->dev, g->info.inforom, sizeof g->info.inforom);
        nvml_pcie_t link;
        if (nvml_pcie_link(n, g->dev, &link) == 0) {
            g->info.pcie_max_gen = link.max_gen;
            g->info.pcie_max_width = link.max_width;
        }
        got++;
    }
    qsort(all, got, sizeof *all, s_nv_sort_cmp);
    nvml_backend_t *nb = xcalloc(1, sizeof *nb);
    nb->nvml = n;
    for (size_t i = 0; i < got; i++) {
        nb->dev[i] = all[i].dev;
        nb->info[i] = all[i].info;
    }
    free(all);
    nb->base = (tel_backend_t){"NVML",        got,           s_nv_info,     s_nv_sample,
                               s_nv_counters, s_nv_wait_xid, s_nv_versions, s_nv_destroy};
    return &nb->base;
}

/* ---- ROCm SMI backend ------------------------------------------------------------------------ */

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
    *s = (tel_sample_t){NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, 0, false, false};
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
        s_set(c, TEL_ECC_CE_VOLATILE, ce);
        s_set(c, TEL_ECC_UE_VOLATILE, ue);
    }
    if (rocm_smi_bad_pages(rb->smi, rb->dev[i], &res, &pend, &unres) == 0) {
        s_set(c, TEL_RETIRED_DBE, res);
        s_set(c, TEL_RETIRED_PENDING, pend);
        s_set(c, TEL_RETIRED_FAILED, unres);
    }
    if (rocm_smi_pcie_replay(rb->smi, rb->dev[i], &replay) == 0)
        s_set(c, TEL_PCIE_REPLAY, replay);
}

static void s_rs_versions(tel_backend_t *b, char *buf, size_t len)
{
    rocm_backend_t *rb = (rocm_backend_t *)b;
    char v[128];
    if (rocm_smi_driver_version(rb->smi, v, sizeof v) == 0)
        s_append_kv(buf, len, "amdgpu_driver", v);
    if (rocm_smi_library_version(rb->smi, v, sizeof v) == 0)
        s_append_kv(buf, len, "rocm_smi", v);
    char(*vb)[64] = xcalloc(b->n_gpus ? b->n_gpus : 1, sizeof *vb);
    for (size_t i = 0; i < b->n_gpus; i++)
        rocm_smi_device_vbios(rb->smi, rb->dev[i], vb[i], sizeof vb[i]);
    char all[256];
    s_distinct(vb, b->n_gpus, all, sizeof all);
    s_append_kv(buf, len, "gpu_vbios", all);
    free(vb);
}

static void s_rs_destroy(tel_backend_t *b)
{
    rocm_backend_t *rb = (rocm_backend_t *)b;
    rocm_smi_close(&rb->smi);
    free(rb);
}

typedef struct {
    tel_gpu_info_t info;
    unsigned dev;
} s_rs_sort_t;

static int s_rs_sort_cmp(const void *a, const void *b)
{
    return strcmp(((const s_rs_sort_t *)a)->info.pci, ((const s_rs_sort_t *)b)->info.pci);
}

tel_backend_t *telemetry_rocm_backend(const char *lib, char *why, size_t whylen)
{
    rocm_smi_t *r = NULL;
    if (rocm_smi_open(lib, &r, why, whylen) < 0)
        return NULL;
    unsigned count = 0;
    if (rocm_smi_device_count(r, &count) < 0 || count == 0) {
        if (why && whylen)
            snprintf(why, whylen, "ROCm SMI sees no GPU");
        rocm_smi_close(&r);
        return NULL;
    }
    if (count > TEL_MAX_GPUS)
        count = TEL_MAX_GPUS;
    s_rs_sort_t *all = xcalloc(count, sizeof *all);
    size_t got = 0;
    for (unsigned i = 0; i < count; i++) {
        s_rs_sort_t *g = &all[got];
        if (rocm_smi_device_pci(r, i, g->info.pci) < 0)
            continue;
        g->dev = i;
        g->info.vendor = "amd";
        rocm_smi_device_name(r, i, g->info.name, sizeof g->info.name);
        rocm_smi_memory_total(r, i, &g->info.memory_bytes);
        rocm_smi_device_vbios(r, i, g->info.vbios, sizeof g->info.vbios);
        tel_pcie_link_t link;
        if (telemetry_sysfs_link("", g->info.pci, &link) == 0) {
            g->info.pcie_max_gen = link.max_gen;
            g->info.pcie_max_width = link.max_width;
        }
        got++;
    }
    qsort(all, got, sizeof *all, s_rs_sort_cmp);
    rocm_backend_t *rb = xcalloc(1, sizeof *rb);
    rb->smi = r;
    for (size_t i = 0; i < got; i++) {
        rb->dev[i] = all[i].dev;
        rb->info[i] = all[i].info;
    }
    free(all);
    rb->base = (tel_backend_t){"ROCm SMI",    got,  s_rs_info,     s_rs_sample,
                               s_rs_counters, NULL, s_rs_versions, s_rs_destroy};
    return &rb->base;
}

tel_backend_t *telemetry_backend_open(char *why, size_t whylen)
{
    char nv[256] = "", rs[256] = "";
    tel_backend_t *b = telemetry_nvml_backend(NULL, nv, sizeof nv);
    if (!b)
        b = telemetry_rocm_backend(NULL, rs, sizeof rs);
    if (!b && why && whylen)
        snprintf(why, whylen, "%s; %s", nv, rs);
    return b;
}

void telemetry_backend_destroy(tel_backend_t **b_p)
{
    if (!b_p || !*b_p)
        return;
    (*b_p)->destroy(*b_p);
    *b_p = NULL;
}

/* ---- the telemetry object -------------------------------------------------------------------- */

typedef struct {
    int backend; /* index in the backend, -1 when the library does not see this GPU */
    tel_gpu_info_t info;
    tel_counters_t before;
    size_t samples;
    double temp_max, mem_temp_max, power_sum, power_max, power_limit;
    size_t power_n;
    double sm_min;
    uint32_t *sm_hist;
    size_t sm_n;
    uint64_t throttle_or;
    size_t throttle_fault_samples, throttle_samples;
    size_t loaded; /* samples at >= S_LOADED_FRACTION of the power limit */
    unsigned loaded_gen_max, loaded_width_min;
    bool lost_seen;
} gpu_stats_t;

struct telemetry {
    worker_ctx_t *ctx;
    double interval_s;
    tel_backend_t *backend;
    tel_pci_t gpus[TEL_MAX_GPUS];
    gpu_stats_t stats[TEL_MAX_GPUS];
    size_t n_gpus;
    tel_klog_t *klog;
    fb_kmsg_watch_t *watch;
    pthread_t sampler;
    bool sampler_running;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop;
    size_t live_logs; /* kernel lines echoed so far (under lock) */
    double started_s;
};

static void s_metric(fb_metric_t *m, size_t *n, const char *name, double v, const char *unit)
{
    if (isnan(v))
        return;
    m[*n].name = (char *)name;
    m[*n].value = v;
    m[*n].unit = (char *)unit;
    (*n)++;
}

static void s_sample_gpu(telemetry_t *t, size_t i)
{
    gpu_stats_t *g = &t->stats[i];
    if (g->backend < 0)
        return;
    tel_sample_t s;
    t->backend->sample(t->backend, (size_t)g->backend, &s);
    if (s.lost) {
        if (!g->lost_seen)
            worker_log(t->ctx, "telemetry: gpu%zu (PCI %s) does not answer: lost", i, g->info.pci);
        g->lost_seen = true;
        return;
    }
    g->samples++;
    static const char *const keys[] = {"temp_c",       "mem_temp_c",    "power_w",  "power_limit_w",
                                       "sm_clock_mhz", "mem_clock_mhz", "throttle", "pcie_replay",
                                       "pcie_gen",     "pcie_width"};
    char names[FB_ARRAY_LEN(keys)][48];
    for (size_t k = 0; k < FB_ARRAY_LEN(keys); k++)
        snprintf(names[k], sizeof names[k], "gpu%zu.%s", i, keys[k]);
    fb_metric_t m[FB_ARRAY_LEN(keys)];
    size_t n = 0;
    s_metric(m, &n, names[0], s.temp_c, "C");
    s_metric(m, &n, names[1], s.mem_temp_c, "C");
    s_metric(m, &n, names[2], s.power_w, "W");
    s_metric(m, &n, names[3], s.power_limit_w, "W");
    s_metric(m, &n, names[4], s.sm_clock_mhz, "MHz");
    s_metric(m, &n, names[5], s.mem_clock_mhz, "MHz");
    if (s.has_throttle)
        s_metric(m, &n, names[6], (double)s.throttle, "");
    s_metric(m, &n, names[7], s.pcie_replay, "");
    s_metric(m, &n, names[8], s.pcie_gen, "");
    s_metric(m, &n, names[9], s.pcie_width, "");
    worker_telemetry(t->ctx, m, n);

    if (!isnan(s.temp_c) && s.temp_c > g->temp_max)
        g->temp_max = s.temp_c;
    if (!isnan(s.mem_temp_c) && s.mem_temp_c > g->mem_temp_max)
        g->mem_temp_max = s.mem_temp_c;
    if (!isnan(s.power_w)) {
        g->power_sum += s.power_w;
        g->power_n++;
        if (s.power_w > g->power_max)
            g->power_max = s.power_w;
    }
    if (!isnan(s.power_limit_w))
        g->power_limit = s.power_limit_w;
    if (!isnan(s.sm_clock_mhz)) {
        if (g->sm_n == 0 || s.sm_clock_mhz < g->sm_min)
            g->sm_min = s.sm_clock_mhz;
        long bin = lround(s.sm_clock_mhz);
        g->sm_hist[bin < 0 ? 0 : bin >= S_CLOCK_BINS ? S_CLOCK_BINS - 1 : bin]++;
        g->sm_n++;
    }
    if (s.has_throttle) {
        g->throttle_samples++;
        g->throttle_or |= s.throttle;
        if (s.throttle & TEL_THROTTLE_FAULTS)
            g->throttle_fault_samples++;
    }
    bool loaded = !isnan(s.power_w) && !isnan(s.power_limit_w) && s.power_limit_w > 0 &&
                  s.power_w >= S_LOADED_FRACTION * s.power_limit_w;
    if (loaded) {
        g->loaded++;
        if (!isnan(s.pcie_gen) && s.pcie_gen > g->loaded_gen_max)
            g->loaded_gen_max = (unsigned)s.pcie_gen;
        if (!isnan(s.pcie_width) &&
            (g->loaded_width_min == 0 || s.pcie_width < g->loaded_width_min))
            g->loaded_width_min = (unsigned)s.pcie_width;
    }
}

static bool s_stopping(telemetry_t *t)
{
    pthread_mutex_lock(&t->lock);
    bool stop = t->stop;
    pthread_mutex_unlock(&t->lock);
    return stop;
}

/* Sleeps until the deadline (monotonic seconds) or the stop flag. */
static void s_sleep_until(telemetry_t *t, double deadline)
{
    pthread_mutex_lock(&t->lock);
    while (!t->stop) {
        double left = deadline - fb_mono_s();
        if (left <= 0)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double wake = (double)ts.tv_sec + ts.tv_nsec / 1e9 + (left < 0.2 ? left : 0.2);
        ts.tv_sec = (time_t)wake;
        ts.tv_nsec = (long)((wake - (double)ts.tv_sec) * 1e9);
        pthread_cond_timedwait(&t->cond, &t->lock, &ts);
    }
    pthread_mutex_unlock(&t->lock);
}

static void *s_sampler_main(void *arg)
{
    telemetry_t *t = arg;
    bool events = t->backend && t->backend->wait_xid;
    double next = fb_mono_s();
    while (!s_stopping(t)) {
        for (size_t i = 0; i < t->n_gpus; i++)
            s_sample_gpu(t, i);
        next += t->interval_s;
        while (!s_stopping(t) && fb_mono_s() < next) {
            if (!events) {
                s_sleep_until(t, next);
                continue;
            }
            double left = next - fb_mono_s();
            int ms = left * 1000 < S_XID_WAIT_MS ? (int)(left * 1000) + 1 : S_XID_WAIT_MS;
            size_t gpu = 0;
            int xid = 0;
            int rc = t->backend->wait_xid(t->backend, ms, &gpu, &xid);
            if (rc == 1) {
                for (size_t i = 0; i < t->n_gpus; i++)
                    if (t->stats[i].backend == (int)gpu) {
                        tel_klog_add_xid(t->klog, i, xid);
                        worker_log(t->ctx, "telemetry: %s reports Xid %d on gpu%zu (PCI %s)",
                                   t->backend->name, xid, i, t->stats[i].info.pci);
                    }
            } else if (rc < 0) {
                events = false;
                worker_log(t->ctx,
                           "telemetry: %s gives no Xid events (%s); Xids come from the "
                           "kernel log only",
                           t->backend->name, strerror(-rc));
            }
        }
        if (fb_mono_s() > next + t->interval_s)
            next = fb_mono_s(); /* fell behind (a slow library call): do not burst */
    }
    return NULL;
}

static void s_on_kmsg(const fb_kmsg_record_t *rec, void *user)
{
    telemetry_t *t = user;
    if (tel_klog_add(t->klog, rec) == FB_KMSG_NONE)
        return;
    pthread_mutex_lock(&t->lock);
    bool echo = t->live_logs++ < S_KLOG_MAX_LIVE_LOGS;
    pthread_mutex_unlock(&t->lock);
    if (echo)
        worker_log(t->ctx, "kmsg: %s", rec->text);
}

/* The GPU list: sysfs order, with GPUs only the library sees appended. */
static void s_setup_gpus(telemetry_t *t)
{
    t->n_gpus = telemetry_sysfs_gpus(worker_sysfs_root(t->ctx), t->gpus, TEL_MAX_GPUS);
    for (size_t i = 0; i < t->n_gpus; i++) {
        t->stats[i].backend = -1;
        memcpy(t->stats[i].info.pci, t->gpus[i].pci, sizeof t->gpus[i].pci);
    }
    for (size_t b = 0; t->backend && b < t->backend->n_gpus; b++) {
        tel_gpu_info_t info;
        t->backend->info(t->backend, b, &info);
        size_t slot = t->n_gpus;
        for (size_t i = 0; i < t->n_gpus; i++)
            if (!strcmp(t->gpus[i].pci, info.pci))
                slot = i;
        if (slot == t->n_gpus) {
            if (t->n_gpus == TEL_MAX_GPUS)
                continue;
            memcpy(t->gpus[t->n_gpus++].pci, info.pci, sizeof info.pci);
        }
        t->stats[slot].info = info;
        t->stats[slot].backend = (int)b;
    }
    for (size_t i = 0; i < t->n_gpus; i++)
        t->stats[i].sm_hist = xcalloc(S_CLOCK_BINS, sizeof(uint32_t));
}

telemetry_t *telemetry_start_opts(worker_ctx_t *ctx, const telemetry_opts_t *opts)
{
    telemetry_t *t = xcalloc(1, sizeof *t);
    t->ctx = ctx;
    t->interval_s = opts->interval_s > 0 ? opts->interval_s : 1.0;
    t->started_s = fb_mono_s();
    pthread_mutex_init(&t->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cond, &ca);
    pthread_condattr_destroy(&ca);

    char why[600] = "";
    t->backend = opts->backend;
    if (!t->backend && !opts->no_libraries)
        t->backend = telemetry_backend_open(why, sizeof why);
    if (!t->backend && !opts->no_libraries)
        worker_log(ctx, "telemetry: no GPU management library (%s); following the kernel log only",
                   why);
    s_setup_gpus(t);
    for (size_t i = 0; i < t->n_gpus; i++)
        if (t->stats[i].backend >= 0)
            t->backend->counters(t->backend, (size_t)t->stats[i].backend, &t->stats[i].before);
    if (t->backend)
        worker_log(ctx, "telemetry: %s, %zu GPU%s, every %.3g s", t->backend->name,
                   t->backend->n_gpus, t->backend->n_gpus == 1 ? "" : "s", t->interval_s);

    t->klog = tel_klog_new(worker_node(ctx), worker_sysfs_root(ctx), t->gpus, t->n_gpus);
    const char *kpath = opts->kmsg_path ? opts->kmsg_path : getenv("FLEETBURN_KMSG");
    int rc = fb_kmsg_watch_start(kpath, s_on_kmsg, t, &t->watch);
    if (rc == -EPERM || rc == -EACCES)
        worker_log(ctx,
                   "telemetry: %s not readable (%s): kernel log not followed (needs CAP_SYSLOG "
                   "or kernel.dmesg_restrict=0)",
                   kpath ? kpath : "/dev/kmsg", strerror(-rc));
    else if (rc < 0)
        worker_log(ctx, "telemetry: %s: %s: kernel log not followed", kpath ? kpath : "/dev/kmsg",
                   strerror(-rc));

    if (t->backend && t->backend->n_gpus &&
        pthread_create(&t->sampler, NULL, s_sampler_main, t) == 0)
        t->sampler_running = true;
    return t;
}

telemetry_t *telemetry_start(worker_ctx_t *ctx, double interval_s)
{
    telemetry_opts_t opts = {interval_s, NULL, NULL, false};
    return telemetry_start_opts(ctx, &opts);
}

static double s_median(const gpu_stats_t *g)
{
    size_t half = (g->sm_n + 1) / 2, seen = 0;
    for (size_t b = 0; b < S_CLOCK_BINS; b++) {
        seen += g->sm_hist[b];
        if (seen >= half)
            return (double)b;
    }
    return NAN;
}

static void s_set_metric(fb_result_t *r, size_t i, const char *key, double v, const char *unit)
{
    if (isnan(v))
        return;
    char name[64];
    snprintf(name, sizeof name, "gpu%zu.%s", i, key);
    fb_result_set_metric(r, name, v, unit);
}

/* Summary metrics and sensor findings of one GPU. */
static void s_summarise(telemetry_t *t, size_t i, const char *part)
{
    gpu_stats_t *g = &t->stats[i];
    fb_result_t *r = worker_result(t->ctx);
    if (g->samples == 0)
        return;
    s_set_metric(r, i, "samples", (double)g->samples, "");
    s_set_metric(r, i, "temp_max_c", g->temp_max > 0 ? g->temp_max : NAN, "C");
    s_set_metric(r, i, "mem_temp_max_c", g->mem_temp_max > 0 ? g->mem_temp_max : NAN, "C");
    s_set_metric(r, i, "power_mean_w", g->power_n ? g->power_sum / (double)g->power_n : NAN, "W");
    s_set_metric(r, i, "power_max_w", g->power_n ? g->power_max : NAN, "W");
    s_set_metric(r, i, "power_limit_w", g->power_limit > 0 ? g->power_limit : NAN, "W");
    s_set_metric(r, i, "sm_clock_min_mhz", g->sm_n ? g->sm_min : NAN, "MHz");
    s_set_metric(r, i, "sm_clock_median_mhz", g->sm_n ? s_median(g) : NAN, "MHz");
    if (g->throttle_samples) {
        s_set_metric(r, i, "throttle_reasons", (double)g->throttle_or, "");
        char names[256];
        telemetry_throttle_names(g->throttle_or, names, sizeof names);
        worker_log(t->ctx, "telemetry: gpu%zu throttle reasons seen: %s", i, names);
        if (g->throttle_fault_samples) {
            char bad[256];
            telemetry_throttle_names(g->throttle_or & TEL_THROTTLE_FAULTS, bad, sizeof bad);
            fb_result_add_findingf(r, part, "gpu",
                                   "thermal or power-brake throttling (%s) in %zu of %zu samples "
                                   "(PCI %s; max %.0f C, SM clock min %.0f MHz)",
                                   bad, g->throttle_fault_samples, g->throttle_samples, g->info.pci,
                                   g->temp_max, g->sm_n ? g->sm_min : 0.0);
        }
    }
    /* The link under load: idle GPUs lower their PCIe speed, loaded ones must not. */
    if (g->loaded && g->info.pcie_max_gen && g->loaded_gen_max &&
        g->loaded_gen_max < g->info.pcie_max_gen)
        fb_result_add_findingf(r, part, "link",
                               "PCIe link of PCI %s reached only Gen%u under load, below its "
                               "Gen%u (GPU and slot)",
                               g->info.pci, g->loaded_gen_max, g->info.pcie_max_gen);
    if (g->loaded && g->info.pcie_max_width && g->loaded_width_min &&
        g->loaded_width_min < g->info.pcie_max_width)
        fb_result_add_findingf(r, part, "link",
                               "PCIe link of PCI %s ran at x%u under load, below its x%u",
                               g->info.pci, g->loaded_width_min, g->info.pcie_max_width);
}

int telemetry_stop(telemetry_t **t_p, worker_ctx_t *ctx)
{
    if (!t_p || !*t_p)
        return 0;
    telemetry_t *t = *t_p;
    if (!ctx)
        ctx = t->ctx;
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    if (t->sampler_running)
        pthread_join(t->sampler, NULL);
    uint64_t lost = fb_kmsg_watch_stop(&t->watch);
    if (lost)
        worker_log(ctx,
                   "telemetry: %" PRIu64 " kernel log records were overwritten before they "
                   "were read",
                   lost);
    int fatal = 0;
    fb_result_t *r = worker_result(ctx);
    size_t first_finding = r->n_findings;
    const char *node = s_host(worker_node(ctx));
    for (size_t i = 0; i < t->n_gpus; i++) {
        gpu_stats_t *g = &t->stats[i];
        char *part = xasprintf("%s/gpu%zu", node, i);
        if (g->backend >= 0) {
            s_sample_gpu(t, i); /* one last look: short runs get two samples */
            tel_counters_t after;
            t->backend->counters(t->backend, (size_t)g->backend, &after);
            if (g->lost_seen)
                after.lost = true;
            fatal +=
                telemetry_counters_diff(r, part, g->info.pci, &g->before, &after, "during the run");
            s_summarise(t, i, part);
        }
        free(part);
        free(g->sm_hist);
    }
    fatal += tel_klog_report(t->klog, ctx, TEL_KLOG_LIVE, NULL);
    for (size_t i = first_finding; i < r->n_findings; i++)
        worker_log(ctx, "telemetry: finding %s [%s]: %s", r->findings[i].part, r->findings[i].kind,
                   r->findings[i].what);
    worker_log(ctx, "telemetry: %zu finding%s, %d failing the task", r->n_findings - first_finding,
               r->n_findings - first_finding == 1 ? "" : "s", fatal);
    tel_klog_destroy(&t->klog);
    telemetry_backend_destroy(&t->backend);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    free(t);
    *t_p = NULL;
    return fatal;
}
