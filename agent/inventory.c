/* SPDX-License-Identifier: Apache-2.0 */
/* Machine inventory for agent registration. Reads procfs and sysfs under a root directory (the
 * live system, or a fixture tree in tests) and builds the Inventory message by hand: host and
 * kernel, CPUs and NUMA nodes, memory, DIMMs through the EDAC reader, GPUs from PCI sysfs (display
 * and 3D controllers of NVIDIA, AMD and Intel; a BMC's VGA is not a GPU), network devices backed by
 * hardware, InfiniBand HCA ports, and driver versions. sysfs content is treated as untrusted input:
 * each value is checked (numbers are numbers, states are known words, text is printable) and a bad
 * one leaves its field empty with a warning naming the file, never a crash or a failed read. It
 * stays one file of about 840 lines because every section below reads through the same checked
 * readers and fills the one message; each device class is a short section of its own. */
#include "inventory.h"

#include "cpulist.h"
#include "edac.h"
#include "fileload.h"
#include "json.h"
#include "log.h"
#include "units.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Longest text accepted per field: within the limits wire.c enforces on a Hello, so an odd
 * file can empty one field but never get the whole registration refused. */
#define S_TEXT_MAX 255  /* hostname, cpu_model, DIMM label */
#define S_SHORT_MAX 128 /* kernel release, DIMM location */
#define S_PCI_ADDR_MAX 32
#define S_SOFTWARE_MAX 255 /* a software version: FB_WIRE_MAX_NAME * 2 on the wire */

/* PCI identities. */
#define S_PCI_VENDOR_NVIDIA 0x10de
#define S_PCI_VENDOR_AMD 0x1002
#define S_PCI_VENDOR_INTEL 0x8086

/* ---------------------------------------------------------------------------------------------
 * Reading files */

static char *s_path(const char *root, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static char *s_path(const char *root, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *rel = xvasprintf(fmt, ap);
    va_end(ap);
    char *path = xasprintf("%s%s", root, rel);
    free(rel);
    return path;
}

static bool s_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static bool s_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* True when s is printable ASCII of at most max bytes. */
static bool s_printable(const char *s, size_t max)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++, n++)
        if (*p < 0x20 || *p > 0x7e || n >= max)
            return false;
    return true;
}

/* Removes leading and trailing blanks in place; returns s. */
static char *s_trim(char *s)
{
    char *start = s;
    while (*start == ' ' || *start == '\t')
        start++;
    size_t len = strlen(start);
    while (len > 0 && (start[len - 1] == ' ' || start[len - 1] == '\t' || start[len - 1] == '\n'))
        len--;
    memmove(s, start, len);
    s[len] = '\0';
    return s;
}

/* Reads a one-value text file. Returns a heap string, or NULL when the file is absent or
 * unreadable (silently: optional sources) or its content is not printable text of at most max
 * bytes (with a warning). */
static char *s_read_text(const char *path, size_t max)
{
    size_t len = 0;
    char *text = fb_read_file(path, &len);
    if (!text) {
        log_debug("inventory: %s: %s", path, strerror(errno));
        return NULL;
    }
    if (strlen(text) != len || !s_printable(s_trim(text), max)) {
        log_warn("inventory: %s: content is not printable text of at most %zu bytes, ignored", path,
                 max);
        free(text);
        return NULL;
    }
    return text;
}

/* Reads a file holding one decimal integer no larger than max. Returns 0, -ENOENT (or another
 * read error) silently, or -EINVAL with a warning. */
static int s_read_dec(const char *path, uint64_t max, uint64_t *out)
{
    char *text = fb_read_file(path, NULL);
    if (!text)
        return errno ? -errno : -EIO;
    int rc = fb_parse_uint(s_trim(text), max, out);
    if (rc < 0)
        log_warn("inventory: %s: not a number in 0..%llu, ignored", path, (unsigned long long)max);
    free(text);
    return rc;
}

/* Reads a sysfs hex attribute ("0x10de", "0x030200") no larger than max. Same returns as
 * s_read_dec. */
