/* SPDX-License-Identifier: Apache-2.0 */
/* The passive health sweep (stage 0 of a campaign): reads sysfs, the EDAC counters, the GPU
 * management library's counters and the whole kernel log once, and turns what is already wrong
 * into findings before any stress test spends hours on a node that was never going to pass. It
 * loads nothing and changes nothing. All paths are under the worker's sysfs root, so fixture trees
 * stand in for machines in tests; the kernel log and the GPU library can be injected the same
 * way. Software versions go out as one "versions:" log line for the coordinator to compare across
 * the fleet. */
#include "health.h"

#include "common/edac.h"
#include "common/kmsg.h"
#include "common/util.h"
#include "gpu/host/telemetry.h"
#include "rdma/ibport.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_VERSIONS_MAX 2048

typedef struct {
    worker_ctx_t *ctx;
    fb_result_t *result;
    const char *node;
    const char *root;
    double ib_rate_gbps; /* 0: not given */
    tel_backend_t *backend;
    tel_pci_t gpus[TEL_MAX_GPUS];
    size_t n_gpus;
    /* counts for metrics */
    unsigned pcie_degraded, pcie_idle_low, hcas, ib_ports, ib_down, ib_slow;
    unsigned dimm_ue, gpu_retired, gpu_retire_pending, gpu_remap_failure, gpu_remap_pending;
    unsigned gpu_ecc_ue, gpu_lost, gpu_missing;
    uint64_t edac_ce, edac_ue;
} sweep_t;

static const char *s_host(const char *node)
{
    return node && *node ? node : "localhost";
}

/* A sysfs text attribute, trimmed; NULL when absent. */
static char *s_attr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *s_attr(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *path = xvasprintf(fmt, ap);
    va_end(ap);
    char *text = fb_read_file(path, NULL);
    free(path);
    if (!text)
        return NULL;
    for (char *p = text; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            *p = '?';
    return text;
}

/* "200 Gb/sec", "200Gb/s", "200 Gbps", "200" -> 200. Returns 0 or -EINVAL. */
static int s_parse_rate(const char *text, double *gbps)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || !(v > 0 && v < 1e6))
        return -EINVAL;
    while (*end == ' ')
        end++;
    if (*end && strcmp(end, "Gb/sec") && strcmp(end, "Gb/s") && strcmp(end, "Gbps") &&
        strncmp(end, "Gb/sec (", 8))
        return -EINVAL;
    *gbps = v;
    return 0;
}

/* ---- versions -------------------------------------------------------------------------------- */

static void s_kv(char *buf, size_t len, const char *key, const char *value)
{
    size_t used = strlen(buf);
    if (!value || !*value)
        return;
    int n = snprintf(buf + used, len - used, " %s=%s", key, value);
    if (n < 0 || (size_t)n >= len - used) {
        buf[used] = '\0';
        return;
    }
    for (char *p = buf + used + strlen(key) + 2; *p; p++)
        if (*p == ' ' || *p == '\t')
            *p = '_';
}

/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ..." -> "580.65.06" */
static void s_nvrm_version(const char *root, char *out, size_t len)
{
    char *text = s_attr("%s/proc/driver/nvidia/version", root);
    out[0] = '\0';
    if (!text)
        return;
    char *line = strstr(text, "NVRM version:");
    char *save = NULL;
    if (line) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        for (char *tok = strtok_r(line + 13, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save))
            if (tok[0] >= '0' && tok[0] <= '9' && strchr(tok, '.') &&
                strspn(tok, "0123456789.") == strlen(tok)) {
                fb_strlcpy(out, tok, len);
                break;
            }
    }
    free(text);
}

/* NCCL/RCCL's version through ncclGetVersion, when the library loads. */
static void s_nccl_version(const char *lib, char *out, size_t len)
{
    out[0] = '\0';
    void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
    if (!h)
        return;
    int (*get)(int *) = NULL;
    *(void **)(&get) = dlsym(h, "ncclGetVersion");
    int v = 0;
    if (get && get(&v) == 0 && v > 0) {
        /* NCCL >= 2.9 encodes major*10000 + minor*100 + patch, older major*1000 + minor*100. */
        if (v >= 10000)
            snprintf(out, len, "%d.%d.%d", v / 10000, v % 10000 / 100, v % 100);
        else
            snprintf(out, len, "%d.%d.%d", v / 1000, v % 1000 / 100, v % 100);
    }
    dlclose(h);
}

