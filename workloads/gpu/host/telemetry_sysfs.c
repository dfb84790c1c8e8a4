/* SPDX-License-Identifier: Apache-2.0 */
/* GPUs and PCIe links as sysfs shows them (telemetry.h): the GPU list that numbers gpuN in PCI
 * address order for telemetry, the health sweep and rdma, and a device's link with the best it can
 * reach in its slot. No management library is needed, so this works on every node. */
#include "telemetry_impl.h"

#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