static int s_read_hex(const char *path, uint64_t max, uint64_t *out)
{
    char *text = fb_read_file(path, NULL);
    if (!text)
        return errno ? -errno : -EIO;
    s_trim(text);
    const char *p = text;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        p += 2;
    uint64_t v = 0;
    int rc = *p ? 0 : -EINVAL;
    for (; *p && rc == 0; p++) {
        int d = (*p >= '0' && *p <= '9')   ? *p - '0'
                : (*p >= 'a' && *p <= 'f') ? *p - 'a' + 10
                : (*p >= 'A' && *p <= 'F') ? *p - 'A' + 10
                                           : -1;
        if (d < 0 || v > (max >> 4))
            rc = -EINVAL;
        else
            v = v * 16 + (uint64_t)d;
    }
    if (rc == 0 && v > max)
        rc = -EINVAL;
    if (rc < 0)
        log_warn("inventory: %s: not a hexadecimal number, ignored", path);
    else
        *out = v;
    free(text);
    return rc;
}

/* A heap copy for a message field: never NULL. */
static char *s_str(const char *s)
{
    return xstrdup(s ? s : "");
}

/* Takes ownership of a heap string (or NULL) for a message field. */
static char *s_take(char *s)
{
    return s ? s : xstrdup("");
}

/* ---------------------------------------------------------------------------------------------
 * Host, CPUs, memory */

static int s_count_cpus(unsigned long lo, unsigned long hi, void *arg)
{
    if (hi > 1u << 20)
        return -EINVAL;
    *(uint64_t *)arg += hi - lo + 1;
    return 0;
}

/* Counts the CPUs in a kernel CPU list ("0-15,32-47", "0"). Returns -EINVAL on bad syntax and
 * for an empty list. */
static int s_cpulist_count(const char *list, uint64_t *out)
{
    uint64_t total = 0;
    if (!*list || fb_cpulist_foreach(list, s_count_cpus, &total) < 0)
        return -EINVAL;
    *out = total;
    return 0;
}

static void s_read_cpuinfo(const char *root, Fleetburn__Inventory *inv)
{
    char *path = s_path(root, "/proc/cpuinfo");
    char *text = fb_read_file(path, NULL);
    uint32_t processors = 0;
    char *model = NULL;
    if (text) {
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char *colon = strchr(line, ':');
            if (!colon)
                continue;
            *colon = '\0';
            char *key = s_trim(line), *value = s_trim(colon + 1);
            if (!strcmp(key, "processor")) {
                processors++;
            } else if (!model && !strcmp(key, "model name")) {
                if (s_printable(value, S_TEXT_MAX))
                    model = xstrdup(value);
                else
                    log_warn("inventory: %s: model name is not printable text, ignored", path);
            }
        }
        free(text);
    }
    free(path);
    if (model) {
        free(inv->cpu_model);
        inv->cpu_model = model;
    }

    /* The online list is authoritative; cpuinfo's processor count is the fallback. */
    path = s_path(root, "/sys/devices/system/cpu/online");
    text = s_read_text(path, 4096);
    uint64_t online = 0;
    if (text && s_cpulist_count(text, &online) < 0) {
        log_warn("inventory: %s: not a CPU list, ignored", path);
        online = 0;
    }
    free(text);
    free(path);
    inv->cpus = online > 0 && online <= UINT32_MAX ? (uint32_t)online : processors;
}

static void s_read_numa(const char *root, Fleetburn__Inventory *inv)
{
    char *path = s_path(root, "/sys/devices/system/node");
    char **names;
    size_t n = fb_list_dir(path, &names);
    uint32_t nodes = 0;
    for (size_t i = 0; i < n; i++) {
        const char *s = names[i];
        if (strncmp(s, "node", 4) != 0 || !s[4] || strspn(s + 4, "0123456789") != strlen(s + 4))
            continue;
        char *sub = xasprintf("%s/%s", path, s);
        if (s_is_dir(sub))
            nodes++;
        free(sub);
    }
    fb_names_free(names, n);
    free(path);
    inv->numa_nodes = nodes;
}

