/* SPDX-License-Identifier: Apache-2.0 */
/* The fault model's state, shared by its two halves: sim/faultmodel_parse.c (the fault file) and
 * sim/faultmodel.c (binding, routes, draws, judging). Nothing outside sim/faultmodel*.c
 * includes it. */
#ifndef FB_FAULTMODEL_IMPL_H
#define FB_FAULTMODEL_IMPL_H

#include "faultmodel.h"

#include "common/strmap.h"
#include "scheduler/routes.h"
#include "scheduler/topology.h"

struct fb_faultmodel {
    char *source;
    uint64_t seed;
    double false_fail_rate;
    double lost_rate;
    double disagree_rate;
    fb_noise_dist_t noise_dist;
    double noise_param; /* uniform: half-width; lognormal: sigma */
    unsigned rails;
    fb_fault_t *faults;
    size_t n_faults;
    const fb_topology_t *topo; /* borrowed; NULL until bound */
    fb_strmap_t *leaf_index;   /* leaf name -> index + 1 */
    const fb_routes_t *routes; /* borrowed; the subnet manager's routes, NULL: the model's own */
};

/* Defaults of a fault file without top-level keys. */
#define FB_FAULTMODEL_DEFAULT_SEED 1
#define FB_FAULTMODEL_DEFAULT_RAILS 8
#define FB_FAULTMODEL_DEFAULT_NOISE_WIDTH 0.01 /* +-1 % uniform */
#define FB_FAULTMODEL_RAILS_MAX 64

#endif
