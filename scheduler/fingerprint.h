/* SPDX-License-Identifier: Apache-2.0 */
/* Environment fingerprints: the versions of what a node ran a campaign on (driver, CUDA, NCCL,
 * VBIOS, InfoROM, HCA firmware, kernel, BIOS, OS, fleetburn), what changed between two of them,
 * and the same change on many nodes folded into one line:
 *
 *   nvidia_driver 570.86 → 580.159 on gpu[001-064]
 *
 * Pure logic. The coordinator records a fingerprint per node per campaign from the node's
 * inventory (coordinator/store_fingerprint.c, docs/inventory.md "Fingerprint") and reports the
 * changes since each node's previous campaign; `fleetburn compare` puts them beside regressions.
 *
 *   fb_fp_node_t nodes[] = {{"gpu001", &before1, &now1}, {"gpu002", &before2, &now2}};
 *   fb_fp_group_t *groups;
 *   size_t n = fb_fingerprint_group(nodes, 2, &groups);
 *   for (size_t i = 0; i < n; i++) { char *line = fb_fp_group_line(&groups[i]); ... }
 *   fb_fp_groups_free(groups, n);
 */
#ifndef FB_FINGERPRINT_H
#define FB_FINGERPRINT_H

#include <stdbool.h>
#include <stddef.h>

/* The components of a fingerprint, in the order reports list them; keys as in the inventory's
 * software map (docs/inventory.md), fleetburn being the agent's version. */
#define FB_FINGERPRINT_COMPONENTS                                                                  \
    "fleetburn", "kernel", "os", "bios", "bios_date", "nvidia_driver", "cuda_driver", "gpu_vbios", \
        "gpu_inforom", "amdgpu_driver", "amdgpu", "rocm", "nccl", "rccl", "hca_fw", "mlx5_core"

typedef struct {
    char *component;
    char *version;
} fb_fp_item_t;

/* A node's fingerprint: components in FB_FINGERPRINT_COMPONENTS order, each at most once. */
typedef struct {
    fb_fp_item_t *items;
    size_t n;
} fb_fingerprint_t;

/* Whether component is one a fingerprint holds. */
bool fb_fingerprint_component(const char *component);
/* Sets component (one of FB_FINGERPRINT_COMPONENTS; others are ignored, and so is an empty
 * version) to version, replacing an earlier value. Strings are copied. */
void fb_fingerprint_set(fb_fingerprint_t *fp, const char *component, const char *version);
/* The version of component, or NULL (borrowed). */
const char *fb_fingerprint_get(const fb_fingerprint_t *fp, const char *component);
/* Frees what fp holds and zeroes it. */
void fb_fingerprint_clear(fb_fingerprint_t *fp);

/* One difference between two fingerprints. before is NULL for a component that appeared, after
 * NULL for one that is gone. Pointers are borrowed from the fingerprints compared. */
typedef struct {
    const char *component;
    const char *before, *after;
} fb_fp_change_t;

/* The changes from before to after, in component order. Returns their number with a heap array
 * in *out (NULL when none; free() it). */
size_t fb_fingerprint_diff(const fb_fingerprint_t *before, const fb_fingerprint_t *after,
                           fb_fp_change_t **out);

/* A node's fingerprint in a campaign and in its previous one (NULL: no previous campaign, the
 * node is left out of the changes). Borrowed. */
typedef struct {
    const char *node;
    const fb_fingerprint_t *before, *after;
} fb_fp_node_t;

/* One change made alike on several nodes. before/after NULL as in fb_fp_change_t. */
typedef struct {
    char *component;
    char *before, *after;
    char **nodes; /* sorted */
    size_t n_nodes;
    char *hostlist; /* the nodes in hostlist notation: "gpu[001-064]" */
} fb_fp_group_t;

/* The changes of every node, the same (component, before, after) on several nodes folded into
 * one group. Groups come in component order, then most nodes first, then by versions. Returns
 * their number with a heap array in *out (NULL when none; free with fb_fp_groups_free). */
size_t fb_fingerprint_group(const fb_fp_node_t *nodes, size_t n, fb_fp_group_t **out);
void fb_fp_groups_free(fb_fp_group_t *groups, size_t n);
/* "nvidia_driver 570.86 → 580.159 on gpu[001-064]"; an absent version reads "(none)". Heap. */
char *fb_fp_group_line(const fb_fp_group_t *g);

#endif