static void s_read_meminfo(const char *root, Fleetburn__Inventory *inv)
{
    char *path = s_path(root, "/proc/meminfo");
    char *text = fb_read_file(path, NULL);
    if (text) {
        bool found = false;
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            if (strncmp(line, "MemTotal:", 9) != 0)
                continue;
            found = true;
            char *value = s_trim(line + 9);
            size_t len = strlen(value);
            uint64_t kib = 0;
            if (len > 3 && !strcmp(value + len - 3, " kB")) {
                value[len - 3] = '\0';
                if (fb_parse_uint(s_trim(value), UINT64_MAX / 1024, &kib) == 0) {
                    inv->mem_total_bytes = kib * 1024;
                    break;
                }
            }
            log_warn("inventory: %s: MemTotal is not \"<number> kB\", ignored", path);
            break;
        }
        if (!found)
            log_warn("inventory: %s: no MemTotal line", path);
        free(text);
    }
    free(path);
}

/* ---------------------------------------------------------------------------------------------
 * DIMMs */

static void s_read_dimms(const char *root, Fleetburn__Inventory *inv)
{
    fb_edac_t edac = {0};
    int rc = fb_edac_read(root, &edac);
    if (rc == -ENOENT) {
        log_debug("inventory: no EDAC memory controllers under %s/sys/devices/system/edac", root);
        return;
    }
    if (rc < 0) {
        log_warn("inventory: %s/sys/devices/system/edac: %s; DIMMs not reported", root,
                 strerror(-rc));
        fb_edac_clear(&edac);
        return;
    }
    if (edac.n_dimms > 0) {
        inv->dimms = xcalloc(edac.n_dimms, sizeof *inv->dimms);
        for (size_t i = 0; i < edac.n_dimms; i++) {
            const fb_dimm_t *d = &edac.dimms[i];
            Fleetburn__Dimm *m = xmalloc(sizeof *m);
            fleetburn__dimm__init(m);
            const char *label = d->label ? d->label : "";
            const char *location = d->location ? d->location : "";
            if (!s_printable(label, S_TEXT_MAX)) {
                log_warn("inventory: EDAC DIMM %s: label is not printable text, ignored",
                         s_printable(location, S_TEXT_MAX) ? location : "?");
                label = "";
            }
            if (!s_printable(location, S_SHORT_MAX))
                location = "";
            m->label = s_str(label);
            m->location = s_str(location);
            m->size_mb = d->size_mb;
            m->ce_count = d->ce_count;
            m->ue_count = d->ue_count;
            inv->dimms[inv->n_dimms++] = m;
        }
    }
    fb_edac_clear(&edac);
}

/* ---------------------------------------------------------------------------------------------
 * GPUs */

static const char *s_gpu_vendor(uint64_t vendor)
{
    switch (vendor) {
    case S_PCI_VENDOR_NVIDIA:
        return "nvidia";
    case S_PCI_VENDOR_AMD:
        return "amd";
    case S_PCI_VENDOR_INTEL:
        return "intel";
    default:
        return NULL;
    }
}

/* True for the PCI classes GPUs use: VGA (0x0300), 3D controller (0x0302, NVIDIA data-centre
 * parts), display controller (0x0380, AMD Instinct), and processing accelerator (0x1200) for AMD
 * only. The class attribute is 0xCCSSPP; the programming interface is ignored. */
static bool s_gpu_class(uint64_t pci_class, uint64_t vendor)
{
    uint64_t cls = pci_class >> 8;
    if (cls == 0x0300 || cls == 0x0302 || cls == 0x0380)
        return true;
    return cls == 0x1200 && vendor == S_PCI_VENDOR_AMD;
}

static void s_read_gpu_link(const char *dev, const char *name, uint32_t *width, char **speed)
{
    char *path = xasprintf("%s/%s_link_speed", dev, name);
    *speed = s_take(s_read_text(path, 64));
    free(path);
    path = xasprintf("%s/%s_link_width", dev, name);
    uint64_t w = 0;
    if (s_read_dec(path, 64, &w) == 0)
        *width = (uint32_t)w;
    free(path);
}

static void s_add_gpu(Fleetburn__Inventory *inv, Fleetburn__Gpu *gpu)
{
    inv->gpus = xrealloc(inv->gpus, (inv->n_gpus + 1) * sizeof *inv->gpus);
    inv->gpus[inv->n_gpus++] = gpu;
}

