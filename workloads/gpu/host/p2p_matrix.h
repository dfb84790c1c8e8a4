/* SPDX-License-Identifier: Apache-2.0 */
/* Host-side logic of the p2p workload, in plain C so it is unit-tested without a GPU: link types
 * and how PCIe paths read from sysfs classify a pair, medians of a bandwidth matrix per link type,
 * the findings for pairs below the absolute or relative floor, the metrics, and the matrices as
 * text tables. Matrices are n*n doubles, row = source GPU, column = destination GPU, NAN where
 * nothing was measured (the diagonal, pairs without peer access for SM copies). */
#ifndef FB_P2P_MATRIX_H
#define FB_P2P_MATRIX_H

#include "common/result.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How two GPUs are connected. Pairs are compared only with pairs of the same type. */
typedef enum {
    P2P_LINK_UNKNOWN = 0,     /* peer access, path not known */
    P2P_LINK_NVLINK,          /* NVIDIA NVLink (directly or through NVSwitch) */
    P2P_LINK_XGMI,            /* AMD Infinity Fabric (xGMI) */
    P2P_LINK_PCIE_SWITCH,     /* PCIe, below a common switch / root port (PIX, PXB) */
    P2P_LINK_PCIE_HOSTBRIDGE, /* PCIe, through the CPU's host bridge (PHB) */
    P2P_LINK_PCIE_SYSTEM,     /* PCIe, across root complexes or CPU sockets (NODE, SYS) */
    P2P_LINK_HOST,            /* no peer access: copies are staged through host memory */
    P2P_LINK_N
} p2p_link_t;

/* "NVLink", "xGMI", "PCIe switch", "PCIe host bridge", "PCIe across root complexes",
 * "no P2P, via host", "unknown link". */
const char *p2p_link_name(p2p_link_t link);
/* A short form for tables: "NVLink", "xGMI", "PCIe-SW", "PCIe-HB", "PCIe-SYS", "host", "?". */
const char *p2p_link_short(p2p_link_t link);

/* Classifies the PCIe path between two devices from their sysfs device paths (the resolved
 * /sys/bus/pci/devices/BDF links, "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"): a common
 * bridge below the root → PCIE_SWITCH; the same root bus only → PCIE_HOSTBRIDGE; different roots
 * → PCIE_SYSTEM; a path that is not of that form → UNKNOWN. */
p2p_link_t p2p_pcie_relation(const char *path_a, const char *path_b);

/* Parses a kernel CPU list ("0-15,32-47") setting mask[c] = 1 for each CPU c below n_cpus (CPUs
 * beyond are ignored). Returns the number of CPUs set, or -EINVAL. */
int p2p_parse_cpulist(const char *text, unsigned char *mask, size_t n_cpus);

/* The median of the finite values of v (NANs ignored); NAN when there are none. */
double p2p_median(const double *v, size_t n);

/* The GPUs of one p2p run: n devices, dev[k] the runtime index of row/column k, link[i*n+j] the
 * link from row i to column j. */
typedef struct {
    const char *node; /* "" or NULL is written "localhost" */
    size_t n;
    const int *dev;
    const p2p_link_t *link;
} p2p_topo_t;

/* The median of the off-diagonal finite cells of m whose link is `link` (upper triangle only when
 * symmetric); NAN when there are none. */
double p2p_link_median(const p2p_topo_t *t, const double *m, p2p_link_t link, bool symmetric);

/* One bandwidth matrix and how it is judged. */
typedef struct {
    const char *metric;    /* "ce_uni": metrics are p2p.<metric>.<i>_<j> */
    const char *direction; /* "unidirectional" / "bidirectional" */
    const char *method;    /* "copy engine" / "SM copy" */
    bool symmetric;        /* bidirectional: cells i,j and j,i hold the same measurement */
    double min_gbs;        /* absolute floor, <= 0 for none */
    double min_relative;   /* fraction of the link-type median, <= 0 for none */
} p2p_check_t;

/* Adds a finding on "<node>/gpuA<->gpuB" (kind "link") for each pair below c->min_gbs or below
 * c->min_relative times the median of the pairs with its link type:
 *   "node/gpu0<->gpu1 (NVLink): 180 GB/s unidirectional (gpu0->gpu1, copy engine), 52% of the
 *    NVLink median 348 GB/s"
 * Returns the number of findings added. */
size_t p2p_judge(fb_result_t *res, const p2p_topo_t *t, const double *m, const p2p_check_t *c);

/* Host<->device bandwidth of each GPU (v[k] for dev[k]): a finding on "<node>/gpuN" (kind
 * "gpu") for each GPU below min_relative times the median of all (only with two GPUs or more).
 * what is "host-to-device" etc. Returns the number of findings added. */
size_t p2p_judge_host(fb_result_t *res, const p2p_topo_t *t, const double *v, const char *what,
                      double min_relative);

/* Adds "<prefix>.<i>_<j>" for each finite off-diagonal cell (device indices, not rows). */
void p2p_add_matrix_metrics(fb_result_t *res, const p2p_topo_t *t, const double *m,
                            const char *prefix, const char *unit);

/* The matrix as text lines for the log (heap array of n+2 heap strings, *n_lines set; free with
 * p2p_free_lines): a title line, a header of columns "gpuJ", then one row per source GPU; "-" on
 * the diagonal and for cells not measured. */
char **p2p_format_table(const p2p_topo_t *t, const double *m, const char *title, int decimals,
                        size_t *n_lines);
/* The link types as the same kind of table. */
char **p2p_format_links(const p2p_topo_t *t, size_t *n_lines);
void p2p_free_lines(char **lines, size_t n);

#ifdef __cplusplus
}
#endif

#endif