/* The distinct firmware versions of the HCAs: "28.39.1002" or "mlx5_0:28.39.1002,mlx5_1:..." */
static void s_hca_firmware(const char *root, char *out, size_t len)
{
    char *dir = xasprintf("%s/sys/class/infiniband", root);
    char **hcas;
    size_t n = fb_list_dir(dir, &hcas);
    char first[64] = "";
    bool differ = false;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        char *fw = s_attr("%s/%s/fw_ver", dir, hcas[i]);
        if (!fw)
            continue;
        if (!first[0])
            fb_strlcpy(first, fw, sizeof first);
        else if (strcmp(first, fw))
            differ = true;
        free(fw);
    }
    if (differ) {
        for (size_t i = 0; i < n; i++) {
            char *fw = s_attr("%s/%s/fw_ver", dir, hcas[i]);
            size_t used = strlen(out);
            if (fw && used + strlen(hcas[i]) + strlen(fw) + 3 < len)
                snprintf(out + used, len - used, "%s%s:%s", used ? "," : "", hcas[i], fw);
            free(fw);
        }
    } else {
        fb_strlcpy(out, first, len);
    }
    fb_names_free(hcas, n);
    free(dir);
}

char *health_versions(const char *root, tel_backend_t *backend, bool libraries)
{
    char *line = xcalloc(1, S_VERSIONS_MAX);
    char v[256];
    char *text = s_attr("%s/proc/sys/kernel/osrelease", root);
    s_kv(line, S_VERSIONS_MAX, "kernel", text);
    free(text);
    if (backend)
        backend->versions(backend, line, S_VERSIONS_MAX);
    if (!strstr(line, " nvidia_driver=")) {
        s_nvrm_version(root, v, sizeof v);
        s_kv(line, S_VERSIONS_MAX, "nvidia_driver", v);
    }
    text = s_attr("%s/sys/module/amdgpu/version", root);
    s_kv(line, S_VERSIONS_MAX, "amdgpu", text);
    free(text);
    text = s_attr("%s/opt/rocm/.info/version", root);
    s_kv(line, S_VERSIONS_MAX, "rocm", text);
    free(text);
    if (libraries) {
        s_nccl_version("libnccl.so.2", v, sizeof v);
        s_kv(line, S_VERSIONS_MAX, "nccl", v);
        s_nccl_version("librccl.so.1", v, sizeof v);
        s_kv(line, S_VERSIONS_MAX, "rccl", v);
    }
    s_hca_firmware(root, v, sizeof v);
    s_kv(line, S_VERSIONS_MAX, "hca_fw", v);
    text = s_attr("%s/sys/module/mlx5_core/version", root);
    s_kv(line, S_VERSIONS_MAX, "mlx5_core", text);
    free(text);
    memmove(line, line + (line[0] == ' '), strlen(line) + 1 - (line[0] == ' '));
    return line;
}

/* ---- PCIe links ------------------------------------------------------------------------------ */

static void s_link_text(const tel_pcie_link_t *l, bool best, char *out, size_t len)
{
    double gts = best ? l->max_speed_gts : l->speed_gts;
    unsigned w = best ? l->max_width : l->width;
    unsigned gen = best ? l->max_gen : l->gen;
    if (gen)
        snprintf(out, len, "%g GT/s (Gen%u) x%u", gts, gen % 100, w % 1000);
    else
        snprintf(out, len, "%g GT/s x%u", gts, w % 1000);
}