static void s_read_gpus(const char *root, Fleetburn__Inventory *inv)
{
    char *base = s_path(root, "/sys/bus/pci/devices");
    char **names;
    size_t n = fb_list_dir(base, &names);
    for (size_t i = 0; i < n; i++) {
        if (!s_printable(names[i], S_PCI_ADDR_MAX))
            continue;
        char *dev = xasprintf("%s/%s", base, names[i]);
        char *path = xasprintf("%s/class", dev);
        uint64_t pci_class = 0, vendor = 0, device = 0;
        int rc = s_read_hex(path, 0xffffff, &pci_class);
        free(path);
        if (rc == 0) {
            path = xasprintf("%s/vendor", dev);
            rc = s_read_hex(path, 0xffff, &vendor);
            free(path);
        }
        const char *vendor_name = rc == 0 ? s_gpu_vendor(vendor) : NULL;
        if (!vendor_name || !s_gpu_class(pci_class, vendor)) {
            free(dev);
            continue;
        }
        Fleetburn__Gpu *gpu = xmalloc(sizeof *gpu);
        fleetburn__gpu__init(gpu);
        gpu->vendor = s_str(vendor_name);
        gpu->vendor_id = xasprintf("0x%04llx", (unsigned long long)vendor);
        path = xasprintf("%s/device", dev);
        gpu->device_id = s_read_hex(path, 0xffff, &device) == 0
                             ? xasprintf("0x%04llx", (unsigned long long)device)
                             : s_str("");
        free(path);
        gpu->pci_address = s_str(names[i]);
        s_read_gpu_link(dev, "current", &gpu->link_width, &gpu->link_speed);
        s_read_gpu_link(dev, "max", &gpu->max_link_width, &gpu->max_link_speed);

        /* numa_node is -1 when the platform does not say; that is reported as node 0. */
        path = xasprintf("%s/numa_node", dev);
        char *text = s_read_text(path, 16);
        uint64_t node = 0;
        if (text && strcmp(text, "-1") != 0 && fb_parse_uint(text, 4095, &node) < 0) {
            log_warn("inventory: %s: not a NUMA node number, ignored", path);
            node = 0;
        }
        gpu->numa_node = (uint32_t)node;
        free(text);
        free(path);
        s_add_gpu(inv, gpu);
        free(dev);
    }
    fb_names_free(names, n);
    free(base);
}

/* ---------------------------------------------------------------------------------------------
 * Network devices and HCA ports */

static void s_add_nic(Fleetburn__Inventory *inv, Fleetburn__Nic *nic)
{
    inv->nics = xrealloc(inv->nics, (inv->n_nics + 1) * sizeof *inv->nics);
    inv->nics[inv->n_nics++] = nic;
}

static bool s_known_operstate(const char *s)
{
    static const char *known[] = {"unknown", "notpresent", "down", "lowerlayerdown",
                                  "testing", "dormant",    "up"};
    for (size_t i = 0; i < FB_ARRAY_LEN(known); i++)
        if (!strcmp(s, known[i]))
            return true;
    return false;
}

static void s_read_netdevs(const char *root, Fleetburn__Inventory *inv)
{
    char *base = s_path(root, "/sys/class/net");
    char **names;
    size_t n = fb_list_dir(base, &names);
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(names[i], "lo") || !s_printable(names[i], 64))
            continue;
        char *dev = xasprintf("%s/%s", base, names[i]);
        /* Hardware-backed devices have a `device` link to their bus device; virtual ones (bridges,
         * bonds, veth, ifb, tunnels) have none. */
        char *path = xasprintf("%s/device", dev);
        bool hardware = s_exists(path);
        free(path);
        if (!hardware) {
            free(dev);
            continue;
        }
        Fleetburn__Nic *nic = xmalloc(sizeof *nic);
        fleetburn__nic__init(nic);
        nic->name = s_str(names[i]);

        uint64_t type = 1;
        path = xasprintf("%s/type", dev);
        if (s_read_dec(path, 65535, &type) < 0)
            type = 1;
        free(path);
        nic->kind = s_str(type == 1 ? "ethernet" : type == 32 ? "ipoib" : "other");

        path = xasprintf("%s/operstate", dev);
        char *state = s_read_text(path, 32);
        if (state && !s_known_operstate(state)) {
            log_warn("inventory: %s: unknown operstate, ignored", path);
            free(state);
            state = NULL;
        }
        nic->state = s_take(state);
        free(path);

        /* speed is -1 for an unknown speed and unreadable (EINVAL) while the link is down. */
        path = xasprintf("%s/speed", dev);
        char *text = fb_read_file(path, NULL);
        uint64_t speed = 0;
        if (text && strcmp(s_trim(text), "-1") != 0 &&
            fb_parse_uint(text, UINT32_MAX, &speed) < 0) {
            log_warn("inventory: %s: not a speed in Mb/s, ignored", path);
            speed = 0;
        }
        free(text);
        free(path);
        nic->speed_mbps = speed;
        nic->rate = speed ? xasprintf("%llu Mb/s", (unsigned long long)speed) : s_str("");

        path = xasprintf("%s/address", dev);
        nic->address = s_take(s_read_text(path, 64));
        free(path);
        s_add_nic(inv, nic);
        free(dev);
    }
    fb_names_free(names, n);
    free(base);
}

