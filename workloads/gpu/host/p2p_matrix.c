/* SPDX-License-Identifier: Apache-2.0 */
/* The judgement half of the p2p workload, with no GPU and no I/O. Peer bandwidth depends on how
 * two GPUs are joined (NVLink or xGMI, a PCIe switch, the CPU's host bridge, or no peer path at
 * all), so a pair is compared only with the median of pairs joined the same way, and a slow pair
 * becomes a finding on that link that names both GPUs and the link type. The same module turns a
 * matrix into metrics and into the text tables the worker logs. */
#include "p2p_matrix.h"

#include "common/cpulist.h"
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each link's name in findings and log lines, and its short form in the matrix tables. */
static const struct {
    const char *name, *short_name;
} s_links[P2P_LINK_N] = {
    [P2P_LINK_NVLINK] = {"NVLink", "NVLink"},
    [P2P_LINK_XGMI] = {"xGMI", "xGMI"},
    [P2P_LINK_PCIE_SWITCH] = {"PCIe switch", "PCIe-SW"},
    [P2P_LINK_PCIE_HOSTBRIDGE] = {"PCIe host bridge", "PCIe-HB"},
    [P2P_LINK_PCIE_SYSTEM] = {"PCIe across root complexes", "PCIe-SYS"},
    [P2P_LINK_HOST] = {"no P2P, via host", "host"},
};

const char *p2p_link_name(p2p_link_t link)
{
    return (unsigned)link < P2P_LINK_N && s_links[link].name ? s_links[link].name : "unknown link";
}

const char *p2p_link_short(p2p_link_t link)
{
    return (unsigned)link < P2P_LINK_N && s_links[link].short_name ? s_links[link].short_name : "?";
}

/* ---- topology -------------------------------------------------------------------------------- */

/* Splits a sysfs device path after "/sys/devices/" into at most cap components; returns the count,
 * or -1 when the path is not a PCI device path. The components point into copy. */
static int s_components(char *copy, char **comp, int cap)
{
    char *p = strstr(copy, "/devices/");
    if (!p)
        return -1;
    p += strlen("/devices/");
    if (strncmp(p, "pci", 3))
        return -1;
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(p, "/", &save); tok && n < cap;
         tok = strtok_r(NULL, "/", &save))
        comp[n++] = tok;
    return n >= 2 ? n : -1;
}

p2p_link_t p2p_pcie_relation(const char *path_a, const char *path_b)
{
    if (!path_a || !path_b)
        return P2P_LINK_UNKNOWN;
    char *a = xstrdup(path_a), *b = xstrdup(path_b);
    char *ca[64], *cb[64];
    int na = s_components(a, ca, 64), nb = s_components(b, cb, 64);
    p2p_link_t link = P2P_LINK_UNKNOWN;
    if (na > 0 && nb > 0) {
        int common = 0;
        /* The devices themselves (last components) never count as a shared bridge. */
        while (common < na - 1 && common < nb - 1 && !strcmp(ca[common], cb[common]))
            common++;
        if (common == 0)
            link = P2P_LINK_PCIE_SYSTEM;
        else if (common == 1)
            link = P2P_LINK_PCIE_HOSTBRIDGE;
        else
            link = P2P_LINK_PCIE_SWITCH;
    }
    free(a);
    free(b);
    return link;
}

typedef struct {
    unsigned char *mask;
    size_t n_cpus;
    int count; /* CPUs newly marked */
} s_cpu_mask_t;

static int s_mark_cpus(unsigned long lo, unsigned long hi, void *arg)
{
    s_cpu_mask_t *m = arg;
    for (unsigned long c = lo; c <= hi && c < m->n_cpus; c++) {
        m->count += !m->mask[c];
        m->mask[c] = 1;
    }
    return 0;
}

int p2p_parse_cpulist(const char *text, unsigned char *mask, size_t n_cpus)
{
    s_cpu_mask_t m = {mask, n_cpus, 0};
    int rc = fb_cpulist_foreach(text, s_mark_cpus, &m);
    return rc < 0 ? rc : m.count;
}