/* One device's link; gpu: idle GPUs lower their speed, so only the width is judged. */
static void s_check_link(sweep_t *s, const char *pci, const char *part, bool gpu)
{
    tel_pcie_link_t l;
    int rc = telemetry_sysfs_link(s->root, pci, &l);
    if (rc == -ENOENT)
        return;
    if (rc < 0)
        worker_log(s->ctx, "health: %s: PCIe link attributes of %s do not parse, partly ignored",
                   part, pci);
    bool narrow = l.width && l.max_width && l.width < l.max_width;
    bool slow = l.speed_gts > 0 && l.max_speed_gts > 0 && l.speed_gts + 0.01 < l.max_speed_gts;
    char now[128], best[128];
    s_link_text(&l, false, now, sizeof now);
    s_link_text(&l, true, best, sizeof best);
    if (narrow || (slow && !gpu)) {
        fb_result_add_findingf(s->result, part, "link",
                               "PCIe link of %s at %s, below its %s%s (reseat the card or "
                               "check the riser/slot)",
                               pci, now, best,
                               l.slot_limited ? " (as far as the slot allows)" : "");
        s->pcie_degraded++;
    } else if (slow) {
        s->pcie_idle_low++;
    }
}

/* The PCI address an HCA's device link points to. */
static bool s_hca_pci(const char *root, const char *hca, char pci[16])
{
    char *link = xasprintf("%s/sys/class/infiniband/%s/device", root, hca);
    char real[PATH_MAX];
    bool ok = realpath(link, real) != NULL;
    free(link);
    if (!ok)
        return false;
    const char *base = strrchr(real, '/');
    return base && fb_kmsg_pci_canon(base + 1, pci) == 0;
}

static void s_check_links(sweep_t *s, char **hcas, size_t n_hcas)
{
    for (size_t i = 0; i < s->n_gpus; i++) {
        char *part = xasprintf("%s/gpu%zu", s->node, i);
        s_check_link(s, s->gpus[i].pci, part, true);
        free(part);
    }
    for (size_t i = 0; i < n_hcas; i++) {
        char pci[16];
        if (!s_hca_pci(s->root, hcas[i], pci))
            continue;
        char *part = xasprintf("%s/%s", s->node, hcas[i]);
        s_check_link(s, pci, part, false);
        free(part);
    }
    if (s->pcie_idle_low)
        worker_log(s->ctx,
                   "health: %u GPU%s below their best PCIe speed while idle (GPUs lower it to save "
                   "power; telemetry checks the link under load); widths are all at their best%s",
                   s->pcie_idle_low, s->pcie_idle_low == 1 ? " is" : "s are",
                   s->pcie_degraded ? " except those reported" : "");
}

/* ---- InfiniBand ports ------------------------------------------------------------------------ */

static const char *s_phys_hint(const char *phys)
{
    if (!strcmp(phys, "Polling"))
        return ": no link partner (cable unplugged or broken, or the switch port is down)";
    if (!strcmp(phys, "Disabled"))
        return ": the port is disabled";
    if (!strcmp(phys, "LinkErrorRecovery"))
        return ": the link is recovering from errors";
    if (!strcmp(phys, "LinkUp"))
        return ": the physical link is up but no subnet manager has configured the port";
    return "";
}

/* Ports come from the reader rdmabw uses too (rdma/ibport.h); a port whose state does not parse
 * is told in a log line naming the file, and not judged. */
