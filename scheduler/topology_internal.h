/* SPDX-License-Identifier: Apache-2.0 */
/* What the fabric model's files share (topology.c: the model and its parsers; topology_pairs.c:
 * cross-leaf pair rounds and the scoring of slow pairs): the model's layout and two helpers. */
#ifndef FLEETBURN_SCHEDULER_TOPOLOGY_INTERNAL_H
#define FLEETBURN_SCHEDULER_TOPOLOGY_INTERNAL_H

#include "topology.h"

#include "common/strmap.h"

#include <stddef.h>

typedef struct {
    char *name;
    const char **nodes; /* borrowed from fb_topology.nodes */
    size_t n_nodes, cap_nodes;
    const char **spines; /* borrowed from fb_topology.spines */
    size_t *spine_idx;
    size_t n_spines;
} topology__leaf_t;

struct fb_topology {
    topology__leaf_t *leaves;
    size_t n_leaves;
    char **spines;
    size_t n_spines;
    char **nodes; /* every node, in the order added */
    size_t *node_leaf;
    size_t n_nodes, cap_nodes;
    fb_strmap_t *node_index; /* node name -> index + 1 */
};

/* Room for one more element in an array of n that holds *cap (doubling). */
void *topology__grow(void *array, size_t n, size_t *cap, size_t elem);
/* node's index + 1, or 0 when the topology does not know it. */
size_t topology__node(const fb_topology_t *self, const char *node);

#endif