/* ---- statistics ------------------------------------------------------------------------------ */

static int s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double p2p_median(const double *v, size_t n)
{
    double *copy = xmalloc((n ? n : 1) * sizeof *copy);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i]))
            copy[k++] = v[i];
    double med = NAN;
    if (k) {
        qsort(copy, k, sizeof *copy, s_cmp_double);
        med = k % 2 ? copy[k / 2] : (copy[k / 2 - 1] + copy[k / 2]) / 2;
    }
    free(copy);
    return med;
}

double p2p_link_median(const p2p_topo_t *t, const double *m, p2p_link_t link, bool symmetric)
{
    size_t n = t->n, k = 0;
    double *vals = xmalloc((n ? n * n : 1) * sizeof *vals);
    for (size_t i = 0; i < n; i++)
        for (size_t j = symmetric ? i + 1 : 0; j < n; j++)
            if (i != j && t->link[i * n + j] == link && isfinite(m[i * n + j]))
                vals[k++] = m[i * n + j];
    double med = p2p_median(vals, k);
    free(vals);
    return med;
}

static const char *s_node(const p2p_topo_t *t)
{
    return t->node && *t->node ? t->node : "localhost";
}

size_t p2p_judge(fb_result_t *res, const p2p_topo_t *t, const double *m, const p2p_check_t *c)
{
    size_t n = t->n, found = 0;
    double median[P2P_LINK_N];
    for (int l = 0; l < P2P_LINK_N; l++)
        median[l] = p2p_link_median(t, m, (p2p_link_t)l, c->symmetric);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = c->symmetric ? i + 1 : 0; j < n; j++) {
            double v = m[i * n + j];
            if (i == j || !isfinite(v))
                continue;
            p2p_link_t link = t->link[i * n + j];
            if ((int)link < 0 || link >= P2P_LINK_N)
                link = P2P_LINK_UNKNOWN;
            double med = median[link];
            bool below_abs = c->min_gbs > 0 && v < c->min_gbs;
            bool below_rel =
                c->min_relative > 0 && isfinite(med) && med > 0 && v < c->min_relative * med;
            if (!below_abs && !below_rel)
                continue;
            int a = t->dev[i], b = t->dev[j];
            int lo = a < b ? a : b, hi = a < b ? b : a;
            char *part = xasprintf("%s/gpu%d<->gpu%d", s_node(t), lo, hi);
            char dir[48], rel[160] = "", abs_text[80] = "";
            if (c->symmetric)
                snprintf(dir, sizeof dir, "gpu%d<->gpu%d", a, b);
            else
                snprintf(dir, sizeof dir, "gpu%d->gpu%d", a, b);
            if (isfinite(med) && med > 0)
                snprintf(rel, sizeof rel, ", %.0f%% of the %s median %.0f GB/s", 100.0 * v / med,
                         p2p_link_name(link), med);
            if (below_abs)
                snprintf(abs_text, sizeof abs_text, ", below min_gbs %.0f GB/s", c->min_gbs);
            fb_result_add_findingf(res, part, "link", "%s (%s): %.0f GB/s %s (%s, %s)%s%s", part,
                                   p2p_link_name(link), v, c->direction, dir, c->method, rel,
                                   abs_text);
            free(part);
            found++;
        }
    }
    return found;
}

size_t p2p_judge_host(fb_result_t *res, const p2p_topo_t *t, const double *v, const char *what,
                      double min_relative)
{
    if (t->n < 2 || min_relative <= 0)
        return 0;
    double med = p2p_median(v, t->n);
    if (!isfinite(med) || med <= 0)
        return 0;
    size_t found = 0;
    for (size_t k = 0; k < t->n; k++) {
        if (!isfinite(v[k]) || v[k] >= min_relative * med)
            continue;
        char *part = xasprintf("%s/gpu%d", s_node(t), t->dev[k]);
        fb_result_add_findingf(res, part, "gpu",
                               "%s: %.1f GB/s %s, %.0f%% of the median %.1f GB/s of this node's "
                               "GPUs (PCIe link trained down, or host memory on the far socket?)",
                               part, v[k], what, 100.0 * v[k] / med, med);
        free(part);
        found++;
    }
    return found;
}