static void s_check_ports(sweep_t *s)
{
    ib_port_t *ports = NULL;
    size_t n = ib_ports_list(s->root, &ports, NULL);
    s->ib_ports = (unsigned)n;
    /* Without an expected rate, the rate most active InfiniBand ports of this node run at. */
    double common = 0;
    size_t common_n = 0, active_ib = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ports[i].ib || !ports[i].active || ports[i].gbps <= 0)
            continue;
        active_ib++;
        size_t same = 0;
        for (size_t j = 0; j < n; j++)
            same += ports[j].ib && ports[j].active && ports[j].gbps == ports[i].gbps;
        if (same > common_n || (same == common_n && ports[i].gbps > common))
            common = ports[i].gbps, common_n = same;
    }
    bool use_common = s->ib_rate_gbps == 0 && active_ib >= 3 && common_n * 2 > active_ib;
    for (size_t i = 0; i < n; i++) {
        ib_port_t *p = &ports[i];
        char part[IB_NAME_MAX + 200];
        snprintf(part, sizeof part, "%s/%s", s->node, p->name);
        if (p->problem[0])
            worker_log(s->ctx, "health: %s", p->problem);
        if (!p->state[0])
            continue;
        const char *phys = p->phys_state[0] ? p->phys_state : "unknown";
        if (!p->ib) {
            if (!p->active)
                worker_log(s->ctx,
                           "health: %s (Ethernet/RoCE) is %s (not failing: unused Ethernet ports "
                           "are common)",
                           part, p->state);
            continue;
        }
        if (!p->active) {
            fb_result_add_findingf(s->result, part, "link",
                                   "InfiniBand port %s, physical state %s%s", p->state, phys,
                                   s_phys_hint(phys));
            s->ib_down++;
            continue;
        }
        if (s->ib_rate_gbps > 0 && p->gbps > 0 && p->gbps + 1e-9 < s->ib_rate_gbps) {
            fb_result_add_findingf(s->result, part, "link",
                                   "InfiniBand port runs at %s, below the expected %g Gb/sec "
                                   "(degraded width or speed: check the cable and both ends)",
                                   p->rate, s->ib_rate_gbps);
            s->ib_slow++;
        } else if (use_common && p->gbps > 0 && p->gbps < common) {
            fb_result_add_findingf(s->result, part, "link",
                                   "InfiniBand port runs at %s, below the %g Gb/sec of %zu of the "
                                   "%zu active ports on this node (degraded width or speed)",
                                   p->rate, common, common_n, active_ib);
            s->ib_slow++;
        }
    }
    free(ports);
}

/* ---- EDAC ------------------------------------------------------------------------------------ */

static void s_check_edac(sweep_t *s)
{
    fb_edac_t e;
    int rc = fb_edac_read(s->root, &e);
    if (rc == -ENOENT) {
        worker_log(s->ctx, "health: no EDAC driver loaded; DIMM error counters not checked");
        return;
    }
    if (rc < 0) {
        worker_log(s->ctx, "health: EDAC counters unreadable (%s); DIMMs not checked",
                   strerror(-rc));
        fb_edac_clear(&e);
        return;
    }
    uint64_t ue_dimms = 0;
    for (size_t i = 0; i < e.n_dimms; i++) {
        const fb_dimm_t *d = &e.dimms[i];
        if (d->ue_count) {
            char *part = xasprintf("%s/%s", s->node, d->label);
            fb_result_add_findingf(s->result, part, "dimm",
                                   "EDAC: %" PRIu64 " uncorrected and %" PRIu64
                                   " corrected errors logged (%s)",
                                   d->ue_count, d->ce_count, d->location);
            free(part);
            s->dimm_ue++;
            ue_dimms += d->ue_count;
        } else if (d->ce_count) {
            worker_log(s->ctx,
                       "health: DIMM %s (%s) has %" PRIu64 " corrected errors (not failing)",
                       d->label, d->location, d->ce_count);
        }
    }
    if (e.ue_total > ue_dimms && s->dimm_ue == 0) {
        fb_result_add_findingf(s->result, s->node, "memory",
                               "EDAC: %" PRIu64 " uncorrected memory errors not attributed to a "
                               "DIMM",
                               e.ue_total - ue_dimms);
        s->dimm_ue++;
    }
    s->edac_ce = e.ce_total;
    s->edac_ue = e.ue_total;
    fb_edac_clear(&e);
}

/* ---- GPU counters ---------------------------------------------------------------------------- */

static unsigned s_sysfs_vendor(const char *root, const char *pci)
{
    char *text = s_attr("%s/sys/bus/pci/devices/%s/vendor", root, pci);
    unsigned long v = text ? strtoul(text, NULL, 16) : 0;
    free(text);
    return (unsigned)v;
}