/* "4: ACTIVE" -> "ACTIVE"; NULL when the text does not have that form. */
static char *s_ib_state(const char *text)
{
    size_t digits = strspn(text, "0123456789");
    if (digits == 0 || text[digits] != ':' || text[digits + 1] != ' ')
        return NULL;
    const char *word = text + digits + 2;
    size_t len = strspn(word, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
    if (len == 0 || word[len] != '\0')
        return NULL;
    return xstrdup(word);
}

/* "200 Gb/sec (4X HDR)" -> 200000 Mb/s; -EINVAL when it does not start "<number> Gb/sec". */
static int s_ib_rate_mbps(const char *text, uint64_t *out)
{
    if (*text < '0' || *text > '9')
        return -EINVAL;
    char *end = NULL;
    errno = 0;
    double gbps = strtod(text, &end);
    if (errno || end == text || strncmp(end, " Gb/sec", 7) != 0 || !(gbps >= 0 && gbps < 1e7))
        return -EINVAL;
    *out = (uint64_t)(gbps * 1000.0 + 0.5);
    return 0;
}

static void s_read_hca_port(Fleetburn__Inventory *inv, const char *hca, const char *dir,
                            uint32_t port)
{
    Fleetburn__Nic *nic = xmalloc(sizeof *nic);
    fleetburn__nic__init(nic);
    nic->name = s_str(hca);
    nic->kind = s_str("infiniband");
    nic->port = port;

    char *path = xasprintf("%s/state", dir);
    char *text = s_read_text(path, 64);
    char *state = text ? s_ib_state(text) : NULL;
    if (text && !state)
        log_warn("inventory: %s: not a port state like \"4: ACTIVE\", ignored", path);
    nic->state = s_take(state);
    free(text);
    free(path);

    path = xasprintf("%s/rate", dir);
    text = s_read_text(path, 64);
    uint64_t mbps = 0;
    if (text && s_ib_rate_mbps(text, &mbps) < 0) {
        log_warn("inventory: %s: not a rate like \"200 Gb/sec (4X HDR)\", ignored", path);
        free(text);
        text = NULL;
    }
    nic->rate = s_take(text);
    nic->speed_mbps = mbps;
    free(path);

    /* GID 0: the subnet prefix and the port GUID, which name the port on the fabric. */
    path = xasprintf("%s/gids/0", dir);
    nic->address = s_take(s_read_text(path, 64));
    free(path);
    s_add_nic(inv, nic);
}

static void s_read_hcas(const char *root, Fleetburn__Inventory *inv)
{
    char *base = s_path(root, "/sys/class/infiniband");
    char **hcas;
    size_t n = fb_list_dir(base, &hcas);
    for (size_t i = 0; i < n; i++) {
        if (!s_printable(hcas[i], 64))
            continue;
        char *ports_dir = xasprintf("%s/%s/ports", base, hcas[i]);
        char **ports;
        size_t n_ports = fb_list_dir(ports_dir, &ports);
        for (size_t j = 0; j < n_ports; j++) {
            uint64_t port = 0;
            if (fb_parse_uint(ports[j], 255, &port) < 0) {
                log_warn("inventory: %s/%s: not a port number, ignored", ports_dir, ports[j]);
                continue;
            }
            char *dir = xasprintf("%s/%s", ports_dir, ports[j]);
            if (s_is_dir(dir))
                s_read_hca_port(inv, hcas[i], dir, (uint32_t)port);
            free(dir);
        }
        fb_names_free(ports, n_ports);
        free(ports_dir);
    }
    fb_names_free(hcas, n);
    free(base);
}

/* ---------------------------------------------------------------------------------------------
 * Software versions */

static void s_add_software(Fleetburn__Inventory *inv, const char *key, char *value)
{
    if (!value || !*value) {
        free(value);
        return;
    }
    Fleetburn__Inventory__SoftwareEntry *e = xmalloc(sizeof *e);
    fleetburn__inventory__software_entry__init(e);
    e->key = s_str(key);
    e->value = value;
    inv->software = xrealloc(inv->software, (inv->n_software + 1) * sizeof *inv->software);
    inv->software[inv->n_software++] = e;
}

/* The first token of the NVRM line that looks like a version (digits with at least one dot):
 * "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ..." -> "580.65.06";
 * the open kernel module's "... Open Kernel Module for x86_64  580.65.06 ..." works alike. */
static char *s_nvidia_version(const char *root)
{
    char *path = s_path(root, "/proc/driver/nvidia/version");
    char *text = fb_read_file(path, NULL);
    char *version = NULL;
    if (text) {
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line && !version;
             line = strtok_r(NULL, "\n", &save)) {
            if (strncmp(line, "NVRM version:", 13) != 0)
                continue;
            char *tsave = NULL;
            for (char *tok = strtok_r(line + 13, " \t", &tsave); tok;
                 tok = strtok_r(NULL, " \t", &tsave)) {
                size_t len = strlen(tok);
                if (len < 64 && tok[0] >= '0' && tok[0] <= '9' &&
                    strspn(tok, "0123456789.") == len && strchr(tok, '.')) {
                    version = xstrdup(tok);
                    break;
                }
            }
        }
        if (!version)
            log_warn("inventory: %s: no driver version in the NVRM line, ignored", path);
        free(text);
    }
    free(path);
    return version;
}

