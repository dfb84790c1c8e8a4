/* SPDX-License-Identifier: Apache-2.0 */
/* Kernel-log faults for telemetry and the health sweep (telemetry.h, tel_klog_*): lines that
 * fb_kmsg_classify recognises are gathered per part and kind of fault (a GPU's Xid, a DIMM's
 * uncorrected errors, an HCA port's link drops) and become findings that name the part — a GPU by
 * gpuN and PCI address, a DIMM by its EDAC label, an HCA port by device and port. During a run a
 * watcher thread follows /dev/kmsg into them (tel_klog_watch_*, telemetry_impl.h). */
#include "telemetry_impl.h"

#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_KLOG_MAX_ENTRIES 256   /* distinct (part, fault) pairs kept */
#define S_KLOG_MAX_LIVE_LOGS 100 /* kernel lines echoed to the timeline during a run */

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
    k->node = xstrdup(tel_host(node));
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

/* ---- following the kernel log during a run --------------------------------------------------- */

struct tel_klog_watch {
    tel_klog_t *klog;
    worker_ctx_t *ctx;
    fb_kmsg_watch_t *watch;
    size_t live_logs; /* kernel lines echoed so far; only the watcher's thread counts them */
};

static void s_on_kmsg(const fb_kmsg_record_t *rec, void *user)
{
    tel_klog_watch_t *w = user;
    if (tel_klog_add(w->klog, rec) == FB_KMSG_NONE)
        return;
    if (w->live_logs++ < S_KLOG_MAX_LIVE_LOGS)
        worker_log(w->ctx, "kmsg: %s", rec->text);
}

tel_klog_watch_t *tel_klog_watch_start(tel_klog_t *k, worker_ctx_t *ctx, const char *path)
{
    tel_klog_watch_t *w = xcalloc(1, sizeof *w);
    w->klog = k;
    w->ctx = ctx;
    const char *kpath = path ? path : getenv("FLEETBURN_KMSG");
    int rc = fb_kmsg_watch_start(kpath, s_on_kmsg, w, &w->watch);
    if (rc == 0)
        return w;
    if (rc == -EPERM || rc == -EACCES)
        worker_log(ctx,
                   "telemetry: %s not readable (%s): kernel log not followed (needs CAP_SYSLOG "
                   "or kernel.dmesg_restrict=0)",
                   kpath ? kpath : "/dev/kmsg", strerror(-rc));
    else
        worker_log(ctx, "telemetry: %s: %s: kernel log not followed", kpath ? kpath : "/dev/kmsg",
                   strerror(-rc));
    free(w);
    return NULL;
}

void tel_klog_watch_stop(tel_klog_watch_t **w_p, worker_ctx_t *ctx)
{
    if (!w_p || !*w_p)
        return;
    uint64_t lost = fb_kmsg_watch_stop(&(*w_p)->watch);
    if (lost)
        worker_log(ctx,
                   "telemetry: %" PRIu64 " kernel log records were overwritten before they "
                   "were read",
                   lost);
    free(*w_p);
    *w_p = NULL;
}