static void s_check_gpu(sweep_t *s, size_t slot, size_t b)
{
    tel_gpu_info_t info;
    tel_counters_t c;
    s->backend->info(s->backend, b, &info);
    s->backend->counters(s->backend, b, &c);
    char *part = xasprintf("%s/gpu%zu", s->node, slot);
    const uint64_t *v = c.value;
#define KNOWN(k) (c.known >> (k)&1)
    if (c.lost) {
        fb_result_add_findingf(s->result, part, "gpu",
                               "GPU at PCI %s does not answer %s (fallen off the bus or lost)",
                               info.pci, s->backend->name);
        s->gpu_lost++;
    }
    uint64_t retired = (KNOWN(TEL_RETIRED_SBE) ? v[TEL_RETIRED_SBE] : 0) +
                       (KNOWN(TEL_RETIRED_DBE) ? v[TEL_RETIRED_DBE] : 0);
    if (retired) {
        fb_result_add_findingf(s->result, part, "gpu",
                               "%" PRIu64 " memory pages retired (%" PRIu64
                               " for double-bit/uncorrected errors) on PCI %s",
                               retired, KNOWN(TEL_RETIRED_DBE) ? v[TEL_RETIRED_DBE] : 0, info.pci);
        s->gpu_retired++;
    }
    if (KNOWN(TEL_RETIRED_PENDING) && v[TEL_RETIRED_PENDING]) {
        fb_result_add_findingf(s->result, part, "gpu",
                               "page retirement pending on PCI %s: reset the GPU (or reboot) "
                               "before testing",
                               info.pci);
        s->gpu_retire_pending++;
    }
    if (KNOWN(TEL_RETIRED_FAILED) && v[TEL_RETIRED_FAILED]) {
        fb_result_add_findingf(s->result, part, "gpu",
                               "%" PRIu64 " bad memory pages could not be retired on PCI %s",
                               v[TEL_RETIRED_FAILED], info.pci);
        s->gpu_retired++;
    }
    if (KNOWN(TEL_REMAP_FAILURE) && v[TEL_REMAP_FAILURE]) {
        fb_result_add_findingf(s->result, part, "gpu",
                               "row remapping failed on PCI %s: no spare rows left (RMA)",
                               info.pci);
        s->gpu_remap_failure++;
    }
    if (KNOWN(TEL_REMAP_PENDING) && v[TEL_REMAP_PENDING]) {
        fb_result_add_findingf(s->result, part, "gpu",
                               "row remap pending on PCI %s: reset the GPU (or reboot) before "
                               "testing",
                               info.pci);
        s->gpu_remap_pending++;
    }
    if (KNOWN(TEL_ECC_UE_VOLATILE) && v[TEL_ECC_UE_VOLATILE]) {
        fb_result_add_findingf(s->result, part, "gpu",
                               "%" PRIu64 " uncorrected ECC errors since the driver loaded on PCI "
                               "%s",
                               v[TEL_ECC_UE_VOLATILE], info.pci);
        s->gpu_ecc_ue++;
    }
    if (KNOWN(TEL_REMAP_UNCORRECTABLE) && v[TEL_REMAP_UNCORRECTABLE])
        worker_log(s->ctx,
                   "health: gpu%zu has %" PRIu64
                   " rows remapped for uncorrectable errors and %" PRIu64
                   " for correctable ones (repaired; not failing)",
                   slot, v[TEL_REMAP_UNCORRECTABLE],
                   KNOWN(TEL_REMAP_CORRECTABLE) ? v[TEL_REMAP_CORRECTABLE] : 0);
    if (KNOWN(TEL_ECC_UE_AGGREGATE) && v[TEL_ECC_UE_AGGREGATE])
        worker_log(s->ctx,
                   "health: gpu%zu has %" PRIu64 " uncorrected ECC errors in its lifetime "
                   "(not failing)",
                   slot, v[TEL_ECC_UE_AGGREGATE]);
#undef KNOWN
    free(part);
}