char *inventory_per_device(const char *const *devices, const char *const *values, size_t n)
{
    size_t known = 0;
    bool same = true;
    const char *first = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!values[i] || !*values[i])
            continue;
        known++;
        if (!first)
            first = values[i];
        same &= !strcmp(first, values[i]);
    }
    if (!known)
        return NULL;
    if (same && known == n)
        return xstrdup(first);
    char *out = xcalloc(1, S_SOFTWARE_MAX + 1);
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        const char *v = values[i] && *values[i] ? values[i] : "?";
        size_t need = strlen(devices[i]) + 1 + strlen(v) + (len ? 1 : 0);
        if (len + need > S_SOFTWARE_MAX - 4) { /* keep within the wire's limit, say it is cut */
            memcpy(out + len, ",...", 5);
            break;
        }
        len += (size_t)snprintf(out + len, S_SOFTWARE_MAX + 1 - len, "%s%s:%s", len ? "," : "",
                                devices[i], v);
    }
    return out;
}

/* PRETTY_NAME of os-release(5): "Ubuntu 24.04.1 LTS". The file is small and read bounded; the
 * value may be quoted with " or ' (shell syntax, without expansions). */
static char *s_os_name(const char *root)
{
    static const char *const files[] = {"/etc/os-release", "/usr/lib/os-release"};
    for (size_t f = 0; f < FB_ARRAY_LEN(files); f++) {
        char *path = s_path(root, "%s", files[f]), *text = NULL;
        size_t len = 0;
        int rc = fb_load_file(path, 64 * 1024, &text, &len, NULL);
        char *name = NULL;
        for (char *line = text, *next; rc == 0 && line && !name; line = next) {
            next = strchr(line, '\n');
            if (next)
                *next++ = '\0';
            if (strncmp(line, "PRETTY_NAME=", 12))
                continue;
            char *v = line + 12;
            size_t n = strlen(v);
            if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
                v[n - 1] = '\0';
                v++;
            }
            if (*v && s_printable(v, S_SHORT_MAX) && !strchr(v, '\\'))
                name = xstrdup(v);
            else
                log_warn("inventory: %s: PRETTY_NAME is not printable text of at most %d bytes, "
                         "ignored",
                         path, S_SHORT_MAX);
        }
        free(text);
        free(path);
        if (rc == 0)
            return name;
    }
    return NULL;
}