void p2p_add_matrix_metrics(fb_result_t *res, const p2p_topo_t *t, const double *m,
                            const char *prefix, const char *unit)
{
    for (size_t i = 0; i < t->n; i++)
        for (size_t j = 0; j < t->n; j++) {
            if (i == j || !isfinite(m[i * t->n + j]))
                continue;
            char name[96];
            snprintf(name, sizeof name, "%s.%d_%d", prefix, t->dev[i], t->dev[j]);
            fb_result_set_metric(res, name, m[i * t->n + j], unit);
        }
}

/* ---- tables ---------------------------------------------------------------------------------- */

#define P2P_CELL 10

static char *s_header(const p2p_topo_t *t)
{
    size_t cap = (t->n + 1) * (P2P_CELL + 1) + 1, o = 0;
    char *line = xmalloc(cap);
    o += (size_t)snprintf(line, cap, "%-*s", 8, "");
    for (size_t j = 0; j < t->n && o < cap; j++) {
        char col[16];
        snprintf(col, sizeof col, "gpu%d", t->dev[j]);
        o += (size_t)snprintf(line + o, cap - o, "%*s", P2P_CELL, col);
    }
    return line;
}

/* A table's first two lines (title, column heads) and room for one row per GPU. */
static char **s_table(const p2p_topo_t *t, const char *title)
{
    char **lines = xcalloc(t->n + 2, sizeof *lines);
    lines[0] = xstrdup(title);
    lines[1] = s_header(t);
    return lines;
}

/* The start of GPU i's row, its name in the first column: *cap is the line's size, *used what
 * is written so far. */
static char *s_row(const p2p_topo_t *t, size_t i, size_t *cap, size_t *used)
{
    *cap = (t->n + 1) * (P2P_CELL + 1) + 1;
    char *line = xmalloc(*cap), row[16];
    snprintf(row, sizeof row, "gpu%d", t->dev[i]);
    *used = (size_t)snprintf(line, *cap, "%-8s", row);
    return line;
}

char **p2p_format_table(const p2p_topo_t *t, const double *m, const char *title, int decimals,
                        size_t *n_lines)
{
    char **lines = s_table(t, title);
    for (size_t i = 0; i < t->n; i++) {
        size_t cap, o;
        char *line = s_row(t, i, &cap, &o);
        for (size_t j = 0; j < t->n && o < cap; j++) {
            double v = m[i * t->n + j];
            if (i == j || !isfinite(v))
                o += (size_t)snprintf(line + o, cap - o, "%*s", P2P_CELL, "-");
            else
                o += (size_t)snprintf(line + o, cap - o, " %*.*f", P2P_CELL - 1, decimals, v);
        }
        lines[i + 2] = line;
    }
    *n_lines = t->n + 2;
    return lines;
}

char **p2p_format_links(const p2p_topo_t *t, size_t *n_lines)
{
    char **lines = s_table(t, "p2p links (row: source, column: destination)");
    for (size_t i = 0; i < t->n; i++) {
        size_t cap, o;
        char *line = s_row(t, i, &cap, &o);
        for (size_t j = 0; j < t->n && o < cap; j++)
            o += (size_t)snprintf(line + o, cap - o, " %*s", P2P_CELL - 1,
                                  i == j ? "-" : p2p_link_short(t->link[i * t->n + j]));
        lines[i + 2] = line;
    }
    *n_lines = t->n + 2;
    return lines;
}

void p2p_free_lines(char **lines, size_t n)
{
    for (size_t i = 0; lines && i < n; i++)
        free(lines[i]);
    free(lines);
}