static void s_check_gpus(sweep_t *s)
{
    if (!s->backend)
        return;
    bool seen[TEL_MAX_GPUS] = {false};
    const char *vendor = NULL;
    for (size_t b = 0; b < s->backend->n_gpus; b++) {
        tel_gpu_info_t info;
        s->backend->info(s->backend, b, &info);
        vendor = info.vendor;
        size_t slot = s->n_gpus;
        for (size_t i = 0; i < s->n_gpus; i++)
            if (!strcmp(s->gpus[i].pci, info.pci))
                slot = i;
        if (slot == s->n_gpus) {
            if (s->n_gpus == TEL_MAX_GPUS)
                continue;
            memcpy(s->gpus[s->n_gpus++].pci, info.pci, sizeof info.pci);
        }
        seen[slot] = true;
        s_check_gpu(s, slot, b);
    }
    /* A GPU of the library's vendor on the bus that the library does not list: usually one the
     * driver failed to initialise (NVRM: RmInitAdapter failed). */
    unsigned want = vendor && !strcmp(vendor, "nvidia") ? 0x10de : vendor ? 0x1002 : 0;
    for (size_t i = 0; i < s->n_gpus; i++) {
        if (seen[i] || s_sysfs_vendor(s->root, s->gpus[i].pci) != want)
            continue;
        char *part = xasprintf("%s/gpu%zu", s->node, i);
        fb_result_add_findingf(s->result, part, "gpu",
                               "GPU at PCI %s is on the bus but %s does not list it (the driver "
                               "did not initialise it; see the kernel log)",
                               s->gpus[i].pci, s->backend->name);
        free(part);
        s->gpu_missing++;
    }
}

/* ---- kernel log ------------------------------------------------------------------------------ */

static void s_on_record(const fb_kmsg_record_t *rec, void *user)
{
    tel_klog_add(user, rec);
}

static void s_check_kmsg(sweep_t *s, const char *path, size_t counts[FB_KMSG_N_CLASSES])
{
    fb_kmsg_t *k = NULL;
    int rc = fb_kmsg_open(path, FB_KMSG_FROM_CLEAR, &k);
    if (rc < 0) {
        worker_log(
            s->ctx, "health: %s %s (%s): kernel log not checked%s", path ? path : "/dev/kmsg",
            rc == -EPERM || rc == -EACCES ? "not readable" : "", strerror(-rc),
            rc == -EPERM || rc == -EACCES ? " (needs CAP_SYSLOG or kernel.dmesg_restrict=0)" : "");
        return;
    }
    tel_klog_t *log = tel_klog_new(s->node, s->root, s->gpus, s->n_gpus);
    rc = fb_kmsg_read(k, s_on_record, log);
    if (rc < 0)
        worker_log(s->ctx, "health: reading the kernel log: %s", strerror(-rc));
    else
        worker_log(s->ctx, "health: %d kernel log records checked (since the last dmesg -C)", rc);
    fb_kmsg_close(&k);
    tel_klog_report(log, s->ctx, TEL_KLOG_HISTORY, counts);
    tel_klog_destroy(&log);
}

/* ---- the workload ---------------------------------------------------------------------------- */

/* The sweep's counts as the result's metrics, in this order. */
static void s_metrics(sweep_t *s, const size_t *k)
{
    const struct {
        const char *name;
        double value;
    } metrics[] = {
        {"gpus", (double)s->n_gpus},
        {"hcas", s->hcas},
        {"ib_ports", s->ib_ports},
        {"pcie_degraded", s->pcie_degraded},
        {"ib_ports_down", s->ib_down},
        {"ib_ports_slow", s->ib_slow},
        {"dimm_ue", s->dimm_ue},
        {"edac_ce_total", (double)s->edac_ce},
        {"edac_ue_total", (double)s->edac_ue},
        {"gpu_retired_pages", s->gpu_retired},
        {"gpu_retire_pending", s->gpu_retire_pending},
        {"gpu_remap_failure", s->gpu_remap_failure},
        {"gpu_remap_pending", s->gpu_remap_pending},
        {"gpu_ecc_ue", s->gpu_ecc_ue},
        {"gpu_lost", s->gpu_lost},
        {"gpu_missing", s->gpu_missing},
        {"kmsg_xid", (double)k[FB_KMSG_XID]},
        {"kmsg_gpu_error", (double)k[FB_KMSG_GPU_ERROR]},
        {"kmsg_gpu_thermal", (double)k[FB_KMSG_GPU_THERMAL]},
        {"kmsg_edac_ue", (double)k[FB_KMSG_EDAC_UE]},
        {"kmsg_edac_ce", (double)k[FB_KMSG_EDAC_CE]},
        {"kmsg_mce", (double)k[FB_KMSG_MCE]},
        {"kmsg_cpu_thermal", (double)k[FB_KMSG_CPU_THERMAL]},
        {"kmsg_pcie_aer", (double)k[FB_KMSG_PCIE_AER]},
        {"kmsg_link_down", (double)k[FB_KMSG_LINK_DOWN]},
        {"kmsg_nic_error", (double)k[FB_KMSG_NIC_ERROR]},
        {"findings", (double)s->result->n_findings},
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(metrics); i++)
        fb_result_set_metric(s->result, metrics[i].name, metrics[i].value, "");
}