/* fw_ver of every HCA: one version, or "mlx5_0:28.39.1002,mlx5_1:28.41.1000" when they differ. */
static char *s_hca_firmware(const char *root)
{
    char *base = s_path(root, "/sys/class/infiniband");
    char **hcas;
    size_t n = fb_list_dir(base, &hcas), k = 0;
    char **values = xcalloc(n ? n : 1, sizeof *values);
    for (size_t i = 0; i < n; i++) {
        if (!s_printable(hcas[i], 64))
            continue;
        char *path = xasprintf("%s/%s/fw_ver", base, hcas[i]);
        values[k] = s_read_text(path, 64);
        if (k != i) { /* names and values stay side by side */
            char *t = hcas[k];
            hcas[k] = hcas[i];
            hcas[i] = t;
        }
        k++;
        free(path);
    }
    char *out = inventory_per_device((const char *const *)hcas, (const char *const *)values, k);
    for (size_t i = 0; i < k; i++)
        free(values[i]);
    free(values);
    fb_names_free(hcas, n);
    free(base);
    return out;
}

/* The text of the file root/rel (at most max bytes) as the version called key. */
static void s_add_software_file(Fleetburn__Inventory *inv, const char *key, const char *root,
                                const char *rel, size_t max)
{
    char *path = s_path(root, "%s", rel);
    s_add_software(inv, key, s_read_text(path, max));
    free(path);
}

static void s_read_software(const char *root, Fleetburn__Inventory *inv)
{
    s_add_software(inv, "kernel", xstrdup(inv->kernel));
    s_add_software(inv, "nvidia_driver", s_nvidia_version(root));
    s_add_software_file(inv, "amdgpu", root, "/sys/module/amdgpu/version", 64);
    /* The rest of the environment fingerprint (docs/inventory.md "Fingerprint") */
    s_add_software(inv, "os", s_os_name(root));
    s_add_software_file(inv, "bios", root, "/sys/class/dmi/id/bios_version", 64);
    s_add_software_file(inv, "bios_date", root, "/sys/class/dmi/id/bios_date", 32);
    s_add_software_file(inv, "rocm", root, "/opt/rocm/.info/version", 64);
    s_add_software(inv, "hca_fw", s_hca_firmware(root));
    s_add_software_file(inv, "mlx5_core", root, "/sys/module/mlx5_core/version", 64);
}

void inventory_add_software(Fleetburn__Inventory *inv, const char *key, char *value)
{
    for (size_t i = 0; i < inv->n_software; i++)
        if (!strcmp(inv->software[i]->key, key)) {
            free(value); /* what the agent read itself stands */
            return;
        }
    s_add_software(inv, key, value);
}

/* ---------------------------------------------------------------------------------------------
 * Public API */

Fleetburn__Inventory *inventory_read(const char *root)
{
    if (!root)
        root = "";
    Fleetburn__Inventory *inv = xmalloc(sizeof *inv);
    fleetburn__inventory__init(inv);

    char *path = s_path(root, "/proc/sys/kernel/hostname");
    inv->hostname = s_take(s_read_text(path, S_TEXT_MAX));
    free(path);
    path = s_path(root, "/proc/sys/kernel/osrelease");
    inv->kernel = s_take(s_read_text(path, S_SHORT_MAX));
    free(path);
    inv->cpu_model = s_str("");
    inv->agent_version = s_str(FB_VERSION);

    s_read_cpuinfo(root, inv);
    s_read_numa(root, inv);
    s_read_meminfo(root, inv);
    s_read_dimms(root, inv);
    s_read_gpus(root, inv);
    s_read_netdevs(root, inv);
    s_read_hcas(root, inv);
    s_read_software(root, inv);
    return inv;
}

void inventory_free(Fleetburn__Inventory **inv_p)
{
    if (!inv_p || !*inv_p)
        return;
    /* Every part is its own malloc block and empty strings are heap "" or protobuf_c_empty_string
     * (which the unpacker's free skips), so the generated free releases it exactly. */
    fleetburn__inventory__free_unpacked(*inv_p, NULL);
    *inv_p = NULL;
}