fb_verdict_t health_run_opts(worker_ctx_t *ctx, const health_opts_t *opts)
{
    double started = fb_mono_s();
    sweep_t s;
    memset(&s, 0, sizeof s);
    s.ctx = ctx;
    s.result = worker_result(ctx);
    s.node = s_host(worker_node(ctx));
    s.root = worker_sysfs_root(ctx);
    s.backend = opts->backend;
    const char *rate = worker_param(ctx, "ib_rate");
    if (rate && s_parse_rate(rate, &s.ib_rate_gbps) < 0) {
        char shown[64];
        fb_result_set_error(s.result,
                            "health: ib_rate '%s' is not a rate like \"200 Gb/sec\" or \"400\"",
                            fb_show_value(rate, shown, sizeof shown));
        telemetry_backend_destroy(&s.backend);
        s.result->verdict = FB_VERDICT_ERROR;
        return FB_VERDICT_ERROR;
    }
    worker_progress(ctx, 0.0, "health: opening the GPU management library");
    char why[600] = "";
    if (!s.backend && !opts->no_libraries)
        s.backend = telemetry_backend_open(why, sizeof why);
    s.n_gpus = telemetry_sysfs_gpus(s.root, s.gpus, TEL_MAX_GPUS);
    if (!s.backend && s.n_gpus && !opts->no_libraries)
        worker_log(ctx,
                   "health: %zu GPU%s on the bus but no GPU management library (%s); GPU "
                   "counters not checked",
                   s.n_gpus, s.n_gpus == 1 ? "" : "s", why);

    char *versions = health_versions(s.root, s.backend, !opts->no_libraries);
    worker_log(ctx, "versions: %s", versions);
    free(versions);
    worker_progress(ctx, 0.2, "health: PCIe links and InfiniBand ports");
    char *ibdir = xasprintf("%s/sys/class/infiniband", s.root);
    char **hcas;
    size_t n_hcas = fb_list_dir(ibdir, &hcas);
    free(ibdir);
    s.hcas = (unsigned)n_hcas;
    s_check_links(&s, hcas, n_hcas);
    s_check_ports(&s);
    fb_names_free(hcas, n_hcas);
    worker_progress(ctx, 0.4, "health: EDAC and GPU counters");
    s_check_edac(&s);
    s_check_gpus(&s);
    worker_progress(ctx, 0.7, "health: kernel log");
    size_t counts[FB_KMSG_N_CLASSES] = {0};
    const char *kpath = opts->kmsg_path ? opts->kmsg_path : getenv("FLEETBURN_KMSG");
    s_check_kmsg(&s, kpath, counts);
    telemetry_backend_destroy(&s.backend);

    s_metrics(&s, counts);
    fb_result_set_metric(s.result, "elapsed_s", fb_mono_s() - started, "s");
    fb_verdict_t v = s.result->n_findings ? FB_VERDICT_FAIL : FB_VERDICT_PASS;
    worker_log(ctx, "health: %zu finding%s in %.1f s", s.result->n_findings,
               s.result->n_findings == 1 ? "" : "s", fb_mono_s() - started);
    for (size_t i = 0; i < s.result->n_findings; i++)
        worker_log(ctx, "health: finding %s [%s]: %s", s.result->findings[i].part,
                   s.result->findings[i].kind, s.result->findings[i].what);
    worker_progress(ctx, 1.0, "health: done");
    s.result->verdict = v;
    return v;
}

fb_verdict_t health_run(worker_ctx_t *ctx)
{
    health_opts_t opts = {NULL, NULL, false};
    return health_run_opts(ctx, &opts);
}
